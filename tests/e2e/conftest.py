"""Fixtures of the end-to-end tests."""

from __future__ import annotations

from collections.abc import AsyncIterator

import pytest

from tests.support.databases import Databases
from tests.support.processes import stack_databases


@pytest.fixture(scope="module")
async def databases_of_stack(databases: Databases) -> AsyncIterator[dict[str, str]]:
    """A module's stack's databases on the tests' server (faster than starting the
    embedded one for each stack: its durable settings, a new cluster), dropped after."""
    async with stack_databases(databases) as urls:
        yield urls
