"""The cache of compiled libraries stays bounded: the least recently used beyond the cap go
with their sources, recently used ones and files of other names never do."""

import ctypes
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest

from toolcommit.checker import cbuild


def lib(folder, name, age):
    for suffix in (".so", ".c"):
        p = folder / (name + suffix)
        p.write_text("x")
        t = time.time() - age
        os.utime(p, (t, t))


def test_prune_keeps_the_newest_and_the_recently_used_and_only_its_own_files(tmp_path):
    for i in range(6):
        lib(tmp_path, f"engine-{i}", age=10_000 + i)  # engine-0 is the newest
    lib(tmp_path, "lane-new", age=5)  # newest of all
    (tmp_path / "notes.txt").write_text("mine")  # not ours: never touched
    (tmp_path / ".engine-dead.c").write_text("x")  # a build that died
    os.utime(tmp_path / ".engine-dead.c", (0, 0))
    gone = cbuild.prune(tmp_path, keep=3, min_age=3600)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == [
        "engine-0.c",
        "engine-0.so",
        "engine-1.c",
        "engine-1.so",
        "lane-new.c",
        "lane-new.so",
        "notes.txt",
    ]
    assert gone == 9
    lib(tmp_path, "engine-9", age=60)  # over the cap, but used lately
    assert cbuild.prune(tmp_path, keep=1, min_age=3600) == 4
    assert {p.name for p in tmp_path.iterdir()} == {
        "engine-9.c",
        "engine-9.so",
        "lane-new.c",
        "lane-new.so",
        "notes.txt",
    }


def test_prune_of_a_missing_folder_does_nothing(tmp_path):
    assert cbuild.prune(tmp_path / "absent") == 0


_SLOW_C = "".join(
    f"double f{i}(double x) {{ for (int k = 0; k < {i % 7 + 3}; k++) "
    f"x = x * 1.0001 + {i}; return x; }}\n"
    for i in range(6000)
)
_BUILD = """
import sys
from pathlib import Path
from toolcommit.checker import cbuild
folder = Path(sys.argv[1])
cbuild.compile_atomic(folder, folder / "engine-slow.so", Path(sys.argv[2]).read_text(),
                      cbuild.compiler(),
                      ["-O2", "-shared", "-fPIC"])
"""


@pytest.mark.skipif(
    cbuild.compiler() is None or not os.path.isdir("/proc"),
    reason="no C compiler, or no /proc to see it run",
)
@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_an_interrupted_build_leaves_nothing_behind(tmp_path, signum):
    """A real compiler, interrupted by a real signal mid-build: nothing of the build stays in
    the cache folder, and nothing of the compiler's in $TMPDIR."""
    cache, tmpdir = tmp_path / "cache", tmp_path / "tmp"
    cache.mkdir(mode=0o700)
    tmpdir.mkdir()
    (tmp_path / "slow.c").write_text(_SLOW_C)
    proc = subprocess.Popen(
        [sys.executable, "-c", _BUILD, str(cache), str(tmp_path / "slow.c")],
        env={**os.environ, "TMPDIR": str(tmpdir)},
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
    )
    deadline = time.monotonic() + 60
    while not (  # the build has begun and the compiler proper is at work
        any(p.is_dir() for p in cache.iterdir()) and {"cc1", "as"} & set(_descendants(proc.pid))
    ):
        assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
        time.sleep(0.005)  # a bounded poll
    proc.send_signal(signum)
    proc.wait(timeout=60)
    assert proc.returncode != 0, "the build ended before the signal: make _SLOW_C slower"
    assert list(cache.iterdir()) == [] and list(tmpdir.iterdir()) == []


def test_a_build_folder_left_by_a_killed_build_is_pruned_once_old(tmp_path):
    stale = tmp_path / ".engine-build-abc"
    stale.mkdir()
    (stale / "cc1.s").write_text("x")
    os.utime(stale, (0, 0))
    fresh = tmp_path / ".engine-build-def"
    fresh.mkdir()
    cbuild.prune(tmp_path)
    assert not stale.exists() and fresh.exists()


