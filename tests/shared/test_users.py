"""``UserDirectory`` against an in-process identity, with a real client-credentials token:
batching, the cache, unknown ids and identity going away."""

from __future__ import annotations

import asyncio
import logging
import uuid
from collections.abc import AsyncIterator
from dataclasses import dataclass, field

import httpx
import pytest
from pydantic import SecretStr

from identity.app import create_app
from shared.errors import ServiceUnavailable
from shared.http import ServiceTokenAuth
from shared.settings import ServiceSettings
from shared.users import BATCH_SIZE, UserDirectory, UserResponse, create_user_directory
from tests.identity.conftest import ADMIN, ADMIN_PASSWORD, TRACKING_SECRET, make_settings
from tests.support.asgi import LifespanApp, Outage, running

IDENTITY = "http://identity"
USERS_PATH = "/api/v1/users"
PASSWORD = "a long enough password"


@dataclass
class Wire:
    """The directory's HTTP client, what it sent, and a switch to take identity down."""

    http: httpx.AsyncClient
    outage: Outage
    urls: list[httpx.URL] = field(default_factory=list)

    @property
    def paths(self) -> list[str]:
        return [url.path for url in self.urls]

    @property
    def user_calls(self) -> int:
        return self.paths.count(USERS_PATH)

    def asked_for(self, call: int) -> str:
        """The ``id`` filter of the ``call``-th users call."""
        return [url for url in self.urls if url.path == USERS_PATH][call].params["id"]


@pytest.fixture
def database_service() -> str:
    """``database_url`` is at identity's head: its app has nothing to migrate at start."""
    return "identity"


@pytest.fixture
async def identity_app(
    database_url: str, redis_url: str, redis_namespace: str
) -> AsyncIterator[LifespanApp]:
    async with running(create_app(make_settings(database_url, redis_url, redis_namespace))) as app:
        yield app


@pytest.fixture
async def admin(identity_app: LifespanApp) -> AsyncIterator[httpx.AsyncClient]:
    """Identity as its admin sees it."""
    transport = httpx.ASGITransport(app=identity_app)
    async with httpx.AsyncClient(transport=transport, base_url=IDENTITY) as client:
        login = await client.post(
            "/api/v1/login", data={"username": ADMIN, "password": ADMIN_PASSWORD}
        )
        client.cookies.clear()
        client.headers["Authorization"] = f"Bearer {login.json()['access_token']}"
        yield client


@pytest.fixture
async def wire(identity_app: LifespanApp) -> AsyncIterator[Wire]:
    outage = Outage(httpx.ASGITransport(app=identity_app))
    urls: list[httpx.URL] = []

    async def record(request: httpx.Request) -> None:
        urls.append(request.url)

    async with httpx.AsyncClient(transport=outage, event_hooks={"request": [record]}) as http:
        yield Wire(http, outage, urls)


def service_auth(http: httpx.AsyncClient) -> ServiceTokenAuth:
    return ServiceTokenAuth(
        http,
        client_id="tracking",
        client_secret=TRACKING_SECRET,
        token_path=f"{IDENTITY}/api/v1/login",
    )


def directory(wire: Wire, *, ttl: float = 60.0) -> UserDirectory:
    return UserDirectory(wire.http, identity_url=IDENTITY, auth=service_auth(wire.http), ttl=ttl)


async def create_user(admin: httpx.AsyncClient, name: str, **fields: object) -> uuid.UUID:
    body = {"name": name, "is_admin": False, "password": PASSWORD, "active": True, **fields}
    response = await admin.post(USERS_PATH, json=body)
    assert response.status_code == 200, response.text
    return uuid.UUID(response.json()["id"])


async def current_user(admin: httpx.AsyncClient, name: str) -> dict[str, object]:
    """What identity itself answers ``name`` on ``/current-user`` (not hydrated)."""
    login = await admin.post("/api/v1/login", data={"username": name, "password": PASSWORD})
    admin.cookies.clear()
    response = await admin.get(
        "/api/v1/current-user",
        params={"hydrate": "false"},
        headers={"Authorization": f"Bearer {login.json()['access_token']}"},
    )
    assert response.status_code == 200
    body: dict[str, object] = response.json()
    return body


async def test_batch_fetch_returns_users_shaped_like_identitys_own_body(
    admin: httpx.AsyncClient, wire: Wire
):
    alice = await create_user(
        admin, "alice", full_name="Alice A.", avatar_url="https://a.test/a.png"
    )
    bob = await create_user(admin, "bob", email_opted_in=True)

    users = await directory(wire).get_many([alice, bob])

    assert wire.user_calls == 1
    assert set(users) == {alice, bob}
    for user_id, name in ((alice, "alice"), (bob, "bob")):
        own = await current_user(admin, name)
        nested = users[user_id].model_dump(mode="json")
        assert nested == {**own, "metadata": None, "resources": None}
        assert list(nested) == list(own)  # the reference's key order


async def test_cache_hit_makes_no_second_call(admin: httpx.AsyncClient, wire: Wire):
    alice = await create_user(admin, "alice")
    users = directory(wire)

    first = await users.get_many([alice])
    second = await users.get_many([alice])

    assert second == first
    assert wire.user_calls == 1


async def test_only_the_misses_are_fetched(admin: httpx.AsyncClient, wire: Wire):
    alice = await create_user(admin, "alice")
    bob = await create_user(admin, "bob")
    users = directory(wire)
    await users.get_many([alice])

    both = await users.get_many([alice, bob])

    assert set(both) == {alice, bob}
    assert wire.user_calls == 2
    assert wire.asked_for(1) == f'oneof:["{bob}"]'


