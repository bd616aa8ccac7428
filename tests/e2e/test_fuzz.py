"""Every service's OpenAPI fuzzed through the gateway of a running stack (schemathesis):
no generated request, however malformed, may get a 5xx from a healthy stack (but for the
operations a service documents as not implemented, whose answer is their documented 501).

Each service is fuzzed as a logged-in caller (the platform's admin; the agent server's
default account), over its coverage cases (boundaries, missing and wrong-typed values) and
random cases, with a fixed seed so a failure reproduces. A deeper run by hand, against
``make run``: ``.venv/bin/schemathesis run http://127.0.0.1:8080/_services/<service>/
openapi.json --url http://127.0.0.1:8080 -H "Authorization: Bearer <token>" --checks
not_a_server_error --max-examples 100``.
"""

from __future__ import annotations

import secrets
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests

pytestmark = pytest.mark.e2e

PASSWORD = f"Fuzz-{secrets.token_urlsafe(12)}"
SCHEMATHESIS = Path(sys.executable).with_name("schemathesis")
EXAMPLES = 10
SEED = 20261125
# (service, entrypoint, the login form of its entrypoint). Identity goes last: fuzzing it
# changes the admin's password and logs its token out, as it should.
SERVICES = [
    ("tracking", "platform", {"username": "default", "password": PASSWORD}),
    ("webhooks", "platform", {"username": "default", "password": PASSWORD}),
    (
        "agent-accounts",
        "agent",
        {"grant_type": "password", "username": "default", "password": PASSWORD},
    ),
    ("identity", "platform", {"username": "default", "password": PASSWORD}),
]


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


@pytest.mark.parametrize(("service", "entrypoint", "login"), SERVICES, ids=[s[0] for s in SERVICES])
def test_no_generated_request_gets_a_server_error(
    stack: LaunchedStack,
    tmp_path: Path,
    service: str,
    entrypoint: str,
    login: dict[str, str],
) -> None:
    with httpx.Client(timeout=10, trust_env=False) as client:
        response = client.post(stack.url(entrypoint, "/api/v1/login"), data=login)
    assert response.status_code == 200, response.text
    token = response.json()["access_token"]
    document = stack.url(entrypoint, f"/_services/{service}/openapi.json")
    with httpx.Client(timeout=10, trust_env=False) as client:
        schema = client.get(document).json()
    # An operation the service documents as not implemented (its 501 is the answer).
    refused = [
        f"{method.upper()} {path}"
        for path, operations in schema["paths"].items()
        for method, operation in operations.items()
        if "501" in operation.get("responses", {})
    ]
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
            *(arg for name in refused for arg in ("--exclude-name", name)),
        ],
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
        cwd=tmp_path,
    )  # fmt: skip
    assert run.returncode == 0, f"{run.stdout[-6000:]}\n{run.stderr[-2000:]}\n{stack.log_tail()}"
