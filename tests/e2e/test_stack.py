"""The whole local stack as real processes (``python -m deploy.local``), through the gateway.

One launcher is started for the module with a temporary data dir and shifted ports, so it
runs beside a developer's own ``make run``. The last test stops it with SIGTERM and checks
that nothing it started is left.
"""

from __future__ import annotations

import base64
import hashlib
import hmac
import re
import secrets
import signal
import subprocess
import time
import tomllib
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import httpx
import jsonschema_rs
import pytest
import redis
from schemathesis.specs.openapi.definitions import OPENAPI_31

from shared.errors import NO_SUCH_ENDPOINT
from tests.support.metrics import sample_of
from tests.support.processes import (
    LaunchedStack,
    live_processes,
    process_environment,
    stack_for_tests,
)
from tests.support.tracing import Collected, collector
from tests.support.waiting import wait_for
from tests.webhooks.support import job_key

pytestmark = pytest.mark.e2e

REPO_ROOT = Path(__file__).resolve().parents[2]
# Read directly (not through deploy.config): this test only drives the launcher as a user.
STACK = tomllib.loads((REPO_ROOT / "deploy" / "stack.toml").read_text())
WEB_SERVICES = [s for s in STACK["service"] if s["kind"] == "web"]
ADMIN_PASSWORD = f"E2e-{secrets.token_urlsafe(12)}"
START_TIMEOUT = 60.0
REQUESTS = "platform_http_requests_total"
STOP_TIMEOUT = 20.0
DELIVERY_TRACE = "0af7651916cd43dd8448eb211c80319c"


@pytest.fixture(scope="module")
def traces() -> Iterator[tuple[str, Collected]]:
    """Where the stack's processes export their spans (tracing on for the whole module)."""
    with collector() as received:
        yield received


@pytest.fixture(scope="module")
def stack(
    tmp_path_factory: pytest.TempPathFactory,
    databases_of_stack: dict[str, str],
    traces: tuple[str, Collected],
) -> Iterator[LaunchedStack]:
    with stack_for_tests(
        tmp_path_factory,
        "stack",
        admin_password=ADMIN_PASSWORD,
        start_timeout=START_TIMEOUT,
        stop_timeout=STOP_TIMEOUT,
        databases=databases_of_stack,
        # Spans sent every 0.2 s instead of 5 s.
        extra_env={"OTEL_EXPORTER_OTLP_ENDPOINT": traces[0], "OTEL_BSP_SCHEDULE_DELAY": "200"},
    ) as up:
        yield up


@pytest.fixture
def client(stack: LaunchedStack) -> Iterator[httpx.Client]:
    assert stack.process.poll() is None, f"the launcher is gone:\n{stack.log_tail()}"
    with httpx.Client(timeout=10.0, trust_env=False) as http:
        yield http


def _login(client: httpx.Client, stack: LaunchedStack) -> str:
    response = client.post(
        stack.url("platform", "/api/v1/login"),
        data={"username": "default", "password": ADMIN_PASSWORD},
    )
    assert response.status_code == 200, response.text
    token = response.json()["access_token"]
    assert isinstance(token, str)
    return token


def _flip_signature_bit(token: str) -> str:
    header, payload, signature = token.split(".")
    raw = bytearray(base64.urlsafe_b64decode(signature + "=" * (-len(signature) % 4)))
    raw[0] ^= 0x01
    return ".".join([header, payload, base64.urlsafe_b64encode(raw).rstrip(b"=").decode()])


@pytest.mark.parametrize("probe", ["health", "ready"])
def test_every_service_answers_through_the_gateway(stack, client, probe):
    for service in WEB_SERVICES:
        url = stack.url(service["entrypoint"], f"/_services/{service['name']}/{probe}")
        response = client.get(url)
        assert response.status_code == 200, f"{service['name']}: {response.text}"
        assert response.text == "ok"


def test_platform_health_is_served(stack, client):
    assert client.get(stack.url("platform", "/health")).text == "ok"


