"""``Idempotency-Key`` on a service built with ``create_service_app``, against the real
Redis: replays, per-principal records, errors not stored, concurrent duplicates, Redis down.
"""

from __future__ import annotations

import asyncio
import uuid
from collections import Counter
from collections.abc import AsyncIterator, Callable
from contextlib import asynccontextmanager
from datetime import timedelta
from typing import Any

import httpx
import pytest
from cryptography.fernet import Fernet, MultiFernet
from redis.asyncio import Redis
from starlette.applications import Starlette
from starlette.requests import Request
from starlette.responses import JSONResponse, Response

from shared.app import State, create_service_app
from shared.auth import (
    StaticKeySource,
    TokenKind,
    TokenSigner,
    TokenVerifier,
    generate_signing_key,
    require_principal,
)
from shared.errors import BadRequest
from shared.idempotency import MAX_STORED_BODY, RECORD_TTL, IdempotencyMiddleware
from shared.redis import create_redis
from shared.routing import api_route
from shared.settings import ServiceSettings
from tests.support.asgi import client_for
from tests.support.databases import Databases
from tests.support.redis_server import free_port
from tests.support.waiting import until

KEY = "Idempotency-Key"


class Handlers:
    """Endpoints that count how often they ran; ``slow`` waits for ``release``."""

    def __init__(self) -> None:
        self.calls: Counter[str] = Counter()
        self.release = asyncio.Event()
        self.slow_started = asyncio.Event()

    async def create(self, request: Request) -> Response:
        self.calls["create"] += 1
        return JSONResponse(
            {"id": str(uuid.uuid4()), "sent": (await request.body()).decode()},
            headers={"Set-Cookie": "session=secret"},
        )

    async def open_create(self, request: Request) -> Response:
        self.calls["open"] += 1
        return JSONResponse({"id": str(uuid.uuid4())})

    async def read(self, request: Request) -> Response:
        require_principal(request)
        self.calls["read"] += 1
        return JSONResponse({"id": str(uuid.uuid4())})

    async def fail(self, request: Request) -> Response:
        require_principal(request)
        self.calls["fail"] += 1
        raise BadRequest("Not this time.")

    async def big(self, request: Request) -> Response:
        require_principal(request)
        self.calls["big"] += 1
        return Response(b"x" * (MAX_STORED_BODY + 1), media_type="application/octet-stream")

    async def secret(self, request: Request) -> Response:
        require_principal(request)
        self.calls["secret"] += 1
        return JSONResponse({"key": str(uuid.uuid4())}, headers={"Cache-Control": "no-store"})

    async def slow(self, request: Request) -> Response:
        require_principal(request)
        self.calls["slow"] += 1
        self.slow_started.set()
        await self.release.wait()
        return JSONResponse({"id": str(uuid.uuid4())})

    def routes(self) -> list[Any]:
        return [
            api_route("/api/v1/things", self.create, method="POST", summary="Create"),
            api_route("/api/v1/things", self.read, method="GET", summary="List"),
            api_route("/api/v1/open", self.open_create, method="POST", summary="Open"),
            api_route("/api/v1/fail", self.fail, method="POST", summary="Fail"),
            api_route("/api/v1/big", self.big, method="POST", summary="Big"),
            api_route("/api/v1/slow", self.slow, method="POST", summary="Slow"),
            api_route("/api/v1/secret", self.secret, method="POST", summary="Secret"),
        ]


@pytest.fixture
def signer() -> TokenSigner:
    return TokenSigner(generate_signing_key(), kid="k1", issuer="platform-identity")


@pytest.fixture(scope="module")
async def app_database(databases: Databases) -> AsyncIterator[str]:
    """One empty database for this module's apps (none of them keeps rows)."""
    async with databases.postgres(None) as url:
        yield url


@pytest.fixture
def settings(app_database: str, redis_url: str, redis_namespace: str) -> ServiceSettings:
    return ServiceSettings(
        database_url=app_database,
        redis_url=redis_url,
        redis_namespace=redis_namespace,
        jwks_url="http://127.0.0.1:9/.well-known/jwks.json",
    )


