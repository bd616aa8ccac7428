"""The real stack a security test module attacks: one per module, started with the
passwords of :mod:`tests.security.support`, its databases on the tests' server."""

from __future__ import annotations

from collections.abc import Iterator

import httpx
import pytest

from tests.security.support import ADMIN_PASSWORD, AGENT_PASSWORD
from tests.support.processes import LaunchedStack, stack_for_tests


@pytest.fixture(scope="module")
def stack(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    databases_of_stack: dict[str, str],
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        request.module.__name__.rpartition(".")[2],
        admin_password=ADMIN_PASSWORD,
        databases=databases_of_stack,
        extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": AGENT_PASSWORD},
    ) as up:
        yield up


@pytest.fixture(scope="module")
def http(stack: LaunchedStack) -> Iterator[httpx.Client]:
    """A client of the stack's gateway (no cookies kept between logins: each request names
    its caller by its bearer alone)."""
    with httpx.Client(timeout=30.0, trust_env=False) as client:
        yield client
