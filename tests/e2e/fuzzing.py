"""Every service's OpenAPI fuzzed through the gateway of a running stack (schemathesis):
no generated request, however malformed, may get a 5xx from a healthy stack (but for the
operations a service documents as not implemented, whose answer is their documented 501).
The tests are in ``test_fuzz_*.py``, a few shares each with a stack of their own, so that
the suite's workers share them out (a module runs on one worker: one module fuzzing every
share was the suite's longest).

Each service is fuzzed as a logged-in caller (the platform's admin; the agent server's
default account), over its coverage cases (boundaries, missing and wrong-typed values) and
random cases, with a fixed seed so a failure reproduces. Each test bounds its own work,
whatever the machine: a service's operations are dealt into a fixed number of shares
(:data:`SHARES`, by a stable hash of each operation's name), one test a share, and a share
past :data:`MAX_OPERATIONS` fails the test, saying to deal the service into more shares
(a share of tracking took 144 s as one test on a loaded machine, past the suite's timeout).
A deeper run by hand, against
``make run``: ``.venv/bin/schemathesis run http://127.0.0.1:8080/_services/<service>/
openapi.json --url http://127.0.0.1:8080 -H "Authorization: Bearer <token>" --checks
not_a_server_error --max-examples 100``.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
import zlib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests

PASSWORD = f"Fuzz-{secrets.token_urlsafe(12)}"
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES = 10
SEED = 20261125
# The most operations one test fuzzes (about 2,000 generated cases for tracking's).
MAX_OPERATIONS = 40
# The shares each service's operations are dealt into (one test each). Identity's stay one:
# fuzzing it may change the admin's password, which a second share would log in with.
SHARES = {"tracking": 8, "webhooks": 1, "agent-accounts": 2, "identity": 1}
# Each service's entrypoint and the login form of that entrypoint.
SERVICES = {
    "tracking": ("platform", {"username": "default", "password": PASSWORD}),
    "webhooks": ("platform", {"username": "default", "password": PASSWORD}),
    "agent-accounts": (
        "agent",
        {"grant_type": "password", "username": "default", "password": PASSWORD},
    ),
    "identity": ("platform", {"username": "default", "password": PASSWORD}),
}


DEALT: list[tuple[str, int]] = []
"""The (service, share) pairs of every :func:`fuzz_module` made."""


def share_of(operation: str, service: str) -> int:
    """The share ``operation`` (``"GET /path"``) falls in: stable across runs and machines,
    and unmoved when other operations come or go."""
    return zlib.crc32(operation.encode()) % SHARES[service]


def fuzz_module(*shares: tuple[str, range]) -> tuple[Any, Callable[..., None]]:
    """A test module's ``stack`` fixture (a stack of its own) and its test, one case per
    share of ``shares`` (service, the shares of it), in that order: identity goes last in
    its module, since fuzzing it changes the admin's password and logs its token out, as
    it should."""

    @pytest.fixture(scope="module")
    def stack(
        tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
    ) -> Iterator[LaunchedStack]:
        with stack_for_tests(
            tmp_path_factory,
            "fuzzed",
            admin_password=PASSWORD,
            extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": PASSWORD},
            databases=databases_of_stack,
        ) as up:
            yield up

    dealt = [(service, share) for service, numbers in shares for share in numbers]
    DEALT.extend(dealt)
    cases = [
        pytest.param(service, share, id=f"{service}-{share + 1}of{SHARES[service]}")
        for service, share in dealt
    ]

    @pytest.mark.e2e
    @pytest.mark.parametrize(("service", "share"), cases)
    def test_no_generated_request_gets_a_server_error(
        stack: LaunchedStack, tmp_path: Path, service: str, share: int
    ) -> None:
        fuzz(stack, tmp_path, service, share)

    return stack, test_no_generated_request_gets_a_server_error


def fuzz(stack: LaunchedStack, tmp_path: Path, service: str, share: int) -> None:
    """Schemathesis over the operations of ``service`` in ``share``, logged in: no 5xx."""
    entrypoint, login = SERVICES[service]
    with httpx.Client(timeout=10, trust_env=False) as client:
        response = client.post(stack.url(entrypoint, "/api/v1/login"), data=login)
    assert response.status_code == 200, response.text
    token = response.json()["access_token"]
    document = stack.url(entrypoint, f"/_services/{service}/openapi.json")
    with httpx.Client(timeout=10, trust_env=False) as client:
        schema = client.get(document).json()
    # An operation the service documents as not implemented (its 501 is the answer) is left
    # out; so is every operation of another share.
    fuzzed = [
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "501" not in operation.get("responses", {})
        and share_of(f"{method.upper()} {path}", service) == share
    ]
    assert fuzzed, f"no operation of {service} falls in share {share}: deal it into fewer"
    assert len(fuzzed) <= MAX_OPERATIONS, (
        f"share {share} of {service} has {len(fuzzed)} operations, more than one test "
        f"fuzzes ({MAX_OPERATIONS}): raise SHARES[{service!r}]"
    )
    run = subprocess.run(
        [
            str(SCHEMATHESIS), "run", document,
            "--url", stack.url(entrypoint, ""),
            "-H", f"Authorization: Bearer {token}",
            "--checks", "not_a_server_error",
            "--phases", "coverage,fuzzing",
            "--max-examples", str(EXAMPLES),
            "--seed", str(SEED),
            "--request-timeout", "10",
            "--no-color",
            "--report-dir", str(tmp_path),
            *(arg for name in fuzzed for arg in ("--include-name", name)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}\n{stack.log_tail()}"
