"""The launcher as a real process, on a small stack of stand-in services (tests/deploy/fakes).

Real Valkey and real nginx, fake web services that echo what the gateway sent them: the
route table, forwarding headers, environment, output and shutdown are checked without
depending on the real services (tests/e2e covers those).
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import tomllib
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import asyncpg
import httpx
import pytest
import redis

from deploy.local import postgres, supervisor
from shared.errors import NO_SUCH_ENDPOINT
from tests.support.postgres_server import embedded_server, scratch_directory
from tests.support.processes import (
    REPLICA_PORT_STRIDE,
    LaunchedStack,
    below_ephemeral_ports,
    live_processes,
    port_free,
    process_environment,
)

REPO_ROOT = Path(__file__).resolve().parents[2]
FAKES = Path(__file__).resolve().parent / "fakes"

FAKE_STACK = """
[gateway]
listen = "127.0.0.1"
client_max_body_size = "1m"

[[entrypoint]]
name = "platform"
title = "platform API"
port = {platform}
error_style = "platform"

[entrypoint.login]
service = "identity"
user = "default"
password_variable = "DEFAULT_ADMIN_PASSWORD"
command = "log in at {{url}}"

[[entrypoint]]
name = "agent"
title = "agent server"
port = {agent}
error_style = "agent"

[valkey]
port = {base}
appendfsync = "always"

[postgres]
port = {postgres}

[environment]
REDIS_NAMESPACE = "platform"

[[service]]
name = "identity"
module = "fake_service"
kind = "web"
port = {identity}
entrypoint = "platform"
issuer = true
env = {{ FAKE_NAME = "identity" }}
passthrough = ["DEFAULT_ADMIN_PASSWORD"]
secrets = {{ SIGNING_KEY_ENCRYPTION_KEYS = "fernet" }}
routes = ["/api/v1/login", "/health"]

[[service]]
name = "tracking"
module = "fake_service"
kind = "web"
port = {tracking}
entrypoint = "platform"
env = {{ FAKE_NAME = "tracking"{tracking_extra} }}
routes = ["/api/v1/runs", "/api/v1/artifacts"]
client_max_body_size = "2m"

[[service]]
name = "tracking-worker"
module = "fake_worker"
kind = "worker"
owner = "tracking"

[[service]]
name = "later"
module = "module_that_does_not_exist_yet"
kind = "worker"
owner = "tracking"

