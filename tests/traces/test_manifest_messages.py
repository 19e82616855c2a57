"""What a manifest or a spec that is not quite right is told, in the user's terms: a missing
format said as missing ("format None is not supported"), the list entry that is wrong by its
index ("machine_capacity[]"), access keys that name input fields no input declares (it failed
later, naming the rebuilt workload's input), a JSON file given as a spec."""
import json

import pytest

from advisor.cli import run_app
from costmodel.workload import workload_as_plain
from advisor.sources import load_workload
from traces.errors import TraceError
from traces.manifest_fields import check_manifest_fields
from traces.synth import synthesize


def test_a_trace_or_statistics_manifest_without_a_format_says_so(tmp_path, capsys):
    trace = tmp_path / "trace"
    synthesize(workload_as_plain(load_workload("move-micro")), trace, batches=3, seed=1)
    manifest = json.loads((trace / "_trace.json").read_text())
    del manifest["format"]
    (trace / "_trace.json").write_text(json.dumps(manifest))
    assert run_app(["trace", "validate", str(trace)]) == 2
    assert capsys.readouterr().err.endswith('_trace.json: no "format" (a trace manifest says "format": '
                                            '"advisor.trace/1")\n')
    stats = tmp_path / "stats"
    stats.mkdir()
    (stats / "_stats.json").write_text("{}")
    assert run_app(["recommend", str(stats)]) == 2
    assert 'no "format" (a statistics manifest says "format": "advisor.stats/' in capsys.readouterr().err


@pytest.mark.parametrize("change, says", [
    (lambda m: m["cluster"].update(machine_capacity=[1.0, "x"]), "'cluster.machine_capacity[1]' must be"),
    (lambda m: m.update(input={}, access_keys={"SP1": {"T1": "input:k"}}),
     "'access_keys.SP1.T1' must be an input field the manifest declares, but it has no input.fields"),
])
def test_a_manifest_entry_is_named_as_it_is_written(change, says):
    manifest = {"format": "advisor.trace/1", "cluster": {"machines": 2, "partitions_per_machine": 1}}
    change(manifest)
    with pytest.raises(TraceError, match="^m: " + says.replace("[", r"\[").replace("]", r"\]")):
        check_manifest_fields(manifest, "m")


def test_a_json_file_given_as_a_spec_is_told_a_spec_is_toml(tmp_path, capsys):
    (tmp_path / "w.json").write_text('{"name": "w"}')
    assert run_app(["recommend", str(tmp_path / "w.json")]) == 2
    assert capsys.readouterr().err.endswith("(a spec is TOML; this looks like JSON: docs/formats.md shows the format)\n")
