"""The agent-run API as the tools use it: one ``httpx.AsyncClient`` per server, bounded
retries of idempotent requests (``shared.http.RetryTransport``), redirects refused, and
every refusal turned into a :class:`~agent_cli.output.CliError` with a clear message."""

from __future__ import annotations

import platform
import socket
import uuid
from collections.abc import Generator, Mapping
from typing import Any

import httpx

from agent_cli import __version__
from agent_cli.output import CliError, ExitCode
from shared.http import RetryTransport

USER_AGENT = f"agent-run-cli/{__version__}"
DEVICE_GRANT = "urn:ietf:params:oauth:grant-type:device_code"
TIMEOUT = httpx.Timeout(30.0, connect=5.0)


class ApiError(CliError):
    """The server answered with an error: its status, message and (grants) error code."""

    def __init__(self, status: int, message: str, error: str | None = None) -> None:
        code = ExitCode.AUTH if status in (401, 403) else ExitCode.ERROR
        super().__init__(message, code)
        self.status = status
        self.error = error


def _message(response: httpx.Response) -> tuple[str, str | None]:
    """The server's own words for a failed request (``detail`` and the grant ``error``)."""
    try:
        body = response.json()
    except ValueError:
        body = None
    if isinstance(body, dict):
        detail, error = body.get("detail"), body.get("error")
        if isinstance(detail, list) and detail and all(isinstance(d, dict) for d in detail):
            detail = "; ".join(
                f"{'.'.join(str(p) for p in d.get('loc', []))}: {d.get('msg')}" for d in detail
            )
        if isinstance(detail, list):
            detail = " ".join(str(d) for d in detail)
        if detail or error:
            return str(detail or error), str(error) if error else None
    return f"HTTP {response.status_code} {response.reason_phrase}".strip(), None


class _Bearer(httpx.Auth):
    def __init__(self, token: str) -> None:
        self.token = token

    def auth_flow(self, request: httpx.Request) -> Generator[httpx.Request, httpx.Response, None]:
        request.headers["Authorization"] = f"Bearer {self.token}"
        yield request


