"""The shipped provider files (spec/providers/): real APIs agents call, each promise cited
from the provider's own documentation, each with the design proven for it in spec/designs/
(re-judged with the built-in profiles' designs in test_design_file.py), and docs/providers.md
true of them: where two providers differ in one promise, the design moves with it."""

import json
import re
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.model import provider_file
from toolcommit.model.environment import profile, resolve

ROOT = Path(__file__).resolve().parents[2]
PROVIDERS = ROOT / "spec" / "providers"
DESIGNS = ROOT / "spec" / "designs"
EXAMPLES = {"example-payments"}  # a shape to copy, not a real API
SHIPPED = sorted(
    p
    for p in PROVIDERS.glob("*.json")
    if p.stem not in EXAMPLES and json.loads(p.read_text("utf-8"))["kind"] == provider_file.KIND
)
PAGE = ROOT / "docs" / "providers.md"


def test_real_apis_of_every_kind_agents_call_are_shipped():
    kinds = {
        "payments": {"adyen", "paypal"},
        "messaging": {"twilio"},
        "code hosting": {"github"},
        "object storage with conditional writes": {"s3"},
        "a table behind an internal service": {"postgres"},
    }
    names = {p.stem for p in SHIPPED}
    assert len(names) >= 5
    assert all(names & want for want in kinds.values()), kinds


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_every_promise_of_a_shipped_provider_rests_on_a_sentence_of_its_documents(path):
    raw = json.loads(path.read_text("utf-8"))
    assert raw["name"] == path.stem
    for b in raw["behaviours"]:
        if b["source"] is None:  # only a number no document gives, stated as an assumption
            assert b.get("assumed") and set(b["sets"]) == {"delay_bound"}, b
            assert "assumption" in b["why_no_source"]
            continue
        assert b["source"]["url"].startswith("https://"), b
        assert len(b["source"]["rests_on"].split()) >= 8, b  # a sentence, not a label
    wire = raw.get("wire")
    if wire is not None:
        assert wire["source"]["url"].startswith("https://")
        assert wire["key_header"] in wire["source"]["rests_on"]
    assert provider_file.read(str(path)).name == path.stem  # the one reader takes it


@pytest.mark.parametrize("path", SHIPPED, ids=[p.stem for p in SHIPPED])
def test_a_shipped_provider_names_the_design_proven_for_this_very_file(path):
    """The design file carries the provider file it was proven for: a provider file changed
    without its design regenerated fails here."""
    raw = json.loads(path.read_text("utf-8"))
    design = (path.parent / raw["design"]).resolve()
    assert design == DESIGNS / f"{path.stem}.json"
    doc = json.loads(design.read_text("utf-8"))
    assert doc["environment"] == path.stem
    assert doc["provider_file"] == raw, (
        f"regenerate: toolcommit design --env spec/providers/{path.name} "
        f"-o spec/designs/{path.name}"
    )


def test_stripe_and_adyen_differ_in_one_promise_the_status_read():
    """Both keep keys and answer a retry with the first response, neither fences nor undoes;
    only Stripe has a status read (a charge's refunds, listed)."""
    stripe, adyen = profile("stripe"), profile(resolve(str(PROVIDERS / "adyen.json")))
    differ = {
        k
        for k in stripe.assumptions.keys() | adyen.assumptions.keys()
        if stripe.assumptions.get(k) != adyen.assumptions.get(k)
    }
    assert differ == {"status_read"}


def test_the_design_moves_with_the_status_read():
    """Stripe's design keeps exactly-once by reading the list of refunds; at Adyen, which
    documents no status read, the design proven is at-most-once, and Stripe's design without
    its read doubles an effect (the shortest run: the user's re-ask after a give-up)."""
    by = {n: json.loads((DESIGNS / f"{n}.json").read_text("utf-8")) for n in ("stripe", "adyen")}
    assert by["stripe"]["guarantee"] == "exactly-once"
    assert by["adyen"]["guarantee"] == "at-most-once"
    assert by["stripe"]["knobs"]["on_unknown"] == "replay_then_reconcile"
    assert by["adyen"]["knobs"]["on_unknown"] == "reconcile"
    args = ["check", "--design", str(DESIGNS / "stripe.json"), "--instance", "zombie"]
    args += ["--property", "I1", "--explain", "none"]
    assert main(args) == 0
    assert main(args + ["--set", "status_read=no"]) == 1


def _table() -> dict:
    """docs/providers.md's table: provider name -> its row's cells."""
    rows = {}
    for line in PAGE.read_text("utf-8").splitlines():
        m = re.match(r"\| \[`?([a-z0-9.-]+)`?\]\(\.\./spec/providers/", line)
        if m:
            rows[m.group(1)] = [c.strip() for c in line.strip("|").split("|")]
    return rows


def test_the_docs_table_names_every_shipped_provider_with_its_designs_guarantee():
    rows = _table()
    assert set(rows) == {p.stem for p in SHIPPED}
    for name, cells in rows.items():
        doc = json.loads((DESIGNS / f"{name}.json").read_text("utf-8"))
        assert doc["guarantee"] in cells, (name, cells)
        assert f"[design](../spec/designs/{name}.json)" in cells, (name, cells)


def test_the_answer_to_a_request_in_flight_does_not_move_a_design_that_fences_and_reads():
    """S3 refuses a request under a key in flight, PostgreSQL makes it wait; both designs
    settle a doubt with the fence and the read, and are one design."""
    s3, pg = (profile(resolve(str(PROVIDERS / f"{n}.json"))) for n in ("s3", "postgres"))
    assert (s3.assumptions["in_flight_key"], pg.assumptions["in_flight_key"]) == (
        "refused",
        "serialized",
    )
    by = {n: json.loads((DESIGNS / f"{n}.json").read_text("utf-8")) for n in ("s3", "postgres")}
    assert by["s3"]["knobs"] == by["postgres"]["knobs"]
    assert by["s3"]["knobs"]["fencing"] == "on" and by["s3"]["guarantee"] == "exactly-once"
