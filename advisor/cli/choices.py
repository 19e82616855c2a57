"""The fixed sets of words some options take, as `Literal` types: typer then lists them in
`--help` and refuses any other word as a usage error naming them. Commands that share an
option (the engine's and the simulator's --scheduler, --move) share its type here, so the
two cannot drift apart."""
from __future__ import annotations

from typing import Literal

Scheduler = Literal["dls", "central"]
"""dls: a scheduler beside each SP; central: one scheduler for the whole dataflow."""

MoveMode = Literal["rpc", "txn"]
"""How a stream batch moves between machines: an asynchronous RPC or a distributed txn."""

Recovery = Literal["strong", "weak", "off"]
"""Command logging: every transaction (strong), border transactions only (weak), none."""

MigrationMode = Literal["live", "restart", "compare"]
"""`advisor run --migrate-to`: rows sent at a pause, a full stop and reload, or both."""