Token = Callable[..., dict[str, str]]


@pytest.fixture
def auth(signer: TokenSigner, settings: ServiceSettings) -> Token:
    """Headers with a bearer token for ``subject`` (a fresh user unless given)."""

    def headers(subject: str | None = None, key: str | None = None) -> dict[str, str]:
        token, _ = signer.issue(
            subject=subject or str(uuid.uuid4()),
            kind=TokenKind.ACCESS,
            audience=settings.jwt_audience,
            lifetime=timedelta(minutes=5),
        )
        result = {"Authorization": f"Bearer {token}"}
        if key is not None:
            result[KEY] = key
        return result

    return headers


def build_app(
    settings: ServiceSettings,
    signer: TokenSigner,
    handlers: Handlers,
    cipher: MultiFernet | None = None,
    **extra_state: Any,
) -> Starlette:
    """A service whose verifier trusts ``signer``; ``extra_state`` overrides lifespan state;
    ``cipher`` keeps secret-carrying answers encrypted."""

    @asynccontextmanager
    async def lifespan(_app: Starlette, state: State) -> AsyncIterator[State]:
        verifier = TokenVerifier(
            StaticKeySource({"keys": [signer.public_jwk()]}),
            issuer=settings.jwt_issuer,
            audience=settings.jwt_audience,
        )
        yield {"verifier": verifier, **extra_state}

    return create_service_app(
        settings,
        title="sample",
        version="0",
        routes=handlers.routes(),
        migrations=None,
        lifespan=lifespan,
        idempotency_cipher=cipher,
    )


@pytest.fixture
def handlers() -> Handlers:
    return Handlers()


@pytest.fixture
async def client(
    settings: ServiceSettings, signer: TokenSigner, handlers: Handlers
) -> AsyncIterator[httpx.AsyncClient]:
    async with client_for(build_app(settings, signer, handlers)) as client:
        yield client


@pytest.fixture
async def redis(redis_url: str) -> AsyncIterator[Redis]:
    client = create_redis(redis_url)
    yield client
    await client.aclose()


def new_key() -> str:
    return str(uuid.uuid4())


def polling(task: asyncio.Task[Any]) -> bool:
    """Whether ``task`` is asleep between two reads of a record it found still claimed
    (in :meth:`IdempotencyMiddleware._claim_or_wait`'s pause), by its chain of awaits."""
    waiting = IdempotencyMiddleware._claim_or_wait.__code__
    awaited: Any = task.get_coro()
    while awaited is not None:
        if getattr(awaited, "cr_code", None) is waiting:
            return getattr(awaited.cr_await, "cr_code", None) is asyncio.sleep.__code__
        awaited = getattr(awaited, "cr_await", None)
    return False


