"""The TypeScript package's own suite (node --test ts/test/), and what ties it to the Python
library: the designs it ships are the ones Python resolves, the reasons it writes are
spec/log-design.json's, and its canonicalizer gives Python's digests on generated calls."""

from __future__ import annotations

import json
import random
import re
import subprocess
import sys

from tests.ts.node import TS, built, node, run_node
from toolcommit.model.canon import CanonError, canonical_intent, intent_scope


def test_the_node_suite_passes():
    built()
    done = subprocess.run(
        [node(), "--test", "--test-reporter=spec", "test/"],
        cwd=TS,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout[-4000:] + done.stderr[-2000:]
    assert re.search(r"ℹ fail 0", done.stdout), done.stdout[-2000:]


def test_the_shipped_designs_are_pythons():
    done = subprocess.run(
        [sys.executable, str(TS / "scripts" / "designs.py"), "--check"],
        capture_output=True,
        text=True,
    )
    assert done.returncode == 0, done.stderr


def test_the_reasons_are_the_specs():
    from toolcommit.runtime.lines import REASON

    out = run_node(
        'import { REASON } from "./dist/esm/design.js"; console.log(JSON.stringify(REASON));'
    )
    assert json.loads(out.stdout) == REASON, out.stderr


def test_each_shipped_designs_digest_is_computed_as_pythons():
    from toolcommit.runtime import design as D

    out = run_node(
        'import { loadDesign, SHIPPED } from "./dist/esm/index.js";'
        "const o = {}; for (const n of Object.keys(SHIPPED)) {"
        "  const d = loadDesign(n); o[n] = [d.digest, d.withTiming({delayBound: 1.5}).digest]; }"
        "console.log(JSON.stringify(o));"
    )
    got = json.loads(out.stdout)
    for name in D.SHIPPED:
        d = D.load(name)
        assert got[name] == [d.digest, d.with_timing(delay_bound=1.5).digest]


_TEXT = [
    "a",
    " a ",
    "a\u00a0 b",
    "\u0065\u0301",
    "é",
    "x\ty\n",
    '"q"',
    "\\",
    "\u2028",
    "𝒳",
    "",
    "ß",
]


def _value(rng: random.Random, depth: int = 0):
    kind = rng.randrange(7 if depth < 3 else 5)
    if kind == 0:
        return rng.choice(_TEXT) + rng.choice(_TEXT)
    if kind == 1:
        return rng.choice(
            [0, -0.0, 20, 20.0, 1.5, 1e-7, 1e16, 2**53, 2**53 + 2, 123456789.125, -3.25e-5, 1e22]
        )
    if kind == 2:
        return rng.choice([True, False])
    if kind == 3:
        return None
    if kind == 4:
        return rng.randrange(-(10**6), 10**6)
    if kind == 5:
        return [_value(rng, depth + 1) for _ in range(rng.randrange(3))]
    return {rng.choice(_TEXT) + str(i): _value(rng, depth + 1) for i in range(rng.randrange(4))}


def test_the_canonicalizer_gives_pythons_digests():
    rng = random.Random(42)
    calls = []
    for _ in range(400):
        args = {rng.choice(_TEXT) + k: _value(rng) for k in "abc"[: rng.randrange(1, 4)]}
        principal = rng.choice([None, "user:1", " u\u00e9 "])
        calls.append([rng.choice(["refund", " refund "]), args, rng.choice(_TEXT), principal])
    out = run_node(
        'import { canonicalIntent, intentScope } from "./dist/esm/index.js";'
        'import { readFileSync } from "node:fs";'
        "for (const [tool, args, scope, who] of JSON.parse(readFileSync(0, 'utf8'))) {"
        "  try { console.log(canonicalIntent(tool, args, intentScope(who, scope)).digest); }"
        "  catch (e) { console.log('error ' + e.message); } }",
        input=json.dumps(calls),
    )
    got = out.stdout.splitlines()
    assert len(got) == len(calls), out.stderr
    for (tool, args, scope, who), digest in zip(calls, got):
        try:
            want = canonical_intent(tool, args, intent_scope(who, scope)).digest
        except CanonError as e:
            want = f"error {e}"
        assert digest == want, (tool, args, scope, who)


SCHEMA = {
    "type": "object",
    "properties": {
        "charge": {"type": "string"},
        "amount": {"type": "integer"},
        "ratio": {"type": "number", "default": 0.5},
        "note": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "urgent": {"type": "boolean", "default": False},
        "meta": {},
    },
    "required": ["charge", "amount"],
}


def test_an_identity_from_a_json_schema_is_pythons_rule_and_normalization():
    """One tool's rule is one text in the log (`tc_tools`), whichever library declares it."""
    from toolcommit.runtime.identity import Identity, IdentityError
    from toolcommit.runtime.lines import dumps

    calls = [
        {"charge": "ch_1", "amount": "2000"},
        {"charge": "ch_1", "amount": 2000.0, "ratio": "0.25", "urgent": "true"},
        {"charge": 7, "amount": 1, "note": None, "meta": [1]},
        {"charge": "ch_1", "amount": "20.5"},
        {"charge": "ch_1"},
    ]
    out = run_node(
        'import { Identity } from "./dist/esm/index.js";'
        'import { readFileSync } from "node:fs";'
        "const [schema, calls] = JSON.parse(readFileSync(0, 'utf8'));"
        "const id = Identity.fromJsonSchema('refund', schema, ['charge', 'amount']);"
        "console.log(JSON.stringify(id.rule()));"
        "for (const c of calls) { try { console.log(JSON.stringify(id.normalize(c))); }"
        "  catch (e) { console.log('error'); } }",
        input=json.dumps([SCHEMA, calls]),
    )
    got = out.stdout.splitlines()
    ident = Identity.from_schema(SCHEMA, ("charge", "amount"), "refund")
    assert got[0] == dumps(ident.rule()), out.stderr
    for call, line in zip(calls, got[1:]):
        try:
            want = ident.normalize(call)
        except IdentityError:
            assert line == "error"
            continue
        assert json.loads(line) == want
