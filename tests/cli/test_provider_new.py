"""`toolcommit provider new`: the few questions that decide a design, answered by flags or
on stdin, make a provider file the one reader accepts and `design` runs on, in one sitting;
a bad answer is refused in one line (exit 2) or, at a terminal, asked again; an existing
file is never replaced without --force."""

import io
import json
import os
import subprocess
import sys

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.provider import gather
from toolcommit.checker.design.provider_new import QUESTIONS
from toolcommit.model.environment import profile, resolve
from toolcommit.model.errors import UsageError

# a payments API like Stripe's: a key in Idempotency-Key kept 24 h, the first response
# saved, a request in flight refused (409), a consistent status read, no fence, no undo
STRIPE_LIKE = ["acme-pay", "Idempotency-Key", "api.acme.com", "24h", "yes", "409"]
STRIPE_LIKE += ["consistent", "no", "no", "15m"]


def new(path, *flags, answers=(), timeout=120):
    """`toolcommit provider new PATH FLAGS` in its own process, the answers on stdin."""
    return subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", "provider", "new", str(path), *flags],
        input="".join(f"{a}\n" for a in answers),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


def test_answers_on_stdin_write_a_file_that_design_accepts_in_one_sitting(tmp_path, capsys):
    path = tmp_path / "acme-pay.json"
    done = new(path, answers=STRIPE_LIKE)
    assert done.returncode == 0, done.stderr
    assert done.stdout == f"next: toolcommit design --env {path}\n"
    assert f"wrote {path}" in done.stderr
    name = resolve(str(path))  # the one reader takes it
    p = profile(name)
    assert name == "acme-pay"
    assert p.assumptions == {
        "provider_idempotent": "yes",
        "in_flight_key": "refused",
        "status_read": "yes",
        "provider_fences": "no",
        "compensable": "no",
    }
    assert p.wire.key_header == "Idempotency-Key" and p.wire.hosts == ("api.acme.com",)
    code = main(["design", "--env", str(path), "--instance", "ack_loss", "--explain", "none"])
    out = capsys.readouterr().out
    assert code == 0 and "environment acme-pay" in out
    assert "key_lifetime=24h" in out and "delay_bound=15m" in out


def test_flags_answer_every_question_and_nothing_is_read_from_stdin(tmp_path):
    path = tmp_path / "mailer.json"
    flags = ["--name", "mailer", "--key-header", "none", "--status-read", "none"]
    flags += ["--fence", "no", "--undo", "no", "--delay-bound", "unbounded"]
    done = new(path, *flags, answers=["this line is never read"])
    assert done.returncode == 0, done.stderr
    doc = json.loads(path.read_text("utf-8"))
    assert "wire" not in doc
    assert {"provider_idempotent": "no"} in [b["sets"] for b in doc["behaviours"]]
    assert all(b["source"] is None and b["why_no_source"] for b in doc["behaviours"])


def test_a_key_that_lets_a_request_in_flight_through_is_no_key(tmp_path):
    path = tmp_path / "leaky.json"
    answers = ["leaky", "X-Request-Id", "api.leaky.io", "7d", "yes", "duplicate"]
    done = new(path, answers=answers + ["none", "no", "no", "unbounded"])
    assert done.returncode == 0, done.stderr
    assert profile(resolve(str(path))).assumptions["provider_idempotent"] == "no"


def test_a_first_response_not_saved_makes_an_applied_request_read_as_an_error(tmp_path):
    path = tmp_path / "forgetful.json"
    answers = ["forgetful", "Idempotency-Key", "api.forgetful.io", "1h", "no", "waits"]
    done = new(path, answers=answers + ["lags", "yes", "yes", "30s"])
    assert done.returncode == 0, done.stderr
    p = profile(resolve(str(path)))
    assert p.budgets["errors_after"] == 2 and p.budgets["key_expiries"] == 1
    assert p.assumptions["in_flight_key"] == "serialized"
    assert p.assumptions["status_read"] == "no"  # a read that only lags proves nothing
    assert (p.assumptions["provider_fences"], p.assumptions["compensable"]) == ("yes", "yes")