async def test_replay_returns_the_first_answer_without_running_the_handler_again(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    first = await client.post("/api/v1/things", content=b'{"a":1}', headers=headers)
    again = await client.post("/api/v1/things", content=b'{"a":1}', headers=headers)

    assert first.status_code == again.status_code == 200
    assert again.content == first.content
    assert again.headers["content-type"] == first.headers["content-type"] == "application/json"
    assert again.headers["idempotent-replayed"] == "true"
    assert "idempotent-replayed" not in first.headers
    assert handlers.calls["create"] == 1


async def test_replay_carries_no_cookie_but_the_usual_headers(
    client: httpx.AsyncClient, auth: Token
):
    headers = auth(subject="user-1", key=new_key())
    await client.post("/api/v1/things", headers=headers)
    again = await client.post("/api/v1/things", headers={**headers, "X-Request-ID": "c0ffee00"})

    assert "set-cookie" not in again.headers
    assert again.headers["x-request-id"] == "c0ffee00"
    assert again.headers["x-content-type-options"] == "nosniff"


async def test_the_same_uuid_spelled_differently_is_the_same_key(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    key = uuid.uuid4()
    await client.post("/api/v1/things", headers=auth(subject="user-1", key=str(key)))
    again = await client.post("/api/v1/things", headers=auth(subject="user-1", key=key.hex.upper()))

    assert again.headers["idempotent-replayed"] == "true"
    assert handlers.calls["create"] == 1


async def test_a_new_key_runs_the_handler_again(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    await client.post("/api/v1/things", headers=auth(subject="user-1", key=new_key()))
    await client.post("/api/v1/things", headers=auth(subject="user-1", key=new_key()))
    assert handlers.calls["create"] == 2


async def test_get_with_a_key_is_not_recorded(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    first = await client.get("/api/v1/things", headers=headers)
    again = await client.get("/api/v1/things", headers=headers)

    assert first.status_code == again.status_code == 200
    assert first.json() != again.json()
    assert "idempotent-replayed" not in again.headers
    assert handlers.calls["read"] == 2


async def test_malformed_key_on_post_is_422_in_the_validation_shape(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    response = await client.post("/api/v1/things", headers=auth(key="not-a-uuid"))

    assert response.status_code == 422
    assert response.headers["content-type"] == "application/json"
    [error] = response.json()["detail"]
    assert error["loc"] == ["header", "Idempotency-Key"]
    assert error["type"] == "uuid_parsing"
    assert error["msg"]
    assert handlers.calls["create"] == 0


async def test_malformed_key_on_an_authenticated_get_is_422_too(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    response = await client.get("/api/v1/things", headers=auth(key="12345"))

    assert response.status_code == 422
    assert response.json()["detail"][0]["type"] == "uuid_parsing"
    assert handlers.calls["read"] == 0


async def test_two_different_keys_in_one_request_are_422(client: httpx.AsyncClient, auth: Token):
    headers = [*auth().items(), (KEY, new_key()), (KEY, new_key())]
    response = await client.post("/api/v1/things", headers=headers)

    assert response.status_code == 422
    assert response.json()["detail"][0]["loc"] == ["header", "Idempotency-Key"]


async def test_unauthenticated_request_is_neither_checked_nor_recorded(
    client: httpx.AsyncClient, handlers: Handlers
):
    key = new_key()
    first = await client.post("/api/v1/open", headers={KEY: key})
    again = await client.post("/api/v1/open", headers={KEY: key})
    foreign = await client.post("/api/v1/open", headers={KEY: "provider-delivery-42"})

    assert first.status_code == again.status_code == foreign.status_code == 200
    assert first.json() != again.json()
    assert handlers.calls["open"] == 3


async def test_another_principal_with_the_same_key_runs_its_own_request(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    key = new_key()
    mine = await client.post("/api/v1/things", headers=auth(subject="user-1", key=key))
    theirs = await client.post("/api/v1/things", headers=auth(subject="user-2", key=key))

    assert mine.json()["id"] != theirs.json()["id"]
    assert "idempotent-replayed" not in theirs.headers
    assert handlers.calls["create"] == 2


async def test_the_same_key_on_another_path_runs_its_own_request(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    await client.post("/api/v1/things", headers=headers)
    slow_path = client.post("/api/v1/slow", headers=headers)
    handlers.release.set()
    response = await slow_path

    assert "idempotent-replayed" not in response.headers
    assert handlers.calls["slow"] == 1


async def test_error_answers_are_not_stored_and_the_client_may_retry(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    first = await client.post("/api/v1/fail", headers=headers)
    again = await client.post("/api/v1/fail", headers=headers)

    assert first.status_code == again.status_code == 400
    assert "idempotent-replayed" not in again.headers
    assert handlers.calls["fail"] == 2


async def test_oversized_answer_is_not_stored_and_the_key_is_released(
    client: httpx.AsyncClient,
    auth: Token,
    handlers: Handlers,
    redis: Redis,
    redis_namespace: str,
):
    headers = auth(subject="user-1", key=new_key())
    first = await client.post("/api/v1/big", headers=headers)
    again = await client.post("/api/v1/big", headers=headers)

    assert len(first.content) == len(again.content) == MAX_STORED_BODY + 1
    assert handlers.calls["big"] == 2
    assert [k async for k in redis.scan_iter(match=f"{redis_namespace}:idempotency:*")] == []


async def test_no_store_answer_carrying_a_secret_is_not_kept_in_redis(
    client: httpx.AsyncClient,
    auth: Token,
    handlers: Handlers,
    redis: Redis,
    redis_namespace: str,
):
    headers = auth(subject="user-1", key=new_key())
    first = await client.post("/api/v1/secret", headers=headers)
    assert first.status_code == 200
    assert [k async for k in redis.scan_iter(match=f"{redis_namespace}:idempotency:*")] == []
    await client.post("/api/v1/secret", headers=headers)
    assert handlers.calls["secret"] == 2


async def test_stored_answer_lives_for_300_seconds(
    client: httpx.AsyncClient, auth: Token, redis: Redis, redis_namespace: str
):
    await client.post("/api/v1/things", headers=auth(subject="user-1", key=new_key()))

    [record] = [k async for k in redis.scan_iter(match=f"{redis_namespace}:idempotency:*")]
    assert RECORD_TTL == 300
    assert 290 <= await redis.ttl(record) <= 300


async def test_same_key_with_a_different_body_is_422(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    await client.post("/api/v1/things", content=b'{"name":"a"}', headers=headers)
    response = await client.post("/api/v1/things", content=b'{"name":"b"}', headers=headers)

    assert response.status_code == 422
    [error] = response.json()["detail"]
    assert error["loc"] == ["header", "Idempotency-Key"]
    assert error["type"] == "idempotency_key_reused"
    assert handlers.calls["create"] == 1


async def test_same_key_with_a_different_query_is_422(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    await client.post("/api/v1/things?force=false", headers=headers)
    response = await client.post("/api/v1/things?force=true", headers=headers)

    assert response.status_code == 422
    assert handlers.calls["create"] == 1


async def test_concurrent_duplicate_waits_for_the_first_and_gets_its_answer(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    first = asyncio.create_task(client.post("/api/v1/slow", headers=headers))
    await handlers.slow_started.wait()
    duplicate = asyncio.create_task(client.post("/api/v1/slow", headers=headers))
    await until(lambda: polling(duplicate), "the duplicate waiting on the first's claim", 2)
    handlers.release.set()

    original, replayed = await first, await duplicate
    assert original.status_code == replayed.status_code == 200
    assert replayed.content == original.content
    assert replayed.headers["idempotent-replayed"] == "true"
    assert handlers.calls["slow"] == 1


async def test_concurrent_duplicate_gets_409_while_the_first_still_runs(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    first = asyncio.create_task(client.post("/api/v1/slow", headers=headers))
    await handlers.slow_started.wait()
    try:
        duplicate = await client.post("/api/v1/slow", headers=headers)
    finally:
        handlers.release.set()
        await first

    assert duplicate.status_code == 409
    assert duplicate.json() == {
        "detail": [
            "EntityExistsError",
            "A request with this Idempotency-Key is still being processed.",
        ]
    }
    assert handlers.calls["slow"] == 1


async def test_concurrent_duplicate_with_a_different_body_is_422_at_once(
    client: httpx.AsyncClient, auth: Token, handlers: Handlers
):
    headers = auth(subject="user-1", key=new_key())
    first = asyncio.create_task(client.post("/api/v1/slow", content=b"a", headers=headers))
    await handlers.slow_started.wait()
    try:
        duplicate = await asyncio.wait_for(
            client.post("/api/v1/slow", content=b"b", headers=headers), timeout=1
        )
    finally:
        handlers.release.set()
        await first

    assert duplicate.status_code == 422


async def test_redis_down_answers_503_before_the_handler_runs(
    settings: ServiceSettings, signer: TokenSigner, handlers: Handlers, auth: Token
):
    dead = create_redis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.2)
    # No revocation list, so that authentication itself does not need Redis.
    app = build_app(settings, signer, handlers, redis=dead, revocations=None)
    try:
        async with client_for(app) as client:
            create = await client.post("/api/v1/things", headers=auth(key=new_key()))
            read = await client.get("/api/v1/things", headers=auth(key=new_key()))
            without_key = await client.post("/api/v1/things", headers=auth())
    finally:
        await dead.aclose()

    assert create.status_code == 503
    assert create.json()["detail"][0] == "ServiceUnavailable"
    assert handlers.calls["create"] == 1  # only the request without a key ran
    assert read.status_code == 200
    assert without_key.status_code == 200


async def stored_records(redis: Redis, namespace: str) -> list[bytes]:
    return [await redis.get(k) async for k in redis.scan_iter(match=f"{namespace}:idempotency:*")]


async def post_twice(
    app: Starlette, path: str, headers: dict[str, str]
) -> tuple[httpx.Response, httpx.Response]:
    async with client_for(app) as client:
        return await client.post(path, headers=headers), await client.post(path, headers=headers)


def new_cipher() -> MultiFernet:
    return MultiFernet([Fernet(Fernet.generate_key())])


async def test_secret_answer_is_replayed_from_an_encrypted_record_with_a_cipher(
    settings: ServiceSettings,
    signer: TokenSigner,
    handlers: Handlers,
    auth: Token,
    redis: Redis,
    redis_namespace: str,
):
    app = build_app(settings, signer, handlers, cipher=new_cipher())
    first, again = await post_twice(app, "/api/v1/secret", auth(subject="user-1", key=new_key()))

    assert first.status_code == again.status_code == 200
    assert again.json() == first.json()
    assert again.headers["idempotent-replayed"] == "true"
    assert again.headers["cache-control"] == "no-store"
    assert again.headers["content-type"] == "application/json"
    assert handlers.calls["secret"] == 1
    [record] = await stored_records(redis, redis_namespace)
    assert first.json()["key"].encode() not in record


async def test_answers_without_no_store_stay_in_plaintext_with_a_cipher(
    settings: ServiceSettings,
    signer: TokenSigner,
    handlers: Handlers,
    auth: Token,
    redis: Redis,
    redis_namespace: str,
):
    app = build_app(settings, signer, handlers, cipher=new_cipher())
    first, again = await post_twice(app, "/api/v1/things", auth(subject="user-1", key=new_key()))

    assert again.content == first.content
    [record] = await stored_records(redis, redis_namespace)
    assert record.endswith(first.content)


async def test_secret_answer_encrypted_with_a_retired_key_replays_while_it_is_configured(
    settings: ServiceSettings, signer: TokenSigner, handlers: Handlers, auth: Token
):
    old, new = Fernet.generate_key(), Fernet.generate_key()
    headers = auth(subject="user-1", key=new_key())
    async with client_for(
        build_app(settings, signer, handlers, cipher=MultiFernet([Fernet(old)]))
    ) as c:
        first = await c.post("/api/v1/secret", headers=headers)
    rotated = MultiFernet([Fernet(new), Fernet(old)])
    async with client_for(build_app(settings, signer, handlers, cipher=rotated)) as c:
        again = await c.post("/api/v1/secret", headers=headers)

    assert again.json() == first.json()
    assert handlers.calls["secret"] == 1


async def test_secret_answer_no_key_decrypts_is_409_and_never_runs_again(
    settings: ServiceSettings, signer: TokenSigner, handlers: Handlers, auth: Token
):
    headers = auth(subject="user-1", key=new_key())
    first_cipher = new_cipher()
    async with client_for(build_app(settings, signer, handlers, cipher=first_cipher)) as c:
        await c.post("/api/v1/secret", headers=headers)
    other = new_cipher()
    async with client_for(build_app(settings, signer, handlers, cipher=other)) as c:
        with_other_key = await c.post("/api/v1/secret", headers=headers)
    async with client_for(build_app(settings, signer, handlers)) as c:
        without_cipher = await c.post("/api/v1/secret", headers=headers)

    assert with_other_key.status_code == without_cipher.status_code == 409
    assert with_other_key.json()["detail"][0] == "EntityExistsError"
    assert handlers.calls["secret"] == 1
