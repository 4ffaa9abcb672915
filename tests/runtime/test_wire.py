"""The key on the wire, tested with the real stripe-python SDK over real HTTP on 127.0.0.1
(tests/runtime/stripe_wire.py): a tool that never passes the idempotency key refunds once
under a lost ack when the integration is installed, twice when it is not; each client library
is stamped; a write that would reach the provider without the intent's key is refused before
it is sent; `uninstrument` gives the libraries back."""

import asyncio
import concurrent.futures
import dataclasses
import functools
import http.client
import json
import os
import re
import threading
import time
import urllib.parse
import urllib.request
from pathlib import Path

import pytest

from toolcommit.runtime import (
    Answered,
    DesignError,
    GaveUp,
    Held,
    InDoubt,
    IntentLog,
    UnkeyedWrite,
    aguard,
    effectful,
    guard,
    instrument,
    unguarded,
    uninstrument,
    wire,
)

stripe = pytest.importorskip("stripe", reason="the 'test' extra is not installed")
httpx = pytest.importorskip("httpx", reason="the 'test' extra is not installed")
requests = pytest.importorskip("requests", reason="the 'test' extra is not installed")
aiohttp = pytest.importorskip("aiohttp", reason="the 'test' extra is not installed")

from tests.runtime.stripe_wire import TOKEN, StripeWire  # noqa: E402

# stripe-python's HTTPXClient passes the form as bytes in data=, which httpx deprecates
pytestmark = pytest.mark.filterwarnings("ignore:Use 'content=<...>':DeprecationWarning")

CLIENTS = {  # name -> (an HTTP client for stripe-python, whether the tool is async)
    "requests": (lambda: stripe.RequestsClient(), False),
    "httpx": (lambda: stripe.HTTPXClient(allow_sync_methods=True), False),
    "httpx-async": (lambda: stripe.HTTPXClient(), True),
    "aiohttp": (lambda: stripe.AIOHTTPClient(), True),
    "urllib": (lambda: stripe.UrllibClient(), False),  # its fallback without requests
}


@pytest.fixture(autouse=True)
def _clean():
    uninstrument()
    yield
    uninstrument()


@pytest.fixture
def fake():
    with StripeWire(lifetime=60) as f:
        yield f


def _log(tmp_path, provider="stripe") -> IntentLog:
    return IntentLog.sqlite(os.fspath(tmp_path / "intents.db"), writer="w1", provider=provider)


def _sdk(fake, client: str, retries: int = 0):
    return stripe.StripeClient(
        TOKEN,
        base_addresses={"api": fake.url},
        http_client=CLIENTS[client][0](),
        max_network_retries=retries,
    )


def _status(sdk):
    def status(t):
        for r in sdk.v1.refunds.list({"charge": t.args["charge"]}).auto_paging_iter():
            if r.metadata.to_dict().get("toolcommit") == t.key:
                return r.to_dict()
        return None

    return status


def _refund_tool(log, sdk, is_async: bool):
    """A tool as an author would write it who forgot the key: stripe-python mints its own."""
    deco = effectful(
        log,
        tool="refund",
        status=_status(sdk),
        scope=lambda charge, amount: f"user:42:request:{charge}",
        principal="user:1",
    )
    if is_async:

        async def refund(charge: str, amount: int):
            r = await sdk.v1.refunds.create_async({"charge": charge, "amount": amount})
            return r.to_dict()
    else:

        def refund(charge: str, amount: int):
            return sdk.v1.refunds.create({"charge": charge, "amount": amount}).to_dict()

    return deco(refund)


def _call(tool, is_async, *a, **kw):
    return asyncio.run(tool(*a, **kw)) if is_async else tool(*a, **kw)


def _posts(fake):
    return [k for m, _, k in fake.seen if m == "POST"]


# ----- the claim: one refund under a lost ack, and only with the integration ------------------
@pytest.mark.parametrize("client", list(CLIENTS))
def test_a_tool_that_does_not_pass_the_key_refunds_once_under_a_lost_ack(tmp_path, fake, client):
    log = _log(tmp_path)
    assert instrument(log) == ("httpx", "urllib3", "aiohttp", "http.client", "concurrent.futures")
    sdk, is_async = _sdk(fake, client), CLIENTS[client][1]
    fake.lose(1)  # the refund is applied; its answer never comes back
    got = _call(_refund_tool(log, sdk, is_async), is_async, "ch_1", 2000)
    assert len(fake.refunds) == 1 and got["id"] == fake.refunds[0]["id"]
    key = log.records()[0].key
    assert _posts(fake) == [key, key]  # the SDK's own key replaced by the intent's, both times
    assert log.records()[0].state == "ACKED"


