"""The TypeScript tests share the runtime tests' PostgreSQL fixture (`pg`)."""

from tests.runtime.conftest import pg  # noqa: F401
