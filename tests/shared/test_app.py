"""The service app every service builds on: error shapes, request ids, body limits,
security headers and health, driven in-process through ``create_service_app``."""

from __future__ import annotations

import io
import json
import logging
import re
import uuid
from collections.abc import AsyncIterator, Iterator
from contextlib import contextmanager

import httpx
import pytest
from pydantic import BaseModel, Field
from starlette.authentication import AuthCredentials, AuthenticationBackend, BaseUser
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.types import ASGIApp, Receive, Scope, Send

from shared.app import create_service_app
from shared.errors import NO_SUCH_ENDPOINT, NotFound, ServiceUnavailable
from shared.logging import JSONFormatter
from shared.middleware import SECURITY_HEADERS
from shared.pagination import PageParams
from shared.responses import render
from shared.routing import api_route, parse_json, parse_query, path_param
from shared.settings import ServiceSettings
from tests.support.asgi import client_for
from tests.support.databases import Databases
from tests.support.redis_server import free_port

MAX_BODY = 2048
JWKS_URL = "http://127.0.0.1:9/.well-known/jwks.json"
SERVER_ID = uuid.UUID("00000000-0000-4000-8000-000000000042")
EIGHT_HEX = re.compile(r"[0-9a-f]{8}")
SECRET_IN_ERROR = "SELECT password_hash FROM users WHERE name = 'admin'"

# Bodies the upload handler has read, so a test can tell whether it ran at all.
uploads: list[int] = []


class ThingCreate(BaseModel):
    name: str
    count: int = 0


class ThingQuery(PageParams):
    name: str | None = None
    tag: list[str] = Field(default_factory=list)


async def missing(_request: Request) -> Response:
    raise NotFound("No thing with this name.")


async def boom(_request: Request) -> Response:
    raise RuntimeError(SECRET_IN_ERROR)


async def create_thing(request: Request) -> Response:
    return render(await parse_json(request, ThingCreate))


async def list_things(request: Request) -> Response:
    return render(parse_query(request, ThingQuery))


async def get_thing(request: Request) -> Response:
    return JSONResponse({"id": str(path_param(request, "thing_id", uuid.UUID))})


async def request_id(request: Request) -> Response:
    upstream = await request.state.http.get("http://upstream.test/echo")
    return JSONResponse(
        {"request_id": request.state.request_id, "upstream_saw": upstream.json()["request_id"]}
    )


async def upload(request: Request) -> Response:
    size = 0
    async for chunk in request.stream():
        size += len(chunk)
    uploads.append(size)
    return JSONResponse({"size": size})


async def cached(_request: Request) -> Response:
    return JSONResponse({}, headers={"Cache-Control": "max-age=60"})


ROUTES = [
    api_route("/api/v1/missing", missing, method="GET", summary="Missing"),
    api_route("/api/v1/boom", boom, method="GET", summary="Boom"),
    api_route(
        "/api/v1/things",
        create_thing,
        method="POST",
        summary="Create",
        body=ThingCreate,
        response=ThingCreate,
    ),
    api_route(
        "/api/v1/things",
        list_things,
        method="GET",
        summary="List",
        query=ThingQuery,
        response=ThingQuery,
    ),
    api_route("/api/v1/things/{thing_id}", get_thing, method="GET", summary="Get"),
    api_route("/api/v1/request-id", request_id, method="GET", summary="Request id"),
    api_route("/api/v1/upload", upload, method="POST", summary="Upload"),
    api_route("/api/v1/cached", cached, method="GET", summary="Cached"),
]


def upstream(request: httpx.Request) -> httpx.Response:
    return httpx.Response(200, json={"request_id": request.headers.get("x-request-id")})


def make_settings(database_url: str, redis_url: str) -> ServiceSettings:
    return ServiceSettings(
        database_url=database_url,
        redis_url=redis_url,
        redis_namespace=f"test-{uuid.uuid4().hex[:12]}",
        jwks_url=JWKS_URL,
        server_id=SERVER_ID,
        max_body_size=MAX_BODY,
    )


