"""`torture --env FILE`: the harness's provider fake behaves as a provider file says (derived
from its facts as a built-in profile's is), the library follows the design the file names;
clean under it, caught under a weaker design (`--design`)."""

import json
from dataclasses import replace
from pathlib import Path

from toolcommit.checker.cli import main
from toolcommit.checker.torture.profiles import PROFILES, add_provider

REPO = Path(__file__).resolve().parents[2]
EXAMPLE = REPO / "spec" / "providers" / "example-payments.json"
DESIGN = REPO / "spec" / "providers" / "example-payments.design.json"


def test_the_fake_of_a_payments_file_is_the_stripe_fake_under_the_files_name():
    name = add_provider(str(EXAMPLE))
    fake = PROFILES[name]
    assert (fake.name, fake.env) == ("example-payments", "example-payments")
    stripe = PROFILES["stripe"]
    assert replace(fake, name="stripe", env="stripe", meaning=stripe.meaning) == stripe


def test_the_library_conforms_on_the_payments_file_under_its_design(capsys):
    assert main(["torture", "--env", str(EXAMPLE), "--runs", "6"]) == 0
    out = capsys.readouterr().out
    assert "profile example-payments" in out and "6 of 6: 6 CONFORMS" in out


def test_a_weaker_design_sending_no_key_is_caught_on_the_payments_file(tmp_path, capsys):
    weak = json.loads(DESIGN.read_text())
    weak["knobs"]["idempotency_key"] = "none"  # a replay the provider cannot recognise
    path = tmp_path / "weak.json"
    path.write_text(json.dumps(weak))
    argv = ["torture", "--env", str(EXAMPLE), "--design", str(path), "--runs", "60"]
    assert main(argv) == 1
    out = capsys.readouterr().out
    assert "caught at run" in out and f"--design {path}" in out


def test_a_design_proven_for_another_environment_is_refused(capsys):
    argv = ["torture", "--env", str(EXAMPLE), "--design", "spec/designs/stripe.json"]
    assert main(argv) == 2
    assert "proven for stripe, not --env example-payments" in capsys.readouterr().err


def test_an_unknown_env_name_is_one_line_naming_the_choices(capsys):
    assert main(["torture", "--env", "no-such-api"]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "provider file" in err and "fenced" in err