def test_login_as_default_returns_a_token_current_user_accepts(stack, client):
    token = _login(client, stack)
    response = client.get(
        stack.url("platform", "/api/v1/current-user"),
        headers={"Authorization": f"Bearer {token}"},
    )
    assert response.status_code == 200, response.text
    assert response.json()["name"] == "default"


def test_forged_token_is_rejected_with_401(stack, client):
    forged = _flip_signature_bit(_login(client, stack))
    # Login also set the session cookie, which would authenticate this request by itself.
    client.cookies.clear()
    response = client.get(
        stack.url("platform", "/api/v1/current-user"),
        headers={"Authorization": f"Bearer {forged}"},
    )
    assert response.status_code == 401
    assert response.json()["detail"][0] == "CredentialsNotValid"


def test_revoked_token_is_rejected_with_401(stack, client):
    token = _login(client, stack)
    client.cookies.clear()
    headers = {"Authorization": f"Bearer {token}"}
    assert client.get(stack.url("platform", "/api/v1/logout"), headers=headers).status_code == 200
    response = client.get(stack.url("platform", "/api/v1/current-user"), headers=headers)
    assert response.status_code == 401
    assert response.json()["detail"][0] == "CredentialsNotValid"


@pytest.mark.parametrize("path", ["/api/v1/nope", "/api/v1/runs/x/y/z"])
def test_unknown_api_path_is_a_404_in_the_platform_shape(stack, client, path):
    # The gateway's own (no route) and a service's (a route prefix, no endpoint).
    response = client.get(stack.url("platform", path))
    assert response.status_code == 404
    assert response.json() == {"detail": ["KeyError", NO_SUCH_ENDPOINT]}


def test_unknown_agent_path_is_a_404_in_the_agent_shape(stack, client):
    response = client.get(stack.url("agent", "/api/v1/nope"))
    assert response.status_code == 404
    assert response.json() == {"detail": "Not Found"}


def test_an_unimplemented_family_of_the_reference_is_a_501(stack, client):
    response = client.get(stack.url("platform", "/api/v1/stack-deployment"))
    assert response.status_code == 501
    assert response.json()["detail"][0] == "NotImplementedError"


def test_the_agent_server_answers_kitaru_doctors_liveness_probe(stack, client):
    response = client.get(stack.url("agent", "/health/live"))
    assert response.status_code == 200
    assert response.json() == {"status": "ok"}


def test_request_id_crosses_the_gateway(stack, client):
    response = client.get(
        stack.url("platform", "/api/v1/info"), headers={"X-Request-ID": "e2e0c0de"}
    )
    assert response.headers["x-request-id"] == "e2e0c0de"


def test_each_process_serves_its_metrics_on_its_own_port_not_through_the_gateway(stack, client):
    def info_requests() -> float:
        text = client.get(f"http://127.0.0.1:{stack.metrics_ports['identity'][0]}/metrics").text
        return sample_of(text, REQUESTS, method="GET", route="/api/v1/info", status="2xx")

    before = info_requests()
    for _ in range(3):
        assert client.get(stack.url("platform", "/api/v1/info")).status_code == 200
    assert info_requests() == before + 3
    worker = f"http://127.0.0.1:{stack.metrics_ports['webhooks-worker'][0]}/metrics"

    def queue_read() -> bool:  # the worker starts after the web services
        try:
            return sample_of(client.get(worker).text, "platform_queue_up") == 1
        except httpx.TransportError:
            return False

    wait_for(queue_read, "the worker's metrics, reading the queue")
    for entrypoint in ("platform", "agent"):
        assert client.get(stack.url(entrypoint, "/metrics")).status_code == 404


def test_agent_entrypoint_reaches_agent_accounts(stack, client):
    response = client.get(stack.url("agent", "/_services/agent-accounts/health"))
    assert response.status_code == 200
    assert response.text == "ok"


# What the reference servers report as their version.
VERSIONS = {"platform": "0.96.3", "agent": "0.27.2"}


def _under(path: str, prefixes: list[str]) -> bool:
    return any(p == "/" or path == p or path.startswith(f"{p}/") for p in prefixes)


