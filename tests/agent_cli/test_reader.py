"""``agent-run-read`` against the real service: it reads the stored login only, talks
HTTPS or loopback HTTP only, refuses redirects, and refuses a credentials file that is a
symlink, too large, readable by others or owned by someone else."""

from __future__ import annotations

import http.server
import json
import os
import re
import threading
from collections.abc import Iterator
from pathlib import Path

import httpx
import pytest

from agent_cli.urls import UrlError, read_only_url
from tests.agent_cli.conftest import (
    ADMIN_PASSWORD,
    AGENT_RUN_READ,
    admin_headers,
    cli_environment,
    new_api_key,
    run_cli,
)
from tests.support.processes import RunningService


def read(args: list[str], env: dict[str, str]):
    return run_cli(["-o", "json", *args], env, program=AGENT_RUN_READ)


@pytest.fixture
def logged_in(service: RunningService, tmp_path: Path) -> dict[str, str]:
    """An environment whose stored login (an API key) selects the service."""
    env = cli_environment(tmp_path)
    done = run_cli(["login", service.url, "--api-key-stdin"], env,
                   stdin=new_api_key(service.url) + "\n")  # fmt: skip
    assert done.returncode == 0, done.stderr
    return env


def credentials(env: dict[str, str]) -> Path:
    return Path(env["SERVICE_CONFIG_DIR"]) / "credentials.json"


def test_reads_status_workers_and_tasks_with_the_stored_login(
    service: RunningService, logged_in: dict[str, str]
):
    status = read(["status"], logged_in)
    assert status.returncode == 0, status.stderr
    assert status.json() == {
        "server": service.url, "server_version": "0.27.2", "auth_scheme": "local",
        "account": "default", "scheme": "api-key",
    }  # fmt: skip
    assert isinstance(read(["workers", "--all"], logged_in).json(), list)
    body = {"kind": "evaluator", "timeout_seconds": 5}
    headers = admin_headers(service.url)
    created = httpx.post(f"{service.url}/api/v1/tasks", json=body, headers=headers, timeout=30)
    created = created.json()
    task = read(["task", created["id"]], logged_in).json()
    assert (task["id"], task["status"]) == (created["id"], "pending")
    text = run_cli(["status"], logged_in, program=AGENT_RUN_READ)
    assert re.search(r"^account +default *$", text.stdout, re.MULTILINE), text.stdout


def test_environment_credentials_are_not_read(service: RunningService, tmp_path: Path,
                                              logged_in: dict[str, str]):  # fmt: skip
    session = httpx.post(f"{service.url}/api/v1/login", timeout=30, data={
        "grant_type": "password", "username": "default", "password": ADMIN_PASSWORD,
    }).json()["access_token"]  # fmt: skip
    garbage = {"SERVICE_API_TOKEN": "garbage", "SERVICE_API_KEY": "SVCKEY_garbage"}
    assert read(["status"], {**logged_in, **garbage}).json()["scheme"] == "api-key"

    nothing_stored = cli_environment(tmp_path / "empty", SERVICE_API_URL=service.url,
                                     SERVICE_API_TOKEN=session)  # fmt: skip
    done = read(["status"], nothing_stored)
    assert done.returncode == 3
    assert done.error()["message"].startswith(f"no stored login for {service.url}")


@pytest.mark.parametrize(
    ("url", "reason"),
    [
        ("http://example.com", "refusing cleartext HTTP to example.com"),
        ("http://10.0.0.1:8000", "refusing cleartext HTTP to 10.0.0.1"),
        ("http://127.1", "refusing cleartext HTTP to 127.1"),
        ("http://localhost.example.com", "refusing cleartext HTTP"),
        ("ftp://127.0.0.1", "is not an http:// or https:// URL"),
        ("https://user:pw@example.com", "user name or password"),
        ("https://example.com/?a=1", "query or a fragment"),
        ("https://example.com/#top", "query or a fragment"),
        ("https://example.com\\@evil.com", "backslash"),
        ("https://example.com/a/%2e%2e/b", "encoded"),
        ("https://example.com/a%2Fb", "encoded"),
        ("https://example.com/a/../b", "'..' path segments"),
    ],
)  # fmt: skip
def test_refused_urls_exit_2_before_any_request(tmp_path: Path, url: str, reason: str):
    done = read(["--server", url, "status"], cli_environment(tmp_path))

    assert done.returncode == 2, done.stderr
    assert reason in done.error()["message"]


