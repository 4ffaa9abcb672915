"""The gateway tests' fixture: a temporary `Env` whose processes are all stopped after the
test (helpers in `gw.py`)."""

from __future__ import annotations

import pytest

from .gw import Env


@pytest.fixture
def gateway_env(tmp_path):
    env = Env(tmp_path)
    yield env
    env.cleanup()