@pytest.mark.parametrize("entrypoint", ["platform", "agent"])
def test_each_entrypoint_serves_one_openapi_document_of_its_services(stack, client, entrypoint):
    """Every path the entrypoint routes to a service, as that service documents it, in one
    valid OpenAPI 3.1 document; nothing the gateway answers itself or does not route."""
    response = client.get(stack.url(entrypoint, "/openapi.json"))
    assert response.status_code == 200
    assert response.headers["content-type"] == "application/json"
    merged = response.json()
    assert merged["openapi"] == "3.1.0"
    assert merged["info"]["version"] == VERSIONS[entrypoint]
    # The OpenAPI 3.1 meta-schema (its structure: formats are not asserted, or the
    # reference's own relative tokenUrl would fail), and every reference resolves.
    jsonschema_rs.Draft202012Validator(OPENAPI_31, validate_formats=False).validate(merged)
    for section, name in re.findall(r'"\$ref":\s*"#/components/(\w+)/([^"]+)"', response.text):
        assert name in merged["components"][section], name
    unimplemented = next(e for e in STACK["entrypoint"] if e["name"] == entrypoint)["unimplemented"]
    assert not [path for path in merged["paths"] if _under(path, unimplemented)]
    for service in (s for s in WEB_SERVICES if s["entrypoint"] == entrypoint):
        own = client.get(stack.url(entrypoint, f"/_services/{service['name']}/openapi.json"))
        routed = {
            path: item
            for path, item in own.json()["paths"].items()
            if _under(path, service["routes"]) and not _under(path, unimplemented)
        }
        assert routed, service["name"]
        for path, item in routed.items():
            assert set(merged["paths"].get(path, {})) == set(item), path
    if entrypoint == "platform":
        for path in ("/api/v1/login", "/api/v1/runs/{run_id}", "/api/v1/webhooks"):
            assert path in merged["paths"]
        assert not [path for path in merged["paths"] if path.startswith("/internal/")]


@pytest.mark.parametrize("entrypoint", ["platform", "agent"])
def test_each_entrypoint_serves_an_api_page_loading_only_the_gateways_files(
    stack, client, entrypoint
):
    page = client.get(stack.url(entrypoint, "/docs"))
    assert page.status_code == 200
    assert page.headers["content-type"] == "text/html; charset=utf-8"
    assert not re.search(r"https?://", page.text)
    files = re.findall(r'(?:src|href)="(/docs/[^"]+)"', page.text)
    assert len(files) == 4
    for url in files:
        assert client.get(stack.url(entrypoint, url)).status_code == 200, url
    assert f"(API docs: {stack.url(entrypoint, '/docs')})" in stack.output()


def _post(client: httpx.Client, url: str, headers: dict[str, str], body: dict[str, Any]) -> Any:
    response = client.post(url, json=body, headers=headers)
    assert response.status_code == 200, response.text
    return response.json()


def _new_snapshot(
    client: httpx.Client,
    api: Callable[[str], str],
    headers: dict[str, str],
    name: str,
    run_name_template: str,
) -> tuple[str, dict[str, Any]]:
    """A new pipeline ``name`` and a snapshot of it on the default stack: (the default
    project's id, the snapshot)."""
    project: str = client.get(api("projects/default"), headers=headers).json()["id"]
    stack_id = client.get(api("stacks?name=default"), headers=headers).json()["items"][0]["id"]
    pipeline = _post(client, api("pipelines"), headers, {"project": project, "name": name})
    snapshot = _post(
        client,
        api("pipeline_snapshots"),
        headers,
        {
            "project": project,
            "run_name_template": run_name_template,
            "pipeline_configuration": {"name": name},
            "stack": stack_id,
            "pipeline": pipeline["id"],
        },
    )
    return project, snapshot


