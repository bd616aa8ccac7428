"""The first ``make run`` on a fresh data dir, with no password and no database chosen:
the launcher starts the embedded PostgreSQL (its data in the data dir), both servers can be
logged in to with what the launcher's banner and the services' output say, and every
webhook has its endpoint_url at the gateway.

The one end-to-end test on the embedded server: the others run their stacks on the tests'
server (tests/e2e/conftest.py)."""

from __future__ import annotations

import re
import uuid
from collections.abc import Iterator

import httpx
import pytest

from tests.support.processes import LaunchedStack, stack_for_tests
from tests.support.waiting import wait_for

pytestmark = pytest.mark.e2e

GENERATED = re.compile(
    r"^(?P<service>[\w-]+) +\| +Created the first \w+ 'default' with the generated password: "
    r"(?P<password>\S+)$",
    re.MULTILINE,
)


@pytest.fixture(scope="module")
def stack(tmp_path_factory: pytest.TempPathFactory) -> Iterator[LaunchedStack]:
    with stack_for_tests(tmp_path_factory, "first-run", admin_password=None) as up:
        # The gateway answers a moment before the launcher prints its banner.
        wait_for(lambda: "Ctrl-C stops everything." in up.output(), "the banner", within=10)
        yield up


@pytest.fixture
def passwords(stack: LaunchedStack) -> dict[str, str]:
    return {m["service"]: m["password"] for m in GENERATED.finditer(stack.output())}


def test_the_banner_says_where_both_first_passwords_are(stack: LaunchedStack):
    output = stack.output()
    for title, service in [
        ("platform API (ZenML 0.96.3)", "identity"),
        ("agent-run server (kitaru 0.27.2)", "agent-accounts"),
    ]:
        assert (
            f'{title} login: user "default", password printed once in {service}\'s log above'
        ) in output
    assert f"agent-run login {stack.url('agent', '')} --username default" in output


def test_the_embedded_postgresql_holds_the_data_in_the_data_dir(stack: LaunchedStack):
    output = stack.output()
    assert f"created a PostgreSQL cluster in {stack.data_dir / 'postgres'}" in output
    for database in ("identity", "tracking", "webhooks", "agent_accounts"):
        assert f"created the database {database} for " in output
    assert "  database: the embedded PostgreSQL at postgresql://postgres@127.0.0.1:" in output
    assert (stack.data_dir / "postgres" / "PG_VERSION").read_text().strip() == "18"


def test_both_servers_take_the_printed_passwords(stack: LaunchedStack, passwords):
    assert set(passwords) == {"identity", "agent-accounts"}
    with httpx.Client(timeout=10.0, trust_env=False) as client:
        platform = client.post(
            stack.url("platform", "/api/v1/login"),
            data={"username": "default", "password": passwords["identity"]},
        )
        agent = client.post(
            stack.url("agent", "/api/v1/login"),
            data={
                "grant_type": "password",
                "username": "default",
                "password": passwords["agent-accounts"],
            },
        )
    assert platform.status_code == 200, platform.text
    assert agent.status_code == 200, agent.text


def test_the_passwords_are_kept_only_as_hashes(stack: LaunchedStack, passwords):
    for path in stack.data_dir.rglob("*"):
        if path.is_file() and path.suffix != ".log":
            content = path.read_bytes()
            for password in passwords.values():
                assert password.encode() not in content, path


def test_a_webhooks_endpoint_url_is_at_the_gateway(stack: LaunchedStack, passwords):
    with httpx.Client(timeout=10.0, trust_env=False) as client:
        login = client.post(
            stack.url("platform", "/api/v1/login"),
            data={"username": "default", "password": passwords["identity"]},
        )
        headers = {"Authorization": f"Bearer {login.json()['access_token']}"}
        project = client.get(stack.url("platform", "/api/v1/projects/default"), headers=headers)
        assert project.status_code == 200, project.text
        created = client.post(
            stack.url("platform", "/api/v1/webhooks"),
            headers=headers,
            json={
                "name": f"first-run-{uuid.uuid4().hex[:8]}",
                "project": project.json()["id"],
                "webhook_type": "custom",
            },
        )
    assert created.status_code == 200, created.text
    webhook = created.json()
    assert webhook["body"]["endpoint_url"] == stack.url(
        "platform", f"/api/v1/webhooks/custom/{webhook['id']}/events"
    )
