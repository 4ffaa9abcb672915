"""A throwaway PostgreSQL server for tests and benchmarks: initdb into a temporary folder,
``pg_ctl start`` listening on a Unix socket in that folder only (no TCP port), stopped and
removed on exit. As root (CI runs as root), the server runs as the ``postgres`` user
through ``runuser``, since PostgreSQL refuses to run as root.

>>> binaries() is None or os.path.exists(os.path.join(binaries(), "initdb"))
True
"""

from __future__ import annotations

import glob
import os
import pwd
import shutil
import subprocess
import tempfile
from typing import Optional

from toolcommit.checker.logs.children import held_signals


class NoPostgres(RuntimeError):
    """No PostgreSQL server binaries, or no user to run them as: the reason says which."""


def binaries() -> Optional[str]:
    """The folder of ``initdb`` and ``pg_ctl`` (the newest under /usr/lib/postgresql, else
    on PATH), or None."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: [int(x) if x.isdigit() else 0 for x in p.split("/")[4].split(".")],
    )
    if found:
        return os.path.dirname(found[-1])
    initdb = shutil.which("initdb")
    return os.path.dirname(os.path.realpath(initdb)) if initdb else None


class TempPostgres:
    """A context manager: ``with TempPostgres() as pg: pg.dsn`` (a libpq connection string).

    Parameters
    ----------
    fsync : bool
        Keep fsync on (benchmarks) or off (tests: faster, and durability is not what they
        check).
    """

    def __init__(self, fsync: bool = False):
        self.fsync = fsync
        self.dir = ""
        self.bin = binaries()
        if self.bin is None:
            raise NoPostgres(
                "PostgreSQL server binaries (initdb, pg_ctl) are not installed; "
                "apt-get install postgresql"
            )
        self.user: Optional[str] = None
        if os.geteuid() == 0:
            try:
                pwd.getpwnam("postgres")
            except KeyError:
                raise NoPostgres(
                    "running as root and there is no 'postgres' user to run the server as"
                ) from None
            self.user = "postgres"

    def _run(self, *argv: str) -> None:
        cmd = [os.path.join(self.bin, argv[0]), *argv[1:]]
        if self.user:
            cmd = ["runuser", "-u", self.user, "--"] + cmd
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=120)
        if r.returncode != 0:
            raise NoPostgres(f"{argv[0]} failed: {(r.stderr or r.stdout).strip()[-500:]}")

    def __enter__(self) -> "TempPostgres":
        self.dir = ""
        try:
            with held_signals():  # the folder is on record before a stop can land
                self.dir = tempfile.mkdtemp(prefix="toolcommit-pg-")
            data = os.path.join(self.dir, "data")
            if self.user:
                u = pwd.getpwnam(self.user)
                os.chown(self.dir, u.pw_uid, u.pw_gid)
                os.chmod(self.dir, 0o700)
            self._run(
                "initdb",
                "-D",
                data,
                "-A",
                "trust",
                "-U",
                "toolcommit",
                "-E",
                "UTF8",
                "--no-sync",
                "--no-instructions",
            )
            opts = (
                f"-c listen_addresses='' -k {self.dir} -c max_connections=50 "
                f"-c fsync={'on' if self.fsync else 'off'} "
                f"-c synchronous_commit={'on' if self.fsync else 'off'}"
            )
            self._run(
                "pg_ctl",
                "-D",
                data,
                "-l",
                os.path.join(self.dir, "log"),
                "-w",
                "-t",
                "60",
                "-o",
                opts,
                "start",
            )
        except BaseException:
            if self.dir:
                shutil.rmtree(self.dir, ignore_errors=True)
            raise
        self.dsn = f"host={self.dir} port=5432 dbname=postgres user=toolcommit"
        return self

    def __exit__(self, *exc) -> None:
        try:
            self._run(
                "pg_ctl", "-D", os.path.join(self.dir, "data"), "-m", "immediate", "-w", "stop"
            )
        except NoPostgres:
            pass
        finally:
            shutil.rmtree(self.dir, ignore_errors=True)
