"""Workload traces: the Parquet trace format, synthetic traces, and the PySpark aggregation.

    validate_trace(dir)                 check a trace; TraceError (one line, exit 2) if bad
    synthesize(spec, out, batches)      a synthetic trace of a workload spec (plain data)
    aggregate_trace(trace, out, gran)   the Spark job: trace -> workload statistics
                                        (traces.aggregate.aggregate; `traces.aggregate` is
                                        the module)
    load_statistics(stats_dir)          the statistics as pandas DataFrames (notebooks)

Spark is imported only when `aggregate` runs.
"""
from traces.schema import ACCESSES, DATASETS, FLOWS, MANIFEST, TRACE_FORMAT, TXNS
from traces.errors import JavaError, TraceError
from traces.statistics import STATS_FORMAT, Statistics, load_statistics
from traces.trace_checks import validate_trace
from traces.writer import TraceWriter
from traces.synth import synthesize
from traces.aggregate import aggregate as aggregate_trace

__all__ = ["ACCESSES", "DATASETS", "FLOWS", "MANIFEST", "TRACE_FORMAT", "TXNS", "JavaError",
           "STATS_FORMAT", "Statistics", "TraceError", "TraceWriter", "aggregate_trace",
           "load_statistics", "synthesize", "validate_trace"]