@pytest.mark.parametrize(
    "answers, says",
    [
        (["acme", "Idempotency-Key", "api.acme.com", "soon"], "--key-lifetime: 'soon' is not"),
        (["acme", "Idempotency-Key", "api.acme.com", "24h", "maybe"], "--first-response"),
        (["Acme Pay!"], "--name: 'Acme Pay!' is not a name"),
        (["acme", "none", "sometimes"], "--status-read: 'sometimes' is not one of"),
        (["acme", "none"], "--status-read: no answer (input ended)"),
    ],
)
def test_a_bad_or_missing_answer_is_refused_in_one_line_and_nothing_is_written(
    tmp_path, answers, says
):
    path = tmp_path / "acme.json"
    done = new(path, answers=answers)
    assert done.returncode == 2 and "Traceback" not in done.stderr
    assert says in done.stderr and len(done.stderr.strip().splitlines()) == 1, done.stderr
    assert os.listdir(tmp_path) == []  # no file, no temporary file


def test_a_bad_flag_is_refused_before_any_question(tmp_path):
    done = new(tmp_path / "acme.json", "--in-flight", "sometimes")
    assert done.returncode == 2 and "--in-flight: 'sometimes' is not one of" in done.stderr
    assert os.listdir(tmp_path) == []


def test_an_existing_file_is_replaced_only_with_force(tmp_path):
    path = tmp_path / "acme.json"
    path.write_text("{}\n")
    done = new(path, answers=STRIPE_LIKE)
    assert done.returncode == 2 and "exists; give --force" in done.stderr
    assert path.read_text() == "{}\n"
    done = new(path, "--force", answers=STRIPE_LIKE)
    assert done.returncode == 0, done.stderr
    assert json.loads(path.read_text("utf-8"))["name"] == "acme-pay"
    assert os.listdir(tmp_path) == ["acme.json"]  # the temporary file was renamed, not left


class Terminal(io.StringIO):
    """Lines a user types at a terminal."""

    def isatty(self):
        return True


class Args:
    def __init__(self, **given):
        for q in QUESTIONS:
            setattr(self, q.id, given.get(q.id))


def test_at_a_terminal_a_bad_answer_is_asked_again_and_an_empty_one_takes_the_default():
    typed = Terminal("\nnone\nsometimes\nlags\nyes\nperhaps\nno\n15 m\n")
    err = io.StringIO()
    answers = gather(Args(), typed, err, "acme")
    assert answers == {
        "name": "acme",
        "key_header": None,
        "status_read": "lags",
        "fence": "yes",
        "undo": "no",
        "delay_bound": "15m",
    }
    said = err.getvalue()
    assert "Can you read whether an effect happened?" in said and "[acme]" in said
    assert "--status-read: 'sometimes' is not one of" in said and "asked again" in said


def test_at_a_terminal_three_bad_answers_are_refused():
    with pytest.raises(UsageError, match="--fence: 'what' is not yes or no"):
        gather(
            Args(name="acme", key_header="none", status_read="none"),
            Terminal("what\n" * 3),
            io.StringIO(),
            None,
        )


@pytest.mark.slow  # a whole design search: minutes on two cores
def test_design_runs_on_the_file_in_the_same_sitting(tmp_path):
    """--run-design: the questions answered, the file written, then `design` on it, one command."""
    path = tmp_path / "ledger.json"
    flags = ["--name", "ledger", "--key-header", "Idempotency-Key", "--host", "ledger.internal"]
    flags += ["--key-lifetime", "forever", "--first-response", "yes", "--in-flight", "waits"]
    flags += ["--status-read", "consistent", "--fence", "yes", "--undo", "yes"]
    done = new(path, *flags, "--delay-bound", "unbounded", "--run-design", timeout=1200)
    assert done.returncode == 0, done.stderr
    assert f"running: toolcommit design --env {path}" in done.stderr
    assert "toolcommit design: environment ledger" in done.stdout
    assert "exactly-once (I1, I1net, P1, P3, OWN, FULFIL): HOLDS" in done.stdout
