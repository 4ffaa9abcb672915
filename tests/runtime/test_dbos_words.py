"""A DBOS step retried by DBOS (``retries_allowed``) still tells the model the guard's words:
an outcome in doubt is retried through the log and, once DBOS gives up, the last attempt's
`InDoubt` is raised, not DBOS's "exceeded its maximum of N retries"; a final answer
(`GaveUp`) is never retried. DBOS runs for real, on a SQLite system database."""

from __future__ import annotations

import pytest

from toolcommit.runtime import EffectError, GaveUp, InDoubt, IntentLog, tell


@pytest.fixture(scope="module")
def flows(tmp_path_factory):
    pytest.importorskip("dbos", reason="the 'frameworks' extra is not installed")
    from dbos import DBOS

    from toolcommit.runtime.frameworks import dbos_step

    now: dict = {}
    db = tmp_path_factory.mktemp("dbos") / "dbos.sqlite"
    DBOS(config={"name": "toolcommit-words", "system_database_url": f"sqlite:///{db}"})

    def refund(order: str, amount: float) -> dict:
        now["sent"] += 1
        raise TimeoutError("the answer was lost")

    steps = {
        p: dbos_step(
            lambda p=p: now[p],
            refund,
            name=f"refund_{p}",
            status=lambda t: None,
            principal="user:1",
            retries_allowed=True,
            max_attempts=3,
            interval_seconds=0.01,
        )
        for p in ("stripe", "email")
    }

    def flow(step):
        told = []
        try:
            told.append(step("o-7", 20.0))
        except EffectError as e:
            told.append(tell(e))
        except Exception as e:  # what the model got before: DBOS's words, not the guard's
            told.append({"toolcommit": None, "message": str(e)})
        return told

    flow_stripe = DBOS.workflow(name="words_stripe")(lambda: flow(steps["stripe"]))
    flow_email = DBOS.workflow(name="words_email")(lambda: flow(steps["email"]))
    DBOS.launch()
    yield now, {"stripe": flow_stripe, "email": flow_email}
    DBOS.destroy()


@pytest.mark.parametrize(
    "provider, said, sent, proposals",
    [("stripe", InDoubt, 2, 3), ("email", GaveUp, 1, 1)],
)
def test_a_retried_dbos_step_tells_the_guards_words(
    tmp_path, flows, provider, said, sent, proposals
):
    """Before: each attempt was retried (GaveUp three times too) and the model was told
    "Step refund_... has exceeded its maximum of 3 retries", nothing of the refund."""
    now, flow = flows
    now["sent"] = 0
    now[provider] = IntentLog.sqlite(
        str(tmp_path / "i.db"), "dbos-1", provider=provider, wait=0, settler=False
    )
    (told,) = flow[provider]()
    assert told["toolcommit"] == said.__name__, told
    assert "may or may not have happened" in told["message"]
    assert now["sent"] == sent  # stripe: the send and its replay under the key; then read
    log = now[provider]
    assert sum(e["type"] == "proposal" for e in log.events()) == proposals
    log.close()