@pytest.mark.parametrize(
    ("url", "normal"),
    [
        ("https://example.com/", "https://example.com"),
        ("https://example.com:8443/agent//", "https://example.com:8443/agent"),
        ("http://localhost:8090/", "http://localhost:8090"),
        ("http://127.0.0.1:8090", "http://127.0.0.1:8090"),
        ("http://127.200.3.4", "http://127.200.3.4"),
        ("http://[::1]:8090", "http://[::1]:8090"),
    ],
)
def test_https_and_loopback_http_are_accepted(url: str, normal: str):
    assert read_only_url(url) == normal


def test_ipv4_mapped_loopback_is_not_loopback():
    with pytest.raises(UrlError):
        read_only_url("http://[::ffff:127.0.0.1]")


class _Redirect(http.server.BaseHTTPRequestHandler):
    hits: list[str] = []

    def do_GET(self) -> None:
        self.hits.append(self.path)
        self.send_response(307)
        self.send_header("Location", f"http://127.0.0.1:9/elsewhere{self.path}")
        self.end_headers()

    def log_message(self, *args: object) -> None:
        pass


@pytest.fixture
def redirecting() -> Iterator[str]:
    server = http.server.HTTPServer(("127.0.0.1", 0), _Redirect)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}"
    server.shutdown()
    server.server_close()
    thread.join()


def test_redirects_are_refused(logged_in: dict[str, str], redirecting: str):
    path = credentials(logged_in)
    entries = json.loads(path.read_text())
    [entry] = entries.values()
    path.write_text(json.dumps({redirecting: {**entry, "url": redirecting}}))
    _Redirect.hits.clear()

    done = read(["--server", redirecting, "status"], logged_in)

    assert done.returncode == 1
    assert "refusing to follow a redirect" in done.error()["message"]
    assert _Redirect.hits == ["/api/v1/info"]  # one request, not followed


def test_a_symlinked_credentials_file_is_refused(logged_in: dict[str, str], tmp_path: Path):
    path = credentials(logged_in)
    real = tmp_path / "elsewhere.json"
    path.rename(real)
    path.symlink_to(real)

    done = read(["status"], logged_in)
    assert done.returncode == 6
    assert "is a symbolic link" in done.error()["message"]


def test_a_credentials_file_larger_than_1_mib_is_refused(logged_in: dict[str, str]):
    path = credentials(logged_in)
    entries = json.loads(path.read_text())
    path.write_text(json.dumps({**entries, "padding": "x" * (1024 * 1024)}))

    done = read(["status"], logged_in)
    assert done.returncode == 6
    assert "is larger than 1048576 bytes" in done.error()["message"]


@pytest.mark.parametrize("mode", [0o640, 0o604, 0o620])
def test_a_credentials_file_others_may_use_is_refused(logged_in: dict[str, str], mode: int):
    path = credentials(logged_in)
    path.chmod(mode)

    done = read(["status"], logged_in)
    assert done.returncode == 6
    assert "run chmod 600" in done.error()["message"]


@pytest.mark.skipif(os.geteuid() != 0, reason="only root can give a file to another user")
def test_a_credentials_file_owned_by_another_user_is_refused(logged_in: dict[str, str]):
    os.chown(credentials(logged_in), 65534, -1)

    done = read(["status"], logged_in)
    assert done.returncode == 6
    assert "is not owned by the current user" in done.error()["message"]