def test_without_the_integration_the_librarys_replay_is_a_second_refund(tmp_path, fake):
    log = _log(tmp_path)
    fake.lose(1)
    _call(_refund_tool(log, _sdk(fake, "requests"), False), False, "ch_1", 2000)
    keys = _posts(fake)
    assert len(fake.refunds) == 2 and len(set(keys)) == 2 and log.records()[0].key not in keys


def test_sdk_retries_on_reuse_the_stamped_key_before_the_librarys_replay(tmp_path, fake):
    log = _log(tmp_path)
    instrument(log)
    fake.lose(3)  # the first send and both of the SDK's retries
    _call(_refund_tool(log, _sdk(fake, "requests", retries=2), False), False, "ch_1", 2000)
    assert len(fake.refunds) == 1 and set(_posts(fake)) == {log.records()[0].key}
    assert len(_posts(fake)) == 4


# ----- every library, by hand: the stamp wins over a key already there ------------------------
def _raw_post(library: str, url: str, headers: dict):
    form = {"charge": "ch_9", "amount": "5"}
    if library == "urllib":
        data = urllib.parse.urlencode(form).encode()
        req = urllib.request.Request(url, data=data, headers=headers, method="POST")
        with urllib.request.urlopen(req, timeout=5) as r:
            return r.status
    if library == "requests":
        return requests.post(url, data=form, headers=headers, timeout=5).status_code
    if library == "httpx":
        return httpx.post(url, data=form, headers=headers, timeout=5).status_code

    async def go():
        if library == "httpx-async":
            async with httpx.AsyncClient(timeout=5) as c:
                return (await c.post(url, data=form, headers=headers)).status_code
        async with aiohttp.ClientSession() as s:
            async with s.post(url, data=form, headers=headers) as r:
                return r.status

    return asyncio.run(go())


@pytest.mark.parametrize("library", list(CLIENTS))
def test_each_library_sends_the_intents_key_in_place_of_its_own(tmp_path, fake, library):
    log = _log(tmp_path)
    instrument(log)
    headers = {"Authorization": f"Bearer {TOKEN}", "idempotency-key": "the-clients-own"}
    got = guard(
        log,
        "c1",
        "refund",
        {"charge": "ch_9"},
        "user:42:request:1",
        lambda t: _raw_post(library, f"{fake.url}/v1/refunds", headers),
        status=lambda t: None,
        principal="user:1",
    )
    assert got == 200 and _posts(fake) == [log.records()[0].key]


def test_an_effect_is_one_write_a_second_write_in_it_is_refused_by_the_provider(tmp_path, fake):
    log = _log(tmp_path)
    instrument(log)
    sdk = _sdk(fake, "httpx")

    def two_writes(t):
        sdk.v1.refunds.create({"charge": "ch_1", "amount": 5})
        with pytest.raises(stripe.IdempotencyError):  # the same key, other parameters
            sdk.v1.refunds.create({"charge": "ch_2", "amount": 5})
        return "done"

    assert (
        guard(log, "c1", "refund", {}, "s", two_writes, status=lambda t: None, principal="user:1")
        == "done"
    )
    assert len(fake.refunds) == 1 and set(_posts(fake)) == {log.records()[0].key}


def test_a_thread_in_the_effects_context_is_stamped_one_without_it_is_outside(tmp_path, fake):
    log = _log(tmp_path)
    instrument(log, hosts=[fake.url])
    post = functools.partial(
        _raw_post, "requests", f"{fake.url}/v1/refunds", {"Authorization": f"Bearer {TOKEN}"}
    )
    refused = []

    def bare():  # a plain thread starts in an empty context: no ticket
        with pytest.raises(UnkeyedWrite, match="no effect runs") as e:
            post()
        refused.append(e.value)

    async def effect(t):
        await asyncio.to_thread(post)  # runs in a copy of the effect's context
        th = threading.Thread(target=bare)
        th.start()
        th.join(10)

    asyncio.run(
        aguard(
            log,
            "c1",
            "refund",
            {"charge": "ch_9"},
            "s",
            effect,
            status=lambda t: None,
            principal="user:1",
        )
    )
    assert len(refused) == 1 and _posts(fake) == [log.records()[0].key]


