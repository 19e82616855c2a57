"""`advisor` command line: a thin layer over the Python API (advisor.api and friends).

Each module below registers its commands on `app`; heavy imports (Spark, the engine) happen
inside the commands so `advisor --help` stays fast.
"""
from advisor.cli.app import app, main, run_app
from advisor.cli import core  # noqa: F401  workloads, recommend, evaluate

for _optional in ("trace", "engine", "sim", "product"):
    try:
        __import__(f"advisor.cli.{_optional}")
    except ModuleNotFoundError as _exc:  # a part not built yet
        if _exc.name != f"advisor.cli.{_optional}":
            raise

__all__ = ["app", "main", "run_app"]
