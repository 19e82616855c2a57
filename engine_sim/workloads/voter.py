"""Voter with leaderboards (dissertation 3.4.1, after H-Store's Voter): each input batch is one
vote (phone, contestant). Vote validates it (the contestant still runs, the phone has votes
left) and records it; UpdateLeaderboard counts it; DeleteContestant, every DELETE_EVERY votes,
removes the contestant with the fewest votes, and their votes, until one is left. The three
SPs share tables, so they form one nested transaction: the result is right only if votes are
processed in order and exactly once.
"""
from __future__ import annotations

from engine_sim.engine.txn import Batch

CONTESTANTS = 25
MAX_VOTES_PER_PHONE = 2
DELETE_EVERY = 100
PHONES = 2000  # a small phone book, so the per-phone limit does bite


def initial_rows(table: str, rows: int):
    if table == "Contestants":
        return {c: f"contestant {c}" for c in range(CONTESTANTS)}
    if table == "Leaderboard":
        return {c: 0 for c in range(CONTESTANTS)}
    if table in ("Votes", "VotesByPhone"):
        return {}
    return None


def generate_batch(rng, batch_id: int, size: int) -> tuple:
    """Votes: phones uniform, contestants skewed (some are more popular than others)."""
    out = []
    for _ in range(size):
        phone = rng.below(PHONES)
        contestant = min(int(CONTESTANTS * rng.random() ** 1.6), CONTESTANTS - 1)
        out.append((phone, contestant))
    return tuple(out)


def vote(ctx, batch: Batch):
    accepted = []
    for i, (phone, contestant) in enumerate(batch.tuples):
        if (yield ctx.get("Contestants", contestant)) is None:
            continue  # the contestant was removed
        if (yield ctx.incr("VotesByPhone", phone, 1, MAX_VOTES_PER_PHONE)) is None:
            continue  # this phone has no votes left
        yield ctx.put("Votes", ctx.batch_id * 1000 + i, (phone, contestant))
        accepted.append((phone, contestant))
    return Batch(tuple(accepted), batch.carry)


def update_leaderboard(ctx, batch: Batch):
    for _phone, contestant in batch.tuples:
        yield ctx.incr("Leaderboard", contestant, 1)
    return batch


def delete_contestant(ctx, batch: Batch):
    parts = yield ctx.scan("Leaderboard")
    board = [row for rows in parts for row in rows]
    if (ctx.batch_id + 1) % DELETE_EVERY == 0 and len(board) > 1:
        lowest = min(board, key=lambda kv: (kv[1], -kv[0]))[0]
        yield [ctx.delete("Contestants", lowest), ctx.delete("Leaderboard", lowest),
               *ctx.delete_where("Votes", 1, lowest)]
    return Batch((), batch.carry)


PROCEDURES = {"vote": vote, "update_leaderboard": update_leaderboard,
              "delete_contestant": delete_contestant}


# -- the oracle: the same rules, one vote after another, no engine ---------------------------------

def serial_leaderboard(votes_per_batch) -> dict[int, int]:
    """The leaderboard after processing the batches serially in vote order."""
    board = {c: 0 for c in range(CONTESTANTS)}
    used: dict[int, int] = {}
    for b, votes in enumerate(votes_per_batch):
        for phone, contestant in votes:
            if contestant not in board or used.get(phone, 0) >= MAX_VOTES_PER_PHONE:
                continue
            used[phone] = used.get(phone, 0) + 1
            board[contestant] += 1
        if (b + 1) % DELETE_EVERY == 0 and len(board) > 1:
            lowest = min(board.items(), key=lambda kv: (kv[1], -kv[0]))[0]
            del board[lowest]
    return board


def winner(board: dict[int, int]) -> int:
    return max(board.items(), key=lambda kv: (kv[1], -kv[0]))[0]
