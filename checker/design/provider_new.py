"""The questions `toolcommit provider new` asks, and the provider file the answers make.

Pure: `QUESTIONS` is the table (each with its flag, prompt and parser); `parse(q, text)`
checks one answer; `document(answers)` builds the provider file (the shape of
`spec/provider.schema.json`) that `toolcommit.model.provider_file` reads. The questions are
the few that decide a design: is there an idempotency key and in which header, how long is
it kept, is the first response saved, what happens to a request under a key in flight, is
there a status read and is it consistent, can a write be conditional (a fence), can an
effect be undone, and how late can a request arrive. Every answer becomes a behaviour with
no source (`why_no_source` asks for the provider's document): the file is the user's word
until they cite it. Where the model has no word for an answer, the weaker promise it has is
written: a key that lets a request in flight through twice is no key, a read that only lags
is no read, a first response not saved makes an applied request read as an error (an
`errors_after` budget of 2).

Examples
--------
>>> parse(BY_ID["in_flight"], "409")
'refused'
>>> parse(BY_ID["key_lifetime"], "soon")
Traceback (most recent call last):
...
ValueError: 'soon' is not a duration; give one such as 30s, 15m, 1h, 24h, 7d, or forever
>>> doc = document({"name": "acme", "key_header": "Idempotency-Key", "hosts": ["api.acme.com"],
...     "key_lifetime": "24h", "first_response": "yes", "in_flight": "refused",
...     "status_read": "consistent", "fence": "no", "undo": "no", "delay_bound": "15m"})
>>> [b["sets"] for b in doc["behaviours"]][:2]
[{'provider_idempotent': 'yes', 'key_lifetime': '24h'}, {'in_flight_key': 'refused'}]
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

from toolcommit.model.provider_file import KIND, NAME

UNCITED = (
    "answered to `toolcommit provider new`; replace with the provider's own document: "
    "source {url, rests_on} (docs/provider-file.md)"
)
HEADER = re.compile(r"^[A-Za-z0-9!#$%&'*+.^_`|~-]{1,64}$")  # an HTTP header name (a token)
HOST = re.compile(r"^[A-Za-z0-9]([A-Za-z0-9.-]{0,252})(:\d{1,5})?$")
DURATION = re.compile(r"^(\d{1,9}\s*[smhd]|forever|unbounded)$")
NO = {"no", "n", "none", "false", "0"}
YES = {"yes", "y", "true", "1"}


def _choice(options: dict[str, str]) -> Callable[[str], str]:
    def parse(text: str) -> str:
        t = text.strip().lower()
        if t in options:
            return options[t]
        raise ValueError(f"{text!r} is not one of {', '.join(sorted(set(options.values())))}")

    return parse


def _yes_no(text: str) -> str:
    t = text.strip().lower()
    if t in YES | NO:
        return "yes" if t in YES else "no"
    raise ValueError(f"{text!r} is not yes or no")


def _name(text: str) -> str:
    t = text.strip()
    if NAME.match(t):
        return t
    raise ValueError(f"{text!r} is not a name: lower case letters, digits, '.', '_', '-'")


def _header(text: str) -> Optional[str]:
    t = text.strip()
    if t.lower() in NO:
        return None
    if HEADER.match(t):
        return t
    raise ValueError(f"{text!r} is not an HTTP header name (or 'none' for no key)")


def _hosts(text: str) -> list[str]:
    hosts = [h.strip().lower() for h in re.split(r"[,\s]+", text) if h.strip()]
    bad = [h for h in hosts if not HOST.match(h)]
    if not hosts or bad:
        raise ValueError(f"{(bad or [text])[0]!r} is not a host name such as api.acme.com")
    return hosts


def _duration(forever: str) -> Callable[[str], str]:
    """A duration's parser; `forever` is the word this question uses for no limit."""

    def parse(text: str) -> str:
        t = re.sub(r"\s+", "", text.strip().lower())
        if t in ("forever", "unbounded", "never", "none"):
            return forever
        if DURATION.match(t):
            return t
        raise ValueError(
            f"{text!r} is not a duration; give one such as 30s, 15m, 1h, 24h, 7d, or {forever}"
        )

    return parse


@dataclass(frozen=True)
class Question:
    """One question: its answer's name, the flag that answers it, what is asked, how an
    answer is read (ValueError: refused, with why), and `keyed`: asked only where requests
    carry an idempotency key."""

    id: str
    flag: str
    prompt: str
    parse: Callable[[str], object]
    keyed: bool = False