def make_app(settings: ServiceSettings):
    return create_service_app(
        settings,
        title="sample",
        version="1.2.3",
        routes=ROUTES,
        migrations=None,
        http_transport=httpx.MockTransport(upstream),
    )


@pytest.fixture(scope="module")
async def app_database(databases: Databases) -> AsyncIterator[str]:
    """One empty database for this module's apps (none of them keeps rows)."""
    async with databases.postgres(None) as url:
        yield url


@pytest.fixture(scope="module")
async def client(app_database: str, redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    settings = make_settings(app_database, redis_url)
    async with client_for(make_app(settings)) as client:
        yield client


@contextmanager
def json_log(logger_name: str) -> Iterator[io.StringIO]:
    """Records of ``logger_name`` as the platform writes them (JSONFormatter lines)."""
    stream = io.StringIO()
    handler = logging.StreamHandler(stream)
    handler.setFormatter(JSONFormatter())
    logger = logging.getLogger(logger_name)
    previous = logger.level
    logger.addHandler(handler)
    logger.setLevel(logging.INFO)
    try:
        yield stream
    finally:
        logger.removeHandler(handler)
        logger.setLevel(previous)


def log_records(stream: io.StringIO) -> list[dict[str, object]]:
    return [json.loads(line) for line in stream.getvalue().splitlines()]


def assert_validation_error(response: httpx.Response, loc: list[str | int], kind: str) -> None:
    assert response.status_code == 422
    errors = response.json()["detail"]
    assert isinstance(errors, list)
    assert all(set(error) == {"loc", "msg", "type"} for error in errors)
    assert {"loc": loc, "type": kind} in [{"loc": e["loc"], "type": e["type"]} for e in errors]


# Errors


async def test_platform_error_renders_wire_name_and_message_with_request_id(client):
    response = await client.get("/api/v1/missing", headers={"X-Request-ID": "0badc0de"})
    assert response.status_code == 404
    assert response.json() == {"detail": ["KeyError", "No thing with this name."]}
    assert response.headers["x-request-id"] == "0badc0de"


async def test_malformed_json_body_returns_422_json_invalid(client):
    response = await client.post(
        "/api/v1/things", content=b'{"name": ', headers={"Content-Type": "application/json"}
    )
    assert_validation_error(response, ["body"], "json_invalid")


async def test_deeply_nested_json_body_returns_422_not_500(client):
    response = await client.post(
        "/api/v1/things", content=b"[" * 2000, headers={"Content-Type": "application/json"}
    )
    assert_validation_error(response, ["body"], "json_invalid")


async def test_wrong_body_field_type_returns_422_with_its_location(client):
    response = await client.post("/api/v1/things", json={"name": "x", "count": "many"})
    assert_validation_error(response, ["body", "count"], "int_type")


async def test_a_number_in_a_string_for_an_integer_field_returns_422(client):
    response = await client.post("/api/v1/things", json={"name": "x", "count": "1"})
    assert_validation_error(response, ["body", "count"], "int_type")


async def test_missing_body_field_returns_422_missing(client):
    response = await client.post("/api/v1/things", json={"count": 1})
    assert_validation_error(response, ["body", "name"], "missing")


async def test_valid_json_body_is_parsed_into_the_model(client):
    response = await client.post("/api/v1/things", json={"name": "x", "count": 2})
    assert response.status_code == 200
    assert response.json() == {"name": "x", "count": 2}


@pytest.mark.parametrize(
    ("size", "kind"), [("0", "greater_than_equal"), ("10001", "less_than_equal")]
)
async def test_page_size_out_of_range_returns_422(client, size, kind):
    response = await client.get("/api/v1/things", params={"size": size})
    assert_validation_error(response, ["query", "size"], kind)


async def test_non_integer_query_value_returns_422(client):
    response = await client.get("/api/v1/things", params={"page": "first"})
    assert_validation_error(response, ["query", "page"], "int_parsing")


async def test_bad_path_uuid_returns_422(client):
    response = await client.get("/api/v1/things/not-a-uuid")
    assert_validation_error(response, ["path", "thing_id"], "uuid_parsing")


async def test_unsupported_content_type_returns_415(client):
    response = await client.post(
        "/api/v1/things", content=b"name=x", headers={"Content-Type": "text/plain"}
    )
    assert response.status_code == 415
    assert response.json()["detail"][0] == "UnsupportedMediaType"


async def test_unknown_path_is_a_404_in_the_platform_shape(client):
    response = await client.get("/api/v1/nothing-here")
    assert response.status_code == 404
    assert response.json() == {"detail": ["KeyError", NO_SUCH_ENDPOINT]}
    assert response.headers["x-request-id"]


async def test_wrong_method_returns_405_with_every_allowed_method(client):
    response = await client.put("/api/v1/things", json={})
    assert response.status_code == 405
    assert response.json() == {"detail": "Method Not Allowed"}
    # GET and POST are two api_routes on one path: Allow names both, not just the first.
    assert response.headers["allow"] == "GET, HEAD, POST"


async def test_unhandled_exception_returns_generic_500_without_traceback(client):
    response = await client.get("/api/v1/boom")
    assert response.status_code == 500
    assert response.json() == {"detail": ["RuntimeError", "Internal server error."]}
    assert "Traceback" not in response.text
    assert "password_hash" not in response.text


async def test_unhandled_exception_is_logged_with_the_request_id(client):
    with json_log("shared.app") as stream:
        response = await client.get("/api/v1/boom", headers={"X-Request-ID": "deadbeef"})
    assert response.headers["x-request-id"] == "deadbeef"
    [record] = [r for r in log_records(stream) if r["msg"] == "unhandled error"]
    assert record["request_id"] == "deadbeef"
    assert record["level"] == "error"
    assert "RuntimeError" in str(record["exc"])


# Request ids


async def test_valid_request_id_is_echoed_and_used_in_logs(client):
    with json_log("platform.access") as stream:
        response = await client.get("/api/v1/things", headers={"X-Request-ID": "run-42.a_b:c"})
    assert response.headers["x-request-id"] == "run-42.a_b:c"
    [record] = log_records(stream)
    assert record["request_id"] == "run-42.a_b:c"
    assert record["status"] == 200


async def test_missing_request_id_is_replaced_by_eight_hex_characters(client):
    response = await client.get("/api/v1/things")
    assert EIGHT_HEX.fullmatch(response.headers["x-request-id"])


@pytest.mark.parametrize("incoming", ["a" * 200, "has spaces in it", "semi;colon", "ünï"])
async def test_malformed_request_id_is_replaced_by_eight_hex_characters(client, incoming):
    response = await client.get(
        "/api/v1/things", headers=[(b"X-Request-ID", incoming.encode("utf-8"))]
    )
    assert EIGHT_HEX.fullmatch(response.headers["x-request-id"])


async def test_outgoing_http_calls_carry_the_current_request_id(client):
    response = await client.get("/api/v1/request-id", headers={"X-Request-ID": "cafef00d"})
    assert response.json() == {"request_id": "cafef00d", "upstream_saw": "cafef00d"}


# Body size limit


async def test_declared_content_length_over_the_limit_returns_413_without_running_handler(
    client,
):
    uploads.clear()
    response = await client.post("/api/v1/upload", content=b"x" * (MAX_BODY + 1))
    assert response.status_code == 413
    assert response.json() == {
        "detail": ["PayloadTooLarge", f"Request body exceeds the limit of {MAX_BODY} bytes."]
    }
    assert EIGHT_HEX.fullmatch(response.headers["x-request-id"])
    assert uploads == []


async def test_chunked_body_over_the_limit_returns_413_before_reading_it_all(client):
    sent: list[int] = []

    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(100):
            sent.append(512)
            yield b"x" * 512

    response = await client.post("/api/v1/upload", content=chunks())
    assert response.status_code == 413
    assert response.json()["detail"][0] == "PayloadTooLarge"
    assert sum(sent) < 100 * 512  # refused as soon as it crossed the limit


async def test_body_under_the_limit_is_read_whole(client):
    async def chunks() -> AsyncIterator[bytes]:
        for _ in range(4):
            yield b"x" * 512

    response = await client.post("/api/v1/upload", content=chunks())
    assert response.status_code == 200
    assert response.json() == {"size": MAX_BODY}


# Security headers


async def test_security_headers_are_sent_on_api_responses(client):
    response = await client.get("/api/v1/things")
    for name, value in SECURITY_HEADERS:
        assert response.headers[name] == value
    assert response.headers["server"] == str(SERVER_ID)


async def test_security_headers_are_sent_on_error_responses(client):
    response = await client.get("/api/v1/boom")
    assert response.headers["x-frame-options"] == "SAMEORIGIN"
    assert response.headers["cache-control"] == "no-store, no-cache, must-revalidate"


@pytest.mark.parametrize("path", ["/health", "/ready"])
async def test_security_headers_are_absent_on_health_and_ready(client, path):
    response = await client.get(path)
    assert response.status_code == 200
    for name, _ in SECURITY_HEADERS:
        assert name not in response.headers


async def test_handler_cache_control_wins_over_the_default(client):
    response = await client.get("/api/v1/cached")
    assert response.headers["cache-control"] == "max-age=60"
    assert response.headers["x-content-type-options"] == "nosniff"


# Health and readiness


@pytest.mark.parametrize("method", ["GET", "HEAD", "POST"])
async def test_health_answers_ok_as_text_for_any_method(client, method):
    response = await client.request(method, "/health")
    assert response.status_code == 200
    assert response.headers["content-type"].startswith("text/plain")
    assert response.text == ("" if method == "HEAD" else "ok")


async def test_ready_answers_ok_with_real_database_and_redis(client):
    response = await client.get("/ready")
    assert response.status_code == 200
    assert response.text == "ok"


async def test_ready_returns_503_when_redis_is_unreachable(app_database: str):
    closed = f"redis://127.0.0.1:{free_port()}/0"
    async with client_for(make_app(make_settings(app_database, closed))) as client:
        response = await client.get("/ready")
    assert response.status_code == 503
    assert response.json() == {"detail": ["ServiceUnavailable", "Not ready: redis unreachable."]}


async def test_ready_returns_503_when_the_database_is_unreachable(redis_url: str):
    closed = f"postgresql+asyncpg://postgres@127.0.0.1:{free_port()}/platform"
    async with client_for(make_app(make_settings(closed, redis_url))) as client:
        response = await client.get("/ready")
    assert response.status_code == 503
    assert response.json() == {"detail": ["ServiceUnavailable", "Not ready: database unreachable."]}


# A service with credentials of its own and the agent-run server's error shape


class HeaderUser(BaseUser):
    def __init__(self, name: str) -> None:
        self.name = name

    @property
    def is_authenticated(self) -> bool:
        return True

    @property
    def display_name(self) -> str:
        return self.name

    @property
    def identity(self) -> str:
        return self.name


class HeaderBackend(AuthenticationBackend):
    """Whoever the X-Caller header names."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        name = conn.headers.get("x-caller")
        return (AuthCredentials(["authenticated"]), HeaderUser(name)) if name else None


created: list[str] = []


async def create_counted(request: Request) -> Response:
    created.append(request.user.identity)
    return JSONResponse({"n": len(created)}, status_code=201)


@pytest.fixture
async def own_auth_client(app_database: str, redis_url: str) -> AsyncIterator[httpx.AsyncClient]:
    app = create_service_app(
        make_settings(app_database, redis_url),
        title="agent-like",
        version="0",
        routes=[
            *ROUTES,
            api_route("/api/v1/counted", create_counted, method="POST", summary="Counted"),
        ],
        migrations=None,
        auth_backend=HeaderBackend(),
        error_style="message",
    )
    async with client_for(app) as client:
        yield client


async def test_message_error_style_renders_a_plain_detail(own_auth_client):
    response = await own_auth_client.get("/api/v1/missing")
    assert response.status_code == 404
    assert response.json() == {"detail": "No thing with this name."}


async def test_message_error_style_applies_to_middleware_errors(own_auth_client):
    response = await own_auth_client.post("/api/v1/upload", content=b"x" * (MAX_BODY + 1))
    assert response.status_code == 413
    assert isinstance(response.json()["detail"], str)


async def test_message_error_style_keeps_validation_errors_as_a_list(own_auth_client):
    response = await own_auth_client.post("/api/v1/things", json={"name": 1})
    assert response.status_code == 422
    assert isinstance(response.json()["detail"], list)


async def test_custom_auth_backend_users_get_idempotent_replays(own_auth_client):
    key = str(uuid.uuid4())
    headers = {"X-Caller": "alice", "Idempotency-Key": key}
    first = await own_auth_client.post("/api/v1/counted", headers=headers)
    again = await own_auth_client.post("/api/v1/counted", headers=headers)
    assert first.status_code == again.status_code == 201
    assert again.json() == first.json()
    assert again.headers["Idempotent-Replayed"] == "true"
    other = await own_auth_client.post(
        "/api/v1/counted", headers={"X-Caller": "bob", "Idempotency-Key": key}
    )
    assert other.json()["n"] == first.json()["n"] + 1


class FailingBackend(AuthenticationBackend):
    """Fails closed, as the platform's backend does when Redis is down."""

    async def authenticate(self, conn: HTTPConnection) -> tuple[AuthCredentials, BaseUser] | None:
        raise ServiceUnavailable("Token revocation list unavailable.")


@pytest.mark.parametrize(
    ("style", "detail"),
    [
        ("platform", ["ServiceUnavailable", "Token revocation list unavailable."]),
        ("message", "Token revocation list unavailable."),
    ],
)
async def test_an_error_raised_by_authentication_renders_in_the_services_style(
    app_database: str, redis_url: str, style, detail
):
    app = create_service_app(
        make_settings(app_database, redis_url),
        title="failing-auth",
        version="0",
        routes=ROUTES,
        migrations=None,
        auth_backend=FailingBackend(),
        error_style=style,
    )
    async with client_for(app) as client:
        with json_log("platform.access") as stream:
            response = await client.get("/api/v1/things", headers={"X-Request-ID": "feed0001"})
    assert response.status_code == 503
    assert response.json() == {"detail": detail}
    assert response.headers["x-request-id"] == "feed0001"
    assert response.headers["x-frame-options"] == "SAMEORIGIN"
    [record] = log_records(stream)
    assert (record["status"], record["request_id"]) == (503, "feed0001")


class _Front:
    """A front door that answers ``/front`` itself and passes everything else on."""

    def __init__(self, app: ASGIApp) -> None:
        self.app = app

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        if scope["type"] == "http" and scope["path"] == "/front":
            await PlainTextResponse("front door")(scope, receive, send)
            return
        await self.app(scope, receive, send)


async def test_a_front_door_answers_its_own_requests_ahead_of_every_middleware(
    app_database: str, redis_url: str
):
    settings = make_settings(app_database, redis_url)
    app = create_service_app(
        settings, title="sample", version="1", routes=ROUTES, migrations=None, front=_Front
    )
    async with client_for(app) as client:
        front = await client.get("/front")
        assert (front.status_code, front.text) == (200, "front door")
        assert "x-request-id" not in front.headers  # no ServiceMiddleware on its way
        routed = await client.get("/health")  # the lifespan ran: health answers
        assert routed.status_code == 200
        assert routed.headers["x-request-id"]  # the rest go through the whole stack


async def test_without_a_front_door_every_request_goes_through_the_stack(
    app_database: str, redis_url: str
):
    settings = make_settings(app_database, redis_url)
    app = create_service_app(
        settings, title="sample", version="1", routes=ROUTES, migrations=None, front=_Front
    )
    app.front = None
    async with client_for(app) as client:
        front = await client.get("/front")
        assert front.status_code == 404
        assert front.headers["x-request-id"]