# ----- what is loaded: only a checked file of this user (the reliability issue) ---------------
needs_cc = pytest.mark.skipif(cbuild.compiler() is None, reason="no C compiler")
SOURCE = "int tc_answer(void) { return 42; }\n"
LOGS = Path(__file__).resolve().parents[1] / "fixtures" / "logs"


@pytest.fixture(autouse=True)
def own_notes(monkeypatch):
    """Each test's notes are its own (they would be printed by a later command)."""
    monkeypatch.setattr(cbuild, "NOTES", [])


def load(target):
    with cbuild.verified(target, SOURCE, cbuild.compiler(), ["-shared", "-fPIC"]) as (p, why):
        assert p is not None, why
        return ctypes.CDLL(p).tc_answer()


def plant(path: Path, marker: Path) -> None:
    """A library that, once loaded, leaves `marker` (the attack: code run as this user)."""
    c = path.with_suffix(".planted.c")
    c.write_text(
        "#include <stdio.h>\n__attribute__((constructor)) static void planted(void)"
        f' {{ FILE *f = fopen("{marker}", "w"); if (f) fclose(f); }}\n'
    )
    subprocess.run([*cbuild.compiler(), "-shared", "-fPIC", "-o", str(path), str(c)], check=True)
    c.unlink()
    path.chmod(0o700)


@needs_cc
def test_the_cache_folders_are_created_private_whatever_the_umask(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path / "cache"))
    monkeypatch.setattr(cbuild, "NOTES", [])
    old = os.umask(0)
    try:
        target = cbuild.cache_dir() / "engine-t.so"
        assert load(target) == 42
    finally:
        os.umask(old)
    for d in (target.parent, target.parent.parent, tmp_path / "cache"):
        assert stat_mode(d) == 0o700, d
    assert (
        stat_mode(target) & 0o077 == 0
        and cbuild.manifest_of(target).read_text().endswith("  engine-t.so\n")
        and cbuild.NOTES == []
    )


def stat_mode(p) -> int:
    return os.stat(p).st_mode & 0o777


@needs_cc
def test_a_planted_library_of_the_expected_name_is_never_loaded_but_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cbuild, "NOTES", [])
    target = cbuild.cache_dir() / "engine-t.so"
    assert load(target) == 42
    marker = tmp_path / "planted-code-ran"
    plant(target, marker)  # same name, this user's, mode 0700
    assert load(target) == 42 and not marker.exists()
    assert any("does not match its manifest entry: built again" in n for n in cbuild.NOTES)


