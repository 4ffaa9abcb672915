"""The runtime tests' shared fixture: `pg`, a PostgreSQL server of the module's own
(TempPostgres: initdb into a temporary folder, a Unix socket only), skipped where none can
start. A module that needs the server set up otherwise defines its own `pg`."""

from __future__ import annotations

import pytest

from toolcommit.checker.torture.pgserver import NoPostgres, TempPostgres


@pytest.fixture(scope="module")
def pg():
    try:
        with TempPostgres() as server:
            yield server
    except NoPostgres as e:
        pytest.skip(str(e))
