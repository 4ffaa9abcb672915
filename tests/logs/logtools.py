"""Helpers shared by the log-validation tests: logs to check (generated, interleaved,
damaged, one per kind of bad line) and ways to run the checker on them."""

import random

from hypothesis import strategies as st

from toolcommit.checker.cli import main
from toolcommit.checker.logs import shards


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


BAD = {
    "not_json": b'{"type":"crash","writer":"w","seq":1}\n{"type": "crash",, }\n',
    "bad_field": b'{"type":"crash","writer":"w","seq":1}\n{"type":"crash","writer":"w","seq":"two"}\n',
    "missing_field": b'{"type":"transition","writer":"w","seq":1,"key":"k","to":"RECORDED"}\n',
    "unknown_state": b'{"type":"transition","writer":"w","seq":1,"key":"k","from":"PROPOSED","to":"DONE"}\n',
    "unknown_type": b'{"type":"heartbeat","writer":"w","seq":1}\n',
    "not_object": b"[1, 2]\n",
    "not_utf8": b'{"type":"cr\xffash","writer":"w","seq":1}\n',
    "empty_key": b'{"type":"transition","writer":"w","seq":1,"key":"","from":"PROPOSED","to":"RECORDED"}\n',
    "effect_without_key": b'{"type":"effect","writer":"w","seq":1,"tool":"t","args":{},"scope":"s","kind":"apply"}\n',
    "big_seq": b'{"type":"crash","writer":"w","seq":9223372036854775808}\n',
    "nested": b'{"type":"crash","writer":"w","seq":1,"x":' + b"[" * 80 + b"]" * 80 + b"}\n",
    "no_canonical_form": b'{"type":"proposal","writer":"w","seq":1,"call_id":"c","tool":"t",'
    b'"args":{"amount":1," amount":2},"scope":"s","key":"k","decision":"accepted"}\n',
    "too_long": b'{"type":"crash","writer":"w","seq":1,"pad":"' + b"x" * 200 + b'"}\n',
    "cut_off": b'{"type":"crash","writer":"w","seq":1}\n{"type":"restart","writer":"w","se',
    "only_cut_off": b'{"type":"crash","wri',
    "blank_only": b"\n  \n",
    "bom_and_blank": b'\xef\xbb\xbf{"type":"crash","writer":"w","seq":1}\n\n   \n',
    "unknown_field": b'{"type":"crash","writer":"w","seq":1,"extra":{"a":[1]}}\n',
}


STATES = [
    "PROPOSED",
    "RECORDED",
    "DISPATCHED",
    "ACKED",
    "UNKNOWN",
    "RECONCILING",
    "COMPENSATED",
    "DEAD_LETTER",
    "REJECTED_CONFLICT",
]


# conforming histories: (states, index at which a second writer takes over, or None)
PATHS = [
    (["PROPOSED", "RECORDED", "DISPATCHED", "ACKED"], None),
    (["PROPOSED", "RECORDED", "REJECTED_CONFLICT"], None),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "ACKED"], 3),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "RECONCILING", "DEAD_LETTER"], 3),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "COMPENSATED"], None),
    (["PROPOSED", "RECORDED", "DISPATCHED", "UNKNOWN", "DEAD_LETTER"], 3),
]


def number(lanes: dict[str, list[dict]]) -> dict[str, list[dict]]:
    """Give each writer's events seq 1, 2, ..."""
    for w, evs in lanes.items():
        for i, ev in enumerate(evs, 1):
            ev["writer"], ev["seq"] = w, i
    return lanes


def merge(lanes: dict[str, list[dict]], picks: list[int]) -> list[dict]:
    """One interleaving of the writers' own orders, chosen by `picks`."""
    queues = {w: list(evs) for w, evs in lanes.items() if evs}
    out, i = [], 0
    while queues:
        names = sorted(queues)
        w = names[picks[i % len(picks)] % len(names)] if picks else names[0]
        i += 1
        out.append(queues[w].pop(0))
        if not queues[w]:
            del queues[w]
    return out


