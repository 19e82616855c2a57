"""The bundled partitioned engine: runs a workload spec under a design with S-Store's
guarantees (ACID, batch and dataflow order, exactly-once), measures it, checks its history,
and writes its trace. See docs/engine.md."""
from engine_sim.engine.errors import EngineError, EngineFailure
from engine_sim.engine.metrics import RunResult
from engine_sim.engine.migration import MigrationResult
from engine_sim.engine.migration_compare import MigrationComparison, compare_migration
from engine_sim.engine.run_options import (ClientOptions, CommandLogOptions, MigrationOptions, NetworkOptions,
                                           RecoveryOptions)
from engine_sim.engine.runner import check_design, run_workload

__all__ = ["ClientOptions", "CommandLogOptions", "EngineError", "EngineFailure", "MigrationComparison",
           "MigrationOptions", "MigrationResult", "NetworkOptions", "RecoveryOptions", "RunResult",
           "check_design", "compare_migration", "run_workload"]
