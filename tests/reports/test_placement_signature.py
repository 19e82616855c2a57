"""When the report and the demo call a baseline "the same placement" as the design: the same
SPs and state on each partition, the partitions of each machine in their order. By machine
alone, linear-road's single-machine baseline was "the same placement" as an 8-machine pick
that also used one machine, while the report showed it 1.34x slower."""
from costmodel.design import Design
from reports.sensitivity import design_signature, placement_signature


def _design(procedures, state, machines=2, ppm=2) -> Design:
    return Design("w", machines, ppm, procedures, state)


def test_renamed_machines_are_the_same_placement_and_reordered_partitions_are_not():
    base = _design({"A": 0, "B": 1}, {"T": 0, "U": 1})
    renamed = _design({"A": 2, "B": 3}, {"T": 2, "U": 3})  # machine 0 became machine 1
    reordered = _design({"A": 1, "B": 0}, {"T": 1, "U": 0})  # the machine's partitions trade places
    merged = _design({"A": 0, "B": 0}, {"T": 0, "U": 0})  # one partition holds everything
    assert placement_signature(renamed) == placement_signature(base)
    assert design_signature(reordered) == design_signature(base) == design_signature(merged)
    assert placement_signature(reordered) != placement_signature(base)
    assert placement_signature(merged) != placement_signature(base)


def test_replicated_items_are_part_of_the_placement():
    a = _design({"A": 0}, {"T": 0, "U": None})
    b = _design({"A": 0}, {"T": 0, "U": 0})
    assert placement_signature(a) != placement_signature(b)