async def test_expired_entries_are_fetched_again(admin: httpx.AsyncClient, wire: Wire):
    alice = await create_user(admin, "alice")
    users = directory(wire, ttl=0.05)
    await users.get_many([alice])
    await admin.put(f"{USERS_PATH}/{alice}", json={"full_name": "Alice Renamed"})
    await asyncio.sleep(0.1)

    again = await users.get_many([alice])

    assert wire.user_calls == 2
    assert again[alice].body.full_name == "Alice Renamed"


async def test_unknown_id_is_left_out_and_remembered(admin: httpx.AsyncClient, wire: Wire):
    alice = await create_user(admin, "alice")
    deleted = await create_user(admin, "deleted")
    await admin.delete(f"{USERS_PATH}/{deleted}")
    users = directory(wire)

    found = await users.get_many([alice, deleted, uuid.uuid4()])
    again = await users.get_many([deleted])

    assert set(found) == {alice}
    assert again == {}
    assert wire.user_calls == 1


async def test_concurrent_misses_share_one_call(admin: httpx.AsyncClient, wire: Wire):
    alice = await create_user(admin, "alice")
    bob = await create_user(admin, "bob")
    users = directory(wire)

    results = await asyncio.gather(
        users.get_many([alice, bob]), users.get_many([bob, alice]), users.get_many([bob])
    )

    assert wire.user_calls == 1
    assert set(results[0]) == set(results[1]) == {alice, bob}
    assert results[2] == {bob: results[0][bob]}


async def test_many_misses_are_fetched_in_batches(wire: Wire):
    await directory(wire).get_many([uuid.uuid4() for _ in range(BATCH_SIZE + 1)])
    assert wire.user_calls == 2


async def test_identity_down_serves_the_cache_and_does_not_raise(
    admin: httpx.AsyncClient, wire: Wire, caplog: pytest.LogCaptureFixture
):
    alice = await create_user(admin, "alice")
    bob = await create_user(admin, "bob")
    users = directory(wire, ttl=0.05)
    cached = await users.get_many([alice])
    await asyncio.sleep(0.1)  # expired: the directory will try identity first
    wire.outage.down = True

    with caplog.at_level(logging.WARNING, logger="shared.users"):
        served = await users.get_many([alice, bob])

    assert served == cached
    assert "could not look users up in identity" in caplog.text


async def test_identity_refusing_the_call_serves_the_cache(wire: Wire):
    users = UserDirectory(
        wire.http,
        identity_url=IDENTITY,
        auth=ServiceTokenAuth(
            wire.http,
            client_id="tracking",
            client_secret="wrong",
            token_path=f"{IDENTITY}/api/v1/login",
        ),
    )
    assert await users.get_many([uuid.uuid4()]) == {}


async def test_service_token_cannot_create_users(wire: Wire):
    response = await wire.http.post(
        f"{IDENTITY}{USERS_PATH}",
        json={"name": "mallory", "is_admin": True, "password": PASSWORD},
        auth=service_auth(wire.http),
    )
    assert response.status_code == 403


async def test_create_user_directory_uses_the_service_credentials(
    admin: httpx.AsyncClient, wire: Wire
):
    alice = await create_user(admin, "alice")
    settings = ServiceSettings(
        identity_url=IDENTITY + "/",
        service_client_id="tracking",
        service_client_secret=SecretStr(TRACKING_SECRET),
    )
    users = create_user_directory(settings, wire.http)

    assert users is not None
    assert set(await users.get_many([alice])) == {alice}
    assert wire.paths == ["/api/v1/login", USERS_PATH]


async def test_create_user_directory_without_credentials_is_none():
    async with httpx.AsyncClient() as http:
        assert create_user_directory(ServiceSettings(), http) is None
        assert create_user_directory(ServiceSettings(service_client_id="x"), http) is None


def test_nested_user_renders_metadata_and_resources_as_null():
    user = UserResponse.model_validate(
        {
            "id": str(uuid.uuid4()),
            "name": "alice",
            "body": {
                "created": "2026-01-02T03:04:05.123456",
                "updated": "2026-01-02T03:04:05",
                "is_service_account": False,
                "is_admin": False,
            },
        }
    )
    dumped = user.model_dump(mode="json")
    assert dumped["metadata"] is None
    assert dumped["resources"] is None
    assert dumped["permission_denied"] is False
    assert dumped["body"]["created"] == "2026-01-02T03:04:05.123456"
    assert dumped["body"]["activation_token"] is None


async def test_find_ids_matches_names_and_full_names_with_filter_syntax(
    admin: httpx.AsyncClient, wire: Wire
):
    alice = await create_user(admin, "alice")
    alfred = await create_user(admin, "fred", full_name="Alfred Smith")
    await create_user(admin, "bob")
    users = directory(wire)
    assert await users.find_ids("startswith:al") == {alice, alfred}
    assert await users.find_ids("alice") == {alice}
    assert await users.find_ids("contains:nobody") == set()


async def test_find_ids_pages_through_every_match(
    admin: httpx.AsyncClient, wire: Wire, monkeypatch: pytest.MonkeyPatch
):
    monkeypatch.setattr("shared.users.FIND_PAGE_SIZE", 2)
    made = {await create_user(admin, f"bulk{i}") for i in range(5)}
    assert await directory(wire).find_ids("startswith:bulk") == made


async def test_find_ids_fails_closed_when_identity_is_down(wire: Wire):
    wire.outage.down = True
    with pytest.raises(ServiceUnavailable):
        await directory(wire).find_ids("alice")
