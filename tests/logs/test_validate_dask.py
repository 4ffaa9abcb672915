"""`validate --engine dask`: the sharded checker on a Dask cluster (one local cluster on the
loopback interface for this whole module) gives the single process's report, byte for byte,
on every fixture and every kind of bad line."""

import sys
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.cli.validate import EXIT_CODES, validate
from toolcommit.checker.render.findings import RENDERERS

from .logtools import BAD, effect, move, proposal

FIXTURES = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture(scope="module")
def scheduler():
    distributed = pytest.importorskip(
        "dask.distributed",
        reason="the 'distributed' extra is not installed "
        "(pip install 'toolcommit[distributed]'); CI installs it",
    )
    with distributed.LocalCluster(
        n_workers=2,
        threads_per_worker=1,
        processes=True,
        host="127.0.0.1",
        dashboard_address="127.0.0.1:0",  # two test workers' clusters must not share 8787
        scheduler_kwargs={"dashboard": False},
        silence_logs=40,
    ) as cluster:
        yield cluster.scheduler_address


def rendered(report):
    code = EXIT_CODES[report.verdict]
    return code, {fmt: render(report, code) for fmt, render in RENDERERS.items()}


@pytest.mark.parametrize("path", sorted(FIXTURES.glob("*.jsonl*")), ids=lambda p: p.name)
def test_a_dask_cluster_gives_the_same_report_on_every_fixture(path, scheduler):
    on_dask = validate([str(path)], jobs=2, engine="dask", scheduler=scheduler)
    assert rendered(on_dask) == rendered(validate([str(path)]))


def outputs(args, capsys):
    code = main(args)
    out = capsys.readouterr()
    return code, out.out, out.err


@pytest.mark.parametrize("name", sorted(BAD))
def test_a_dask_cluster_gives_the_same_error_or_warning_for_every_bad_line_kind(
    name, tmp_path, capsys, scheduler
):
    p = tmp_path / f"{name}.jsonl"
    p.write_bytes(BAD[name])
    args = ["validate", str(p), "--max-line-bytes", "200"]
    assert outputs(
        [*args, "--engine", "dask", "--scheduler", scheduler, "--jobs", "3"], capsys
    ) == outputs(args, capsys)


def test_an_intent_split_over_shards_on_dask_is_judged_whole(tmp_path, capsys, scheduler):
    from toolcommit.checker.logs import shards
    from toolcommit.checker.logs.write import events_to_jsonl

    names = [f"key-{i}" for i in range(50)]
    a = names[0]
    b = next(x for x in names if shards.shard_of(x, 2) != shards.shard_of(a, 2))
    evs = [
        proposal(a, 1, 20),
        proposal(b, 2, 20.0),
        move(a, 3, "PROPOSED", "RECORDED"),
        move(b, 4, "PROPOSED", "RECORDED"),
        effect(a, 1, 20),
        effect(b, 2, 20.0),
    ]
    p = tmp_path / "canon.jsonl"
    p.write_text(events_to_jsonl(evs))
    args = ["validate", str(p), "--format", "json", "--key", a]
    single = outputs(args, capsys)
    assert '"I1"' in single[1]  # the intent's two applies, across the shards
    assert (
        outputs([*args, "--engine", "dask", "--scheduler", scheduler, "--jobs", "2"], capsys)
        == single
    )


def test_the_local_cluster_admits_only_its_own_certificates_and_serves_only_health():
    """A Dask comm runs the pickled tasks it is sent: the cluster `validate --engine dask`
    starts speaks TLS, and a client holding other certificates (or none) cannot connect;
    its HTTP servers answer /health and nothing else."""
    import urllib.error
    import urllib.request

    distributed = pytest.importorskip("dask.distributed", reason="the 'distributed' extra")
    from distributed.security import Security

    from toolcommit.checker.logs.cluster import client

    with client(None, 1) as c:
        address = c.scheduler.address
        assert address.startswith("tls://127.0.0.1:")
        with distributed.Client(address, security=c.security, timeout="10s") as same:
            assert same.submit(len, "abc").result(timeout=10) == 3  # the run's own: admitted
        for other in (Security.temporary(), None):
            with pytest.raises(Exception):  # noqa: B017 - refused, whatever Dask calls it
                distributed.Client(address, security=other, timeout="3s")
        ports = [c.run_on_scheduler(lambda dask_scheduler: dask_scheduler.http_server.port)]
        ports += c.run(lambda dask_worker: dask_worker.http_server.port).values()
        for port in ports:
            url = f"http://127.0.0.1:{port}"
            assert urllib.request.urlopen(url + "/health", timeout=5).status == 200
            for path in ("/info/main/workers.html", "/json/counts.json", "/metrics"):
                with pytest.raises(urllib.error.HTTPError, match="404"):
                    urllib.request.urlopen(url + path, timeout=5)


def test_without_the_extra_engine_dask_is_one_line_naming_the_extra(monkeypatch, capsys):
    monkeypatch.setitem(sys.modules, "dask", None)
    assert main(["validate", str(FIXTURES / "i1-ok.jsonl"), "--engine", "dask"]) == 2
    err = capsys.readouterr().err.strip()
    assert "\n" not in err and "toolcommit[distributed]" in err


def test_stdin_and_scheduler_misuse_are_usage_errors(capsys):
    assert main(["validate", "-", "--engine", "dask"]) == 2
    assert "not stdin" in capsys.readouterr().err
    assert main(["validate", str(FIXTURES / "i1-ok.jsonl"), "--scheduler", "tcp://x:1"]) == 2
    assert "--engine dask" in capsys.readouterr().err
    assert (
        main(["validate", "--from", "otel", str(FIXTURES / "i1-ok.jsonl"), "--engine", "dask"]) == 2
    )
    assert "--emit the derived log" in capsys.readouterr().err