def test_a_design_without_a_key_sends_none(tmp_path, fake):
    log = _log(tmp_path, "email")
    instrument(log)
    guard(
        log,
        "c1",
        "refund",
        {"charge": "ch_9"},
        "s",
        lambda t: _raw_post(
            "httpx", f"{fake.url}/v1/refunds", {"Authorization": f"Bearer {TOKEN}"}
        ),
        principal="user:1",
    )
    assert _posts(fake) == [None]


# ----- refused before it is sent --------------------------------------------------------------
@pytest.mark.parametrize("library", list(CLIENTS))
def test_a_write_outside_an_effect_to_the_providers_host_is_refused_unsent(tmp_path, fake, library):
    instrument(_log(tmp_path), hosts=[fake.url])
    with pytest.raises(UnkeyedWrite, match="refused before it was sent.*@effectful"):
        _raw_post(library, f"{fake.url}/v1/refunds", {"Authorization": f"Bearer {TOKEN}"})
    assert fake.seen == []


def test_the_sdk_outside_an_effect_is_refused_and_a_read_or_unguarded_write_passes(tmp_path, fake):
    instrument(_log(tmp_path), hosts=[f"127.0.0.1:{fake.port}"])
    sdk = _sdk(fake, "requests")
    with pytest.raises(stripe.APIConnectionError, match="refused before it was sent"):
        sdk.v1.refunds.create({"charge": "ch_1", "amount": 1})
    assert fake.seen == []
    assert list(sdk.v1.refunds.list({"charge": "ch_1"}).auto_paging_iter()) == []
    with unguarded():
        sdk.v1.refunds.create({"charge": "ch_1", "amount": 1})
    assert len(fake.refunds) == 1 and not _posts(fake)[0].startswith("tc1-")  # the SDK's


def test_a_status_read_that_writes_is_refused_unsent(tmp_path, fake):
    d = _log(tmp_path).design.with_timing(replay_window=0, delay_bound=0)
    log = IntentLog.sqlite(os.fspath(tmp_path / "read.db"), writer="w1", provider=d)
    instrument(log, hosts=[fake.url])
    sdk = _sdk(fake, "httpx")
    fake.lose(1)

    def writes(t):  # a "status read" that refunds: never sent
        return sdk.v1.refunds.create({"charge": t.args["charge"], "amount": 1})

    with pytest.raises(InDoubt, match="status read failed"):
        guard(
            log,
            "c1",
            "refund",
            {"charge": "ch_1"},
            "s",
            lambda t: sdk.v1.refunds.create({"charge": "ch_1", "amount": 5}),
            status=writes,
            principal="user:1",
        )
    assert len(_posts(fake)) == 1 and len(fake.refunds) == 1


def test_an_effect_whose_design_sends_no_key_is_refused_at_a_keyed_host(tmp_path, fake):
    instrument(_log(tmp_path), hosts=[fake.url])
    email = IntentLog.sqlite(os.fspath(tmp_path / "email.db"), writer="w1", provider="email")
    with pytest.raises(UnkeyedWrite, match="design sends no key"):
        guard(
            email,
            "c1",
            "refund",
            {"charge": "ch_1"},
            "s",
            lambda t: _raw_post("httpx", f"{fake.url}/v1/refunds", {}),
            principal="user:1",
        )
    assert fake.seen == [] and email.records()[0].state in ("UNKNOWN", "DEAD_LETTER")
    with pytest.raises(GaveUp):
        guard(email, "c1", "refund", {"charge": "ch_1"}, "s", lambda t: None, principal="user:1")


def test_a_host_is_matched_by_name_and_port_or_by_name_alone(tmp_path):
    instrument(_log(tmp_path), hosts=["api.stripe.com:443", "127.0.0.1"])
    for url in (
        "https://api.stripe.com/v1/refunds",
        "https://API.stripe.com:443/v1/refunds",
        "http://127.0.0.1:9/v1/refunds",
    ):
        with pytest.raises(UnkeyedWrite, match="no effect runs"):
            wire.stamp("POST", url)
    assert wire.stamp("POST", "http://api.stripe.com:8080/v1/refunds") is None
    assert wire.stamp("GET", "https://api.stripe.com/v1/refunds") is None
    with unguarded():
        assert wire.stamp("POST", "https://api.stripe.com/v1/refunds") is None