[[service]]
name = "agent-accounts"
module = "fake_service"
kind = "web"
port = {agent_accounts}
entrypoint = "agent"
env = {{ FAKE_NAME = "agent-accounts", REDIS_NAMESPACE = "agent" }}
routes = ["/"]
"""


TRACEPARENT = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01"


def write_fake_stack(
    path: Path, *, crash_tracking: bool = False, crash_tracking_if: Path | None = None
) -> dict[str, int]:
    """A fake stack file on seven consecutive free ports (and tracking's second replica's,
    100 above its own, free too); returns the ports. Tracking crashes at start always
    (``crash_tracking``) or while ``crash_tracking_if`` exists."""
    for _ in range(200):
        base = below_ephemeral_ports(7 + REPLICA_PORT_STRIDE)
        names = ["base", "identity", "tracking", "agent_accounts", "platform", "agent", "postgres"]
        ports = {name: base + i for i, name in enumerate(names)}
        if all(port_free(p) for p in [*ports.values(), ports["tracking"] + REPLICA_PORT_STRIDE]):
            extra = ', FAKE_CRASH = "1"' if crash_tracking else ""
            if crash_tracking_if is not None:
                extra += f", FAKE_CRASH_IF = {json.dumps(str(crash_tracking_if))}"
            path.write_text(FAKE_STACK.format(**ports, tracking_extra=extra))
            return ports
    raise AssertionError("no free ports")


def launcher_env(**extra: str) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("STACK_")}
    env["PYTHONPATH"] = str(FAKES)
    return env | extra


def launcher_argv(stack_file: Path, data_dir: Path, *extra: str) -> list[str]:
    return [sys.executable, "-m", "deploy.local", "--stack", str(stack_file),
            "--data-dir", str(data_dir), *extra]  # fmt: skip


def run_launcher(
    tmp_path: Path, *extra: str, timeout: float = 60
) -> subprocess.CompletedProcess[str]:
    """Run the launcher on the fake stack in ``tmp_path`` until it exits by itself."""
    return subprocess.run(
        launcher_argv(tmp_path / "stack.toml", tmp_path / "data", *extra),
        cwd=REPO_ROOT,
        env=launcher_env(),
        capture_output=True,
        text=True,
        timeout=timeout,
    )


@pytest.fixture(scope="module")
def launched() -> Iterator[LaunchedStack]:
    with scratch_directory() as root:
        yield from launch_fake_stack(root)


def launch_fake_stack(root: Path) -> Iterator[LaunchedStack]:
    ports = write_fake_stack(root / "stack.toml")
    log = root / "launcher.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            launcher_argv(root / "stack.toml", root / "data"),
            cwd=REPO_ROOT,
            env=launcher_env(DEFAULT_ADMIN_PASSWORD="only-for-identity"),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    running = LaunchedStack(process, root / "data", log, ports, children={})
    try:
        deadline = time.monotonic() + 30
        while "the stack is up" not in running.output():
            assert process.poll() is None, running.output()
            assert time.monotonic() < deadline, running.output()
            time.sleep(0.1)
        pids = json.loads((running.data_dir / "run" / "processes.json").read_text())
        running.children = pids["children"]
        yield running
    finally:
        if process.poll() is None:
            process.kill()  # the children follow through their parent-death signal
            process.wait()


def test_valkey_fsyncs_as_the_stack_file_says(launched):
    valkey = redis.Redis(port=launched.ports["base"], decode_responses=True)
    try:
        config: dict[str, str] = valkey.config_get("append*")  # type: ignore[assignment]
    finally:
        valkey.close()
    assert config["appendonly"] == "yes"
    assert config["appendfsync"] == "always"


@pytest.fixture
def client(launched: LaunchedStack) -> Iterator[httpx.Client]:
    assert launched.process.poll() is None, launched.output()
    with httpx.Client(timeout=5.0, trust_env=False) as http:
        yield http


@pytest.mark.parametrize(
    ("entrypoint", "path", "service"),
    [
        ("platform", "/api/v1/login", "identity"),
        ("platform", "/health", "identity"),
        ("platform", "/api/v1/runs", "tracking"),
        ("platform", "/api/v1/runs/7b2c?hydrate=true&name=a%2Fb", "tracking"),
        ("platform", "/api/v1/artifacts/x/visualize", "tracking"),
        ("agent", "/api/v1/accounts/me", "agent-accounts"),
        ("agent", "/", "agent-accounts"),
    ],
)
def test_route_reaches_its_service_with_the_path_unchanged(
    launched, client, entrypoint, path, service
):
    if path == "/health":
        assert client.get(launched.url(entrypoint, path)).text == "ok"
        return
    seen = client.get(launched.url(entrypoint, path)).json()
    assert seen["service"] == service
    assert seen["path"] == path


@pytest.mark.parametrize(
    "path", ["/api/v1/runsX", "/api/v1/nope", "/api", "/_services/nope/health"]
)
def test_unrouted_platform_path_is_a_json_404(launched, client, path):
    response = client.get(launched.url("platform", path))
    assert response.status_code == 404
    assert response.json() == {"detail": ["KeyError", NO_SUCH_ENDPOINT]}
    assert response.headers["content-type"] == "application/json"


def test_probe_routes_reach_each_service(launched, client):
    for entrypoint, name in [("platform", "identity"), ("platform", "tracking"),
                             ("agent", "agent-accounts")]:  # fmt: skip
        for probe in ("health", "ready"):
            response = client.get(launched.url(entrypoint, f"/_services/{name}/{probe}"))
            assert (response.status_code, response.text) == (200, "ok")
        openapi = client.get(launched.url(entrypoint, f"/_services/{name}/openapi.json"))
        assert openapi.json()["info"]["title"] == name


def test_forwarding_headers_are_set_by_the_gateway(launched, client):
    seen = client.get(
        launched.url("platform", "/api/v1/runs"),
        headers={
            "X-Forwarded-For": "203.0.113.9",
            "X-Request-ID": "abcd1234",
            "traceparent": TRACEPARENT,
            "tracestate": "vendor=1",
        },
    ).json()["headers"]
    # A client cannot pretend to come from elsewhere: the gateway replaces the header.
    assert seen["x-forwarded-for"] == "127.0.0.1"
    assert seen["x-forwarded-proto"] == "http"
    assert seen["x-forwarded-host"] == seen["host"] == f"127.0.0.1:{launched.ports['platform']}"
    assert seen["x-request-id"] == "abcd1234"
    assert seen.get("connection") is None  # cleared, so upstream connections are kept alive
    # The client's trace goes on to the service as it came.
    assert (seen["traceparent"], seen["tracestate"]) == (TRACEPARENT, "vendor=1")


def test_gateway_makes_a_request_id_when_missing_or_malformed(launched, client):
    for headers in ({}, {"X-Request-ID": "not a valid id"}):
        seen = client.get(launched.url("platform", "/api/v1/runs"), headers=headers).json()
        assert len(seen["headers"]["x-request-id"]) == 32


def test_oversized_body_is_a_json_413(launched, client):
    body = b"x" * (1024 * 1024 + 1)
    platform = client.post(launched.url("platform", "/api/v1/login"), content=body)
    assert platform.status_code == 413
    assert platform.json()["detail"] == [
        "PayloadTooLarge",
        "Request body is larger than the limit of 1 MiB.",
    ]
    agent = client.post(launched.url("agent", "/api/v1/things"), content=body)
    assert agent.status_code == 413
    assert isinstance(agent.json()["detail"], str)


def test_a_service_with_a_body_limit_of_its_own_gets_it_at_the_gateway(launched, client):
    """tracking's routes take up to 2 MiB, everything else the gateway's 1 MiB."""
    url = launched.url("platform", "/api/v1/runs")
    body = b"x" * (2 * 1024 * 1024)
    taken = client.post(url, content=body)
    assert taken.status_code == 200
    assert taken.json()["body_length"] == len(body)
    refused = client.post(url, content=body + b"x")
    assert refused.status_code == 413
    assert refused.json()["detail"] == [
        "PayloadTooLarge",
        "Request body is larger than the limit of 2 MiB.",
    ]
    assert refused.headers["x-request-id"]


def test_services_get_their_own_environment(launched, client):
    tracking = client.get(launched.url("platform", "/api/v1/runs")).json()["env"]
    agent = client.get(launched.url("agent", "/x")).json()["env"]
    identity = client.get(launched.url("platform", "/api/v1/login")).json()["env"]
    assert tracking == {"SERVICE_CLIENT_ID": "tracking", "REDIS_NAMESPACE": "platform"}
    assert agent == {"SERVICE_CLIENT_ID": "agent-accounts", "REDIS_NAMESPACE": "agent"}
    assert identity["SERVICE_CLIENT_ID"] is None  # the issuer has the clients, not an id


def test_missing_module_is_skipped_with_a_note(launched):
    output = launched.output()
    assert "skipping later: module module_that_does_not_exist_yet" in output
    assert "not running yet: later" in output
    assert "later" not in launched.children


def test_services_that_serve_no_openapi_document_are_left_out_of_the_api_docs(launched):
    output = launched.output()
    for name in ("identity", "tracking", "agent-accounts"):
        port = launched.ports[name.replace("-", "_")]
        note = f"leave out {name}: http://127.0.0.1:{port}/openapi.json serves no OpenAPI document"
        assert f"the gateway's API docs {note}" in output
    assert "API docs:" not in output  # none written, so the banner offers none
    docs = launched.url("platform", "/openapi.json")
    with httpx.Client(timeout=5, trust_env=False) as client:
        assert client.get(docs).json()["detail"][0] == "KeyError"


def test_output_names_urls_and_admin_password_source(launched):
    output = launched.output()
    assert f"http://127.0.0.1:{launched.ports['platform']}" in output
    assert f"http://127.0.0.1:{launched.ports['agent']}" in output
    assert 'platform API login: user "default", password from DEFAULT_ADMIN_PASSWORD' in output
    assert f"log in at http://127.0.0.1:{launched.ports['platform']}" in output
    assert "fake worker up (client tracking)" in output  # worker output, prefixed


def test_secrets_are_private_and_never_printed(launched):
    path = launched.data_dir / "secrets.json"
    assert path.stat().st_mode & 0o777 == 0o600
    stored = json.loads(path.read_text())
    values = [*stored["clients"].values()]
    values += [v for service in stored["generated"].values() for v in service.values()]
    assert len(values) == 3  # two client secrets and identity's Fernet key
    output = launched.output()
    assert not [v for v in values if v in output]
    assert "only-for-identity" not in output


def test_each_web_service_gets_a_database_of_its_own_on_the_embedded_server(launched):
    server = f"postgresql+asyncpg://postgres@127.0.0.1:{launched.ports['postgres']}"
    for name, database in [("tracking", "tracking"), ("tracking-worker", "tracking"),
                           ("agent-accounts", "agent_accounts")]:  # fmt: skip
        url = process_environment(launched.children[name])["DATABASE_URL"]
        assert url == f"{server}/{database}"
        assert asyncio.run(database_answers(url.replace("+asyncpg", ""))) == database
    output = launched.output()
    assert (
        f"postgres is ready at postgresql://postgres@127.0.0.1:{launched.ports['postgres']}"
        in output
    )
    assert "database: the embedded PostgreSQL at postgresql://postgres@127.0.0.1:" in output


async def database_answers(url: str) -> str:
    connection = await asyncpg.connect(url)
    try:
        name: str = await connection.fetchval("SELECT current_database()")
        return name
    finally:
        await connection.close()


def test_sigterm_stops_everything_and_exits_0(launched):
    """Runs last in this module: it stops the launcher (PostgreSQL last of all)."""
    assert launched.process.poll() is None, launched.output()
    launched.process.send_signal(signal.SIGTERM)
    assert launched.process.wait(timeout=20) == 0, launched.output()
    stops = [line.split("|")[0].strip() for line in launched.output().splitlines()
             if "shut down" in line or "stopped" in line]  # fmt: skip
    assert stops[-2:] == ["postgres", "stack"]
    groups = set(launched.children.values())
    assert live_processes(groups, str(launched.data_dir)) == []
    assert not (launched.data_dir / "run" / "processes.json").exists()


def test_a_service_that_crashes_at_start_fails_the_launch_with_its_log(scratch):
    write_fake_stack(scratch / "stack.toml", crash_tracking=True)
    result = run_launcher(scratch)
    assert result.returncode == 1
    errors = [line for line in result.stdout.splitlines() if "| error: tracking exited" in line]
    assert len(errors) == 1
    assert "code 3" in errors[0]
    assert "last lines of tracking:" in result.stdout
    assert "crashing on purpose" in result.stdout.split("last lines of tracking:")[1]
    assert live_processes(set(), str(scratch / "data")) == []


def start_launcher(
    tmp_path: Path, *extra: str, crash_tracking_if: Path | None = None
) -> tuple[subprocess.Popen[bytes], Path, dict[str, int]]:
    """Start a fake stack (with ``extra`` flags) and wait until it is up; returns the
    process, its log and the children's process groups."""
    write_fake_stack(tmp_path / "stack.toml", crash_tracking_if=crash_tracking_if)
    log = tmp_path / "launcher.log"
    with log.open("wb") as output:
        process = subprocess.Popen(
            launcher_argv(tmp_path / "stack.toml", tmp_path / "data", *extra),
            cwd=REPO_ROOT,
            env=launcher_env(),
            stdout=output,
            stderr=subprocess.STDOUT,
        )
    deadline = time.monotonic() + 30
    while "the stack is up" not in log.read_text():
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    children = json.loads((tmp_path / "data" / "run" / "processes.json").read_text())["children"]
    return process, log, children