def test_workload_token_lives_as_long_as_its_run_on_every_service(stack, client):
    """Identity asks tracking (another process) before issuing and on every use; tracking
    checks its own rows. Deleting the run stops the token on both within the 5 s cache."""
    headers = {"Authorization": f"Bearer {_login(client, stack)}"}
    client.cookies.clear()

    def api(path: str) -> str:
        url: str = stack.url("platform", f"/api/v1/{path}")
        return url

    name = f"e2e-{secrets.token_hex(4)}"
    project, snapshot = _new_snapshot(client, api, headers, name, "run")
    run, _ = _post(
        client,
        api("runs"),
        headers,
        {"project": project, "name": name, "snapshot": snapshot["id"], "status": "running"},
    )
    issued = client.get(
        api("api_token"),
        params={"token_type": "workload", "pipeline_run_id": run["id"]},
        headers=headers,
    )
    assert issued.status_code == 200, issued.text
    workload = {"Authorization": f"Bearer {issued.json()}"}
    assert client.get(api(f"runs/{run['id']}"), headers=workload).status_code == 200
    assert client.get(api("current-user"), headers=workload).status_code == 200

    assert client.delete(api(f"runs/{run['id']}"), headers=headers).status_code == 200
    answers: list[httpx.Response] = []

    def refused() -> bool:
        answers[:] = [
            client.get(api(path), headers=workload) for path in ("artifacts", "current-user")
        ]
        return all(a.status_code == 401 for a in answers)

    wait_for(refused, "the deleted run's workload token refused", within=10, every=0.5)
    for answer in answers:
        assert answer.status_code == 401, answer.text
        assert answer.json()["detail"] == [
            "CredentialsNotValid",
            f"Authentication error: pipeline run {run['id']} does not exist",
        ]


def test_a_signed_delivery_runs_the_triggers_snapshot_in_tracking_once(stack, client, traces):
    """Intake (webhooks) → Valkey → the worker process matches the trigger → tracking (its
    own process, through its service token) starts the run, all in the trace the sender
    started; the event delivered again after the replay window is processed again and
    runs nothing twice."""
    headers = {"Authorization": f"Bearer {_login(client, stack)}"}
    client.cookies.clear()

    def api(path: str) -> str:
        url: str = stack.url("platform", f"/api/v1/{path}")
        return url

    name = f"e2e-hook-{secrets.token_hex(4)}"
    project, snapshot = _new_snapshot(client, api, headers, name, name + "-{date}-{time}")
    secret = secrets.token_urlsafe(24)
    hook = _post(
        client,
        api("webhooks"),
        headers,
        {"project": project, "name": name, "webhook_type": "custom", "secret": secret},
    )
    trigger = _post(
        client,
        api("webhook_triggers"),
        headers,
        {
            "project": project,
            "name": name,
            "webhook_id": hook["id"],
            "snapshot_id": snapshot["id"],
            "configuration": {"target_events": []},  # custom: every event
        },
    )
    body = b'{"build": {"id": 7, "status": "success"}}'
    signature = "sha256=" + hmac.new(secret.encode(), body, hashlib.sha256).hexdigest()
    delivery = {
        "Content-Type": "application/json",
        "X-ZenML-Event": "build.finished",
        "X-ZenML-Delivery": "e2e-delivery-1",
        "X-ZenML-Signature-256": signature,
        "traceparent": f"00-{DELIVERY_TRACE}-b7ad6b7169203331-01",
    }
    intake = api(f"webhooks/custom/{hook['id']}/events")

    def runs() -> list[dict[str, Any]]:
        listed = client.get(
            api("runs"), params={"snapshot_id": snapshot["id"], "hydrate": "true"}, headers=headers
        )
        assert listed.status_code == 200, listed.text
        items: list[dict[str, Any]] = listed.json()["items"]
        return items

    def executions() -> list[dict[str, Any]]:
        listed = client.get(api(f"webhook_triggers/{trigger['id']}/executions"), headers=headers)
        assert listed.status_code == 200, listed.text
        items: list[dict[str, Any]] = listed.json()["items"]
        return items

    assert client.post(intake, content=body, headers=delivery).status_code == 202
    wait_for(lambda: [e["status"] for e in executions()] == ["dispatched"], "the run requested")
    (run,) = runs()
    (execution,) = executions()
    assert execution["run_id"] == run["id"]
    assert run["body"]["status"] == "initializing"
    assert run["metadata"]["trigger_execution_info"]["webhook_upstream_event"] == {
        "custom": {
            "webhook_id": hook["id"],
            "delivery_id": "e2e-delivery-1",
            "event_type": "build.finished",
            "event": {"type": "build.finished"},
        }
    }

    # One trace through the gateway, the intake, the queue, the worker and tracking, each
    # process exporting its own spans; tracking's log line of the run names the trace.
    runs_route = "POST /api/v1/pipeline_snapshots/{snapshot_id}/runs"
    expected = {
        ("webhooks", "POST /api/v1/webhooks/{webhook_type}/{webhook_id}/events"),
        ("webhooks-worker", "process_event"),
        ("webhooks-worker", "POST"),
        ("tracking", runs_route),
    }

    def traced() -> set[tuple[str, str]]:
        spans = traces[1].spans()
        return {(s, name) for s, name, trace, _ in spans if trace == DELIVERY_TRACE}

    wait_for(lambda: expected <= traced(), "the delivery's spans exported")
    # Text or JSON lines; the services write theirs in batches (up to half a second late).
    logged = rf'(trace=|"trace_id": ?"){DELIVERY_TRACE}'
    wait_for(lambda: re.search(logged, stack.output()) is not None, "a line naming the trace")

    # The processed event's job key stays as its replay marker (empty) for the window;
    # the window over (the marker dropped from Valkey), the sender's retry is accepted and
    # queued again; the worker processes the event a second time.
    found = re.search(r"valkey is ready at (redis://\S+)", stack.output())
    assert found is not None, stack.log_tail()
    valkey = redis.Redis.from_url(found.group(1))
    try:
        marker = job_key(hook["id"], body=body)
        assert valkey.get(marker) == b""
        valkey.delete(marker)
        assert client.post(intake, content=body, headers=delivery).status_code == 202
        wait_for(
            lambda: (
                valkey.zcard("platform:webhooks:events") == 0
                and not valkey.keys("arq:in-progress:*")
            ),
            "the second delivery processed",
        )
    finally:
        valkey.close()
    stats = client.get(api(f"webhooks/{hook['id']}"), headers=headers).json()["metadata"]
    assert stats["stats"]["accepted_count"] == 2
    assert [r["id"] for r in runs()] == [run["id"]]
    assert [e["id"] for e in executions()] == [execution["id"]]


