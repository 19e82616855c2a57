"""Workload-driven design advisor for transactional streaming deployments.

    from advisor.api import recommend
    rec = recommend("tpcdi-trade", machines=4)
    rec.design.save("design.json")
"""
from importlib.metadata import PackageNotFoundError, version

try:  # one place for the version: pyproject.toml, read back from the installed metadata
    __version__ = version("sstore-advisor")
except PackageNotFoundError:  # a source tree that was never installed
    __version__ = "0+unknown"