def test_killed_launcher_leaves_no_process_and_the_next_one_starts(scratch):
    process, _log, children = start_launcher(scratch)
    process.kill()
    process.wait()
    deadline = time.monotonic() + 10
    while live_processes(set(children.values()), str(scratch / "data")):
        assert time.monotonic() < deadline, live_processes(set(children.values()), "-")
        time.sleep(0.1)
    # Had PostgreSQL been killed too, its lock file would name a pid another process may
    # have now (here, this one).
    lock = scratch / "data" / "postgres" / "postmaster.pid"
    lock.write_text(f"{os.getpid()}\n{lock.parent}\n1700000000\n1\n\n127.0.0.1\n 1 2\nready\n")

    process, log, children = start_launcher(scratch)
    process.send_signal(signal.SIGTERM)
    assert process.wait(timeout=20) == 0, log.read_text()


def test_one_ctrl_c_delivered_twice_still_stops_gracefully(scratch):
    """Under `make run` the terminal and `uv run` both pass Ctrl-C on."""
    process, log, children = start_launcher(scratch)
    process.send_signal(signal.SIGINT)
    process.send_signal(signal.SIGINT)
    assert process.wait(timeout=20) == 0, log.read_text()
    output = log.read_text()
    assert "killing every process now" not in output
    assert "stopped" in output
    assert live_processes(set(children.values()), str(scratch / "data")) == []


