"""Megabytes moved from a deployed design to designs given as arrays, priced as
`advisor.migration.moves_between` prices them, without building a Design or a diff.

Why: the migration plan's path and climb price thousands of designs a move or two apart, and
read only their megabytes; on gen150 at `fragment:8` (2,144 items on 32 machines) building a
Design and a full diff for each was about 15 s of a 54 s `check`. The bytes of the items that
move are added one by one in name order, as the diff's sum adds them (a procedure's move adds
0.0, which changes no bit), so each figure, and with it the plan, is the same to the last bit.
"""
from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from costmodel.design import Design
from costmodel.graph import WorkloadGraph
from costmodel.model import REPLICATED


@dataclass(frozen=True)
class MovedBytes:
    """What moving each state item the deployed design names copies, in name order."""

    index: np.ndarray  # each named item's place in the graph's state order
    placed: np.ndarray  # where the deployed design puts it (REPLICATED: on every machine)
    to_one: np.ndarray  # bytes a move to one partition copies (none from replicated: a copy is there)
    to_all: np.ndarray  # bytes becoming replicated copies: one to every other machine

    @classmethod
    def of(cls, current: Design, graph: WorkloadGraph) -> "MovedBytes":
        names = sorted(current.state)
        index = np.array([graph.state_index(n) for n in names], dtype=np.int64)
        placed = np.array([REPLICATED if current.state[n] is None else current.state[n] for n in names],
                          dtype=np.int64)
        sizes = np.asarray(graph.cost.state_bytes, dtype=np.float64)[index]
        return cls(index, placed, np.where(placed == REPLICATED, 0.0, sizes), sizes * (current.machines - 1))

    def megabytes(self, state: np.ndarray) -> float:
        """Megabytes moved to the design whose state partitions (in the graph's order) are `state`."""
        places = state[self.index]
        moved = np.flatnonzero(places != self.placed)
        copied = np.where(places[moved] == REPLICATED, self.to_all[moved], self.to_one[moved])
        return sum(copied.tolist()) / 1e6
