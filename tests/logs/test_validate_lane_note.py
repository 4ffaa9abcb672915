"""Without the native lane (no C compiler, no Python headers) the Python core checks the
log, the report is the same, and stderr says why the run was slower."""

from pathlib import Path

from toolcommit.checker.cli import main
from toolcommit.checker.logs import lane

LOG = Path(__file__).resolve().parents[1] / "fixtures" / "logs" / "ack_loss-bad.jsonl"


def test_a_machine_without_the_lane_gets_the_same_report_and_a_note(capsys, monkeypatch):
    monkeypatch.setenv("TOOLCOMMIT_LANE", "python")
    code = main(["validate", str(LOG)])
    python = capsys.readouterr()
    assert python.err == ""  # asked for: no note
    monkeypatch.delenv("TOOLCOMMIT_LANE")
    monkeypatch.setattr(lane, "_loaded", {"lane": (None, "no C compiler (set CC or install cc)")})
    assert main(["validate", str(LOG)]) == code
    out = capsys.readouterr()
    assert out.out == python.out
    assert out.err == (
        "toolcommit: note: the Python core checked the log, about twice as "
        "slowly, because the native lane is unavailable: no C compiler (set CC "
        "or install cc)\n"
    )
