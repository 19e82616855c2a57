"""One way in for a workload and its graph: a bundled name, a spec file, or a statistics
directory written by `advisor trace aggregate`. The spec is read by `costmodel.spec_reader`; statistics are
rebuilt into the same `Workload` type by `advisor.statistics_workload`."""
from __future__ import annotations

import numbers
import os
from dataclasses import replace
from pathlib import Path

from advisor.errors import AdvisorError
from advisor.sim_limits import MAX_SIM_BATCH_WORK
from costmodel.design import Design
from costmodel.errors import SpecError, is_a
from costmodel.files import as_path, reading_whole
from costmodel.granularity import other_granularity, tables_among, with_hot_set, workload_at
from costmodel.graph import WorkloadGraph
from costmodel.lanes import lane_routes
from costmodel.spec_reader import check_workload, read_spec
from costmodel.workload import Workload, check_cluster_size


def load_workload(source: str | Path | Workload) -> Workload:
    """A bundled workload by name, a spec file by path, or a statistics directory (the
    workload rebuilt from it, `advisor.statistics_workload`); a Workload itself is checked as
    a spec would be (`check_workload`) and returned, as every verb takes one."""
    if isinstance(source, WorkloadGraph):  # its text is no path: say what it lacks
        raise SpecError(f"graph {source.name!r} holds no dataflow to load a workload from: give the "
                        f"workload itself (a bundled name, a spec file, statistics or a Workload)")
    if is_a(source, Workload):  # (is_a: also one made before a notebook's reload)
        check_workload(source)  # built or changed in Python: held to what a spec may say
        return source
    if not isinstance(source, (str, Path)):  # str() of a Design was "path too long"
        raise SpecError(f"expected a bundled workload name, a spec file or a statistics directory, "
                        f"got {source!r:.60}")
    path = as_path(source, SpecError)
    with reading_whole(path):  # (statistics published over meanwhile: `costmodel.files.reading_whole`)
        if path.is_dir():
            from advisor.statistics_workload import workload_from_statistics
            from traces.statistics import is_statistics_dir  # here: traces loads Arrow and pandas

            if not is_statistics_dir(path):
                raise SpecError(f"{path}: a directory but not workload statistics (no _stats.json)")
            return workload_from_statistics(path)
    return read_spec(source)


Source = str | Path | Workload | WorkloadGraph


def load_source(source: Source) -> tuple[Workload | None, WorkloadGraph]:
    """A workload (bundled name, spec path or object) or a statistics directory, with its graph.

    A statistics directory gives the workload rebuilt from it (`advisor.statistics_workload`:
    what the simulator and the engine run) and its graph (built straight from the columns
    when it is too large to simulate).
    The workload is None only for a bare graph.
    """
    if isinstance(source, WorkloadGraph):
        return None, source
    if isinstance(source, Workload):
        check_workload(source)  # built or changed in Python: held to what a spec may say
        return source, WorkloadGraph.from_workload(source)
    if isinstance(source, (str, Path)) and as_path(source, SpecError).is_dir():
        with reading_whole(source):  # (the workload and the graph read from one version of it)
            workload = load_workload(source)
            edges = sum(len(p.accesses) for p in workload.procedures) + len(workload.streams)
            if len(workload.procedures) + edges <= MAX_SIM_BATCH_WORK:
                # small enough to simulate: the search sees the very model the simulator judges
                # (SP work net of the overheads the simulator charges itself)
                return workload, WorkloadGraph.from_workload(workload)
            from advisor.statistics_graph import graph_from_statistics, priced_as_workload

            # straight from the columns (it scales), its figures the workload's: one answer at any size
            return workload, priced_as_workload(graph_from_statistics(source), workload)
    workload = load_workload(source)
    return workload, WorkloadGraph.from_workload(workload)


def load_graph(source: Source, machines: int | None = None,
               partitions_per_machine: int | None = None) -> WorkloadGraph:
    """The graph of a source on a cluster (the spec's own unless overridden)."""
    _, graph = load_source(source)
    machines, partitions_per_machine = check_cluster(machines, partitions_per_machine)
    return graph.with_cluster(machines, partitions_per_machine)


def check_cluster(machines: int | None, partitions_per_machine: int | None) -> tuple[int | None, int | None]:
    """A cluster a user asked for: each count None (the source's own) or an integer >= 1,
    returned as Python ints (a numpy integer, `for m in np.arange(2, 9, 2)`, is one too, and a
    design must write its counts to JSON)."""
    for label, value in (("machines", machines), ("partitions per machine", partitions_per_machine)):
        if value is not None and (not isinstance(value, numbers.Integral) or isinstance(value, bool) or value < 1):
            raise AdvisorError(f"{label} must be an integer >= 1, got {value!r}")
    check_cluster_size(machines, partitions_per_machine, AdvisorError)  # before any array of that size
    return (None if machines is None else int(machines),
            None if partitions_per_machine is None else int(partitions_per_machine))