# ----- install and take back ------------------------------------------------------------------
def test_instrument_is_idempotent_and_uninstrument_restores(tmp_path, fake):
    from aiohttp import ClientSession
    from urllib3.connectionpool import HTTPConnectionPool

    before = (
        httpx.Client.send,
        httpx.AsyncClient.send,
        HTTPConnectionPool.urlopen,
        ClientSession._request,
        http.client.HTTPConnection.request,
        http.client.HTTPConnection.getresponse,
        concurrent.futures.ThreadPoolExecutor.submit,
    )
    log = _log(tmp_path)
    instrument(log, hosts=[fake.url])
    instrument(log, hosts=[fake.url])
    assert httpx.Client.send.__toolcommit_wire__ is before[0]  # wrapped once
    assert wire.instrumented() == (
        "httpx",
        "urllib3",
        "aiohttp",
        "http.client",
        "concurrent.futures",
    )
    uninstrument()
    uninstrument()
    assert (
        httpx.Client.send,
        httpx.AsyncClient.send,
        HTTPConnectionPool.urlopen,
        ClientSession._request,
        http.client.HTTPConnection.request,
        http.client.HTTPConnection.getresponse,
        concurrent.futures.ThreadPoolExecutor.submit,
    ) == before and wire.instrumented() == ()
    assert (
        _raw_post("requests", f"{fake.url}/v1/refunds", {"Authorization": f"Bearer {TOKEN}"}) == 200
    )  # no longer refused


def test_hosts_without_a_key_header_or_guarded_for_another_design_are_refused(tmp_path):
    d = _log(tmp_path).design
    instrument(d, hosts=["127.0.0.1:1"])
    instrument(d, hosts=["127.0.0.1:1"])  # the same: a no-op
    with pytest.raises(DesignError, match="sends no idempotency key in a header"):
        instrument("fenced-store", hosts=["127.0.0.1:2"])
    with pytest.raises(DesignError, match="guarded for design stripe already"):
        instrument(dataclasses.replace(d, source="mine.json"), hosts=["127.0.0.1:1"])


# ----- the fake keeps Stripe's rules the claims rest on ---------------------------------------
def test_the_fake_answers_409_in_flight_400_on_other_params_and_replays_a_saved_500(fake):
    sdk = _sdk(fake, "requests")
    opts = {"idempotency_key": "k1"}
    fake.hold()
    first = {}
    t = threading.Thread(
        target=lambda: first.update(r=sdk.v1.refunds.create({"charge": "ch_1", "amount": 5}, opts))
    )
    t.start()
    assert fake.wait_held()
    with pytest.raises(stripe.APIError) as e:  # stripe-python's class for a 409
        sdk.v1.refunds.create({"charge": "ch_1", "amount": 5}, opts)
    assert e.value.http_status == 409
    assert e.value.json_body["error"]["code"] == "idempotency_key_in_use"
    fake.release()
    t.join(10)
    assert first["r"].id == "re_000001"
    with pytest.raises(stripe.IdempotencyError) as e:
        sdk.v1.refunds.create({"charge": "ch_1", "amount": 6}, opts)
    assert e.value.http_status == 400
    fake.fail(1)
    for _ in range(2):
        with pytest.raises(stripe.APIError) as e:
            sdk.v1.refunds.create({"charge": "ch_2", "amount": 5}, {"idempotency_key": "k2"})
        assert e.value.http_status == 500
    assert [r["charge"] for r in fake.refunds] == ["ch_1", "ch_2"]


# ----- the wire's word beats the tool's ------------------------------------------------------
def _swallowing_tool(log, sdk, client: str):
    """The common agent-tool pattern: the SDK's error is caught and returned as the answer."""
    deco = effectful(
        log,
        tool="refund",
        status=_status(sdk),
        scope=lambda charge, amount, request: request,
        principal="user:42",
        identity=("charge", "amount"),  # the request is the scope, not the identity
    )

    def refund(charge: str, amount: int, request: str):
        try:
            return sdk.v1.refunds.create({"charge": charge, "amount": amount}).to_dict()
        except Exception as e:  # stripe's APIConnectionError; urllib's own on a dropped answer
            return {"error": str(e)[:60]}

    return deco(refund)


