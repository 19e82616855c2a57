"""`advisor trace synth | validate | aggregate`: synthetic traces, trace checks, and the
PySpark job that turns a trace into workload statistics for `advisor recommend STATS_DIR`."""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional

import typer

from advisor.cli.app import app
from advisor.cli.grammar import dir_path, json_option, not_applicable, seed_option, workload_argument
from advisor.cli.terminal import say
from costmodel.text import first_of, visible_line

trace_app = typer.Typer(name="trace", no_args_is_help=True,
                        help="Workload traces: synthesize, validate, aggregate into statistics.")
app.add_typer(trace_app, name="trace")

TRACE_HELP = ("trace directory: a path, a file:// URI, or any URI the Spark session can read "
              "(hdfs://, s3a://..., read in place)")


@trace_app.command("synth")
@not_applicable(calibration="times come from the spec's costs and --cost-unit-us; nothing is priced")
def synth(
    source: str = workload_argument(optional=False, text="bundled workload name, spec .toml or statistics directory"),
    batches: int = typer.Option(..., "--batches", "-n", help="input batches to generate"),
    out: Path = typer.Option(..., "--out", "-o", parser=dir_path, help="trace directory to write"),
    seed: int = seed_option("same seed, same trace"),
    abort_rate: float = typer.Option(0.0, help="chance an execution aborts (then retries once)"),
    cost_unit_us: Optional[float] = typer.Option(None, help="microseconds per unit of procedure cost "
                                                           "(default: the spec's [input] cost_unit_us, else 100)"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress lines"),
    as_json: bool = json_option("print what was written as JSON instead of a summary"),
) -> None:
    """Write a synthetic trace of a workload spec (streamed in row groups: flat memory)."""
    from advisor.sources import load_workload
    from costmodel.files import check_writable
    from costmodel.workload import workload_as_plain
    from traces.schema import MANIFEST
    from traces.synth import synthesize

    # a statistics directory is an input like a trace: a trace written inside it changed it
    check_writable(out, MANIFEST, "a trace directory", inputs=(source,))
    workload = load_workload(source)
    summary = synthesize(workload_as_plain(workload), out, batches, seed,
                         abort_rate=abort_rate, cost_unit_us=cost_unit_us,
                         progress=None if quiet else (lambda s: say(f"synth: {s}", err=True)))
    if as_json:
        typer.echo(json.dumps({"out": str(summary.out), "batches": summary.batches, "txns": summary.txns,
                               "accesses": summary.accesses, "flows": summary.flows,
                               "seconds": round(summary.seconds, 3)}, indent=2))
        return
    say(f"wrote {visible_line(str(summary.out))}: {summary.batches:,} batches, {summary.txns:,} txns, "
               f"{summary.accesses:,} access rows, {summary.flows:,} flows "
               f"in {summary.seconds:.1f} s")


@trace_app.command("validate")
@not_applicable(calibration="checks a file format; nothing is priced", seed="checks a file format; nothing is random")
def validate(
    trace_dir: str = typer.Argument(..., help=TRACE_HELP),
    spark_master: Optional[str] = typer.Option(None, help="Spark master URL, for a trace Spark "
                                               "reads in place (default local[*])"),
    spark_conf: Optional[List[str]] = typer.Option(None, help="key=value, repeatable"),
    as_json: bool = json_option("print the trace's format, row counts, key type and procedures as JSON"),
) -> None:
    """Check a trace against the format; the first problem found is one line, exit 2. A
    local trace is checked with Arrow; one elsewhere (hdfs://, s3a://...) with Spark."""
    from traces.aggregate import check_trace
    from traces.spark_session import parse_conf

    info = check_trace(trace_dir, master=spark_master, conf=parse_conf(spark_conf))
    if as_json:
        typer.echo(json.dumps({"trace": trace_dir, "valid": True, "format": info.manifest["format"],
                               "rows": dict(info.rows), "key_type": info.key_type,
                               "procedures": list(info.procedures)}, indent=2))
        return
    say(f"{trace_dir}: valid {info.manifest['format']} trace: {info.rows['txns']:,} txns, "
               f"{info.rows['accesses']:,} access rows ({info.key_type} keys), "
               f"{info.rows['flows']:,} flows, {len(info.procedures)} procedures: {first_of(info.procedures)}")


@trace_app.command("aggregate")
@not_applicable(calibration="aggregates measured figures; nothing is priced",
                seed="the aggregation is exact; nothing is random")
def aggregate(
    trace_dir: str = typer.Argument(..., help=TRACE_HELP),
    out: Path = typer.Option(..., "--out", "-o", parser=dir_path, help="statistics directory to write"),
    granularity: str = typer.Option("table", help="table | fragment:N | tuple[:N]"),
    hot_tuples: Optional[int] = typer.Option(None, help="tuple granularity: the K hottest tuples kept "
                                             "(default 100; only with --granularity tuple)"),
    spark_master: Optional[str] = typer.Option(None, help="Spark master URL (default local[*])"),
    spark_conf: Optional[List[str]] = typer.Option(None, help="key=value, repeatable"),
    quiet: bool = typer.Option(False, "--quiet", "-q", help="no progress lines"),
    as_json: bool = json_option("print what was written as JSON instead of a summary"),
) -> None:
    """Aggregate a trace into workload statistics with PySpark (local or any cluster)."""
    from traces.aggregate import aggregate as run, check_options
    from traces.spark_session import parse_conf

    gran = check_options(granularity, hot_tuples)  # (--hot-tuples with another granularity: refused)
    conf = parse_conf(spark_conf)
    # (progress lines come from several threads: `say` writes each, fitted to the terminal, in one write)
    stats = run(trace_dir, out, gran, master=spark_master, conf=conf,
                progress=None if quiet else (lambda line: say(line, err=True)))
    m = stats.manifest
    if as_json:
        typer.echo(json.dumps({"out": str(out), "granularity": m["granularity"],
                               "procedures": len(stats.procedures), "state_items": len(stats.state),
                               "procedure_state_edges": len(stats.procedure_state),
                               "stream_edges": len(stats.streams), "batches": m["batches"],
                               "seconds": m["seconds"]}, indent=2))
        return
    say(f"wrote {visible_line(str(out))}: {len(stats.procedures)} procedures, {len(stats.state)} state items "
               f"({m['granularity']}), {len(stats.procedure_state)} procedure-state edges, "
               f"{len(stats.streams)} stream edges from {m['batches']:,} batches "
               f"in {m['seconds']:.1f} s")