OWN_GRANULARITY = "give statistics of the design's own granularity"  # what a granularity refusal advises


def load_source_for(design: Design, source: Source, who: str = "the design") -> tuple[Workload | None, WorkloadGraph]:
    """`load_source`, with a spec seen at the design's granularity when the design places
    fragments or hot tuples of its tables (`costmodel.granularity.workload_at`); the design's
    data-parallel lanes are checked against it. Statistics of another granularity than the
    design's (a design of whole tables, fragment statistics) are one line saying so (`who`
    names the design in it): evaluate, simulate, export and report said the design missed
    'DimDate#0', as if the workload had changed."""
    design.check_fields()  # one built in Python: as a file would be read
    workload, graph = load_source(source)
    if workload is not None:
        lane_routes(workload, design)  # lanes the workload cannot run: one line, before any work
        at = workload_at(workload, design.state)
        if at is not workload:
            return at, WorkloadGraph.from_workload(at)
    _check_own_granularity(design, graph, source, who)
    return workload, graph


def check_workload_for(design: Design, source: Source, workload: Workload) -> None:
    """What `load_source_for` checks, for a command that ran `load_workload` (simulate, validate,
    run): statistics of another granularity than the design's are one line, not "design does
    not place 'DimDate#0'"."""
    if is_statistics_source(source) and workload_at(workload, design.state) is workload:
        _check_own_granularity(design, WorkloadGraph.from_workload(workload), source, "the design")


def _check_own_granularity(design: Design, graph: WorkloadGraph, source: Source, who: str) -> None:
    """`check_same_granularity` of a design against statistics, an earlier trace's hot tuples
    carried first (the same deployment). An item the statistics lack of a table they split too
    ('DimTrade#7' of 4 fragments) is left to the placement's own check, which names it."""
    if not is_statistics_source(source):
        return
    hot = with_hot_set(design.state, graph.state_names)
    state = design.state if hot is None else hot
    split = {t for j, n in enumerate(graph.state_names) if (t := graph.table_of(j)) != n}
    table_of = tables_among(state)
    kept = {n: p for n, p in state.items() if graph.has_state(n) or table_of[n] not in split}
    check_same_granularity(replace(design, state=kept), graph, source, who, OWN_GRANULARITY)


def is_statistics_source(source: Source) -> bool:
    """Whether `source` names a statistics directory (its granularity is the trace's, fixed)."""
    from traces.statistics import is_statistics_dir  # here: traces loads Arrow and pandas

    return isinstance(source, (str, Path)) and is_statistics_dir(source)


def check_same_granularity(design: Design, graph: WorkloadGraph, source: Source, who: str, advice: str) -> None:
    """Refuse `design` where it places state at another granularity than statistics `source`
    (`costmodel.granularity.other_granularity`): one line saying so, not that the design
    misses an item (`DimDate#0`) as if the workload had changed. `who` names the design in
    that line, `advice` ends it."""
    if other_granularity(design.state, graph, is_statistics_source(source)):
        raise AdvisorError(f"{who} and the workload place state at different granularities "
                           f"(tables, fragments, tuples): {advice}")


def check_argument_order(verb: str, design, source, order: str) -> None:
    """One line where a verb's design and workload look swapped (a design, or its file, where
    the workload goes; a workload, its name, spec or graph where the design goes): the verbs'
    orders differ (`evaluate(design, source)`, `simulate(workload, design)`), and a swap read as
    "t4.json: not valid TOML" or "tpcdi-trade: no such file", and a swap of the objects
    themselves as "expected a file path, got Workload(...)" with the whole workload in the line.
    `order`: the verb's signature, said."""
    if _is_a_design(source) and not _is_a_design(design) and (
            isinstance(design, (str, os.PathLike)) or is_a(design, Workload) or isinstance(design, WorkloadGraph)):
        what = "a design file" if looks_like_a_design_file(source) else "a design"
        raise AdvisorError(f"{verb}({order}): the arguments look swapped: {_argument_text(source)} is {what}, "
                           f"where the workload goes, and {_argument_text(design)} where the design goes")


def _is_a_design(value) -> bool:
    return looks_like_a_design_file(value) or is_a(value, Design)


def _argument_text(value) -> str:
    """An argument as an error line names it: a path quoted, an object by its kind and name
    (its repr is the whole workload or design)."""
    if is_a(value, Design):
        return f"Design of {value.workload!r:.60}"
    if is_a(value, Workload) or isinstance(value, WorkloadGraph):
        return f"{type(value).__name__} {value.name!r:.60}"
    return repr(str(value))


def looks_like_a_design_file(value) -> bool:
    """A path to a JSON file (what a design is saved as; a workload is a name, a .toml spec or
    a statistics directory)."""
    return isinstance(value, (str, os.PathLike)) and not isinstance(value, bytes) and \
        str(value).lower().endswith(".json")
