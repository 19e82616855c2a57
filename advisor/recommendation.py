"""What `recommend` returns: the recommended design with everything that explains it (the
graph it was searched on, the baselines, the pick's selection, the lanes or the migration it
was weighed against), and the ways a notebook or the CLI reads it (lines, a frame, figures,
HTML).

Why a module of its own: `advisor.api` makes the recommendation; this is the result object,
as a fitted estimator's attributes are its results, so reading one needs none of the search.
"""
from __future__ import annotations

import html
from dataclasses import dataclass, field

import costmodel
from costmodel.design import Design
from costmodel.design_file import edited_since_made
from costmodel.granularity import workload_at
from costmodel.graph import WorkloadGraph
from costmodel.workload import Workload, cluster_text
from advisor.errors import AdvisorError
from advisor.granularity_pick import DataParallelChoice
from advisor.search import DesignSearch
from advisor.selection import Selection


@dataclass
class Recommendation:
    """The recommended design, the graph it was searched on, every baseline, and the final
    pick (`selection`: each candidate with its cost and predicted throughput)."""

    design: Design
    graph: WorkloadGraph
    baselines: dict[str, Design] = field(default_factory=dict)
    workload: Workload | None = None
    search: DesignSearch | None = None
    selection: Selection | None = None
    data_parallel: DataParallelChoice | None = None  # the data-parallel variant it was weighed against
    migration: object = None  # advisor.migration_pick.MigrationPlan: from a deployed design (`current`)
    lanes_not_weighed: str = ""  # why data-parallel lanes asked for were not weighed (none: they were, or not asked)

    @property
    def design_graph(self) -> WorkloadGraph:
        """The graph at the design's granularity: `graph`, or the workload split into the
        fragments a data-parallel pick places."""
        return self._graph_of(self.design)

    def _graph_of(self, design: Design) -> WorkloadGraph:
        if self.workload is None or all(self.graph.has_state(n) for n in design.state):
            return self.graph
        at = workload_at(self.workload.with_cluster(design.machines, design.partitions_per_machine), design.state)
        return WorkloadGraph.from_workload(at)

    def _granularity_design(self) -> tuple[str, Design] | None:
        """The other side of the granularity comparison as a design, named as its row in
        `to_frame` is: the table-level pick beside lanes that won, or the variant beside a
        table-level pick (None where lanes were not weighed)."""
        dp = self.data_parallel
        if dp is None:
            return None
        if not dp.picked:
            return "data-parallel variant", dp.variant
        c = self.selection.chosen
        return "table-level pick", Design.from_arrays(self.graph, c.proc_part, c.state_part, self.design.weights,
                                                      method="table-level pick")

    @property
    def bottleneck(self) -> costmodel.Bottleneck:
        """What limits the recommended design, by the cost model (on the design's graph)."""
        return costmodel.cost_model_bottleneck(self.design, self.design_graph)

    def granularity_note(self) -> str | None:
        """For a graph of fragments or hot tuples: which tables the pick splits across
        partitions, or that it keeps every table whole (a table-level design is then as fast);
        where a data-parallel variant was weighed, which granularity won and why."""
        if self.data_parallel is not None:
            return self.data_parallel.describe()
        if self.lanes_not_weighed:
            return f"granularity: data-parallel lanes not weighed: {self.lanes_not_weighed}"
        tables = [self.graph.table_of(j) for j in range(self.graph.n_state)]  # (a spec's `T@2026` is a table)
        finer = sum(1 for n, t in zip(self.graph.state_names, tables) if n != t)
        if not finer:
            return None
        split = self._split_tables(tables, accessed_only=True)
        if not split:
            which = "every table's accessed" if self._split_tables(tables, accessed_only=False) else "every table's"
            return (f"granularity: {finer} fragment/tuple items; the pick keeps {which} items on "
                    "one partition, so a table-level design is as fast")
        return (f"granularity: {finer} fragment/tuple items; the pick splits "
                f"{', '.join(split[:5])}{' ...' if len(split) > 5 else ''} across partitions")

    def _split_tables(self, tables: list[str], accessed_only: bool) -> list[str]:
        """The tables whose items (with `accessed_only`, those an SP accesses) the design puts on
        more than one partition. Why apart: an item no SP accesses is placed by its size alone,
        and wherever it lands no transaction spans partitions for it (gen150 at fragment:8 on
        32 machines named its 7 unaccessed tables as the pick's splits, every other one whole)."""
        accessed = set(self.graph.cost.ps_state.tolist())  # (an edge of any weight: the SP locks its partition)
        parts: dict[str, set] = {}
        for j, (item, table) in enumerate(zip(self.graph.state_names, tables)):
            if j in accessed or not accessed_only:
                parts.setdefault(table, set()).add(self.design.state.get(item))
        return [t for t, p in parts.items() if len(p) > 1]

    def pick_lines(self, shortened_to: int | None = None) -> list[str]:
        """How the design was picked, as `recommend` prints it: the objective line (the
        pool's pick named as the unconstrained or table-level pick where a move budget or
        lanes changed it), the simulated search, notes, the granularity and the declared rate.
        `shortened_to`: the pick's name as a candidate table of that name width shows it."""
        from advisor.recommendation_text import objective_lines

        if self.selection is None:
            return []
        lines = objective_lines(self.selection, shortened_to=shortened_to)
        if self.migration is not None:  # the selection's pick is the best without a move budget
            lines[0] = lines[0].replace(": picked ", ": unconstrained pick ", 1)
        elif self.lanes_picked:  # the pool's pick, before its lanes won (the granularity line's figure is the design's)
            lines[0] = lines[0].replace(": picked ", ": table-level pick ", 1)
        note = self.granularity_note()
        return lines + ([note] if note else []) + self._declared_rate_lines()

    def _declared_rate_lines(self) -> list[str]:
        """Whether the pick's predicted maximum sustains the rate the workload declares (its
        `[input] rate`, a trace's too), as `simulate` says it."""
        from engine_sim.sim.run import declared_rate_line

        w = self.workload
        if w is None or not w.input.rate or not self.prediction:
            return []
        return [declared_rate_line(w, self.prediction / w.input.batch_size, w.input.batch_size)]

    def all_designs(self) -> dict[str, Design]:
        return {"recommended": self.design, **self.baselines}

    @property
    def prediction(self) -> float | None:
        """The recommendation's predicted tuples/s: the figure every output shows for it (a
        report's simulation of the design on its default settings is this figure). None where
        nothing was simulated. The lanes' or the migration's pick where one of those won."""
        if self.lanes_picked:
            return self.data_parallel.variant_tps
        if self.migration is not None:
            return self.migration.chosen.predicted_tps
        sel = self.selection
        return None if sel is None else sel.prediction

    def predicted_tps(self) -> dict[str, float | None]:
        """Tuples/s the simulator predicted for the recommendation and each baseline in the
        pick's side-by-side runs, which rank them (None where nothing was simulated; shorter
        runs than `prediction`'s where the budget is tight)."""
        figures = self._pick_figures("predicted_tps")
        if self.lanes_picked:
            figures["recommended"] = self.data_parallel.variant_tps
        if self.migration is not None:
            figures["recommended"] = self.migration.chosen.predicted_tps
        return figures

    def estimated_tps(self) -> dict[str, float | None]:
        """Tuples/s the analytical busy-time estimate allows the recommendation and each
        baseline (None where the pick did not judge by throughput, and for data-parallel lanes,
        which the graph does not show)."""
        figures = self._pick_figures("estimated_tps")
        if self.lanes_picked:
            figures["recommended"] = None
        if self.migration is not None:
            figures["recommended"] = self.migration.chosen.estimated_tps
        return figures

    def predicted_batches(self) -> dict[str, int | None]:
        """The simulated batches behind each of `predicted_tps()`'s figures (None where there is
        none): a screening run is shorter than `prediction`'s, so the recommendation's row in
        `to_frame` can read apart from that figure, and the frame says why (as the design file's
        `candidate_table` does)."""
        from advisor.migration_pick import SIM_BATCHES

        predicted = self.predicted_tps()
        figures = {name: (b or None) if predicted.get(name) is not None else None
                   for name, b in self._pick_figures("batches").items()}
        if self.lanes_picked:
            figures["recommended"] = self.data_parallel.batches or None
        if self.migration is not None:
            figures["recommended"] = SIM_BATCHES
        return figures

    @property
    def lanes_picked(self) -> bool:
        """Whether the design is the pick's data-parallel variant (the selection's chosen
        candidate is then the table-level pick it was weighed against)."""
        return self.data_parallel is not None and self.data_parallel.picked

    def _pick_figures(self, field: str) -> dict[str, float | None]:
        sel = self.selection
        if sel is None:
            return {name: None for name in self.all_designs()}
        by_label = {o.label: getattr(o, field) for o in sel.candidates if o.source == "baseline"}
        return {"recommended": getattr(sel.chosen, field),
                **{name: by_label.get(name) for name in self.baselines}}

    def to_frame(self):
        """Cost breakdown, estimated and predicted throughput of the recommendation and every baseline,
        one row each (predicted: the pick's side-by-side runs, `predicted_tps()`, which rank them,
        on `batches`; the recommendation's own figure is `prediction`, on its own batches)."""
        import pandas as pd

        predicted, estimated, batches = self.predicted_tps(), self.estimated_tps(), self.predicted_batches()
        costs = [(name, d.cost, estimated.get(name), predicted.get(name), batches.get(name))
                 for name, d in self.all_designs().items()]
        other = self.granularity_row()
        if other is not None:
            costs.insert(1, (*other, self.data_parallel.batches or None))
        rows = [{"design": name, "state_colocation": c.state_colocation,
                 "processing_colocation": c.processing_colocation, "load_balance": c.load_balance,
                 "total": c.total, "feasible": c.feasible, "estimated_tps": est, "predicted_tps": tps,
                 "batches": runs}
                for name, c, est, tps, runs in costs]
        frame = pd.DataFrame(rows).set_index("design")
        figures = ["estimated_tps", "predicted_tps"]  # None where not simulated: NaN, float columns
        frame[figures] = frame[figures].astype(float)
        frame["batches"] = frame["batches"].astype("Int64")  # <NA> where nothing was simulated
        return frame

    def granularity_row(self) -> tuple[str, object, float | None, float | None] | None:
        """(name, cost, estimated, predicted tuples/s) of the other side of the granularity
        comparison, where lanes were weighed: the table-level pick beside lanes that won, or
        the data-parallel variant beside a table-level pick (its cost on the table graph)."""
        dp = self.data_parallel
        if dp is None:
            return None
        c = self.selection.chosen
        return (("table-level pick", c.cost, c.estimated_tps, dp.table_tps) if dp.picked
                else ("data-parallel variant", dp.variant.cost, None, dp.variant_tps))

    def plot(self, ax=None):
        """Stacked weighted cost terms per design (matplotlib Axes)."""
        from reports.figures import plot_cost_breakdown

        return plot_cost_breakdown(self, ax=ax)

    def plot_design(self, name: str = "recommended", ax=None, max_nodes: int = 80):
        """The design (or the baseline `name`) drawn on the graph it was searched on, kept
        here so a notebook need not pass it back: machines as colours, cut edges dashed red
        (matplotlib Axes)."""
        from reports.figures import plot_graph

        designs = self.all_designs()
        side = self._granularity_design()  # (a row of `to_frame` too: it could not be drawn)
        if side is not None:
            designs[side[0]] = side[1]
        if not isinstance(name, str):  # a Design (another workload's, say) was an unhashable TypeError
            other = "; any other design: advisor.plot_graph(design, source)" if isinstance(name, Design) else ""
            raise AdvisorError(f"name must be the name of a design in this recommendation ({', '.join(designs)}), "
                               f"got {type(name).__name__}{other}")
        if name not in designs:
            raise AdvisorError(f"no design {name!r} in this recommendation: it has {', '.join(designs)}")
        return plot_graph(designs[name], self._graph_of(designs[name]), ax=ax, max_nodes=max_nodes)

    def __repr__(self) -> str:
        """One line, as `DriftCheck`'s (the dataclass's held the graph, every baseline and every
        candidate whole: 23 KB for tpcdi-trade on 4 machines, in a list or a print)."""
        d = self.design
        figure = ("" if self.prediction is None or edited_since_made(d)
                  else f", predicted {self.prediction:,.0f} tuples/s")
        cost = "" if d.cost is None else f", cost {d.cost.total:.4f}"
        return (f"Recommendation({self.graph.name!r:.80} on {cluster_text(d.machines, d.partitions_per_machine)}"
                f"{figure}{cost}, {len(self.baselines)} baselines)")

    def _repr_html_(self) -> str:
        e = html.escape
        frame = self.to_frame()
        figure = self.prediction
        head = f"<b>Recommendation for {e(self.graph.name)}</b>"
        if edited_since_made(self.design):  # changed in place: the figures below are the pick's, not its
            head += (": its design was edited since (the figures and the table below are the pick's; "
                     "<code>advisor.simulate</code> predicts the edited one)")
        elif figure is not None:  # the figure every output shows for it (the frame: the side-by-side runs)
            head += f": predicted {figure:,.0f} tuples/s by the simulator"
        note = self.granularity_note()
        from advisor.recommendation_text import idle_line, migration_lines, screening_note

        shorter = screening_note(self.selection) if self.selection is not None else ""  # the CLI's footnote
        frame["batches"] = frame["batches"].astype(float)  # (its <NA> shown "-", as the figures' gaps are)
        formats = {c: (lambda x: f"{x:,.0f}") for c in ("estimated_tps", "predicted_tps", "batches")}
        told = [x for x in self.pick_lines() if x != note] + ([idle_line(self.design)] if idle_line(self.design) else [])
        told += migration_lines(self.migration) if self.migration is not None else []
        return (head + "<br>" + self.design._repr_html_()
                + "".join("<br>" + e(x) for x in told)
                + ("<br>" + e(note) if note else "")
                + "<br>" + "<br>".join(e(x) for x in self.bottleneck.describe())
                + frame.to_html(formatters=formats, float_format=lambda x: f"{x:.4f}", na_rep="-")
                + (f"<p>{e(shorter)}</p>" if shorter else ""))
