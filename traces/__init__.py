"""Workload traces: the Parquet trace format, synthetic traces, and the PySpark aggregation."""
from traces.schema import ACCESSES, DATASETS, FLOWS, MANIFEST, TRACE_FORMAT, TXNS

__all__ = ["ACCESSES", "DATASETS", "FLOWS", "MANIFEST", "TRACE_FORMAT", "TXNS"]