@needs_cc
@pytest.mark.skipif(os.geteuid() != 0, reason="needs root to give a file to another user")
def test_a_cached_library_of_another_user_is_rebuilt(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    target = cbuild.cache_dir() / "engine-t.so"
    load(target)
    os.chown(target, 65534, -1)
    assert load(target) == 42 and os.stat(target).st_uid == 0


@needs_cc
@pytest.mark.parametrize("how", ["writable by others", "another user's"])
def test_a_cache_folder_others_can_write_is_refused_and_the_build_is_private(
    how, tmp_path, monkeypatch
):
    if how == "another user's" and os.geteuid() != 0:
        pytest.skip("needs root to give a folder to another user")
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    monkeypatch.setattr(cbuild, "NOTES", [])
    folder = cbuild.cache_dir()
    folder.mkdir(parents=True)
    if how == "writable by others":
        folder.chmod(0o777)
    else:
        os.chown(folder.parent, 65534, -1)
    assert load(folder / "engine-t.so") == 42
    assert list(folder.iterdir()) == []  # nothing written there
    assert len(cbuild.NOTES) == 1 and "private temporary folder" in cbuild.NOTES[0]


def test_an_own_cache_folder_readable_by_others_is_tightened(tmp_path, monkeypatch):
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    folder = cbuild.cache_dir()
    folder.mkdir(parents=True, mode=0o755)
    folder.chmod(0o755)
    assert cbuild.private(folder) == "" and stat_mode(folder) == 0o700


def test_a_relative_xdg_cache_home_is_ignored(monkeypatch, tmp_path):
    monkeypatch.setenv("XDG_CACHE_HOME", "relative/cache")
    monkeypatch.setenv("HOME", str(tmp_path))
    assert cbuild.cache_dir() == tmp_path / ".cache" / "toolcommit" / "native"


@needs_cc
def test_a_cached_engine_without_its_symbols_is_not_the_engine(tmp_path, monkeypatch):
    from toolcommit.checker.engines.explicit import native

    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    lib, why = native._build_and_load(
        "t", f"int tc_abi(void) {{ return {native.ABI}; }}\n", cbuild.compiler()
    )
    assert lib is None and "cannot load" in why and "tc_explore" in why


@pytest.mark.slow  # builds the lane twice in a fresh cache (about 6 s)
@needs_cc
def test_validate_never_runs_a_planted_lane_and_says_so(tmp_path):
    env = dict(os.environ, XDG_CACHE_HOME=str(tmp_path))
    argv = [sys.executable, "-m", "toolcommit.checker.cli", "validate", str(LOGS / "i1-ok.jsonl")]
    first = subprocess.run(argv, env=env, capture_output=True, text=True)
    lane = next((tmp_path / "toolcommit" / "native").glob("lane-*.so"))
    marker = tmp_path / "planted-code-ran"
    plant(lane, marker)
    again = subprocess.run(argv, env=env, capture_output=True, text=True)
    assert again.stdout == first.stdout and again.returncode == first.returncode == 0
    assert not marker.exists() and "does not match its manifest entry" in again.stderr


@needs_cc
def test_two_libraries_loaded_one_after_the_other_are_each_themselves(tmp_path):
    answers = []
    for n in (42, 7):
        src = f"int tc_answer(void) {{ return {n}; }}\n"
        with cbuild.verified(
            tmp_path / f"d{n}" / "engine-t.so", src, cbuild.compiler(), ["-shared", "-fPIC"]
        ) as (p, why):
            answers.append(ctypes.CDLL(p).tc_answer())
    assert answers == [42, 7]


def _descendants(pid: int) -> list[str]:
    """The command names of `pid`'s descendants (from /proc)."""
    parent = {}
    for d in os.listdir("/proc"):
        try:
            with open(f"/proc/{d}/stat") as f:
                name, rest = f.read().rsplit(")", 1)
            parent[int(d)] = (int(rest.split()[1]), name.split("(", 1)[1])
        except (OSError, ValueError, IndexError):
            continue
    found, frontier = [], {pid}
    while frontier:
        kids = {p for p, (pp, _) in parent.items() if pp in frontier}
        found += [parent[p][1] for p in kids]
        frontier = kids
    return found


@pytest.mark.skipif(
    cbuild.compiler() is None or not os.path.isdir("/proc"),
    reason="no C compiler, or no /proc to see it run",
)
@pytest.mark.parametrize("how", ["ctrl-c", "sigterm"])
def test_the_check_command_interrupted_while_it_compiles_leaves_nothing_behind(tmp_path, how):
    """The real command with a fresh cache, so that it compiles: a Ctrl-C (SIGINT to the
    whole process group, the compiler included) or a SIGTERM to toolcommit while the
    compiler runs leaves no ``cc*.s`` in $TMPDIR and no ``.engine-*`` file in the cache."""
    cache, tmpdir = tmp_path / "xdg", tmp_path / "tmp"
    cache.mkdir()
    tmpdir.mkdir()
    cli = os.path.join(os.path.dirname(sys.executable), "toolcommit")
    proc = subprocess.Popen(
        [cli, "check"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.PIPE,
        text=True,
        start_new_session=True,
        env={**os.environ, "TMPDIR": str(tmpdir), "XDG_CACHE_HOME": str(cache)},
    )
    try:
        deadline = time.monotonic() + 120
        while not {"cc1", "as"} & set(_descendants(proc.pid)):  # the compiler is at work
            assert proc.poll() is None and time.monotonic() < deadline, proc.stderr.read()
            time.sleep(0.005)
        if how == "ctrl-c":
            os.killpg(proc.pid, signal.SIGINT)
        else:
            proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=60)
        assert proc.returncode == (130 if how == "ctrl-c" else -signal.SIGTERM), err
        assert "Traceback" not in err
        assert list(tmpdir.iterdir()) == []
        assert [p.name for p in cache.rglob(".*")] == []
    finally:
        proc.kill()
        proc.wait()
