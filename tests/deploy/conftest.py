"""Fixtures of the launcher's tests."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.support.postgres_server import scratch_directory


@pytest.fixture
def scratch() -> Iterator[Path]:
    """A temporary directory an embedded PostgreSQL may keep its data in (a launched
    stack's data dir goes there), removed after the test."""
    with scratch_directory() as directory:
        yield directory