QUESTIONS = (
    Question("name", "--name", "What is the provider called (lower case, e.g. acme-pay)?", _name),
    Question(
        "key_header",
        "--key-header",
        "Does a request carry an idempotency key? The header it travels in "
        "(e.g. Idempotency-Key), or none:",
        _header,
    ),
    Question(
        "hosts",
        "--host",
        "Which hosts does the API answer on (comma-separated, e.g. api.acme.com)?",
        _hosts,
        keyed=True,
    ),
    Question(
        "key_lifetime",
        "--key-lifetime",
        "How long does the provider keep a key after its first use (e.g. 24h, 7d, forever)?",
        _duration("forever"),
        keyed=True,
    ),
    Question(
        "first_response",
        "--first-response",
        "Is a retry under a known key answered with the first request's saved response, "
        "errors included (yes/no)?",
        _yes_no,
        keyed=True,
    ),
    Question(
        "in_flight",
        "--in-flight",
        "A request under a key that another request is still executing under is: "
        "refused (409), duplicate (applied too), or waits (then answered as the first)?",
        _choice(
            {
                "refused": "refused",
                "409": "refused",
                "duplicate": "duplicate",
                "applied": "duplicate",
                "waits": "waits",
                "wait": "waits",
                "serialized": "waits",
            }
        ),
        keyed=True,
    ),
    Question(
        "status_read",
        "--status-read",
        "Can you read whether an effect happened? consistent (a read that sees every write), "
        "list (a consistent list beside a search that lags), lags (only a read that lags), "
        "or none:",
        _choice({s: s for s in ("consistent", "list", "lags", "none")} | {"no": "none"}),
    ),
    Question(
        "fence",
        "--fence",
        "Can a write be made conditional, so it fails once a newer write happened "
        "(If-Match, a version column: a fence) (yes/no)?",
        _yes_no,
    ),
    Question(
        "undo", "--undo", "Can an applied effect be undone (a refund, a delete) (yes/no)?", _yes_no
    ),
    Question(
        "delay_bound",
        "--delay-bound",
        "Within how long does a request reach the provider, or never (e.g. 15m for signed "
        "requests), or unbounded?",
        _duration("unbounded"),
    ),
)
BY_ID = {q.id: q for q in QUESTIONS}


def parse(q: Question, text: str) -> object:
    """`text` read as the answer to `q`; ValueError (saying why) if it is not one."""
    return q.parse(text)


def asked(q: Question, answers: dict) -> bool:
    """Whether `q` is asked, given the answers so far (the key's questions only with a key)."""
    return not q.keyed or answers.get("key_header") is not None


def _behaviour(sets: dict, what: str) -> dict:
    return {"sets": sets, "what": what, "source": None, "why_no_source": UNCITED}


def _key_behaviours(a: dict) -> list:
    if a.get("key_header") is None:
        return [
            _behaviour(
                {"provider_idempotent": "no"},
                "no idempotency key: every request that arrives is applied",
            )
        ]
    if a["in_flight"] == "duplicate":
        return [
            _behaviour(
                {"provider_idempotent": "no"},
                "a request under a key another request is still executing under is applied "
                "too: a key that lets a duplicate through is no key a design can rely on",
            )
        ]
    out = [
        _behaviour(
            {"provider_idempotent": "yes", "key_lifetime": a["key_lifetime"]},
            f"a request under a key seen in the last {a['key_lifetime']} is not applied again",
        ),
        _behaviour(
            {"in_flight_key": "refused" if a["in_flight"] == "refused" else "serialized"},
            "a request under a key in flight is refused (409), unapplied"
            if a["in_flight"] == "refused"
            else "a request under a key in flight waits for it, then is answered as it was",
        ),
    ]
    if a["first_response"] == "no":
        out.append(
            _behaviour(
                {"errors_after": 2},
                "a retry under a known key is not applied again but is not answered with the "
                "first response either: an applied request can read as an error",
            )
        )
    return out


STATUS = {
    "consistent": ({"status_read": "yes", "stale_reads": 0}, "a status read sees every write"),
    "list": ({"status_read": "yes"}, "a consistent list beside a search that lags (stale_reads)"),
    "lags": ({"status_read": "no"}, "the only read lags: its absent proves nothing"),
    "none": ({"status_read": "no"}, "nothing tells whether an effect happened"),
}


def document(a: dict) -> dict:
    """The provider file the answers `a` (by question id) make."""
    doc: dict = {"kind": KIND, "version": 1, "name": a["name"], "meaning": meaning(a)}
    if a.get("key_header") is not None:
        doc["wire"] = {
            "key_header": a["key_header"],
            "key_placement": "header",
            "hosts": a["hosts"],
            "what": f"the idempotency key travels in the {a['key_header']} header",
        }
    sets, what = STATUS[a["status_read"]]
    behaviours = _key_behaviours(a) + [
        _behaviour(dict(sets), what),
        _behaviour(
            {"provider_fences": a["fence"]},
            "a conditional write fails once a newer one happened (a fence)"
            if a["fence"] == "yes"
            else "no conditional write: nothing rejects an older request",
        ),
        _behaviour(
            {"compensable": a["undo"]},
            "an applied effect can be undone"
            if a["undo"] == "yes"
            else "an applied effect cannot be undone",
        ),
    ]
    if a["delay_bound"] != "unbounded":
        b = _behaviour(
            {"delay_bound": a["delay_bound"]},
            f"a request reaches the provider within {a['delay_bound']} of being sent, or never",
        )
        behaviours.append({**b, "assumed": True})
    doc["behaviours"] = behaviours
    return doc


def meaning(a: dict) -> str:
    """The provider in one sentence, from the answers."""
    if a.get("key_header") is None:
        key = "no idempotency key"
    elif a["in_flight"] == "duplicate":
        key = f"keys in the {a['key_header']} header, a request under one in flight applied too"
    else:
        saved = "its first response saved" if a["first_response"] == "yes" else "no response saved"
        key = f"keys in the {a['key_header']} header kept {a['key_lifetime']}, {saved}, a request "
        key += "under one in flight " + ("refused" if a["in_flight"] == "refused" else "waiting")
    parts = [
        key,
        f"status read: {a['status_read']}",
        "conditional writes (a fence)" if a["fence"] == "yes" else "no fence",
        "an undo" if a["undo"] == "yes" else "no undo",
        f"delay bound {a['delay_bound']}",
    ]
    return f"{a['name']}, as answered to toolcommit provider new: " + "; ".join(parts)
