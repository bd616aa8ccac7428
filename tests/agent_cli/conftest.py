"""The real agent-accounts service as a process (a PostgreSQL database from the pool, the
test Redis), and the real
``agent-run`` / ``agent-run-read`` console scripts run against it, each with a config
directory of its own."""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from collections.abc import AsyncIterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.support.databases import Databases
from tests.support.processes import RunningService, StackStartError, run_service

ADMIN_PASSWORD = f"Cli-{secrets.token_urlsafe(12)}"
BIN = Path(sys.executable).parent
AGENT_RUN = str(BIN / "agent-run")
AGENT_RUN_READ = str(BIN / "agent-run-read")


def service_env(database_url: str, redis_url: str, **extra: str) -> dict[str, str]:
    env = {
        "SERVICE_DATABASE_URL": database_url,
        "SERVICE_REDIS_URL": redis_url,
        "SERVICE_REDIS_NAMESPACE": f"cli-{secrets.token_hex(6)}",
        "SERVICE_JWT_SIGNING_KEYS": secrets.token_urlsafe(32),
        "SERVICE_SERVER_DEFAULT_ACCOUNT_PASSWORD": ADMIN_PASSWORD,
        # A 1 s poll interval keeps the device login fast.
        "SERVICE_SERVER_DEVICE_AUTH_POLLING_INTERVAL_SECONDS": "1",
        "SERVICE_LOG_LEVEL": "WARNING",
    }
    env.update(extra)
    return env


@pytest.fixture
def database_service() -> str:
    """``database_url`` is at agent-accounts' head."""
    return "agent_accounts"


@pytest.fixture(scope="module")
async def service(
    tmp_path_factory: pytest.TempPathFactory, redis_url: str, databases: Databases
) -> AsyncIterator[RunningService]:
    data_dir = tmp_path_factory.mktemp("agent-service")
    async with databases.postgres("agent_accounts") as database_url:
        try:
            with run_service(
                "agent_accounts", service_env(database_url, redis_url), data_dir / "service.log"
            ) as running:
                yield running
        except StackStartError as exc:
            pytest.fail(str(exc), pytrace=False)


def admin_headers(url: str) -> dict[str, str]:
    response = httpx.post(
        f"{url}/api/v1/login",
        data={"grant_type": "password", "username": "default", "password": ADMIN_PASSWORD},
        timeout=30,
    )
    assert response.status_code == 200, response.text
    return {"Authorization": f"Bearer {response.json()['access_token']}"}


def new_api_key(url: str) -> str:
    response = httpx.post(
        f"{url}/api/v1/api-keys",
        json={"name": f"cli-{secrets.token_hex(4)}"},
        headers=admin_headers(url),
        timeout=30,
    )
    assert response.status_code == 201, response.text
    key: str = response.json()["key"]
    return key


def cli_environment(workdir: Path, **extra: str) -> dict[str, str]:
    """A clean environment: no SERVICE_* variables but the config directory and ``extra``."""
    home = workdir / "home"
    home.mkdir(parents=True, exist_ok=True)
    env = {
        "PATH": os.environ.get("PATH", os.defpath),
        "LANG": "C.UTF-8",
        "HOME": str(home),
        "TMPDIR": str(workdir),
        "SERVICE_CONFIG_DIR": str(workdir / "config"),
        "NO_PROXY": "127.0.0.1,localhost",
        "TERM": "dumb",
    }
    env.update(extra)
    return env


@dataclass
class Done:
    returncode: int
    stdout: str
    stderr: str

    def json(self) -> Any:
        return json.loads(self.stdout)

    def error(self) -> dict[str, Any]:
        body: dict[str, Any] = json.loads(self.stderr)["error"]
        return body


def run_cli(
    args: list[str], env: dict[str, str], *, stdin: str = "", program: str = AGENT_RUN
) -> Done:
    done = subprocess.run(
        [program, *args],
        input=stdin,
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return Done(done.returncode, done.stdout, done.stderr)
