"""Output is never lost, partial or misplaced: `--write` touches only what the run produced,
every write is atomic (old or new content, never missing, even under real SIGINT, SIGTERM
and SIGKILL), follows symlinks, keeps modes, never replaces an input, and every output error
is one line with exit 2."""

import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolcommit.checker.cli import main
from toolcommit.checker.output import write_atomic, write_tree
from toolcommit.checker.render.catalogue import files_for, recorded
from toolcommit.model.errors import OutputError

REPO = Path(__file__).resolve().parents[2]
STORED = REPO / "counterexamples"
LOG = REPO / "tests" / "fixtures" / "logs" / "i1-ok.jsonl"


def snapshot(folder: Path) -> dict:
    return {
        str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()
    }


def temporaries(*folders: Path) -> list:
    return [p for f in folders if f.exists() for p in f.rglob(".toolcommit-*")]


def cli(*args, stdout=subprocess.PIPE, cwd=None):
    return subprocess.run(
        [sys.executable, "-m", "toolcommit.checker.cli", *map(str, args)],
        stdout=stdout,
        stderr=subprocess.PIPE,
        text=True,
        timeout=300,
        cwd=cwd,
    )


def write_check(out_dir: Path, preset: str, *extra: str) -> int:
    """`check --preset PRESET --instance ack_loss EXTRA... --write --out-dir OUT_DIR`'s
    exit code."""
    return main(
        ["check", "--preset", preset, "--instance", "ack_loss", *extra]
        + ["--write", "--out-dir", str(out_dir)]
    )


# --- item 8: --write touches only what the run produced --------------------------------


def test_writing_one_instance_keeps_every_other_file_of_the_catalogue(tmp_path):
    shutil.copytree(STORED / "naive", tmp_path / "naive")
    before = snapshot(tmp_path / "naive")
    assert write_check(tmp_path, "naive") == 1
    assert snapshot(tmp_path / "naive") == before  # 160+ files kept, ack_loss rewritten identically


def test_a_run_with_other_bounds_writes_its_own_catalogue_and_keeps_the_default(tmp_path):
    shutil.copytree(STORED / "naive", tmp_path / "naive")
    before = snapshot(tmp_path / "naive")
    assert write_check(tmp_path, "naive", "--bounds", "ack_losses=2") == 1
    assert snapshot(tmp_path / "naive") == before
    index = json.loads((tmp_path / "naive@ack_losses=2" / "index.json").read_text())
    assert index["bounds"] == {"ack_losses": 2} and list(index["instances"]) == ["ack_loss"]


def test_bounds_equal_to_the_defaults_write_the_default_catalogue(tmp_path):
    assert write_check(tmp_path, "naive", "--bounds", "ack_losses=1") == 1
    assert sorted(p.name for p in tmp_path.iterdir()) == ["naive"]


def test_a_stale_file_is_removed_only_if_the_index_records_it_as_produced(tmp_path):
    folder = tmp_path / "recommended"
    shutil.copytree(STORED / "recommended", folder)
    index = json.loads((folder / "index.json").read_text())
    index["instances"]["ack_loss"]["verdicts"]["I1"] = {"status": "VIOLATED", "steps": 8}
    (folder / "index.json").write_text(json.dumps(index))
    (folder / "ack_loss").mkdir()
    for name in ("I1.itf.json", "I1.txt", "I1.mmd", "I2.txt", "notes.md"):
        (folder / "ack_loss" / name).write_text("from an earlier run, or the user's own\n")
    assert write_check(tmp_path, "recommended") == 0
    assert sorted(p.name for p in (folder / "ack_loss").iterdir()) == ["I2.txt", "notes.md"]
    assert snapshot(folder)["index.json"] == (STORED / "recommended" / "index.json").read_bytes()


def test_a_checked_property_subset_updates_only_those_verdicts(tmp_path):
    shutil.copytree(STORED / "naive", tmp_path / "naive")
    before = snapshot(tmp_path / "naive")
    assert write_check(tmp_path, "naive", "--property", "I1") == 1
    assert snapshot(tmp_path / "naive") == before


def test_a_folder_holding_another_catalogue_is_refused_untouched(tmp_path, capsys):
    shutil.copytree(STORED / "seed", tmp_path / "naive")
    before = snapshot(tmp_path / "naive")
    assert write_check(tmp_path, "naive") == 2
    assert "holds another catalogue" in capsys.readouterr().err
    assert snapshot(tmp_path / "naive") == before


