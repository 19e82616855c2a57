"""`advisor run`: run a workload under a design on the bundled partitioned engine."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from advisor.cli.app import app, say_error
from advisor.cli.choices import MigrationMode, MoveMode, Recovery, Scheduler
from advisor.cli.grammar import (DesignCommand, design_option, dir_path, json_option, not_applicable, print_result,
                                 seed_option, workload_argument, workload_for)


@app.command("run", cls=DesignCommand)
@not_applicable(calibration="the engine runs for real: it measures, nothing is priced")
def run(
    design: Path = design_option(),
    source: Optional[str] = workload_argument(),
    batches: int = typer.Option(..., "--batches", "-n", help="input batches to run"),
    trace_out: Optional[Path] = typer.Option(None, "--trace-out", parser=dir_path, help="write the run's Parquet trace here"),
    scheduler: Scheduler = typer.Option("dls", help="dls (a scheduler beside each SP) or central"),
    move: MoveMode = typer.Option("rpc", help="MOVE as an rpc (ships the batch) or as a distributed txn"),
    recovery: Recovery = typer.Option("weak", help="command logging: strong, weak or off"),
    crash_after: Optional[int] = typer.Option(None, "--crash-after",
                                              help="kill a partition after K commits, then recover"),
    in_process: bool = typer.Option(False, "--in-process",
                                    help="all partitions in this process (deterministic; default: a process each)"),
    seed: int = seed_option("same seed, same input and keys"),
    batch_size: Optional[int] = typer.Option(None, "--batch-size", help="tuples per batch (default: the spec's)"),
    data_parallel: bool = typer.Option(False, "--data-parallel",
                                       help="split batches of SPs with a partition_key into sub-batches"),
    group_commit: bool = typer.Option(True, "--group-commit/--no-group-commit", help="batch log writes"),
    latency_bound: float = typer.Option(1.0, "--latency-bound", help="seconds of mean batch latency"),
    crash_at: Optional[str] = typer.Option(None, "--crash-at",
                                           help="ROLE,STEP[,N]: the first partition whose N-th distributed "
                                                "txn as coordinator or participant (each partition "
                                                "counts its own) dies before_vote, after_vote or "
                                                "after_decision of 2PC, then the cluster recovers; "
                                                "migration,moving|switched[,P]: partition P dies during "
                                                "the migration's move or on its switch"),
    timeout: Optional[float] = typer.Option(None, "--timeout",
                                            help="seconds before the run fails (default: scales with the run)"),
    migrate_to: Optional[Path] = typer.Option(None, "--migrate-to",
                                              help="design JSON to migrate to at --at-batch while the run goes on"),
    at_batch: Optional[int] = typer.Option(None, "--at-batch",
                                           help="batch K: the input pauses there, the state and SPs move, "
                                                "and the run resumes under --migrate-to"),
    migration: MigrationMode = typer.Option(
        "live", "--migration", help="live (rows sent between partitions at the pause), restart (stop, dump "
                                    "the whole state, restart and reload) or compare (both)"),
    as_json: bool = json_option(),
) -> None:
    """Run a workload under a design, check the history, measure it (and trace it)."""
    from costmodel.design import Design
    from advisor.sources import check_workload_for, load_workload
    from costmodel.files import check_writable
    from costmodel.errors import UserError
    from engine_sim.engine import (ClientOptions, CommandLogOptions, MigrationOptions, RecoveryOptions,
                                   run_workload)
    from engine_sim.engine.migration_compare import compare_migration
    from traces.schema import MANIFEST

    workload = load_workload(workload_for(design, source))
    d = Design.load(design)
    check_workload_for(d, workload_for(design, source), workload)
    target = None if migrate_to is None else Design.load(migrate_to)
    if trace_out is not None:  # before the run, not after it
        check_writable(trace_out, MANIFEST, "a trace directory", inputs=(design, source, migrate_to))
    options = dict(batches=batches, scheduler=scheduler, move=move, in_process=in_process, seed=seed,
                   trace_out=trace_out, batch_size=batch_size, data_parallel=data_parallel, timeout_s=timeout,
                   client=ClientOptions(latency_bound_s=latency_bound),
                   recovery=RecoveryOptions(mode=recovery, crash_after=crash_after, crash_at=crash_at),
                   command_log=CommandLogOptions(group_commit=group_commit))
    if migration == "compare":
        if target is None:
            raise UserError("--migration compare needs --migrate-to and --at-batch")
        both = compare_migration(workload, d, target, at_batch=at_batch, **options)
        results = [both.live, both.restart]
        lines = both.describe()
        data = both.to_dict()
    else:
        result = run_workload(workload, d, migration=MigrationOptions(to=target, at_batch=at_batch, mode=migration),
                              **options)
        results = [result]
        lines = result.describe()
        data = result.to_dict()
    if data_parallel and not any(r.lanes for r in results):  # the flag changed nothing: said
        lines = lines + [f"note: --data-parallel split no SP: none of {workload.name!r} has a partition_key it can "
                         "split by (outside nested groups, window owners and OLTP SPs); a design's own lanes "
                         "(recommend --data-parallel) run without the flag"]
    print_result(data, lambda: lines, as_json)
    failed = next((r.history_check for r in results if r.history_check != "ok"), None)
    if failed is not None:  # includes a state that differs from the serial re-execution
        say_error(f"error: run failed its correctness check: {failed}")
        raise typer.Exit(1)