@pytest.mark.parametrize("client", ["requests", "httpx", "urllib"])
def test_a_tool_that_swallows_its_timeout_is_in_doubt_and_the_re_ask_is_held(
    tmp_path, fake, client
):
    log = IntentLog.sqlite(  # a re-ask is the same charge and amount, whatever the request
        os.fspath(tmp_path / "intents.db"),
        writer="w1",
        provider="stripe",
        wait=0.2,
        same=("charge", "amount"),
    )
    instrument(log)
    refund = _swallowing_tool(log, _sdk(fake, client), client)
    fake.lose(2)  # the refund applies; neither its answer nor the replay's comes back
    with pytest.raises(InDoubt, match="may or may not have happened"):
        refund("ch_1", 2000, "user:42:request:1")  # the tool said {"error": ...}: not the answer
    first = log.records()[0]
    assert first.state == "RECONCILING" and len(fake.refunds) == 1
    reason = [e.get("reason", "") for e in log.events() if e.get("to") == "UNKNOWN"]
    assert reason and "NoAnswer: POST" in reason[0] and "got no answer" in reason[0]
    with pytest.raises(Held):  # the user's re-ask in a new request: nothing sent
        refund("ch_1", 2000, "user:42:request:2")
    assert len(fake.refunds) == 1  # before: 2 (ACKED with the error, the re-ask refunded)


@pytest.mark.parametrize("client", ["requests", "httpx", "urllib"])
def test_a_swallowed_timeout_is_replayed_and_the_caller_gets_the_refund_not_the_error(
    tmp_path, fake, client
):
    log = _log(tmp_path)
    instrument(log)
    fake.lose(1)  # the answer is lost; the replay under the same key gets the saved one
    got = _swallowing_tool(log, _sdk(fake, client), client)("ch_1", 2000, "user:42:request:1")
    assert len(fake.refunds) == 1 and got["id"] == fake.refunds[0]["id"]
    assert log.records()[0].state == "ACKED" and log.records()[0].result["id"] == got["id"]


def test_without_the_wire_a_swallowed_timeout_is_the_answer_and_the_re_ask_refunds_twice(
    tmp_path, fake
):
    log = IntentLog.sqlite(  # not instrumented: the tool's word is all the guard sees
        os.fspath(tmp_path / "intents.db"),
        writer="w1",
        provider="stripe",
        same=("charge", "amount"),
    )
    refund = _swallowing_tool(log, _sdk(fake, "requests"), "requests")
    fake.lose(1)
    assert "error" in refund("ch_1", 2000, "user:42:request:1")
    assert log.records()[0].state == "ACKED"
    refund("ch_1", 2000, "user:42:request:2")  # the user, told it failed, asks again
    assert len(fake.refunds) == 2


def test_an_answered_write_is_the_answer_even_an_error(tmp_path, fake):
    log = _log(tmp_path)
    instrument(log)
    sdk = _sdk(fake, "urllib")

    def refund(t):
        with pytest.raises(stripe.InvalidRequestError):  # 400: the provider answered
            sdk.v1.refunds.create({"amount": 5})
        return {"error": "missing charge"}

    assert guard(
        log, "c1", "refund", {}, "s", refund, status=lambda t: None, principal="user:1"
    ) == {"error": "missing charge"}
    assert log.records()[0].state == "ACKED"


def test_http_client_writes_are_keyed_and_their_answers_seen(tmp_path, fake):
    log = _log(tmp_path)
    instrument(log)

    def post(t):
        c = http.client.HTTPConnection("127.0.0.1", fake.port, timeout=5)
        try:
            c.request(
                "POST",
                "/v1/refunds",
                "charge=ch_3&amount=7",
                {"Authorization": f"Bearer {TOKEN}", "idempotency-key": "its-own"},
            )
            return c.getresponse().status
        finally:
            c.close()

    assert (
        guard(
            log,
            "c1",
            "refund",
            {"charge": "ch_3"},
            "s",
            post,
            status=lambda t: None,
            principal="user:1",
        )
        == 200
    )
    assert _posts(fake) == [log.records()[0].key] and log.records()[0].state == "ACKED"


def test_run_in_executor_carries_the_key_a_bare_thread_is_refused_at_the_profile_host(
    tmp_path, fake
):
    log = _log(tmp_path)
    instrument(log)  # no hosts=: the profile's api.stripe.com is guarded
    post = functools.partial(
        _raw_post, "urllib", f"{fake.url}/v1/refunds", {"Authorization": f"Bearer {TOKEN}"}
    )
    refused = []

    def bare():  # no effect's context: refused before anything is sent (no connection made)
        with pytest.raises(UnkeyedWrite, match="no effect runs"):
            _raw_post("urllib", "https://api.stripe.com/v1/refunds", {})
        refused.append(True)

    async def effect(t):
        got = await asyncio.get_running_loop().run_in_executor(None, post)
        th = threading.Thread(target=bare)
        th.start()
        th.join(10)
        return got

    got = aguard(
        log,
        "c1",
        "refund",
        {"charge": "ch_9"},
        "s",
        effect,
        status=lambda t: None,
        principal="user:1",
    )
    assert asyncio.run(got) == 200
    assert refused == [True] and _posts(fake) == [log.records()[0].key]