class ApiClient:
    """Requests to one server with one credential (a bearer string, or an ``httpx.Auth``
    that renews its own)."""

    def __init__(
        self,
        base_url: str,
        *,
        credential: str | None = None,
        auth: httpx.Auth | None = None,
        transport: httpx.AsyncBaseTransport | None = None,
        trust_env: bool = True,
    ) -> None:
        self.base_url = base_url
        self.credential = credential
        headers = {"User-Agent": USER_AGENT}
        if credential is not None:
            headers["Authorization"] = f"Bearer {credential}"
        self.http = httpx.AsyncClient(
            base_url=base_url,
            headers=headers,
            auth=auth,
            timeout=TIMEOUT,
            follow_redirects=False,
            trust_env=trust_env,
            transport=RetryTransport(
                transport or httpx.AsyncHTTPTransport(trust_env=trust_env), retries=2
            ),
        )

    async def __aenter__(self) -> ApiClient:
        return self

    async def __aexit__(self, *exc: object) -> None:
        await self.aclose()

    async def aclose(self) -> None:
        await self.http.aclose()

    async def request(
        self,
        method: str,
        path: str,
        *,
        json: Any = None,
        data: Mapping[str, str] | None = None,
        params: Mapping[str, str | int] | None = None,
        bearer: str | None = None,
    ) -> Any:
        """The JSON answer (``None`` for an empty one); :class:`ApiError` for an error
        status or a redirect, ``CliError(UNREACHABLE)`` when the server does not answer."""
        # A bearer given here replaces the client's credential, renewing auth included.
        auth = _Bearer(bearer) if bearer is not None else httpx.USE_CLIENT_DEFAULT
        try:
            response = await self.http.request(
                method, path, json=json, data=data, params=params, auth=auth
            )
        except httpx.TimeoutException:
            raise CliError(
                f"{self.base_url} did not answer in time", ExitCode.UNREACHABLE
            ) from None
        except httpx.TransportError as exc:
            raise CliError(
                f"cannot reach {self.base_url}: {exc or type(exc).__name__}", ExitCode.UNREACHABLE
            ) from None
        if response.is_redirect:
            target = response.headers.get("location", "elsewhere")
            raise ApiError(
                response.status_code,
                f"the server redirects to {target}; refusing to follow a redirect "
                "(log in with the URL it should be reached at)",
            )
        if response.is_error:
            message, error = _message(response)
            raise ApiError(response.status_code, message, error)
        if not response.content:
            return None
        try:
            return response.json()
        except ValueError:
            raise ApiError(
                response.status_code,
                f"{path} did not answer with JSON; is this an agent-run server?",
            ) from None

    # Server and logins

    async def info(self) -> dict[str, Any]:
        info = await self.request("GET", "/api/v1/info")
        if not isinstance(info, dict) or "auth_scheme" not in info:
            raise CliError(f"{self.base_url} does not look like an agent-run server")
        return info

    async def login_password(self, username: str, password: str) -> dict[str, Any]:
        form = {"grant_type": "password", "username": username, "password": password}
        result: dict[str, Any] = await self.request("POST", "/api/v1/login", data=form)
        return result

    async def login_api_key(self, key: str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "POST", "/api/v1/login", data={"grant_type": "api-key"}, bearer=key
        )
        return result

    async def device_authorization(self) -> dict[str, Any]:
        form = {
            "hostname": socket.gethostname(),
            "os": f"{platform.system()} {platform.release()}".strip(),
            "python_version": platform.python_version(),
            "client_version": __version__,
        }
        result: dict[str, Any] = await self.request(
            "POST", "/api/v1/device_authorization", data=form
        )
        return result

    async def device_token(self, device_id: str, device_code: str) -> dict[str, Any]:
        form = {"grant_type": DEVICE_GRANT, "device_id": device_id, "device_code": device_code}
        result: dict[str, Any] = await self.request("POST", "/api/v1/login", data=form)
        return result

    async def me(self) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("GET", "/api/v1/accounts/me")
        return result

    # Workers and tasks

    async def register_worker(self, body: Mapping[str, Any]) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("POST", "/api/v1/workers", json=body)
        return result

    async def renew_worker_token(self, worker_id: uuid.UUID | str) -> dict[str, Any]:
        result: dict[str, Any] = await self.request("POST", f"/api/v1/workers/{worker_id}/token")
        return result

    async def list_workers(self, *, include_stale: bool = False) -> list[dict[str, Any]]:
        """Every page of ``/workers``."""
        items: list[dict[str, Any]] = []
        params: dict[str, str | int] = {"size": 100}
        if include_stale:
            params["include_stale"] = "true"
        while True:
            page = await self.request("GET", "/api/v1/workers", params=params)
            items.extend(page["items"])
            if not page.get("next_cursor"):
                return items
            params["cursor"] = page["next_cursor"]

    async def claim(self, max_tasks: int) -> list[dict[str, Any]]:
        result = await self.request("POST", "/api/v1/tasks/claim", json={"max_tasks": max_tasks})
        tasks: list[dict[str, Any]] = result["tasks"]
        return tasks

    async def heartbeat(self, worker_id: str, task_ids: list[str]) -> list[str]:
        result = await self.request(
            "POST", f"/api/v1/workers/{worker_id}/heartbeat", json={"task_ids": task_ids}
        )
        cancel: list[str] = result.get("cancel_task_ids", [])
        return cancel

    async def get_task(self, task_id: str, *, bearer: str | None = None) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "GET", f"/api/v1/tasks/{task_id}", bearer=bearer
        )
        return result

    async def report_task(
        self, task_id: str, token: str, body: Mapping[str, Any]
    ) -> dict[str, Any]:
        result: dict[str, Any] = await self.request(
            "PATCH", f"/api/v1/tasks/{task_id}", json=body, bearer=token
        )
        return result
