"""`recover` converges (issue 39, item 3): a takeover stamps a record's last send only where
a request may have been on its way from its holder, so the delay bound runs from a send
recorded once. SQLite and PostgreSQL."""

import pytest

from toolcommit.runtime import IntentLog
from toolcommit.runtime.design import load

WHO = {"principal": "user:1"}
SCOPE = "user:42:request:7"


def _open(tmp_path, pg, schema, writer, **kw):
    if pg is None:
        return IntentLog.sqlite(str(tmp_path / "i.db"), writer, **kw)
    return IntentLog.postgres(pg.dsn, writer, schema=schema, **kw)


@pytest.fixture(params=["sqlite", "postgres"])
def store(request):
    if request.param == "sqlite":
        return None
    pytest.importorskip("psycopg", reason="the 'postgres' extra is not installed")
    return request.getfixturevalue("pg")


def test_a_takeover_counts_as_a_send_only_where_one_may_have_been_on_its_way(tmp_path, store):
    design = load("stripe").with_timing(delay_bound=900.0)
    pod = _open(tmp_path, store, "t_flight", "pod-0", provider=design, settler=False, lease=60)
    idle = pod.propose("t1", "refund", {"charge": "ch_1", "amount": 1}, SCOPE, **WHO).key
    assert pod.timeout(pod.dispatch(idle))  # UNKNOWN: its send ended
    flying = pod.propose("t2", "refund", {"charge": "ch_2", "amount": 2}, SCOPE, **WHO).key
    assert pod.timeout(pod.dispatch(flying))
    assert pod.reconcile(flying).purpose == "replay"  # a replay out, its end never written
    before = {k: pod.record(k).sent_at for k in (idle, flying)}
    pod.expire_leases("pod-0")
    other = _open(tmp_path, store, "t_flight", "pod-b", provider=design, settler=False)
    assert sorted(r.key for r in other.recover()) == sorted([idle, flying])
    assert other.record(idle).sent_at == before[idle]
    assert other.record(flying).sent_at > before[flying]
    other.close()
    pod.close()
