"""A Design changed in a notebook (`dataclasses.replace`) with a field of the wrong kind is one
DesignError line in every verb that takes one: `simulate`, `validate`, `check` and `diff`'s
deployed design read its provenance (for the seed) or compared its cluster before checking it,
an AttributeError or TypeError from inside; a cost that is no CostBreakdown broke `save` and
the notebook's table."""
import dataclasses

import pytest

import advisor
from costmodel.errors import DesignError

VERBS = {
    "simulate": lambda w, bad, good: advisor.simulate(w, bad, batches=20),
    "validate": lambda w, bad, good: advisor.validate(w, bad, engine=False, batches=20),
    "check": lambda w, bad, good: advisor.check(bad, w),
    "diff (deployed)": lambda w, bad, good: advisor.diff(bad, good, w),
}
EDITS = {
    "provenance a list": (dict(provenance=[1]), "provenance must be a dict, got [1]"),
    "provenance None": (dict(provenance=None), "provenance must be a dict, got None"),
    "machines a string": (dict(machines="2"), "machines must be an integer >= 1, got '2'"),
    "no partitions per machine": (dict(partitions_per_machine=0), "partitions_per_machine must be an integer >= 1, got 0"),
    "state None": (dict(state=None), "procedures and state must be dicts"),
}


@pytest.mark.parametrize("edit", EDITS, ids=list(EDITS))
@pytest.mark.parametrize("verb", VERBS, ids=list(VERBS))
def test_a_mistyped_field_is_one_line_in_every_verb(tpcdi_trade, tpcdi_round_robin, verb, edit):
    change, message = EDITS[edit]
    bad = dataclasses.replace(tpcdi_round_robin, **change)
    with pytest.raises(DesignError, match="^design: ") as exc:
        VERBS[verb](tpcdi_trade, bad, tpcdi_round_robin)
    assert message in str(exc.value) and "\n" not in str(exc.value)


@pytest.mark.parametrize("show", ["save", "_repr_html_"])
def test_a_cost_that_is_no_breakdown_is_refused_where_it_is_shown(tpcdi_round_robin, tmp_path, show):
    bad = dataclasses.replace(tpcdi_round_robin, cost="cheap")
    with pytest.raises(DesignError, match="cost must be a CostBreakdown or None, got 'cheap'"):
        bad.save(tmp_path / "d.json") if show == "save" else bad.check_fields()
    if show == "_repr_html_":  # the notebook's table says the error instead of raising
        assert "cost must be a CostBreakdown" in bad._repr_html_()
    assert not list(tmp_path.iterdir())
