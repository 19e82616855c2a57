"""examples/tuning.ipynb runs from start to end (nbclient) on a kernel of this very Python,
and the objects it shows render as HTML and images."""
from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest

pytestmark = pytest.mark.integration

ROOT = Path(__file__).resolve().parents[2]
NOTEBOOK = ROOT / "examples" / "tuning.ipynb"
KERNEL = "advisor-test-python3"


@pytest.fixture()
def kernel(tmp_path, monkeypatch):
    """A kernelspec that starts ipykernel with sys.executable (this venv) and sees the project."""
    pytest.importorskip("ipykernel")
    spec_dir = tmp_path / "jupyter" / "kernels" / KERNEL
    spec_dir.mkdir(parents=True)
    env = {"PYTHONPATH": os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])),
           "MPLBACKEND": "module://matplotlib_inline.backend_inline"}
    (spec_dir / "kernel.json").write_text(json.dumps({
        "argv": [sys.executable, "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": "advisor tests", "language": "python", "env": env}))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter"))
    monkeypatch.setenv("JUPYTER_PLATFORM_DIRS", "1")
    return KERNEL


@pytest.mark.slow  # about two minutes: several throughput picks, an engine run, a tuning study
def test_tuning_notebook_runs_start_to_end(kernel, tmp_path):
    import nbformat
    from nbclient import NotebookClient

    nb = nbformat.read(NOTEBOOK, as_version=4)
    client = NotebookClient(nb, kernel_name=kernel, timeout=120, allow_errors=False,
                            resources={"metadata": {"path": str(tmp_path)}})
    client.execute()
    outputs = [o for c in nb.cells if c.cell_type == "code" for o in c.outputs]
    assert not [o for o in outputs if o.output_type == "error"]
    html = [o for o in outputs if "data" in o and "text/html" in o["data"]]
    images = [o for o in outputs if "data" in o and "image/png" in o["data"]]
    text = "\n".join(o.get("text", "") for o in outputs if o.output_type == "stream")
    # workload, recommendation, validation, suggestions, tuning study render themselves
    joined = "\n".join(o["data"]["text/html"] for o in html)
    for needle in ("Workload tpcdi-trade", "Recommendation for tpcdi-trade", "Validation", "Bottleneck",
                   "Tuning study"):
        assert needle in joined, needle
    assert len(images) >= 6  # workload, costs, design, sensitivity, split design, tuning
    assert "predicted throughput:" in text and "report.html" in text
