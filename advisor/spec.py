"""One way in for a workload: a bundled name, a spec file, or a statistics directory written
by `advisor trace aggregate`. The spec is read by `costmodel.spec_reader`; statistics are
rebuilt into the same `Workload` type by `advisor.statistics_workload`."""
from __future__ import annotations

from pathlib import Path

from costmodel.errors import SpecError
from costmodel.spec_reader import read_spec
from costmodel.workload import Workload


def load_workload(source: str | Path) -> Workload:
    """A bundled workload by name, a spec file by path, or a statistics directory (the
    workload rebuilt from it, `advisor.statistics_workload`)."""
    path = Path(str(source))
    if path.is_dir():
        from advisor.statistics_workload import workload_from_statistics
        from traces.statistics import is_statistics_dir  # here: traces loads Arrow and pandas

        if not is_statistics_dir(path):
            raise SpecError(f"{path}: a directory but not workload statistics (no _stats.json)")
        return workload_from_statistics(path)
    return read_spec(source)