def test_a_server_given_holds_the_databases_and_no_postgresql_is_started(scratch):
    (scratch / "server").mkdir()
    with embedded_server(scratch / "server") as server:
        given = postgres.with_database(server, "admin")
        asyncio.run(postgres.ensure_database(given))
        process, log, children = start_launcher(scratch, "--database-url", given)
        try:
            assert "postgres" not in children
            env = process_environment(children["agent-accounts"])
            assert env["DATABASE_URL"] == postgres.with_database(
                server, "agent_accounts", driver=postgres.DRIVER
            )
            tracking = postgres.with_database(server, "tracking")
            assert asyncio.run(database_answers(tracking)) == "tracking"
            assert f"database: PostgreSQL at {given}" in log.read_text()
        finally:
            process.send_signal(signal.SIGTERM)
            assert process.wait(timeout=20) == 0, log.read_text()


def test_busy_port_is_one_line_and_exit_2(tmp_path):
    ports = write_fake_stack(tmp_path / "stack.toml")
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", ports["platform"]))
        holder.listen()
        result = run_launcher(tmp_path, timeout=30)
    assert result.returncode == 2
    assert f"port(s) already in use: {ports['platform']} (gateway platform)" in result.stdout
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--platform-port", "http"], "--platform-port must be an integer"),
        (["--port-offset", "70000"], "--port-offset must be between"),
        (["--stack", "/nonexistent/stack.toml"], "file not found"),
        (["--replicas", "nope=2"], "--replicas: no service named 'nope'"),
        (["--replicas", "tracking=0"], "replicas must be a whole number from 1 to 9"),
    ],
)
def test_bad_input_is_one_line_and_exit_2(tmp_path, args, message):
    write_fake_stack(tmp_path / "stack.toml")
    result = run_launcher(tmp_path, *args, timeout=30)
    assert result.returncode == 2
    assert result.stderr.startswith("error: ")
    assert message in result.stderr
    assert result.stderr.count("\n") == 1


