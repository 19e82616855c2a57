"""The alpha/beta/gamma cost model of S-Store's design advisor (dissertation section 6.3).

It scores plain arrays (edges, weights, an assignment) and depends on nothing else in the
project, so the advisor, the engine and the reports all score designs the same way. Beside
the model sits the plain data every part reads, one module each, imported by its own name
(not re-exported here): workload, design, graph, granularity, lanes, spec_reader,
spec_writer, calibration, sim_params, window_work, errors, files.
"""
from costmodel.weights import Weights, DEFAULT_WEIGHTS
from costmodel.problem import CostGraph
from costmodel.bottleneck import Bottleneck, cost_model_bottleneck, find_bottleneck, hottest_procedure
from costmodel.model import (
    REPLICATED,
    CostBreakdown,
    load_balance_cost,
    load_balance_from_loads,
    machine_loads,
    machine_memory,
    machines_used,
    misplaced_owned_state,
    split_procedures,
    processing_colocation_cost,
    score,
    score_many,
    state_colocation_cost,
)

__all__ = [
    "REPLICATED",
    "Bottleneck",
    "CostBreakdown",
    "CostGraph",
    "DEFAULT_WEIGHTS",
    "Weights",
    "cost_model_bottleneck",
    "find_bottleneck",
    "hottest_procedure",
    "load_balance_cost",
    "load_balance_from_loads",
    "machine_loads",
    "machine_memory",
    "machines_used",
    "misplaced_owned_state",
    "split_procedures",
    "processing_colocation_cost",
    "score",
    "score_many",
    "state_colocation_cost",
]
