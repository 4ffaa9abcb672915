"""Helpers shared by the log-validation tests."""
import random


def interleave(evs: list[dict], rng: random.Random) -> list[dict]:
    """A random merge of the per-writer sequences: each writer's own order is kept."""
    queues: dict[str, list] = {}
    for e in evs:
        queues.setdefault(e["writer"], []).append(e)
    out = []
    while queues:
        w = rng.choice(sorted(queues))
        out.append(queues[w].pop(0))
        if not queues[w]:
            del queues[w]
    return out
