"""Two replicas of every web service and two webhook workers: state lives only in the stores.

One stack for the module (``--replicas``), started on empty databases on the tests'
PostgreSQL, with one Valkey. Each check pins its
requests to replicas by their own ports (``tracking#1`` at tracking's port, ``tracking#2``
100 above it), so a session, a lockout, a device flow, an idempotent answer, a signing key
or a queued event that lived in one process would show up as a wrong answer from the other.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import hashlib
import hmac
import json
import os
import re
import secrets
import signal
import subprocess
import sys
import uuid
from collections.abc import AsyncIterator, Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest

from deploy.gateway.render import LOCAL_SOURCE_ADDRESS
from tests.support.databases import Databases
from tests.support.processes import (
    LaunchedStack,
    StackStartError,
    launch_stack,
    live_processes,
    process_environment,
    stack_databases,
)
from tests.support.waiting import wait_for

pytestmark = [pytest.mark.e2e, pytest.mark.timeout(300)]

REPO_ROOT = Path(__file__).resolve().parents[2]
ADMIN_PASSWORD = f"E2e-{secrets.token_urlsafe(12)}"
AGENT_PASSWORD = f"E2e-agent-{secrets.token_urlsafe(12)}"
WEB = ("identity", "tracking", "webhooks", "agent-accounts")
REPLICAS = {**dict.fromkeys(WEB, 2), "webhooks-worker": 2}
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
# A rotated signing key activates after 6 s (just above the verifiers' 5 s JWKS refetch
# limit), and each identity replica re-reads the keys every second: 15 s and 10 s by default.
KEY_TIMINGS = {"SIGNING_KEY_ACTIVATION_DELAY": "PT6S", "SIGNING_KEY_REFRESH_INTERVAL": "PT1S"}
# identity's default login_client_failure_threshold (shared.throttle)
CLIENT_FAILURE_THRESHOLD = 10


@contextlib.contextmanager
def launch(
    data_dir: Path, databases: dict[str, str], replicas: dict[str, int], log: str
) -> Iterator[LaunchedStack]:
    """:func:`launch_stack` as this module runs it (a start failing the test)."""
    with contextlib.ExitStack() as held:
        try:
            running = held.enter_context(
                launch_stack(
                    data_dir,
                    admin_password=ADMIN_PASSWORD,
                    extra_env={"SERVER_DEFAULT_ACCOUNT_PASSWORD": AGENT_PASSWORD, **KEY_TIMINGS},
                    databases=databases,
                    replicas=replicas,
                    log=data_dir.parent / log,
                )
            )
        except StackStartError as exc:
            pytest.fail(f"the stack did not start: {exc}", pytrace=False)
        yield running


@pytest.fixture(scope="module")
async def databases_of_stack(databases: Databases) -> AsyncIterator[dict[str, str]]:
    """New, empty databases: both replicas of each service meet theirs at once."""
    async with stack_databases(databases, migrated=False) as urls:
        yield urls


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory, databases_of_stack: dict[str, str]
) -> Iterator[LaunchedStack]:
    data_dir = tmp_path_factory.mktemp("replicas") / "data"
    with launch(data_dir, databases_of_stack, REPLICAS, "launcher.log") as up:
        yield up


@pytest.fixture(scope="module")
def rotation(stack: LaunchedStack) -> tuple[str, str]:
    """A signing-key rotation, run at the module's start with identity#1's environment (as
    an operator runs ``rotate-signing-key`` beside a running stack): the new key's id, and
    a token the old key signed just before. The new key signs only after its activation
    delay (``KEY_TIMINGS``), which the module's other tests fill."""
    with httpx.Client(timeout=10.0, trust_env=False) as http:
        old_token = login(http, stack, 1, "default", ADMIN_PASSWORD)
    rotated = subprocess.run(
        [sys.executable, "-m", "identity", "rotate-signing-key"],
        cwd=REPO_ROOT,
        env=process_environment(stack.children["identity#1"]),
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    assert rotated.returncode == 0, rotated.stdout + rotated.stderr
    found = re.search(r"new signing key: (\S+)", rotated.stdout + rotated.stderr)
    assert found is not None, rotated.stdout + rotated.stderr
    assert _kid(old_token) != found.group(1)
    return found.group(1), old_token


@pytest.fixture
def http(stack: LaunchedStack) -> Iterator[httpx.Client]:
    assert stack.process.poll() is None, f"the launcher is gone:\n{stack.log_tail()}"
    with httpx.Client(timeout=10.0, trust_env=False) as client:
        yield client


def bearer(token: str) -> dict[str, str]:
    return {"Authorization": f"Bearer {token}"}


def login(
    http: httpx.Client, stack: LaunchedStack, replica: int, username: str, password: str
) -> str:
    """A session token from identity#``replica`` (its cookie dropped: tokens go as headers)."""
    response = http.post(
        stack.replica_url("identity", replica, "/api/v1/login"),
        data={"username": username, "password": password},
    )
    http.cookies.clear()
    assert response.status_code == 200, response.text
    token: str = response.json()["access_token"]
    return token


def status_everywhere(http: httpx.Client, stack: LaunchedStack, token: str) -> list[int]:
    """The answer to ``token`` on each identity and tracking replica, in that order."""
    return [
        http.get(stack.replica_url(service, replica, path), headers=bearer(token)).status_code
        for service, path in (
            ("identity", "/api/v1/current-user"),
            ("tracking", "/api/v1/projects"),
        )
        for replica in (1, 2)
    ]


def test_every_replica_runs(stack: LaunchedStack, rotation: tuple[str, str]):
    # (`rotation` is asked for first here, so that its activation delay runs meanwhile.)
    names = {f"{service}#{k}" for service in REPLICAS for k in (1, 2)}
    assert set(stack.children) >= names | {"valkey", "gateway"}
    output = stack.output()
    assert "replicas: identity#1-#2 on ports" in output
    assert "webhooks-worker#1-#2" in output
    for service in WEB:
        for k, port in enumerate(stack.replica_ports[service], start=1):
            assert f"{service}#{k} is ready on port {port}" in output


# alembic's line for each migration it runs: "Running upgrade a -> b, message".
UPGRADE = re.compile(r"^(\S+)#\d+ +\| .*Running upgrade .*-> (\w+)", re.MULTILINE)


def test_replicas_started_at_once_on_an_empty_database_migrate_it_once(
    stack: LaunchedStack, databases_of_stack: dict[str, str]
):
    """Both replicas of each service met their empty database at once: shared.migrations'
    advisory lock made one run every migration while the other waited (and found nothing
    left to do), and the start-up lock (shared.db.take_turns) made one create the first
    account while the other found it."""
    output = stack.output()
    runs = UPGRADE.findall(output)
    for service in WEB:
        assert f"{service}#2 is ready on port" in output
        revisions = [revision for name, revision in runs if name == service]
        assert revisions, f"{service} ran no migration:\n{output[-3000:]}"
        assert len(revisions) == len(set(revisions)), revisions
    for service, url in databases_of_stack.items():
        versions = asyncio.run(_alembic_versions(url))
        assert len(versions) == 1, f"{service}: {versions}"


async def _alembic_versions(url: str) -> list[str]:
    connection = await asyncpg.connect(url.replace("+asyncpg", ""))
    try:
        return [row[0] for row in await connection.fetch("SELECT version_num FROM alembic_version")]
    finally:
        await connection.close()


def test_a_login_on_one_identity_replica_is_valid_on_every_replica(
    stack: LaunchedStack, http: httpx.Client
):
    token = login(http, stack, 1, "default", ADMIN_PASSWORD)
    assert status_everywhere(http, stack, token) == [200, 200, 200, 200]


def test_a_logout_on_one_replica_is_a_401_on_the_others_at_the_next_request(
    stack: LaunchedStack, http: httpx.Client
):
    token = login(http, stack, 1, "default", ADMIN_PASSWORD)
    assert status_everywhere(http, stack, token) == [200, 200, 200, 200]
    logout = http.get(stack.replica_url("identity", 2, "/api/v1/logout"), headers=bearer(token))
    assert logout.status_code == 200, logout.text
    assert status_everywhere(http, stack, token) == [401, 401, 401, 401]


def test_a_password_change_on_one_replica_ends_the_sessions_on_the_others(
    stack: LaunchedStack, http: httpx.Client
):
    admin = bearer(login(http, stack, 1, "default", ADMIN_PASSWORD))
    name, password = f"replica-{secrets.token_hex(4)}", f"Pw-{secrets.token_urlsafe(12)}"
    created = http.post(
        stack.replica_url("identity", 1, "/api/v1/users"),
        json={"name": name, "password": password, "active": True, "is_admin": False},
        headers=admin,
    )
    assert created.status_code == 200, created.text
    token = login(http, stack, 1, name, password)
    assert status_everywhere(http, stack, token) == [200, 200, 200, 200]
    changed = http.put(
        stack.replica_url("identity", 2, "/api/v1/current-user"),
        json={"password": f"New-{password}", "old_password": password},
        headers=bearer(token),
    )
    assert changed.status_code == 200, changed.text
    assert status_everywhere(http, stack, token) == [401, 401, 401, 401]
    assert status_everywhere(http, stack, login(http, stack, 1, name, f"New-{password}")) == [
        200,
        200,
        200,
        200,
    ]


def test_a_device_flow_crosses_replicas_and_a_lock_holds_on_every_one(
    stack: LaunchedStack, http: httpx.Client
):
    """Authorized on identity#1, verified on identity#2, redeemed on identity#1; the device
    locked on identity#2 is refused everywhere at the next request."""
    client_id = str(uuid.uuid4())
    authorized = http.post(
        stack.replica_url("identity", 1, "/api/v1/device_authorization"),
        data={"client_id": client_id},
    )
    assert authorized.status_code == 200, authorized.text
    flow = authorized.json()
    user = bearer(login(http, stack, 2, "default", ADMIN_PASSWORD))
    device_id = httpx.URL(flow["verification_uri_complete"]).params["device_id"]
    verified = http.put(
        stack.replica_url("identity", 2, f"/api/v1/devices/{device_id}/verify"),
        json={"user_code": flow["user_code"], "trusted_device": False},
        headers=user,
    )
    assert verified.status_code == 200, verified.text
    redeemed = http.post(
        stack.replica_url("identity", 1, "/api/v1/login"),
        data={
            "grant_type": DEVICE_GRANT,
            "client_id": client_id,
            "device_code": flow["device_code"],
        },
    )
    http.cookies.clear()
    assert redeemed.status_code == 200, redeemed.text
    assert redeemed.json()["device_id"] == device_id
    device = redeemed.json()["access_token"]
    assert status_everywhere(http, stack, device) == [200, 200, 200, 200]

    locked = http.put(
        stack.replica_url("identity", 2, f"/api/v1/devices/{device_id}"),
        json={"locked": True},
        headers=user,
    )
    assert locked.status_code == 200, locked.text
    assert status_everywhere(http, stack, device) == [401, 401, 401, 401]


def test_login_failures_spread_over_both_replicas_reach_the_lockout(
    stack: LaunchedStack, http: httpx.Client
):
    """The failures of one client address count in Valkey, not per process: half of them
    on each replica lock the address out on both. (The address is a test-net one given as
    X-Forwarded-For from the gateway's own address, the only peer a replica believes it
    from, so this lockout is the test's own.)"""
    address = {"X-Forwarded-For": f"198.51.100.{secrets.randbelow(250) + 1}"}
    account = f"nobody-{secrets.token_hex(4)}"
    as_gateway = httpx.HTTPTransport(local_address=LOCAL_SOURCE_ADDRESS)
    with httpx.Client(timeout=10.0, trust_env=False, transport=as_gateway) as gateway:
        _lock_out(stack, gateway, address, account)
    # Another address is not locked out.
    assert login(http, stack, 2, "default", ADMIN_PASSWORD)


def _lock_out(
    stack: LaunchedStack, http: httpx.Client, address: dict[str, str], account: str
) -> None:
    for attempt in range(CLIENT_FAILURE_THRESHOLD):
        response = http.post(
            stack.replica_url("identity", 1 + attempt % 2, "/api/v1/login"),
            data={"username": account, "password": "wrong"},
            headers=address,
        )
        assert response.status_code == 401, response.text
    for replica in (1, 2):
        refused = http.post(
            stack.replica_url("identity", replica, "/api/v1/login"),
            data={"username": "default", "password": ADMIN_PASSWORD},
            headers=address,
        )
        assert refused.status_code == 429, refused.text
        assert int(refused.headers["retry-after"]) >= 1


def test_an_idempotency_key_replayed_on_the_other_tracking_replica_gets_the_first_answer(
    stack: LaunchedStack, http: httpx.Client
):
    headers = bearer(login(http, stack, 1, "default", ADMIN_PASSWORD))
    project = http.get(
        stack.replica_url("tracking", 1, "/api/v1/projects/default"), headers=headers
    ).json()["id"]
    name = f"replica-{secrets.token_hex(4)}"
    key = {"Idempotency-Key": str(uuid.uuid4())}
    body = {"project": project, "name": name}
    first = http.post(
        stack.replica_url("tracking", 1, "/api/v1/pipelines"), json=body, headers=headers | key
    )
    assert first.status_code == 200, first.text
    replayed = http.post(
        stack.replica_url("tracking", 2, "/api/v1/pipelines"), json=body, headers=headers | key
    )
    assert replayed.status_code == 200, replayed.text
    assert replayed.headers["idempotent-replayed"] == "true"
    assert replayed.json() == first.json()
    listed = http.get(
        stack.replica_url("tracking", 2, "/api/v1/pipelines"),
        params={"name": name},
        headers=headers,
    )
    assert listed.json()["total"] == 1


class Hook:
    """A custom webhook with a trigger on a snapshot: deliveries signed as a sender signs
    them, sent to a chosen webhooks replica; its trigger's outcomes read from tracking."""

    def __init__(self, stack: LaunchedStack, http: httpx.Client) -> None:
        self.stack, self.http = stack, http
        self.headers = bearer(login(http, stack, 1, "default", ADMIN_PASSWORD))
        name = f"replica-hook-{secrets.token_hex(4)}"
        project = self.get("tracking", 1, "/projects/default")["id"]
        stack_id = self.get("tracking", 2, "/stacks?name=default")["items"][0]["id"]
        pipeline = self.post("tracking", 1, "/pipelines", {"project": project, "name": name})
        self.snapshot = self.post(
            "tracking",
            2,
            "/pipeline_snapshots",
            {
                "project": project,
                "run_name_template": name + "-{date}-{time}",
                "pipeline_configuration": {"name": name},
                "stack": stack_id,
                "pipeline": pipeline["id"],
            },
        )
        self.secret = secrets.token_urlsafe(24)
        self.hook = self.post(
            "webhooks",
            1,
            "/webhooks",
            {"project": project, "name": name, "webhook_type": "custom", "secret": self.secret},
        )
        self.trigger = self.post(
            "webhooks",
            2,
            "/webhook_triggers",
            {
                "project": project,
                "name": name,
                "webhook_id": self.hook["id"],
                "snapshot_id": self.snapshot["id"],
                "configuration": {"target_events": []},  # custom: every event
            },
        )

    def get(self, service: str, replica: int, path: str) -> Any:
        response = self.http.get(
            self.stack.replica_url(service, replica, f"/api/v1{path}"), headers=self.headers
        )
        assert response.status_code == 200, response.text
        return response.json()

    def post(self, service: str, replica: int, path: str, body: dict[str, Any]) -> Any:
        response = self.http.post(
            self.stack.replica_url(service, replica, f"/api/v1{path}"),
            json=body,
            headers=self.headers,
        )
        assert response.status_code == 200, response.text
        return response.json()

    def deliver(self, replica: int, delivery_id: str, *, signed: bool = True) -> int:
        body = json.dumps({"delivery": delivery_id}).encode()
        key = self.secret.encode() if signed else b"not the secret"
        signature = "sha256=" + hmac.new(key, body, hashlib.sha256).hexdigest()
        response = self.http.post(
            self.stack.replica_url(
                "webhooks", replica, f"/api/v1/webhooks/custom/{self.hook['id']}/events"
            ),
            content=body,
            headers={
                "Content-Type": "application/json",
                "X-ZenML-Event": "replica.test",
                "X-ZenML-Delivery": delivery_id,
                "X-ZenML-Signature-256": signature,
            },
        )
        return response.status_code

    def executions(self) -> list[dict[str, Any]]:
        items: list[dict[str, Any]] = self.get(
            "webhooks", 1, f"/webhook_triggers/{self.trigger['id']}/executions?size=1000"
        )["items"]
        return items

    def delivered_runs(self) -> list[str]:
        """The delivery id of each run the trigger started, one entry per run."""
        runs = self.get(
            "tracking", 2, f"/runs?snapshot_id={self.snapshot['id']}&hydrate=true&size=1000"
        )["items"]
        info = [r["metadata"]["trigger_execution_info"]["webhook_upstream_event"] for r in runs]
        return [event["custom"]["delivery_id"] for event in info]

    def stats(self, replica: int) -> dict[str, Any]:
        stats: dict[str, Any] = self.get("webhooks", replica, f"/webhooks/{self.hook['id']}")[
            "metadata"
        ]["stats"]
        return stats


@contextlib.contextmanager
def paused(stack: LaunchedStack, name: str) -> Iterator[None]:
    """``SIGSTOP`` one process of the stack (its group) until the block ends."""
    group = stack.children[name]
    os.killpg(group, signal.SIGSTOP)
    try:
        yield
    finally:
        os.killpg(group, signal.SIGCONT)


def test_webhook_events_are_counted_exactly_and_processed_once_by_the_two_workers(
    stack: LaunchedStack, http: httpx.Client
):
    """Deliveries alternate between the two intake replicas; the two workers take events
    from the one queue. A wave with both workers running, then one with each worker alone
    (the other paused, so each is seen to work): every accepted event starts exactly one
    run, and the stats both replicas answer count every delivery once."""
    hook = Hook(stack, http)
    sent: list[str] = []

    def wave(label: str, count: int) -> None:
        for i in range(count):
            delivery_id = f"{label}-{i}"
            assert hook.deliver(1 + i % 2, delivery_id) == 202
            sent.append(delivery_id)
        wait_for(lambda: len(hook.executions()) == len(sent), f"wave {label} processed")
        wait_for(
            lambda: all(e["status"] == "dispatched" for e in hook.executions()),
            f"wave {label} dispatched: {hook.executions()}",
        )

    wave("both", 8)
    with paused(stack, "webhooks-worker#2"):
        wave("first", 3)
    with paused(stack, "webhooks-worker#1"):
        wave("second", 3)
    refused = [hook.deliver(replica, f"forged-{replica}", signed=False) for replica in (1, 2)]
    assert refused == [401, 401]

    assert sorted(hook.delivered_runs()) == sorted(sent)
    executions = hook.executions()
    assert len({e["run_id"] for e in executions}) == len(executions) == len(sent)
    for replica in (1, 2):
        stats = hook.stats(replica)
        assert stats["received_count"] == len(sent) + 2
        assert stats["accepted_count"] == len(sent)
        assert stats["auth_failed_count"] == 2


def test_an_api_key_made_on_one_agent_accounts_replica_works_on_the_other(
    stack: LaunchedStack, http: httpx.Client
):
    def url(replica: int, path: str) -> str:
        return stack.replica_url("agent-accounts", replica, path)

    logged_in = http.post(
        url(1, "/api/v1/login"),
        data={"grant_type": "password", "username": "default", "password": AGENT_PASSWORD},
    )
    http.cookies.clear()
    assert logged_in.status_code == 200, logged_in.text
    token = logged_in.json()["access_token"]
    assert http.get(url(2, "/api/v1/accounts/me"), headers=bearer(token)).status_code == 200
    created = http.post(
        url(1, "/api/v1/api-keys"),
        json={"name": f"replica-{secrets.token_hex(4)}"},
        headers=bearer(token),
    )
    assert created.status_code == 201, created.text
    me = http.get(url(2, "/api/v1/accounts/me"), headers=bearer(created.json()["key"]))
    assert me.status_code == 200, me.text
    assert me.json()["name"] == "default"


def _kid(token: str) -> str:
    header = token.split(".")[0]
    kid: str = json.loads(base64.urlsafe_b64decode(header + "=" * (-len(header) % 4)))["kid"]
    return kid


def test_a_rotated_signing_key_signs_on_both_replicas_and_verifies_everywhere(
    stack: LaunchedStack, http: httpx.Client, rotation: tuple[str, str]
):
    """The key rotated at the module's start (see ``rotation``) is published by both
    identity replicas and, once active, signs on both; tokens it signs on one are valid on
    the other and on both tracking replicas, as the old key's still are."""
    rotated_kid, old = rotation

    def published(replica: int) -> bool:
        jwks = http.get(stack.replica_url("identity", replica, "/.well-known/jwks.json")).json()
        return rotated_kid in {key["kid"] for key in jwks["keys"]}

    wait_for(lambda: published(1) and published(2), "the new key published by both replicas")
    tokens: dict[int, str] = {}

    def signs(replica: int) -> bool:
        tokens[replica] = login(http, stack, replica, "default", ADMIN_PASSWORD)
        return _kid(tokens[replica]) == rotated_kid

    # The key activates 6 s after the rotation; each replica re-reads the keys every second.
    wait_for(lambda: signs(1) and signs(2), "the new key signing on both replicas", within=20)
    for token in (*tokens.values(), old):
        assert status_everywhere(http, stack, token) == [200, 200, 200, 200]


def test_sigterm_stops_every_replica(stack: LaunchedStack):
    """Runs last: it stops the module's stack."""
    stack.process.send_signal(signal.SIGTERM)
    assert stack.process.wait(timeout=30) == 0, stack.log_tail()
    assert live_processes(set(stack.children.values()), str(stack.data_dir)) == []