def test_the_index_records_exactly_the_files_a_catalogue_holds(suites):
    for suite in suites.values():
        files = files_for(suite)
        assert recorded(json.loads(files["index.json"])) == set(files)


def test_a_question_rewrite_removes_only_the_cells_its_old_index_recorded(tmp_path):
    folder = tmp_path / "questions" / "tradeoffs"
    shutil.copytree(STORED / "questions" / "tradeoffs", folder)
    before = snapshot(folder)
    index = json.loads((folder / "index.json").read_text())
    index["cells"]["Gone__cell"] = {}
    (folder / "index.json").write_text(json.dumps(index))
    for name in ("Gone__cell.txt", "Gone__cell.mmd", "Gone__cell.itf.json", "mine.txt"):
        (folder / name).write_text("x\n")
    assert main(["ask", "tradeoffs", "--write", "--out-dir", str(tmp_path)]) == 0
    assert snapshot(folder) == {**before, "mine.txt": b"x\n"}


# --- item 10: atomic, mode-keeping, symlink-following writes; real signals ---------------


@pytest.fixture
def umask022():
    old = os.umask(0o022)
    yield
    os.umask(old)


def mode(path) -> int:
    return stat.S_IMODE(os.stat(path).st_mode)


def test_a_new_file_and_folder_get_the_umask_default(tmp_path, umask022):
    write_atomic(tmp_path / "new" / "report.txt", "r\n")
    write_tree(tmp_path / "cat", {"a/b.txt": "b\n", "index.json": "{}\n"})
    assert mode(tmp_path / "new" / "report.txt") == 0o644 and mode(tmp_path / "new") == 0o755
    assert mode(tmp_path / "cat") == 0o755 and mode(tmp_path / "cat" / "a") == 0o755
    assert mode(tmp_path / "cat" / "a" / "b.txt") == 0o644


def test_a_replaced_file_keeps_its_mode(tmp_path, umask022):
    (tmp_path / "report.txt").write_text("old\n")
    os.chmod(tmp_path / "report.txt", 0o640)
    (tmp_path / "cat").mkdir()
    (tmp_path / "cat" / "b.txt").write_text("old\n")
    os.chmod(tmp_path / "cat" / "b.txt", 0o600)
    write_atomic(tmp_path / "report.txt", "new\n")
    write_tree(tmp_path / "cat", {"b.txt": "new\n"})
    assert mode(tmp_path / "report.txt") == 0o640 and mode(tmp_path / "cat" / "b.txt") == 0o600
    assert (
        (tmp_path / "report.txt").read_text() == "new\n" == (tmp_path / "cat" / "b.txt").read_text()
    )


def test_writing_to_a_symlink_writes_its_target_and_keeps_the_link(tmp_path):
    (tmp_path / "real").mkdir()
    (tmp_path / "real" / "report.md").write_text("old\n")
    (tmp_path / "link.md").symlink_to(tmp_path / "real" / "report.md")
    assert cli("validate", LOG, "-o", tmp_path / "link.md").returncode == 0
    assert (tmp_path / "link.md").is_symlink()
    assert "CONFORMS" in (tmp_path / "real" / "report.md").read_text()


def device(folder: Path, name: str, minor: int) -> Path:
    """A private copy of /dev/null (minor 3) or /dev/full (7): a test that regresses must
    never replace the machine's own device nodes (tests run as root)."""
    path = folder / name
    try:
        os.mknod(path, stat.S_IFCHR | 0o666, os.makedev(1, minor))
    except OSError as e:
        pytest.skip(f"cannot make a device node here: {e}")
    return path


def test_a_device_is_written_in_place_never_replaced(tmp_path):
    null = device(tmp_path, "null", 3)
    write_atomic(null, "discarded\n")
    assert stat.S_ISCHR(os.stat(null).st_mode) and os.listdir(tmp_path) == ["null"]


