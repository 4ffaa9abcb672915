"""A provider file: the schema and the one reader agree; a promise the file does not make is
absent; a setting no provider can promise is refused with its reason; every error names the
file and line; `--env FILE` is taken where a profile name is, and output calls the provider
by the file's name."""

import json
from pathlib import Path

import jsonschema
import pytest

from tests.incli import cli
from toolcommit.model import environment
from toolcommit.model.errors import InputError
from toolcommit.model.provider_file import ABSENT, from_text, read

ROOT = Path(__file__).resolve().parents[2]
SCHEMA = json.loads((ROOT / "spec" / "provider.schema.json").read_text())
EXAMPLE = ROOT / "spec" / "providers" / "example-payments.json"

# the newcomer's payments API, written by hand: 24 h keys, the first response saved, a 409
# while a key is in flight, a consistent read of a payment's refunds
PAYMENTS = {
    "kind": "toolcommit provider",
    "version": 1,
    "name": "handpay",
    "meaning": "a payments API with 24 h keys and a status endpoint",
    "behaviours": [
        {
            "sets": {"provider_idempotent": "yes", "key_lifetime": "24h"},
            "what": "the first response under a key is saved and replayed for 24 hours",
            "source": {"url": "https://pay.invalid/idem", "rests_on": "Keys are kept 24 h."},
        },
        {
            "sets": {"in_flight_key": "refused"},
            "what": "a request under a key in flight answers 409",
            "source": {"url": "https://pay.invalid/errors", "rests_on": "409: key in use."},
        },
        {
            "sets": {"status_read": "yes"},
            "what": "the list of a payment's refunds is consistent",
            "source": {"url": "https://pay.invalid/refunds", "rests_on": "Lists every refund."},
        },
    ],
    "timing": {"delay_bound": "15m"},
}


def write(tmp_path, doc, name="p.json", text=None):
    path = tmp_path / name
    path.write_text(text if text is not None else json.dumps(doc, indent=2))
    return str(path)


def test_the_schema_is_valid_and_the_example_and_hand_written_file_follow_it():
    jsonschema.Draft202012Validator.check_schema(SCHEMA)
    jsonschema.validate(json.loads(EXAMPLE.read_text()), SCHEMA)
    jsonschema.validate(PAYMENTS, SCHEMA)


def test_the_hand_written_payments_file_fixes_what_the_stripe_profile_fixes(tmp_path):
    name = environment.resolve(write(tmp_path, PAYMENTS))
    assert name == "handpay"
    assert environment.held_fixed(name) == environment.held_fixed("stripe")
    assert environment.profile(name).budgets == environment.profile("stripe").budgets


def test_a_promise_the_file_does_not_make_is_absent(tmp_path):
    bare = {**PAYMENTS, "name": "bare", "behaviours": [], "timing": {}}
    p = environment.profile(environment.resolve(write(tmp_path, bare)))
    assert p.assumptions == ABSENT
    assert p.budgets == {"errors_before": 1, "errors_after": 1}
    assert p.timing == {}


def test_the_file_sets_fault_budgets_and_timing_a_profile_cannot_leave_out(tmp_path):
    doc = {**PAYMENTS, "name": "budgets", "faults": {"errors_after": 2, "stale_reads": 0}}
    p = environment.profile(environment.resolve(write(tmp_path, doc)))
    assert p.budgets == {"errors_before": 1, "errors_after": 2, "key_expiries": 1}
    assert p.timing == {"key_lifetime": 86400, "delay_bound": 900}
    assert "delay_bound" in p.assumed()  # given outside a cited behaviour: listed as assumed


def test_a_default_budget_no_provider_can_promise_away_is_inherent(tmp_path):
    """design never offers as a way out a promise the file's reader would refuse."""
    doc = {**PAYMENTS, "name": "inherent", "faults": {"errors_after": 2}}
    p = environment.profile(environment.resolve(write(tmp_path, doc)))
    assert "no provider can promise none" in p.inherent("errors_before")
    assert "no provider can promise none" in p.inherent("errors_after")
    assert "24h" in p.inherent("key_expiries")
    assert p.inherent("stale_reads") == ""  # a consistent status read can promise it away


@pytest.mark.parametrize(
    "change, where, says",
    [
        ({"faults": {"errors_before": 0}}, '"errors_before"', "no provider can promise none"),
        ({"colour": "red"}, '"colour"', 'unknown field "colour"'),
        ({"name": "stripe"}, '"name"', "built-in profile"),
        ({"timing": {"delay_bound": "soon"}}, '"delay_bound"', "not a number with a unit"),
    ],
)
def test_each_error_names_the_file_its_line_and_what_to_do(tmp_path, change, where, says):
    text = json.dumps({**PAYMENTS, **change}, indent=2)
    path = write(tmp_path, None, text=text)
    with pytest.raises(InputError) as e:
        read(path)
    line = next(i for i, t in enumerate(text.splitlines(), 1) if where in t)
    assert str(e.value).startswith(f"{path}:{line}: ") and says in str(e.value)


def test_a_setting_inside_a_behaviour_is_refused_at_its_line_with_the_reason():
    doc = json.loads(json.dumps(PAYMENTS))
    doc["behaviours"][1]["sets"]["errors_after"] = 0
    text = json.dumps(doc, indent=2)
    with pytest.raises(InputError, match=r"x.json:\d+: errors_after=0 is refused: .*500"):
        from_text(text, "x.json")


def test_keys_honoured_without_a_lifetime_are_refused():
    doc = json.loads(json.dumps(PAYMENTS))
    doc["behaviours"][0]["sets"].pop("key_lifetime")
    with pytest.raises(InputError, match="set key_lifetime"):
        from_text(json.dumps(doc), "x.json")


def test_two_files_giving_one_name_different_promises_are_refused(tmp_path):
    environment.resolve(write(tmp_path, {**PAYMENTS, "name": "twice"}, "a.json"))
    code, _, err = cli(
        "check", "--env", write(tmp_path, {**PAYMENTS, "name": "twice", "timing": {}}, "b.json")
    )
    assert code == 2 and "already read from" in err


def test_check_takes_a_provider_file_and_names_the_provider_as_the_file_does(tmp_path):
    code, out, _ = cli("check", "--env", write(tmp_path, PAYMENTS), "--instance", "default")
    assert code == 1  # recommended sends one key forever: its replay outlives the 24 h key
    assert "recommended@handpay" in out and "stripe" not in out


def test_a_bad_provider_file_is_one_line_and_exit_2(tmp_path):
    code, out, err = cli("design", "--env", write(tmp_path, None, text="{\n  nope"))
    assert code == 2 and out == ""
    assert err.count("\n") == 1 and ":2: not JSON" in err
