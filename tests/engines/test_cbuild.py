"""The cache of compiled libraries stays bounded: the least recently used beyond the cap go
with their sources, recently used ones and files of other names never do."""
import os
import time

from toolcommit.checker import cbuild


def lib(folder, name, age):
    for suffix in (".so", ".c"):
        p = folder / (name + suffix)
        p.write_text("x")
        t = time.time() - age
        os.utime(p, (t, t))


def test_prune_keeps_the_newest_and_the_recently_used_and_only_its_own_files(tmp_path):
    for i in range(6):
        lib(tmp_path, f"engine-{i}", age=10_000 + i)       # engine-0 is the newest
    lib(tmp_path, "lane-new", age=5)                       # newest of all
    (tmp_path / "notes.txt").write_text("mine")            # not ours: never touched
    (tmp_path / ".engine-dead.c").write_text("x")          # a build that died
    os.utime(tmp_path / ".engine-dead.c", (0, 0))
    gone = cbuild.prune(tmp_path, keep=3, min_age=3600)
    left = sorted(p.name for p in tmp_path.iterdir())
    assert left == ["engine-0.c", "engine-0.so", "engine-1.c", "engine-1.so", "lane-new.c",
                    "lane-new.so", "notes.txt"]
    assert gone == 9
    lib(tmp_path, "engine-9", age=60)                      # over the cap, but used lately
    assert cbuild.prune(tmp_path, keep=1, min_age=3600) == 4
    assert {p.name for p in tmp_path.iterdir()} == {"engine-9.c", "engine-9.so", "lane-new.c",
                                                    "lane-new.so", "notes.txt"}


def test_prune_of_a_missing_folder_does_nothing(tmp_path):
    assert cbuild.prune(tmp_path / "absent") == 0


def test_an_interrupted_build_leaves_nothing_behind(tmp_path, monkeypatch):
    import subprocess

    import pytest

    def interrupted(*args, **kwargs):
        raise KeyboardInterrupt
    monkeypatch.setattr(subprocess, "run", interrupted)
    with pytest.raises(KeyboardInterrupt):
        cbuild.compile_atomic(tmp_path, tmp_path / "engine-x.so", "int x;", ["cc"], ["-c"])
    assert list(tmp_path.iterdir()) == []