def test_a_dead_runs_temporaries_are_removed_by_the_next_write_and_a_live_ones_kept(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    left = [
        tmp_path / f".toolcommit-{dead}-0123abcd.report.txt.tmp",
        tmp_path / f".toolcommit-{dead}-0123abcd.cat.d",
    ]
    left[0].write_text("partial")
    left[1].mkdir()
    (left[1] / "00000").write_text("staged, never committed")
    live = tmp_path / ".toolcommit-1-0123abcd.other.tmp"  # pid 1 runs
    live.write_text("someone else's")
    write_atomic(tmp_path / "report.txt", "r\n")
    assert not any(p.exists() for p in left) and live.exists()


def test_a_journaled_commit_of_a_killed_run_is_completed_by_the_next_write(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    cat = tmp_path / "cat"
    write_tree(cat, {"a.txt": "old a\n", "b.txt": "old b\n", "gone.txt": "old\n"})
    stage = tmp_path / f".toolcommit-{dead}-0123abcd.cat.d"
    stage.mkdir()
    (stage / "00001").write_text("new b\n")  # a.txt was renamed before the kill, b.txt not
    (cat / "a.txt").write_text("new a\n")
    (stage / "journal.json").write_text(
        json.dumps(
            {
                "root": str(cat),
                "remove": [str(cat / "gone.txt")],
                "moves": [
                    [str(stage / "00000"), str(cat / "a.txt")],
                    [str(stage / "00001"), str(cat / "b.txt")],
                ],
            }
        )
    )
    write_atomic(tmp_path / "other.txt", "x\n")
    assert snapshot(cat) == {"a.txt": b"new a\n", "b.txt": b"new b\n"} and not stage.exists()


def test_a_journal_is_never_followed_outside_the_folder_it_stands_beside(tmp_path):
    dead = subprocess.run(
        [sys.executable, "-c", "import os; print(os.getpid())"], capture_output=True, text=True
    ).stdout.strip()
    (tmp_path / "victim.txt").write_text("keep\n")
    (tmp_path / "cat").mkdir()
    stage = tmp_path / "cat" / f".toolcommit-{dead}-0123abcd.x.d"  # planted inside, not beside
    stage.mkdir()
    (stage / "00000").write_text("planted\n")
    (stage / "journal.json").write_text(
        json.dumps(
            {
                "root": str(tmp_path / "cat" / "x"),
                "remove": [str(tmp_path / "victim.txt")],
                "moves": [[str(stage / "00000"), str(tmp_path / "victim.txt")]],
            }
        )
    )
    write_atomic(tmp_path / "cat" / "report.txt", "r\n")
    assert (tmp_path / "victim.txt").read_text() == "keep\n" and not stage.exists()


DRIVER = r"""
import sys
from pathlib import Path
from toolcommit.checker.output import write_atomic, write_tree
kind, target, v = sys.argv[1], Path(sys.argv[2]), sys.argv[3]
text = v * 16_000_000
files = {f"d{i % 5}/f{i:02d}.txt": v * 20_000 for i in range(30)}
if v == "a":
    files.update({f"d{i % 5}/old{i:02d}.txt": v for i in range(10)})
files["index.json"] = v
print("ready", flush=True)
if kind == "file":
    write_atomic(target, text)
else:
    write_tree(target, files, [f"d{i % 5}/old{i:02d}.txt" for i in range(10)] if v == "b" else ())
"""


def drive(kind, target, version, signum=None, delay=0.0):
    """Run the driver writing `version`; send `signum` `delay` seconds after it is ready.
    Returns the seconds it ran once ready (only to place the kills)."""
    p = subprocess.Popen(
        [sys.executable, "-c", DRIVER, kind, str(target), version],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert p.stdout.readline() == "ready\n"
    t0 = time.perf_counter()
    if signum:
        time.sleep(delay)
        p.send_signal(signum)
    _, err = p.communicate(timeout=60)
    assert "Traceback" not in err or "KeyboardInterrupt" in err, err
    assert p.returncode in (0, -signal.SIGINT, -signal.SIGTERM, -signal.SIGKILL), err
    return time.perf_counter() - t0


def file_version(target, old, new):
    data = target.read_bytes()
    assert data in ((old * 16_000_000).encode(), (new * 16_000_000).encode()), "partial content"
    return data[:1].decode()


def tree_files(v) -> dict:
    out = {f"d{i % 5}/f{i:02d}.txt": v * 20_000 for i in range(30)} | {"index.json": v}
    return out | ({f"d{i % 5}/old{i:02d}.txt": v for i in range(10)} if v == "a" else {})


def tree_version(target, old, new):
    got = {rel: data.decode() for rel, data in snapshot(target).items()}
    before, after = tree_files(old), tree_files(new)
    for rel, text in got.items():  # every file is its old or its new complete content
        assert text in (before.get(rel), after.get(rel)), rel
    assert set(before) & set(after) <= set(got), "a file went missing"
    return old if got == before else new if got == after else "mixed"


@pytest.mark.slow
@pytest.mark.parametrize("kind,version", [("file", file_version), ("tree", tree_version)])
def test_interrupted_writes_leave_old_or_new_content_and_no_temporaries(tmp_path, kind, version):
    """21 real signals (7 each of SIGINT, SIGTERM, SIGKILL) at seeded moments of a write."""
    target = tmp_path / "out" / ("report.txt" if kind == "file" else "cat")
    rng = random.Random(20240607)
    drive(kind, target, "b")
    seconds = drive(kind, target, "a")  # an uninterrupted write, to place kills
    old = "a"
    for run in range(21):
        new = "b" if old == "a" else "a"
        signum = (signal.SIGINT, signal.SIGTERM, signal.SIGKILL)[run % 3]
        drive(kind, target, new, signum, rng.uniform(0, seconds * 1.2))
        seen = version(target, old, new)
        if signum != signal.SIGKILL:  # the handler removed the temporaries; no half commit
            assert os.listdir(target.parent) == [target.name], signum
            assert seen in (old, new), signum
        drive(kind, target, new)  # the next run completes or discards what a kill left
        assert version(target, old, new) == new and os.listdir(target.parent) == [target.name]
        old = new


# --- item 9: never replace an input ------------------------------------------------------


def test_an_input_is_never_overwritten_by_name_symlink_or_hard_link(tmp_path):
    log = tmp_path / "log.jsonl"
    log.write_text("input\n")
    (tmp_path / "sym").symlink_to(log)
    os.link(log, tmp_path / "hard")
    for out in (log, tmp_path / "sym", tmp_path / "hard"):
        with pytest.raises(OutputError, match="it is the input"):
            write_atomic(out, "report\n", inputs=[str(log)])
        with pytest.raises(OutputError, match="it is the input"):
            write_tree(tmp_path, {out.name: "report\n"}, inputs=[str(log)])
    assert log.read_text() == "input\n"


def test_ask_refuses_to_write_its_answer_over_the_question_file(tmp_path):
    q = tmp_path / "q.json"
    shutil.copy(REPO / "spec" / "questions" / "tradeoffs.json", q)
    r = cli("ask", q, "--answer", q)
    assert r.returncode == 2 and "it is the input" in r.stderr
    assert q.read_bytes() == (REPO / "spec" / "questions" / "tradeoffs.json").read_bytes()


# --- item 12: one output error path: exit 2, one line, no traceback ---------------------


@pytest.fixture
def places(tmp_path):
    (tmp_path / "dir").mkdir()
    (tmp_path / "file").write_text("a file\n")
    device(tmp_path, "full", 7)
    return tmp_path


@pytest.mark.parametrize(
    "args,why",
    [
        (["validate", LOG, "-o", "{dir}"], "Is a directory"),
        (["validate", LOG, "-o", "{full}"], "No space left on device"),
        (
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "ack_loss",
                "--write",
                "--out-dir",
                "{file}",
            ],
            "File exists",
        ),
        (
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "ack_loss",
                "--write",
                "--out-dir",
                "{file}/sub",
            ],
            "Not a directory",
        ),
        (
            [
                "check",
                "--preset",
                "naive",
                "--instance",
                "ack_loss",
                "--write",
                "--out-dir",
                "/proc/toolcommit",
            ],
            "cannot be made there",
        ),
        (["ask", "tradeoffs", "--answer", "{dir}"], "Is a directory"),
        (["ask", "tradeoffs", "--write", "--out-dir", "{file}"], "Not a directory"),
    ],
)
def test_an_unwritable_output_is_one_line_and_exit_2(places, args, why):
    r = cli(
        *[
            str(a).format(dir=places / "dir", file=places / "file", full=places / "full")
            for a in args
        ]
    )
    assert r.returncode == 2, r.stderr
    assert r.stderr.startswith("toolcommit: cannot write ") and why in r.stderr, r.stderr
    assert len(r.stderr.splitlines()) == 1 and "Traceback" not in r.stderr
    assert (places / "file").read_text() == "a file\n" and stat.S_ISCHR(
        os.stat(places / "full").st_mode
    )
    assert not temporaries(places)


@pytest.mark.parametrize(
    "args", [["validate", LOG], ["spec"], ["check", "--preset", "naive", "--instance", "ack_loss"]]
)
def test_a_full_stdout_is_one_line_and_exit_2(args):
    with open("/dev/full", "w") as full:
        r = cli(*args, stdout=full)
    assert r.returncode == 2
    assert r.stderr == (
        "toolcommit: cannot write <stdout>: No space left on device; "
        "free some space or write elsewhere\n"
    )
