"""Edits of a written trace that the bad-input tests share: a trace from a system nobody here
controls can name things any way, so these make one that does."""
from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pyarrow.compute as pc
import pyarrow.parquet as pq


def rename_procedure(trace: Path, old: str, new: str, *, in_manifest: bool = True) -> None:
    """Procedure `old` renamed `new` in the txns and flows datasets, and in the manifest's
    procedures (`in_manifest`; else the manifest lists none, so only the datasets name it).
    The manifest's access keys go (they name procedures too)."""
    for dataset, columns in (("txns", ["procedure"]), ("flows", ["from_procedure", "to_procedure"])):
        for f in (trace / dataset).glob("*.parquet"):
            t = pq.read_table(f)
            for c in columns:
                col = t.column(c)
                t = t.set_column(t.schema.get_field_index(c), c,
                                 pc.if_else(pc.equal(col, old), pa.scalar(new, col.type), col))
            pq.write_table(t, f)
    manifest = json.loads((trace / "_trace.json").read_text())
    if in_manifest:
        manifest["procedures"] = [new if p == old else p for p in manifest.get("procedures", [])]
    else:
        manifest.pop("procedures", None)
    manifest.pop("access_keys", None)
    (trace / "_trace.json").write_text(json.dumps(manifest))
