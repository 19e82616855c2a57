"""`advisor` command line: a thin layer over the Python API (advisor.api and friends).

Each module below registers its commands on `app`; heavy imports (Spark, the engine) happen
inside the commands so `advisor --help` stays fast.
"""
import os

# numpy's BLAS on one thread (before numpy loads): the command's arrays are small, and a thread
# of its own would take a SIGTERM meant for the command while METIS runs (`advisor.sigterm`)
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")

from advisor.cli.app import app, main, one_line_summaries, run_app  # noqa: E402
from advisor.cli import core, trace, engine, sim, product, export, deploy  # noqa: F401  each registers its commands

one_line_summaries(app)

__all__ = ["app", "main", "run_app"]