def test_a_busy_replica_port_is_one_line_and_exit_2(tmp_path):
    ports = write_fake_stack(tmp_path / "stack.toml")
    second = ports["tracking"] + REPLICA_PORT_STRIDE
    with socket.socket() as holder:
        holder.bind(("127.0.0.1", second))
        holder.listen()
        result = run_launcher(tmp_path, "--replicas", "tracking=2", timeout=30)
    assert result.returncode == 2
    assert f"port(s) already in use: {second} (service tracking#2)" in result.stdout


def test_every_replica_serves_on_its_port_and_a_killed_process_comes_back(scratch):
    """Once the stack is up, a dead process (a replica, the gateway, Valkey, PostgreSQL)
    is started again on its port, and processes.json names the new one."""
    process, log, children = start_launcher(scratch, "--replicas", "tracking=2,tracking-worker=2")
    try:
        stack = tomllib.loads((scratch / "stack.toml").read_text())
        tracking = _service_port(stack, "tracking")
        first, second = tracking, tracking + REPLICA_PORT_STRIDE
        names = {"identity", "tracking#1", "tracking#2", "tracking-worker#1", "tracking-worker#2"}
        assert names <= set(children)
        output = log.read_text()
        assert f"tracking#2 is ready on port {second}" in output
        assert f"replicas: tracking#1-#2 on ports {first}, {second}; tracking-worker#1-#2" in output
        assert "tracking-worker#2 | fake worker up (client tracking)" in output
        gateway = f"http://127.0.0.1:{stack['entrypoint'][0]['port']}/api/v1/runs"
        with httpx.Client(timeout=5.0, trust_env=False) as client:
            direct = client.get(f"http://127.0.0.1:{second}/api/v1/runs").json()
            assert (direct["service"], direct["port"]) == ("tracking", second)
            served = {client.get(gateway).json()["port"] for _ in range(4)}
        assert served == {first, second}  # the gateway takes turns

        for name in ("tracking#2", "gateway", "valkey", "postgres", "tracking-worker#1"):
            children = kill_and_wait_for_restart(process, log, children, name)
        assert process.poll() is None, log.read_text()

        with httpx.Client(timeout=5.0, trust_env=False) as client:
            served = {client.get(gateway).json()["port"] for _ in range(4)}
        assert served == {first, second}
        valkey = redis.Redis(port=stack["valkey"]["port"])
        try:
            assert valkey.ping()
        finally:
            valkey.close()
        tracking_db = postgres.server_url(stack["postgres"]["port"], "tracking")
        assert asyncio.run(database_answers(tracking_db)) == "tracking"
        process.send_signal(signal.SIGTERM)
        assert process.wait(timeout=20) == 0, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    assert live_processes(set(children.values()), str(scratch / "data")) == []