# ----- docs/runtime.md's example, as printed --------------------------------------------------
def _docs_example() -> str:
    page = (Path(__file__).resolve().parents[2] / "docs" / "runtime.md").read_text("utf-8")
    section = page.split("## A Stripe refund, guarded\n", 1)[1]
    return re.search(r"```python\n(.*?)```", section, re.S).group(1)


def test_the_docs_stripe_example_refunds_once_under_a_lost_ack_and_reads_every_page(
    tmp_path, fake, monkeypatch
):
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stripe, "api_key", TOKEN)
    monkeypatch.setattr(stripe, "api_base", fake.url)
    monkeypatch.setattr(stripe, "default_http_client", None)  # a fresh client for this test
    ns: dict = {}
    exec(compile(_docs_example(), "docs/runtime.md", "exec"), ns)
    fake.lose(3)  # the first send and both of stripe-python's own retries
    ns["user"].set("user:42")
    ns["request"].set("7")
    got = asyncio.run(ns["refund"]("ch_1", 2000))
    log = ns["log"]
    key = log.records()[0].key
    assert len(fake.refunds) == 1 and got["id"] == fake.refunds[0]["id"]
    assert set(_posts(fake)) == {key} and len(_posts(fake)) == 4
    for amount in range(1, 13):  # twelve later refunds of the charge: the intent's on page 2
        stripe.Refund.create(charge="ch_1", amount=amount)
    assert stripe.Refund.list(charge="ch_1").has_more
    assert ns["refund_status"](log.ticket(key))["id"] == got["id"]
    assert ns["refund_status"](dataclasses.replace(log.ticket(key), key="tc1-absent")) is None


def test_the_docs_stripe_example_reasked_in_a_new_request_while_in_doubt_refunds_once(
    tmp_path, fake, monkeypatch
):
    """The fault the example claims to survive: the refund's answers are lost (the first
    send, stripe-python's retries, the log's replay), the caller is told it may or may not
    have happened, and the user re-asks in a new message, the amount spelled "2000" and a
    note added. Held while in doubt, answered once the log settled the first: one refund.
    The example runs as printed but for Stripe's delay bound, 1 s instead of 15 min."""
    monkeypatch.chdir(tmp_path)
    monkeypatch.setattr(stripe, "api_key", TOKEN)
    monkeypatch.setattr(stripe, "api_base", fake.url)
    monkeypatch.setattr(stripe, "default_http_client", None)
    shipped = Path(__file__).resolve().parents[2] / "spec" / "designs" / "stripe.json"
    doc = json.loads(shipped.read_text("utf-8"))
    doc["assumes"]["environment"]["delay_bound"] = "1s"  # so the test waits it out
    (tmp_path / "stripe-1s.json").write_text(json.dumps(doc), "utf-8")
    text = _docs_example()
    assert text.count('provider="stripe"') == 1
    ns: dict = {}
    exec(
        compile(text.replace('provider="stripe"', 'provider="stripe-1s.json"'), "docs", "exec"), ns
    )
    log = ns["log"]
    log.wait = 0.2  # the test's patience; the design's logic is the one printed
    ns["user"].set("user:42")
    fake.lose(1000)
    ns["request"].set("7")
    with pytest.raises(InDoubt):
        asyncio.run(ns["refund"]("ch_1", 2000))
    assert len(fake.refunds) == 1  # it happened; nobody heard
    ns["request"].set("8")  # the user's re-ask, a new message
    with pytest.raises(Held):
        asyncio.run(ns["refund"]("ch_1", "2000", note="did it go through?"))
    fake.lose(0)  # the network heals: the settler reads the refund after the delay bound
    deadline = time.monotonic() + 30
    while log.unsettled():
        assert time.monotonic() < deadline, log.records()
        time.sleep(0.05)
    with pytest.raises(Answered) as e:
        asyncio.run(ns["refund"]("ch_1", "2000", note="did it go through?"))
    assert e.value.happened == "yes" and e.value.result["id"] == fake.refunds[0]["id"]
    assert len(fake.refunds) == 1 and len(log.records()) == 1
    log.close()
