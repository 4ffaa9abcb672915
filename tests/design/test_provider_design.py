"""The newcomer's payments API, described by hand in a provider file, gets the Stripe design
from `design`; with its keys kept 1 h and a 2 h delay bound, that design breaks, and the
counterexample says how (a key pruned while a replay is still on its way)."""

import json
from pathlib import Path

import pytest

from tests.incli import cli
from tests.model.test_provider_file import PAYMENTS

REPO = Path(__file__).resolve().parents[2]
STRIPE = json.loads((REPO / "spec" / "designs" / "stripe.json").read_text())


@pytest.mark.slow  # one whole design search: about a minute on two loaded cores
def test_a_hand_written_payments_file_gets_the_stripe_design_and_its_counterexample(tmp_path):
    provider, design = tmp_path / "handpay.json", tmp_path / "handpay.design.json"
    provider.write_text(json.dumps(PAYMENTS))
    code, out, _ = cli("design", "--env", str(provider), "-o", str(design), "--explain", "none")
    assert code == 0 and "Recommendation for handpay" in out and "stripe" not in out
    said = " ".join(out.split())  # the file's uncited timing: listed, pointing at the file
    assert f"assumes delay_bound=15m without a document saying so (see: {provider})" in said
    found = json.loads(design.read_text())
    assert found["knobs"] == STRIPE["knobs"] and found["timing"] == STRIPE["timing"]
    assert found["environment"] == "handpay" and found["provider_file"] == PAYMENTS

    code, out, _ = cli(
        "check", "--design", str(design), "--instance", "transport_retry",
        "--set", "key_lifetime=1h", "--set", "delay_bound=2h",
    )  # fmt: skip
    assert code == 1
    assert "assumes W >= L (replay_window=1h, delay_bound=2h, key_lifetime=1h)" in out
    assert "I1 VIOLATED on instance transport_retry" in out and "expire_key(token=k0)" in out