def kill_and_wait_for_restart(
    process: subprocess.Popen[bytes], log: Path, children: dict[str, int], name: str
) -> dict[str, int]:
    """SIGKILL the child ``name`` and wait until the launcher says it runs again; returns
    the process list the launcher then wrote."""
    start = log.stat().st_size
    os.kill(children[name], signal.SIGKILL)
    deadline = time.monotonic() + 20
    while f"| {name} is running again" not in (output := log.read_text()[start:]):
        assert process.poll() is None, log.read_text()
        assert time.monotonic() < deadline, log.read_text()
        time.sleep(0.1)
    # Killed within its first seconds, a process has failed its start once (not later).
    assert re.search(
        rf"\| {re.escape(name)} exited with signal SIGKILL (after [0-9]+s|[0-9.]+s after its "
        rf"start \(failed start 1 of {supervisor.MAX_START_FAILURES} in a row\)); restarting "
        rf"it in {supervisor.FIRST_BACKOFF:g}s\n",
        output,
    ), output
    now: dict[str, int] = json.loads((log.parent / "data/run/processes.json").read_text())[
        "children"
    ]
    assert now.keys() == children.keys()
    assert re.findall(rf"restarted {re.escape(name)} \(pid (\d+)\)", output) == [str(now[name])]
    assert now[name] != children[name]
    return now


def test_a_process_that_keeps_failing_at_start_stops_the_stack(scratch):
    crash = scratch / "crash-tracking"
    process, log, children = start_launcher(scratch, crash_tracking_if=crash)
    try:
        crash.touch()
        os.kill(children["tracking"], signal.SIGKILL)
        assert process.wait(timeout=30) == 1, log.read_text()
    finally:
        if process.poll() is None:
            process.kill()
            process.wait()
    output = log.read_text()
    limit = supervisor.MAX_START_FAILURES
    for attempt in range(1, limit):
        assert f"(failed start {attempt} of {limit} in a row)" in output
    assert (
        f"error: tracking failed at start {limit} times in a row (the last time it exited with "
        "code 3 after "
    ) in output
    assert "giving up; stopping the stack" in output
    assert "crashing on purpose" in output.split("last lines of tracking:")[1]
    assert live_processes(set(children.values()), str(scratch / "data")) == []


def _service_port(stack: dict[str, Any], name: str) -> int:
    port: int = next(s["port"] for s in stack["service"] if s["name"] == name)
    return port
