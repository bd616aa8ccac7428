"""The gateway config, docker-compose.yml and the Dockerfiles agree with deploy/stack.toml."""

from __future__ import annotations

import contextlib
import importlib
import json
import re
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest
import yaml

from deploy.config import load_stack
from deploy.gateway.__main__ import COMPOSE_CONF
from deploy.gateway.locations import TRACE_PATH
from deploy.gateway.render import compose_target, local_target, render
from deploy.local.gateway import nginx_binary, worker_user
from deploy.local.probes import port_in_use
from shared.errors import NO_SUCH_ENDPOINT
from tests.support.processes import below_ephemeral_ports

REPO_ROOT = Path(__file__).resolve().parents[2]
STACK = load_stack()


def nginx_test(config_text: str, prefix: Path) -> subprocess.CompletedProcess[str]:
    """Run the real ``nginx -t`` on a configuration inside a private prefix. ``-t`` creates
    the pid file the configuration names, so an image's (``/tmp/nginx.pid``) moves into the
    prefix: a test leaves nothing in the host's ``/tmp``."""
    prefix.mkdir(parents=True, exist_ok=True)
    config = prefix / "nginx.conf"
    config.write_text(re.sub(r"^pid /\S+;$", f"pid {prefix}/nginx.pid;", config_text, flags=re.M))
    return subprocess.run(
        [str(nginx_binary()), "-t", "-p", f"{prefix}/", "-c", str(config), "-e", "stderr"],
        capture_output=True,
        text=True,
        timeout=30,
        check=False,
    )


def free_offset() -> int:
    """A port offset that puts every internal port of the stack on a free port."""
    for _ in range(100):
        ports = [STACK.valkey_port, *(s.port or 0 for s in STACK.web_services)]
        offset = below_ephemeral_ports(max(ports))
        if not any(port_in_use("127.0.0.1", port + offset) for port in ports):
            return offset
    raise AssertionError("no free port range found")


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return int(probe.getsockname()[1])


