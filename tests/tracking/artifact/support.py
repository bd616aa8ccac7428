"""What the artifact and code repository tests share: the two resources, a second user,
a second project, counting SQL statements, and reading a list's names."""

from __future__ import annotations

from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import httpx
from sqlalchemy import event
from sqlalchemy.ext.asyncio import AsyncEngine

from tests.identity.conftest import bearer
from tests.support.asgi import LifespanApp
from tests.tracking.conftest import IDENTITY_URL

Headers = dict[str, str]


async def new_user(identity_app: LifespanApp, admin: Headers, name: str) -> tuple[str, Headers]:
    """Create an active user in identity; its id and bearer headers."""
    password = f"{name}-password-123"
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url=IDENTITY_URL) as identity:
        created = await identity.post(
            "/api/v1/users",
            json={"name": name, "password": password, "is_admin": False, "active": True},
            headers=admin,
        )
        assert created.status_code == 200, created.text
        login = await identity.post("/api/v1/login", data={"username": name, "password": password})
        assert login.status_code == 200, login.text
    return created.json()["id"], bearer(login.json()["access_token"])


async def new_project(tracking: httpx.AsyncClient, auth: Headers, name: str) -> dict[str, Any]:
    response = await tracking.post("/api/v1/projects", json={"name": name}, headers=auth)
    assert response.status_code == 200, response.text
    project: dict[str, Any] = response.json()
    return project


def names(response: httpx.Response) -> list[str]:
    assert response.status_code == 200, response.text
    return [item["name"] for item in response.json()["items"]]


@contextmanager
def statements(engine: AsyncEngine) -> Iterator[list[str]]:
    """The SQL statements ``engine`` runs inside the block."""
    seen: list[str] = []

    def record(_conn: Any, _cursor: Any, statement: str, *_args: Any) -> None:
        seen.append(statement)

    event.listen(engine.sync_engine, "before_cursor_execute", record)
    try:
        yield seen
    finally:
        event.remove(engine.sync_engine, "before_cursor_execute", record)


SOURCE = {
    "module": "zenml.integrations.github",
    "attribute": "GitHubCodeRepository",
    "type": "internal",
}


@dataclass(frozen=True)
class Resource:
    """A named, project-scoped resource under test: where it lives and what creating one
    needs besides a project and a name."""

    path: str
    label: str
    id_param: str
    required: dict[str, Any] = field(default_factory=dict)
    list_selects: int = 3
    """SELECTs one list request runs, whatever the page size."""

    def one(self, item_id: object) -> str:
        return f"{self.path}/{item_id}"

    def body(self, project: dict[str, Any], name: str, **extra: Any) -> dict[str, Any]:
        return {"project": project["id"], "name": name, **self.required, **extra}

    async def create(
        self,
        tracking: httpx.AsyncClient,
        auth: Headers,
        project: dict[str, Any],
        name: str,
        **extra: Any,
    ) -> dict[str, Any]:
        response = await tracking.post(
            self.path, json=self.body(project, name, **extra), headers=auth
        )
        assert response.status_code == 200, response.text
        created: dict[str, Any] = response.json()
        return created

    async def names(
        self, tracking: httpx.AsyncClient, auth: Headers, *params: tuple[str, str]
    ) -> list[str]:
        return names(await tracking.get(self.path, params=list(params), headers=auth))


ARTIFACT = Resource("/api/v1/artifacts", "artifact", "artifact_id", list_selects=4)
CODE_REPOSITORY = Resource(
    "/api/v1/code_repositories",
    "code repository",
    "code_repository_id",
    required={"config": {"owner": "me"}, "source": SOURCE},
)