# ----- conforming logs ------------------------------------------------------------------------
@st.composite
def conforming(draw) -> dict[str, list[dict]]:
    """A conforming multi-writer log: each key one intent, one legal history (a takeover by a
    second writer with a higher fence after UNKNOWN), the provider's effect records."""
    lanes: dict[str, list[dict]] = {"w1": [], "w2": [], "w3": [], "bank": []}
    for i in range(draw(st.integers(1, 4))):
        key, call = f"k{i}", {"tool": "refund", "args": {"amount": i + 1}, "scope": "u"}
        states, takeover = draw(st.sampled_from(PATHS))
        first, second = draw(st.permutations(["w1", "w2", "w3"]))[:2]
        lanes[first].append(
            {"type": "proposal", "call_id": f"t{i}", "key": key, "decision": "accepted", **call}
        )
        fence = 0
        for j, (a, b) in enumerate(zip(states, states[1:])):
            w = second if takeover is not None and j >= takeover else first
            if b in ("DISPATCHED", "RECONCILING"):
                fence += 1
            ev = {"type": "transition", "key": key, "from": a, "to": b}
            if fence:
                ev["fence"] = fence
            lanes[w].append(ev)
            if b == "DISPATCHED" and states[-1] in ("ACKED", "COMPENSATED"):
                lanes["bank"].append(
                    {
                        "type": "effect",
                        "key": key,
                        "kind": "apply",
                        "fence": fence,
                        "effect_id": f"e{i}",
                        **call,
                    }
                )
        if states[-1] == "COMPENSATED":
            lanes["bank"].append({"type": "effect", "key": key, "kind": "compensate", **call})
        if draw(st.booleans()):
            lanes[draw(st.sampled_from(["w1", "w2", "w3"]))].append({"type": "restart"})
    return number(lanes)


@st.composite
def hostile(draw) -> dict[str, list[dict]]:
    """Anything well-formed: random moves (legal or not) of a few keys by a few writers,
    crashes, duplicate and paraphrased proposals, effects by key or idempotency key."""
    lanes: dict[str, list[dict]] = {"w1": [], "w2": [], "w3": [], "bank": []}
    keys = [f"k{i}" for i in range(draw(st.integers(1, 3)))]
    for _ in range(draw(st.integers(1, 14))):
        kind = draw(st.sampled_from(["proposal", "move", "move", "move", "effect", "crash"]))
        w = draw(st.sampled_from(["w1", "w2", "w3"]))
        key = draw(st.sampled_from(keys))
        call = {
            "tool": "refund",
            "args": {"amount": draw(st.sampled_from([20, 20.0, 7]))},
            "scope": "u",
        }
        if kind == "proposal":
            lanes[w].append(
                {
                    "type": "proposal",
                    "call_id": "t",
                    "key": key,
                    "decision": draw(st.sampled_from(["accepted", "duplicate"])),
                    "epoch": draw(st.integers(1, 2)),
                    **call,
                }
            )
        elif kind == "move":
            ev = {
                "type": "transition",
                "key": key,
                "from": draw(st.sampled_from(STATES)),
                "to": draw(st.sampled_from(STATES)),
            }
            if draw(st.booleans()):
                ev["fence"] = draw(st.integers(1, 3))
            lanes[w].append(ev)
        elif kind == "effect":
            ev = {
                "type": "effect",
                "kind": draw(st.sampled_from(["apply", "apply", "compensate"])),
                **call,
                **({"key": key} if draw(st.booleans()) else {"idempotency_key": key}),
            }
            if draw(st.booleans()):
                ev["fence"] = draw(st.integers(1, 3))
            if draw(st.booleans()):
                ev["effect_id"] = draw(st.sampled_from(["e1", "e2"]))
            lanes["bank"].append(ev)
        else:
            lanes[w].append({"type": "crash"})
    return number(lanes)


picks = st.lists(st.integers(0, 3), min_size=1, max_size=30)


