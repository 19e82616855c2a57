"""A small trace is aggregated in a JVM started lighter (quick JIT, serial collector: issue 21,
item 1), and the statistics are the same as with Java's defaults."""
from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from traces.spark_session import SMALL_JOB_JVM_OPTIONS, small_job_conf
from traces.statistics import read_statistics_arrow
from traces.synth import synthesize
from test_traces_synth import MIXED

pytestmark = pytest.mark.integration

# In a process of its own: the test run's shared JVM would otherwise be reused. Prints the
# driver JVM's own arguments, so the test sees what the JVM was started with.
AGGREGATE = r"""
import json, sys
import traces.aggregate as job
from traces import spark_session

if sys.argv[3] == "defaults":
    job.SMALL_JOB_ROWS = 0  # every trace counts as large: Java's defaults
started = []
start = spark_session.start_session
def recorded(*args, **kwargs):
    spark = start(*args, **kwargs)
    bean = spark.sparkContext._jvm.java.lang.management.ManagementFactory.getRuntimeMXBean()
    started.append(list(bean.getInputArguments()))
    return spark
spark_session.start_session = recorded
job.aggregate(sys.argv[1], sys.argv[2], master="local[2]", progress=None)
print(json.dumps(started[0]))
"""


def test_the_users_own_jvm_options_come_after_the_small_jobs():
    user = {"spark.driver.extraJavaOptions": "-XX:TieredStopAtLevel=4", "spark.executor.cores": "1"}
    conf = small_job_conf(user)
    assert conf["spark.driver.extraJavaOptions"] == f"{SMALL_JOB_JVM_OPTIONS} -XX:TieredStopAtLevel=4"
    assert conf["spark.executor.cores"] == "1" and user["spark.driver.extraJavaOptions"] == "-XX:TieredStopAtLevel=4"
    assert small_job_conf(None)["spark.driver.extraJavaOptions"] == SMALL_JOB_JVM_OPTIONS


def test_a_small_job_skips_code_generation_unless_the_user_asks_for_it():
    assert small_job_conf(None)["spark.sql.codegen.wholeStage"] == "false"
    assert small_job_conf({"spark.sql.codegen.wholeStage": "true"})["spark.sql.codegen.wholeStage"] == "true"


@pytest.mark.slow  # two JVMs
def test_a_small_trace_gets_the_light_jvm_and_the_same_statistics(tmp_path: Path):
    trace = tmp_path / "trace"
    synthesize(MIXED, trace, batches=60, seed=3, abort_rate=0.05)
    args = {}
    for mode in ("small", "defaults"):
        done = subprocess.run([sys.executable, "-c", AGGREGATE, str(trace), str(tmp_path / mode), mode],
                              capture_output=True, text=True, timeout=600)
        assert done.returncode == 0, done.stderr[-2000:]
        args[mode] = json.loads(done.stdout.strip().splitlines()[-1])
    assert all(option in args["small"] for option in SMALL_JOB_JVM_OPTIONS.split())
    assert not any(option in args["defaults"] for option in SMALL_JOB_JVM_OPTIONS.split())
    small, _ = read_statistics_arrow(tmp_path / "small")
    defaults, _ = read_statistics_arrow(tmp_path / "defaults")
    assert small.keys() == defaults.keys()
    for name in small:
        assert small[name].num_rows > 0 or defaults[name].num_rows == 0
        assert small[name].sort_by([(c, "ascending") for c in small[name].column_names]).equals(
            defaults[name].sort_by([(c, "ascending") for c in defaults[name].column_names])), name