def test_valkey_is_durable_and_runs_with_its_allocator_tuning(stack):
    """The queue survives a restart (append-only, fsync each second), never drops a key
    to make room, and its malloc keeps a large per-size cache (see VALKEY_ENV)."""
    found = re.search(r"valkey is ready at (redis://\S+)", stack.output())
    assert found is not None, stack.log_tail()
    valkey = redis.Redis.from_url(found.group(1), decode_responses=True)
    try:
        config: dict[str, str] = valkey.config_get("*")  # type: ignore[assignment]
    finally:
        valkey.close()
    assert config["appendonly"] == "yes"
    assert config["appendfsync"] == "everysec"
    assert config["maxmemory-policy"] == "noeviction"
    if Path("/proc/self/environ").exists():  # Linux
        environment = process_environment(stack.children["valkey"])
        assert environment.get("GLIBC_TUNABLES") == "glibc.malloc.tcache_count=65535"


def test_sigterm_stops_the_stack_and_leaves_no_process(stack):
    """Runs last: it stops the module's stack."""
    assert stack.process.poll() is None, stack.log_tail()
    assert set(stack.children) >= {"valkey", "gateway", *(s["name"] for s in WEB_SERVICES)}
    started = time.monotonic()
    stack.process.send_signal(signal.SIGTERM)
    try:
        code = stack.process.wait(timeout=STOP_TIMEOUT)
    except subprocess.TimeoutExpired:
        pytest.fail(f"the launcher did not stop within {STOP_TIMEOUT}s:\n{stack.log_tail()}")
    assert code == 0, stack.log_tail()
    assert time.monotonic() - started < STOP_TIMEOUT
    leftovers = live_processes(set(stack.children.values()), str(stack.data_dir))
    assert leftovers == [], leftovers
    assert not (stack.data_dir / "run" / "processes.json").exists()