def outputs(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


def proposal(key, seq, amount, w="w1", epoch=None):
    ev = {
        "type": "proposal",
        "writer": w,
        "seq": seq,
        "call_id": f"c{seq}",
        "tool": "refund",
        "args": {"amount": amount},
        "scope": "u",
        "key": key,
        "decision": "accepted",
    }
    return ev if epoch is None else dict(ev, epoch=epoch)


def move(key, seq, frm, to, w="w1"):
    return {"type": "transition", "writer": w, "seq": seq, "key": key, "from": frm, "to": to}


def effect(key, seq, amount, w="bank"):
    return {
        "type": "effect",
        "writer": w,
        "seq": seq,
        "key": key,
        "tool": "refund",
        "args": {"amount": amount},
        "scope": "u",
        "kind": "apply",
    }


def keys_on_different_shards(n=2):
    """Two key names that shard `n` ways land on different shards, whether routed by
    Python's hash (forked shards without the line index) or by CRC-32 (with it, and on a
    cluster)."""
    names = [f"key-{i}" for i in range(50)]
    a = names[0]
    return a, next(
        b
        for b in names
        if all(
            shards.shard_of(b, n, stable) != shards.shard_of(a, n, stable)
            for stable in (False, True)
        )
    )


def in_process(paths, jobs, focus=(), between=lambda method, i: None):
    """The shard protocol with every shard in this process, routed by CRC-32 (as on a
    cluster, where shards are not forked from one parent); `between` runs before each
    call of a shard."""
    from toolcommit.checker.logs.merge import merge
    from toolcommit.checker.logs.read import DEFAULT_MAX_LINE_BYTES as limit
    from toolcommit.checker.logs.shards import Shard, coordinate
    from toolcommit.checker.logs.validate import with_asks

    every = [Shard(paths, limit, focus, i, jobs, None, True) for i in range(jobs)]

    def call(method, args):
        out = []
        for i, (s, a) in enumerate(zip(every, args)):
            between(method, i)
            out.append(getattr(s, method)(*a))
        return out

    def fixup(keys):
        s = Shard(paths, limit, focus, 0, jobs, keys, True)
        s.run()
        return s.finish()

    return with_asks(merge(*coordinate(call, jobs, fixup), focus), paths, focus=focus)


def bench_like(n: int, seed: int) -> list[dict]:
    """Many interleaved intents: proposals, chains to ACKED (some through UNKNOWN and a
    reconcile by another writer), effects, duplicate proposals, crashes and lost lines."""
    rng = random.Random(seed)
    out, seqs = [], {}

    def emit(ev):
        w = ev["writer"]
        seqs[w] = seqs.get(w, 0) + (2 if rng.random() < 0.01 else 1)  # a lost line
        out.append(dict(ev, seq=seqs[w]))

    live = []
    for i in range(n):
        w = f"w{rng.randrange(4)}"
        call = {
            "tool": "refund",
            "args": {"amount": rng.randrange(1, 5), "order": f"o{i % 50}"},
            "scope": f"u{i % 7}",
        }
        key = f"k{i % (n - 3)}"  # a few keys come back
        steps = [
            {
                "type": "proposal",
                "writer": w,
                "call_id": f"t{i}",
                "key": key,
                "decision": "accepted",
                **call,
            },
            {"type": "transition", "writer": w, "key": key, "from": "PROPOSED", "to": "RECORDED"},
            {
                "type": "transition",
                "writer": w,
                "key": key,
                "from": "RECORDED",
                "to": "DISPATCHED",
                "fence": 1,
            },
        ]
        if rng.random() < 0.2:
            other = f"w{rng.randrange(4)}"
            steps += [
                {
                    "type": "transition",
                    "writer": w,
                    "key": key,
                    "from": "DISPATCHED",
                    "to": "UNKNOWN",
                    "fence": 1,
                },
                {
                    "type": "proposal",
                    "writer": other,
                    "call_id": f"r{i}",
                    "key": key,
                    "decision": "duplicate",
                    **call,
                },
                {
                    "type": "transition",
                    "writer": other,
                    "key": key,
                    "from": "UNKNOWN",
                    "to": "RECONCILING",
                    "fence": 2,
                },
                {
                    "type": "transition",
                    "writer": other,
                    "key": key,
                    "from": "RECONCILING",
                    "to": "ACKED",
                    "fence": 2,
                },
            ]
        else:
            steps.append(
                {
                    "type": "transition",
                    "writer": w,
                    "key": key,
                    "from": "DISPATCHED",
                    "to": "ACKED",
                    "fence": 1,
                }
            )
        steps.insert(
            3,
            {
                "type": "effect",
                "writer": "bank",
                "key": key,
                "kind": "apply",
                "fence": 1,
                "effect_id": f"e{i}",
                **call,
            },
        )
        if rng.random() < 0.02:
            steps.insert(2, {"type": "crash", "writer": w})
        live.append(steps)
        while len(live) > 6 or (i == n - 1 and live):
            s = live[rng.randrange(len(live))]
            emit(s.pop(0))
            if not s:
                live.remove(s)
    return out


def damaged(base: list, rng: random.Random, alphabet: bytes) -> list:
    """`base`'s lines with one to four hostile edits drawn from `rng`: a byte flipped to
    one of `alphabet`, a line repeated, dropped, or cut (keeping its newline)."""
    lines = list(base)
    for _ in range(rng.randint(1, 4)):
        i = rng.randrange(len(lines))
        op = rng.randrange(4)
        if op == 0:
            b = bytearray(lines[i])
            b[rng.randrange(len(b))] = rng.choice(alphabet)
            lines[i] = bytes(b)
        elif op == 1:
            lines.insert(i, lines[i])
        elif op == 2:
            del lines[i]
        else:
            lines[i] = lines[i][: rng.randrange(len(lines[i]))] + b"\n"
    return lines