def declare_body(port: int, path: str, limit: int, method: str = "POST") -> bytes:
    """The gateway's answer to a request declaring one byte more than ``limit`` (and sending
    none of it: nginx refuses on the declared length, then waits for the body to discard)."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(
            f"{method} {path} HTTP/1.1\r\nHost: gw\r\nContent-Length: {limit + 1}\r\n\r\n".encode()
        )
        answer = b""
        while b"\r\n\r\n" not in answer:
            answer += sock.recv(65536)
        declared = re.search(rb"(?i)content-length: *(\d+)", answer)
        assert declared, answer
        length = int(declared[1])
        while len(answer.partition(b"\r\n\r\n")[2]) < length:
            answer += sock.recv(65536)
    return answer


def locations_by_server(config_text: str) -> list[dict[str, str]]:
    """For each ``server`` block: location → the upstream it proxies to."""
    servers = []
    for block in config_text.split("\n    server {")[1:]:
        found: dict[str, str] = {}
        # One line (`location X { proxy_pass ...; }`) or a block with directives of its own.
        for match in re.finditer(r"location (= )?(\S+) \{[^}]*?proxy_pass http://(\w+)", block):
            key = ("=" if match.group(1) else "") + match.group(2)
            assert key not in found, f"location {key} appears twice"
            found[key] = match.group(3)
        servers.append(found)
    return servers


def test_local_config_passes_nginx_t(tmp_path):
    target = local_target(STACK, port_offset=1000, user=worker_user())
    result = nginx_test(render(STACK, target), tmp_path / "local")
    assert result.returncode == 0, result.stderr


def upstream_servers(config_text: str) -> dict[str, list[str]]:
    """Upstream name → its ``server`` addresses, in order."""
    return {
        match.group(1): re.findall(r"^\s+server (\S+?)(?: resolve)?;", match.group(2), re.M)
        for match in re.finditer(r"upstream (\w+) \{(.*?)\}", config_text, re.S)
    }


def test_the_local_upstreams_list_every_replica_at_its_port(tmp_path):
    stack = STACK.with_replicas({"tracking": 3, "agent-accounts": 2, "webhooks-worker": 2})
    config = render(stack, local_target(stack, port_offset=1000, user=worker_user()))
    assert upstream_servers(config) == {
        "identity_svc": ["127.0.0.1:9101"],
        "tracking_svc": ["127.0.0.1:9102", "127.0.0.1:9202", "127.0.0.1:9302"],
        "webhooks_svc": ["127.0.0.1:9103"],
        "agent_accounts_svc": ["127.0.0.1:9104", "127.0.0.1:9204"],
    }
    result = nginx_test(config, tmp_path / "local")
    assert result.returncode == 0, result.stderr


def test_committed_compose_config_passes_nginx_t(tmp_path):
    # Tested as committed: its upstreams use `resolve`, so nginx looks the compose service
    # names up at run time (through Docker's DNS) and -t needs no name to resolve here.
    result = nginx_test(COMPOSE_CONF.read_text(), tmp_path / "compose")
    assert result.returncode == 0, result.stderr


def test_committed_compose_config_is_current():
    assert COMPOSE_CONF.read_text() == render(STACK, compose_target(STACK)), (
        "deploy/gateway/nginx.compose.conf is stale: run `python -m deploy.gateway`"
    )


def test_every_route_prefix_maps_to_exactly_one_service():
    servers = locations_by_server(render(STACK, local_target(STACK)))
    assert len(servers) == len(STACK.entrypoints)
    for entrypoint, locations in zip(STACK.entrypoints, servers, strict=True):
        expected: dict[str, str] = {}
        for service in STACK.web_services:
            if service.entrypoint != entrypoint.name:
                continue
            upstream = f"{service.name.replace('-', '_')}_svc"
            for route in service.routes:
                keys = ["/"] if route == "/" else [f"={route}", f"{route}/"]
                expected |= dict.fromkeys(keys, upstream)
        routed = {
            k: v
            for k, v in locations.items()
            if not k.startswith("=/_services/") and TRACE_PATH not in k
        }
        assert routed == expected


def test_every_web_service_has_probe_routes_on_its_entrypoint():
    servers = dict(
        zip(
            [e.name for e in STACK.entrypoints],
            locations_by_server(render(STACK, local_target(STACK))),
            strict=True,
        )
    )
    for service in STACK.web_services:
        assert service.entrypoint is not None
        for probe in ("health", "ready", "openapi.json"):
            assert f"=/_services/{service.name}/{probe}" in servers[service.entrypoint]


@pytest.mark.parametrize("service", STACK.web_services, ids=lambda s: s.name)
def test_the_gateways_body_limit_on_a_service_is_the_services_own(service):
    """A body the service takes must not be refused by the gateway in front of it, nor the
    other way round (the webhooks intake takes GitHub's 25 MB deliveries, the rest 10 MB)."""
    size = service.client_max_body_size or STACK.client_max_body_size
    gateway = int(size.rstrip("km")) * {"k": 1024, "m": 1024 * 1024}.get(size[-1], 1)
    settings = importlib.import_module(f"{service.module}.settings").Settings
    assert settings.model_fields["max_body_size"].default == gateway


@contextlib.contextmanager
def gateway_without_upstreams(
    prefix: Path, port_offset: int | None = None, uis: tuple[str, ...] = ()
) -> Iterator[dict[str, int]]:
    """Real nginx on the local config, no service running behind it (unless the caller
    runs one at ``port_offset``), serving the web UIs of the entrypoints in ``uis`` from
    ``prefix/ui/<entrypoint>``; yields the ports of its entrypoints. Stopped gracefully
    (SIGQUIT), so its access log is flushed."""
    ports = {"platform": free_port(), "agent": free_port()}
    target = local_target(
        STACK,
        # By default a range nothing listens on.
        port_offset=free_offset() if port_offset is None else port_offset,
        ports=ports,
        user=worker_user(),
        uis=uis,
    )
    assert nginx_test(render(STACK, target), prefix).returncode == 0
    process = subprocess.Popen(
        [str(nginx_binary()), "-p", f"{prefix}/", "-c", str(prefix / "nginx.conf"),
         "-e", "stderr", "-g", "daemon off;"],
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )  # fmt: skip
    try:
        for _ in range(50):
            if all(port_in_use("127.0.0.1", port) for port in ports.values()):
                break
            time.sleep(0.1)
        yield ports
    finally:
        process.send_signal(signal.SIGQUIT)
        process.wait(timeout=10)


def test_gateway_errors_are_json(tmp_path):
    """Real nginx, no upstream running: 502 and 404 come back as JSON, not HTML."""
    with (
        gateway_without_upstreams(tmp_path / "gw") as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        platform, agent = ports["platform"], ports["agent"]
        unreachable = client.get(f"http://127.0.0.1:{platform}/api/v1/runs")
        # webhooks' locations set a body limit and a 413 of their own, and repeat the
        # rest: a location with any error_page of its own inherits none.
        webhooks_down = client.get(f"http://127.0.0.1:{platform}/api/v1/webhooks")
        too_large = declare_body(platform, "/api/v1/webhooks/custom/x/events", 25 << 20)
        missing = client.get(f"http://127.0.0.1:{platform}/api/v1/nope")
        agent_down = client.get(f"http://127.0.0.1:{agent}/api/v1/info")
    assert unreachable.status_code == 502
    assert unreachable.json()["detail"][0] == "ServiceUnavailable"
    assert webhooks_down.status_code == 502
    assert webhooks_down.json()["detail"][0] == "ServiceUnavailable"
    assert too_large.startswith(b"HTTP/1.1 413 ")
    assert json.loads(too_large.partition(b"\r\n\r\n")[2])["detail"] == [
        "PayloadTooLarge",
        "Request body is larger than the limit of 25 MiB.",
    ]
    assert missing.status_code == 404
    assert missing.json() == {"detail": ["KeyError", NO_SUCH_ENDPOINT]}
    assert missing.headers["x-request-id"]
    assert agent_down.status_code == 502
    assert isinstance(agent_down.json()["detail"], str)


def raw_answer(port: int, request: bytes) -> tuple[int, dict[str, str], object]:
    """The gateway's answer to a request sent as bytes (one nginx refuses before it has a
    URI, which no HTTP client sends): status, headers (lower-case names), JSON body."""
    with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
        sock.sendall(request)
        answer = b""
        while chunk := sock.recv(65536):
            answer += chunk
    head, _, body = answer.partition(b"\r\n\r\n")
    status_line, *fields = head.decode().split("\r\n")
    headers = {k.lower(): v.strip() for k, _, v in (f.partition(":") for f in fields)}
    return int(status_line.split()[1]), headers, json.loads(body)


LONG_URI = "/api/v1/runs?name=" + "a" * (8 << 10)
REQUEST_ERRORS = {
    "long URI": (f"GET {LONG_URI} HTTP/1.1\r\nHost: gw\r\n\r\n".encode(), 414),
    "long header": (
        f"GET /api/v1/runs HTTP/1.1\r\nHost: gw\r\nX-Big: {'a' * (8 << 10)}\r\n\r\n".encode(),
        400,
    ),
    "no Host": (b"GET /api/v1/runs HTTP/1.1\r\n\r\n", 400),
    "no request line": (b"\x01 nonsense\r\n\r\n", 400),
    "an error page asked for": (b"GET /_gateway/errors/uri_too_long HTTP/1.0\r\n\r\n", 404),
}
PLATFORM_REQUEST_ERRORS = {
    "long URI": ["URITooLong", "The URI is longer than the limit of 8 KiB."],
    "long header": ["ValueError", "A request header is larger than the limit of 8 KiB."],
    "no Host": ["ValueError", "The request is malformed."],
    "no request line": ["ValueError", "The request is malformed."],
    "an error page asked for": ["KeyError", NO_SUCH_ENDPOINT],
}


def test_errors_nginx_answers_itself_are_json_in_the_entrypoints_shape(tmp_path):
    """What nginx refuses while it reads a request (before any location or service): the
    entrypoint's JSON error, the platform's [name, message], the agent server's message."""
    with gateway_without_upstreams(tmp_path / "gw") as ports:
        answers = {
            (entrypoint, case): raw_answer(port, request)
            for entrypoint, port in ports.items()
            for case, (request, _) in REQUEST_ERRORS.items()
        }
    for (entrypoint, case), (status, headers, body) in answers.items():
        assert status == REQUEST_ERRORS[case][1], (entrypoint, case)
        assert headers["content-type"] == "application/json", (entrypoint, case)
        assert headers["x-request-id"], (entrypoint, case)
        platform = PLATFORM_REQUEST_ERRORS[case]
        if entrypoint == "platform":
            assert body == {"detail": platform}, case
        else:  # kitaru's: the message alone; its 404 as FastAPI words it
            agent = {"an error page asked for": "Not Found"}.get(case, platform)
            assert body == {"detail": agent[1] if isinstance(agent, list) else agent}, case


def test_no_entrypoint_routes_metrics(tmp_path):
    """On no entrypoint, whatever else it serves."""
    with (
        gateway_without_upstreams(tmp_path / "gw") as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        answers = {
            (name, path): client.get(f"http://127.0.0.1:{port}{path}")
            for name, port in ports.items()
            for path in ("/metrics", "/metrics/", "/metrics/x")
        }
    assert {key: answer.status_code for key, answer in answers.items()} == dict.fromkeys(
        answers, 404
    )
    assert answers["platform", "/metrics"].json() == {"detail": ["KeyError", NO_SUCH_ENDPOINT]}
    assert answers["agent", "/metrics"].json() == {"detail": "Not Found"}


NOT_SERVED = "/api/v1/stack-deployment is not implemented by this server."
AGENTS = "/api/v1/agents is not implemented by this server."


@pytest.mark.parametrize(
    ("entrypoint", "path", "body", "near_miss", "near_miss_status"),
    [
        (
            "platform",
            "/api/v1/stack-deployment",
            ["NotImplementedError", NOT_SERVED],
            "/api/v1/stack-deploymentX",
            404,
        ),
        (
            "platform",
            "/api/v1/stack-deployment/",
            ["NotImplementedError", NOT_SERVED],
            "/api/v1/stack-deploymentX",
            404,
        ),
        (
            "platform",
            "/api/v1/stack-deployment/x?hydrate=1",
            ["NotImplementedError", NOT_SERVED],
            "/api/v1/stack-deploymentX",
            404,
        ),
        # Nor does agent-accounts take every other path on the agent entrypoint.
        ("agent", "/api/v1/agents/x", AGENTS, "/api/v1/agentsX", 404),
    ],
)
def test_unimplemented_families_are_a_501_in_the_entrypoints_shape(
    tmp_path, entrypoint, path, body, near_miss, near_miss_status
):
    assert path.startswith(STACK.entrypoint(entrypoint).unimplemented)
    with (
        gateway_without_upstreams(tmp_path / "gw") as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        answer = client.get(f"http://127.0.0.1:{ports[entrypoint]}{path}")
        missed = client.get(f"http://127.0.0.1:{ports[entrypoint]}{near_miss}")
    assert answer.status_code == 501
    assert answer.json() == {"detail": body}
    assert answer.headers["content-type"] == "application/json"
    assert answer.headers["x-request-id"]
    assert missed.status_code == near_miss_status


SECRETS = {
    "token": "Tok3nValue",
    "user_code": "UserC0de",
    "device_code": "Dev1ceCode",
    "password": "Passw0rdValue",
    "api_key": "ApiK3yValue",
    "client_secret": "Cl1entSecret",
    "refresh_token": "Refr3shToken",
    "t%6Fken": "Enc0dedName",
}


def test_access_log_masks_secret_query_values(tmp_path):
    """Every secret-looking parameter (as the services mask them), wherever it stands, and
    more of them than the masking maps take one by one: none reaches access.log."""
    query = "&".join(f"{name}={value}" for name, value in SECRETS.items())
    paths = [
        f"/api/v1/runs?name=kept&{query}&sort=kept2",
        "/api/v1/runs?token=Al0ne",
        "/api/v1/devices/x?user_code=Sh0rt&hydrate=true",
        "/api/v1/login?Token=Upp3rCase&token=",
        "/api/v1/runs?a=1&access_token=Acc3ss&device_code=Dev1ce&b=2",
        "/api/v1/runs?hydrate=true&name=pla%20in",
    ]
    with (
        gateway_without_upstreams(tmp_path / "gw") as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        for path in paths:
            client.get(f"http://127.0.0.1:{ports['platform']}{path}")
    log = (tmp_path / "gw" / "access.log").read_text()
    assert log.count("GET /api/v1/") == len(paths), log
    for secret in [*SECRETS.values(), "Al0ne", "Sh0rt", "Upp3rCase", "Acc3ss", "Dev1ce"]:
        assert secret not in log
    # More secrets than the maps mask one by one: the whole query is masked.
    assert "GET /api/v1/runs?*** HTTP/1.1" in log
    assert "GET /api/v1/runs?a=1&access_token=***&device_code=***&b=2 HTTP/1.1" in log
    assert "GET /api/v1/runs?hydrate=true&name=pla%20in HTTP/1.1" in log
    assert "GET /api/v1/runs?token=*** HTTP/1.1" in log
    assert "GET /api/v1/devices/x?user_code=***&hydrate=true HTTP/1.1" in log
    assert "GET /api/v1/login?Token=***&token=*** HTTP/1.1" in log


def test_access_log_names_the_trace_a_request_brought(tmp_path):
    trace = "4bf92f3577b34da6a3ce929d0e0e4736"
    sent = {
        "/api/v1/runs?n=1": f"00-{trace}-00f067aa0ba902b7-01",
        "/api/v1/runs?n=2": "00-nonsense",
        "/api/v1/runs?n=3": None,
    }
    with (
        gateway_without_upstreams(tmp_path / "gw") as ports,
        httpx.Client(timeout=5, trust_env=False) as client,
    ):
        for path, traceparent in sent.items():
            headers = {"traceparent": traceparent} if traceparent else {}
            client.get(f"http://127.0.0.1:{ports['platform']}{path}", headers=headers)
    lines = (tmp_path / "gw" / "access.log").read_text().splitlines()
    logged = {path: line.rsplit(" trace=", 1)[1] for path in sent for line in lines if path in line}
    assert logged == {"/api/v1/runs?n=1": trace, "/api/v1/runs?n=2": "-", "/api/v1/runs?n=3": "-"}


@pytest.mark.parametrize("service", STACK.web_services, ids=lambda s: s.name)
def test_every_api_path_a_service_serves_is_routed_to_it(service):
    """Its routes in stack.toml cover every /api/ path its app has (the agent entrypoint's
    other paths are the kitaru UI's, so agent-accounts lists its families one by one),
    and none lies under a prefix the gateway answers 501 itself."""
    assert service.entrypoint is not None
    unimplemented = STACK.entrypoint(service.entrypoint).unimplemented
    settings = importlib.import_module(f"{service.module}.settings").Settings.model_construct()
    app = importlib.import_module(f"{service.module}.app").create_app(settings)
    paths = [route.path for route in app.routes if hasattr(route, "path")]

    def under(path: str, prefixes: tuple[str, ...]) -> bool:
        return any(path == p or p == "/" or path.startswith(f"{p}/") for p in prefixes)

    api = [p for p in paths if p.startswith("/api/")]
    assert api
    assert [p for p in api if not under(p, service.routes)] == []
    assert [p for p in api if under(p, unimplemented)] == []


def load_compose() -> dict[str, dict[str, object]]:
    loaded = yaml.safe_load((REPO_ROOT / "docker-compose.yml").read_text())
    assert isinstance(loaded, dict)
    return loaded


def test_compose_names_every_stack_service():
    services = load_compose()["services"]
    for service in STACK.services:
        assert service.name in services, f"{service.name} is missing from docker-compose.yml"
    for name in ("postgres", "redis", "gateway"):
        assert name in services


def test_compose_builds_each_web_service_from_the_one_dockerfile():
    services = load_compose()["services"]
    for service in STACK.web_services:
        spec = services[service.name]
        assert isinstance(spec, dict)
        build = spec["build"]
        assert build["context"] == "."
        assert build["dockerfile"] == "services/Dockerfile"
        args = build["args"]
        assert args["SERVICE"] == service.name
        assert (REPO_ROOT / "services" / service.name / "pyproject.toml").is_file()
        # MODULE defaults to SERVICE in the Dockerfile: the module python -m serves.
        assert args.get("MODULE", args["SERVICE"]) == service.module
        assert "/ready" in " ".join(spec["healthcheck"]["test"])


def test_compose_gives_tracking_its_artifact_directory():
    tracking = load_compose()["services"]["tracking"]
    assert isinstance(tracking, dict)
    root = tracking["environment"]["ARTIFACT_STORE_ROOT"]
    assert tracking["build"]["args"]["DATA_DIR"] == root
    assert f"artifacts:{root}" in tracking["volumes"]


def test_compose_runs_the_worker_on_its_owners_image():
    services = load_compose()["services"]
    for worker in (s for s in STACK.services if s.kind == "worker"):
        spec, owner = services[worker.name], services[worker.owner]
        assert isinstance(spec, dict)
        assert isinstance(owner, dict)
        assert spec["build"] == owner["build"]
        assert spec["image"] == owner["image"]
        assert spec["command"] == ["python", "-m", worker.module]


def test_compose_gateway_uses_the_committed_config():
    gateway = load_compose()["services"]["gateway"]
    assert isinstance(gateway, dict)
    assert gateway["build"] == {"context": ".", "dockerfile": "deploy/gateway/Dockerfile"}
    assert gateway["image"] == "platform-gateway:local"
    assert "./deploy/gateway/nginx.compose.conf:/etc/nginx/nginx.conf:ro" in gateway["volumes"]
    published = {str(port).rsplit(":", 1)[-1] for port in gateway["ports"]}
    assert published == {str(e.port) for e in STACK.entrypoints}


def test_compose_env_example_sets_every_required_variable():
    text = (REPO_ROOT / "docker-compose.yml").read_text()
    required = set(re.findall(r"\$\{(\w+):\?", text))
    example = (REPO_ROOT / "deploy/compose/.env.example").read_text()
    defined = set(re.findall(r"^(\w+)=", example, flags=re.MULTILINE))
    assert required <= defined


def test_the_one_dockerfile_is_slim_non_root_and_serves_the_named_module():
    text = (REPO_ROOT / "services" / "Dockerfile").read_text()
    assert "python:3.11-slim" in text
    users = re.findall(r"^USER (\S+)", text, flags=re.MULTILINE)
    assert users, "no USER line"
    assert users[-1].split(":")[0] not in ("root", "0")
    assert '--package "${SERVICE}"' in text
    assert "ARG MODULE=${SERVICE}" in text
    assert "PLATFORM_SERVICE_MODULE=${MODULE}" in text
    assert 'exec python -m \\"$PLATFORM_SERVICE_MODULE\\" --host 0.0.0.0 --port 8000' in text
    assert "HEALTHCHECK" in text
    assert not list((REPO_ROOT / "services").glob("*/Dockerfile")), "one Dockerfile, not one each"


def test_database_init_script_is_valid_bash():
    script = REPO_ROOT / "deploy/compose/init-databases.sh"
    result = subprocess.run(["bash", "-n", str(script)], capture_output=True, text=True)
    assert result.returncode == 0, result.stderr
