"""`IntentLog(provider=FILE)` with a provider file: the log follows the design the file names,
proven for the file as it is (the design embeds it); a file that names none, or whose design
was proven for other promises, is refused saying what to run; a log written under it reopens
in a fresh process (status, recover) with the provider's wire, read from the log alone."""

import json
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from toolcommit.runtime import IntentLog
from toolcommit.runtime.design import DesignError

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "spec" / "providers" / "example-payments.json"
STRIPE = json.loads((REPO / "spec" / "designs" / "stripe.json").read_text())


def copy(tmp_path) -> Path:
    for name in ("example-payments.json", "example-payments.design.json"):
        shutil.copy(REPO / "spec" / "providers" / name, tmp_path / name)
    return tmp_path / "example-payments.json"


def test_the_log_follows_the_design_the_provider_file_names(tmp_path):
    log = IntentLog.sqlite(str(tmp_path / "i.db"), writer="w0", provider=str(copy(tmp_path)))
    try:
        assert log.design.environment == "example-payments"
        assert dict(log.design.knobs) == {**log.design.knobs, **STRIPE["knobs"]}
        assert log.design.key_header == "Idempotency-Key"
    finally:
        log.close()


def test_a_provider_file_naming_no_design_is_refused_saying_what_to_run(tmp_path):
    doc = json.loads(EXAMPLE.read_text())
    doc.pop("design")
    path = tmp_path / "p.json"
    path.write_text(json.dumps(doc))
    with pytest.raises(DesignError, match=r"names no design .*toolcommit design --env"):
        IntentLog.sqlite(str(tmp_path / "i.db"), writer="w0", provider=str(path))


def test_a_design_proven_for_other_promises_is_refused(tmp_path):
    path = copy(tmp_path)
    doc = json.loads(path.read_text())
    doc["behaviours"][0]["sets"]["key_lifetime"] = "1h"  # edited after the design was proven
    path.write_text(json.dumps(doc))
    with pytest.raises(DesignError, match="not proven for the file as it is now"):
        IntentLog.sqlite(str(tmp_path / "i.db"), writer="w0", provider=str(path))


def test_a_log_under_a_provider_file_reopens_in_a_fresh_process_from_the_log_alone(tmp_path):
    db = tmp_path / "i.db"
    IntentLog.sqlite(str(db), writer="w0", provider=str(copy(tmp_path))).close()
    (tmp_path / "example-payments.json").unlink()  # the file is gone: the log keeps the design
    done = subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", "status", str(db)],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "design example-payments.design.json, exactly-once" in " ".join(done.stdout.split())


def test_validate_design_takes_the_provider_file_and_finds_what_the_stripe_design_finds():
    from tests.incli import cli

    log = str(REPO / "tests" / "fixtures" / "logs" / "design_early_read-bad.jsonl")
    code, out, _ = cli("validate", "--design", str(EXAMPLE), log)
    words = " ".join(out.split())
    stripe_code, stripe_out, _ = cli("validate", "--design", "stripe", log)
    assert code == stripe_code == 1
    assert "environment example-payments" in words and "stripe" not in words
    assert f"delay_bound=15m of {REPO}/spec/providers/example-payments.design.json" in words
    assert out.count("DESIGN") == stripe_out.count("DESIGN")
