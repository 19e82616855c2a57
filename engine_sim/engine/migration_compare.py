"""The comparison experiment: one run migrated live and the same run migrated by stopping,
moving and restarting, measured one after the other in this process and shown side by side
(`advisor run --migration compare`, bench/migration.py --engine). The migration itself is in
migration.py."""
from __future__ import annotations

from dataclasses import dataclass

from engine_sim.engine.errors import EngineError
from engine_sim.engine.migration import span_tps
from engine_sim.engine.metrics import RunResult
from engine_sim.engine.run_options import MigrationOptions
from engine_sim.engine.runner import run_workload


@dataclass
class MigrationComparison:
    """One run migrated live and the same run migrated by stopping, moving and restarting,
    measured one after the other in this process."""

    live: RunResult
    restart: RunResult

    def to_dict(self) -> dict:
        return {"live": self.live.to_dict(), "restart": self.restart.to_dict()}

    def describe(self) -> list[str]:
        a, b = self.live.migration, self.restart.migration
        rows = [("", "live", "stop-move-restart"),
                ("outcome", a.outcome, b.outcome),
                ("pause ms", f"{a.pause_s * 1000:.1f}", f"{b.pause_s * 1000:.1f}"),
                ("  drain ms", f"{a.drain_s * 1000:.1f}", f"{b.drain_s * 1000:.1f}"),
                ("  move+switch ms", f"{a.move_s * 1000:.1f}", f"{b.move_s * 1000:.1f}"),
                ("rows moved", f"{a.rows_moved:,}", f"{b.rows_moved:,}"),
                ("bytes (declared)", f"{a.bytes_moved:,}", f"{b.bytes_moved:,}"),
                ("bytes (wire/dump)", f"{a.wire_bytes:,}", f"{b.wire_bytes:,}"),
                ("tuples/s before", span_tps(a.tps_before, a.batches_before),
                 span_tps(b.tps_before, b.batches_before)),
                ("tuples/s during", span_tps(a.tps_during, a.batches_during),
                 span_tps(b.tps_during, b.batches_during)),
                ("tuples/s after", span_tps(a.tps_after, a.batches_after), span_tps(b.tps_after, b.batches_after)),
                ("history check", self.live.history_check, self.restart.history_check),
                ("serial = state", str(self.live.serial_digest == self.live.state_digest),
                 str(self.restart.serial_digest == self.restart.state_digest))]
        w0 = max(len(r[0]) for r in rows)
        w1 = max(len(r[1]) for r in rows)
        return [f"{r[0]:<{w0}}  {r[1]:>{w1}}  {r[2]:>17}" for r in rows]


def compare_migration(workload, design, migrate_to, *, batches: int, at_batch: int, **options) -> MigrationComparison:
    """Run `workload` under `design` twice, migrating to `migrate_to` at `at_batch`: live, then
    by stop, move and restart (the same `run_workload` options otherwise, `migration` aside; a
    trace is written of the live run only). A crash is refused before either run: the restart
    half cannot take one (it was said after the whole live run, naming "restart")."""
    recovery = options.get("recovery")
    if recovery is not None and (recovery.crash_at is not None or recovery.crash_after is not None):
        raise EngineError("--migration compare runs the migration twice, live and by restart, and a crash "
                          "is tested in the live one only: use --migration live with a crash option")
    live = run_workload(workload, design, batches=batches, **options,
                        migration=MigrationOptions(to=migrate_to, at_batch=at_batch, mode="live"))
    options.pop("trace_out", None)
    restart = run_workload(workload, design, batches=batches, **options,
                           migration=MigrationOptions(to=migrate_to, at_batch=at_batch, mode="restart"))
    return MigrationComparison(live, restart)
