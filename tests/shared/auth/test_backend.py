"""The Starlette backend, the middleware and the require_* helpers, driven through a tiny
app (with AuthMiddleware, and with Starlette's AuthenticationMiddleware it stands in for)."""

from __future__ import annotations

from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from datetime import UTC, datetime, timedelta
from typing import Any
from uuid import uuid4

import httpx
import pytest
from starlette.applications import Starlette
from starlette.authentication import AuthenticationBackend, AuthenticationError
from starlette.middleware import Middleware
from starlette.middleware.authentication import AuthenticationMiddleware
from starlette.requests import HTTPConnection, Request
from starlette.responses import JSONResponse, PlainTextResponse, Response
from starlette.routing import Route
from starlette.types import Message

from shared.auth import (
    AuthMiddleware,
    JWTAuthBackend,
    Principal,
    RevocationList,
    ScopeKind,
    TokenKind,
    TokenSigner,
    TokenVerifier,
    WorkloadScope,
    WorkloadScopes,
    bearer_token,
    generate_signing_key,
    require_admin,
    require_principal,
)
from shared.errors import PlatformError, ServiceUnavailable
from shared.redis import Keys, create_redis
from shared.responses import error_response
from tests.shared.auth.conftest import TrackingObjects
from tests.support.asgi import client_for
from tests.support.metrics import sample
from tests.support.redis_server import free_port

COOKIE = "zenml-server-test"
BACKEND_KINDS = {TokenKind.ACCESS, TokenKind.DEVICE, TokenKind.GENERIC, TokenKind.WORKLOAD}


async def me(request: Request) -> Response:
    principal = require_principal(request)
    return JSONResponse(
        {
            "subject": principal.identity,
            "kind": principal.kind,
            "display_name": principal.display_name,
            "scopes": request.auth.scopes,
        }
    )


async def workload_only(request: Request) -> Response:
    require_principal(request, kinds={TokenKind.WORKLOAD})
    return JSONResponse({"ok": True})


async def admin_only(request: Request) -> Response:
    principal = require_admin(request, action="list every user")
    return JSONResponse({"subject": principal.identity})


async def login(request: Request) -> Response:
    return JSONResponse({"authenticated": request.user.is_authenticated})


async def render_error(request: Request, exc: Exception) -> Response:
    assert isinstance(exc, PlatformError)
    return error_response(exc)


def make_app(state: dict[str, Any], middleware: Any = AuthMiddleware) -> Starlette:
    """A service whose lifespan yields ``state``, as a real service's lifespan does."""

    @asynccontextmanager
    async def lifespan(app: Starlette) -> AsyncIterator[dict[str, Any]]:
        yield state

    return Starlette(
        routes=[
            Route("/me", me),
            Route("/workload", workload_only),
            Route("/admin", admin_only),
            Route("/login", login, methods=["POST"]),
        ],
        middleware=[
            Middleware(middleware, backend=JWTAuthBackend(cookie_name=COOKIE, kinds=BACKEND_KINDS))
        ],
        exception_handlers={PlatformError: render_error},
        lifespan=lifespan,
    )


@pytest.fixture(params=[AuthMiddleware, AuthenticationMiddleware])
async def client(
    request: pytest.FixtureRequest,
    verifier: TokenVerifier,
    revocations: RevocationList,
    tracking_objects: TrackingObjects,
) -> AsyncIterator[httpx.AsyncClient]:
    state = {
        "verifier": verifier,
        "revocations": revocations,
        "workload_scopes": WorkloadScopes(tracking_objects, ttl=0),
    }
    async with client_for(make_app(state, request.param)) as client:
        yield client


def verifications(outcome: str) -> float:
    """Token verifications of ``outcome`` so far, as this process's metrics show them."""
    return sample("platform_token_verifications_total", outcome=outcome)


def bearer(token: str, scheme: str = "Bearer") -> dict[str, str]:
    return {"Authorization": f"{scheme} {token}"}


def cookie(token: str) -> dict[str, str]:
    return {"Cookie": f"{COOKIE}={token}"}


def assert_credentials_not_valid(response: httpx.Response, token: str | None = None) -> None:
    assert response.status_code == 401
    detail = response.json()["detail"]
    assert detail[0] == "CredentialsNotValid"
    assert detail[1].startswith("Authentication error: ")
    assert response.headers["WWW-Authenticate"] == 'Bearer error="invalid_token"'
    if token:
        assert token not in response.text


async def test_anonymous_request_gets_not_authenticated(client: httpx.AsyncClient) -> None:
    response = await client.get("/me")

    assert response.status_code == 401
    assert response.json() == {"detail": "Not authenticated"}
    assert response.headers["WWW-Authenticate"] == "Bearer"


async def test_bearer_token_authenticates(client: httpx.AsyncClient, issue: Any) -> None:
    user_id = str(uuid4())
    accepted = verifications("accepted")

    response = await client.get("/me", headers=bearer(issue(subject=user_id)))

    assert response.status_code == 200
    assert verifications("accepted") == accepted + 1
    assert response.json() == {
        "subject": user_id,
        "kind": "access",
        "display_name": user_id,
        "scopes": ["authenticated", "kind:access"],
    }


async def test_bearer_scheme_is_case_insensitive(client: httpx.AsyncClient, issue: Any) -> None:
    for scheme in ("bearer", "BEARER", "bEaReR"):
        response = await client.get("/me", headers=bearer(issue(), scheme))
        assert response.status_code == 200, scheme


async def test_other_authorization_schemes_are_anonymous(client: httpx.AsyncClient) -> None:
    response = await client.get("/me", headers={"Authorization": "Basic YWxpY2U6cHc="})

    assert response.json() == {"detail": "Not authenticated"}


async def test_session_cookie_authenticates(client: httpx.AsyncClient, issue: Any) -> None:
    response = await client.get("/me", headers=cookie(issue(subject="alice")))

    assert response.json()["subject"] == "alice"


async def test_cookie_wins_over_bearer(client: httpx.AsyncClient, issue: Any) -> None:
    headers = {**cookie(issue(subject="from-cookie")), **bearer(issue(subject="from-header"))}

    response = await client.get("/me", headers=headers)

    assert response.json()["subject"] == "from-cookie"


async def test_empty_cookie_falls_back_to_bearer(client: httpx.AsyncClient, issue: Any) -> None:
    headers = {**cookie(""), **bearer(issue(subject="from-header"))}

    response = await client.get("/me", headers=headers)

    assert response.json()["subject"] == "from-header"


async def test_forged_token_gets_credentials_not_valid(
    client: httpx.AsyncClient, issue: Any
) -> None:
    forger = TokenSigner(generate_signing_key(), kid="key-1", issuer="https://identity.test")
    forged, _ = forger.issue(
        subject="admin",
        kind="access",
        audience="platform-api",
        lifetime=timedelta(hours=1),
        extra={"admin": True},
    )

    bad_signatures = verifications("bad_signature")
    response = await client.get("/me", headers=bearer(forged))

    assert_credentials_not_valid(response, forged)
    assert response.json()["detail"][1] == "Authentication error: token signature is invalid"
    assert verifications("bad_signature") == bad_signatures + 1


async def test_expired_token_gets_credentials_not_valid(
    client: httpx.AsyncClient, issue: Any
) -> None:
    token = issue(lifetime=timedelta(minutes=1), now=datetime.now(UTC) - timedelta(hours=1))
    expired = verifications("expired")

    response = await client.get("/me", headers=cookie(token))

    assert_credentials_not_valid(response, token)
    assert response.json()["detail"][1] == "Authentication error: token has expired"
    assert verifications("expired") == expired + 1


async def test_revoked_token_gets_credentials_not_valid(
    client: httpx.AsyncClient, verifier: TokenVerifier, revocations: RevocationList, issue: Any
) -> None:
    token = issue()
    verified = await verifier.verify(token, kinds=BACKEND_KINDS)
    await revocations.revoke_token(verified.jti, verified.expires_at)
    revoked = verifications("revoked")

    response = await client.get("/me", headers=bearer(token))

    assert_credentials_not_valid(response, token)
    assert response.json()["detail"][1] == "Authentication error: token has been revoked"
    assert verifications("revoked") == revoked + 1


async def test_device_token_without_its_device_id_is_not_valid(
    client: httpx.AsyncClient, issue: Any
) -> None:
    # Without the claim, neither locking nor deleting the device would revoke it.
    token = issue(kind=TokenKind.DEVICE)
    invalid = verifications("invalid")

    response = await client.get("/me", headers=bearer(token))

    assert_credentials_not_valid(response, token)
    assert response.json()["detail"][1] == (
        "Authentication error: device token lacks its device id"
    )
    assert verifications("invalid") == invalid + 1
    with_device = issue(kind=TokenKind.DEVICE, extra={"device_id": str(uuid4())})
    assert (await client.get("/me", headers=bearer(with_device))).status_code == 200


async def test_token_of_a_kind_the_service_does_not_accept_is_not_valid(
    client: httpx.AsyncClient, issue: Any
) -> None:
    wrong_kinds = verifications("wrong_kind")
    response = await client.get("/me", headers=bearer(issue(kind=TokenKind.DOWNLOAD)))

    assert_credentials_not_valid(response)
    assert "token kind download not accepted here" in response.json()["detail"][1]
    assert verifications("wrong_kind") == wrong_kinds + 1


def workload(issue: Any, scope: WorkloadScope) -> str:
    token: str = issue(kind=TokenKind.WORKLOAD, lifetime=None, extra=scope.claims())
    return token


async def test_route_limited_to_kinds_refuses_other_kinds(
    client: httpx.AsyncClient, issue: Any, tracking_objects: TrackingObjects
) -> None:
    refused = await client.get("/workload", headers=bearer(issue(kind=TokenKind.ACCESS)))
    token = workload(issue, tracking_objects.add())
    allowed = await client.get("/workload", headers=bearer(token))

    assert refused.status_code == 401
    assert refused.json()["detail"][0] == "AuthorizationException"
    assert allowed.status_code == 200


@pytest.mark.parametrize(
    ("kind", "usable", "reason"),
    [
        (
            ScopeKind.PIPELINE_RUN,
            False,
            "has finished and API tokens scoped to it are no longer valid",
        ),
        (ScopeKind.SCHEDULE, False, "is not active"),
        (ScopeKind.DEPLOYMENT, None, "does not exist"),
    ],
)
async def test_workload_token_is_refused_once_its_object_refuses_it(
    client: httpx.AsyncClient,
    issue: Any,
    tracking_objects: TrackingObjects,
    kind: ScopeKind,
    usable: bool | None,
    reason: str,
) -> None:
    scope = tracking_objects.add(kind)
    token = workload(issue, scope)
    assert (await client.get("/workload", headers=bearer(token))).status_code == 200
    if usable is None:
        del tracking_objects.states[scope]
    else:
        tracking_objects.put(scope, active=False, usable=usable)

    response = await client.get("/workload", headers=bearer(token))

    assert_credentials_not_valid(response, token)
    assert response.json()["detail"][1] == f"Authentication error: {scope} {reason}"


@pytest.mark.parametrize(
    "claims",
    [
        {},
        {"pipeline_run_id": "not-a-uuid"},
        {"pipeline_run_id": str(uuid4()), "schedule_id": str(uuid4())},
    ],
)
async def test_workload_token_without_exactly_one_object_is_refused(
    client: httpx.AsyncClient, issue: Any, claims: dict[str, str]
) -> None:
    token = issue(kind=TokenKind.WORKLOAD, lifetime=None, extra=claims)

    response = await client.get("/workload", headers=bearer(token))

    assert_credentials_not_valid(response)
    assert "not bound to exactly one schedule, pipeline run or deployment" in response.text


async def test_service_that_cannot_check_workload_tokens_refuses_them(
    verifier: TokenVerifier, issue: Any, tracking_objects: TrackingObjects
) -> None:
    token = workload(issue, tracking_objects.add())
    async with client_for(make_app({"verifier": verifier})) as client:
        response = await client.get("/workload", headers=bearer(token))

    assert_credentials_not_valid(response)
    assert "workload tokens are not accepted by this service" in response.text
    assert tracking_objects.lookups == 0


async def test_other_kinds_do_not_ask_tracking(
    client: httpx.AsyncClient, issue: Any, tracking_objects: TrackingObjects
) -> None:
    token = issue(extra={"pipeline_run_id": str(uuid4())})

    response = await client.get("/me", headers=bearer(token))

    assert response.status_code == 200
    assert tracking_objects.lookups == 0


async def test_non_admin_is_forbidden_on_an_admin_route(
    client: httpx.AsyncClient, issue: Any
) -> None:
    response = await client.get("/admin", headers=bearer(issue(extra={"admin": False})))

    assert response.status_code == 403
    assert response.json() == {
        "detail": ["IllegalOperationError", "Only admins may list every user."]
    }


async def test_admin_passes_an_admin_route_and_gets_the_admin_scope(
    client: httpx.AsyncClient, issue: Any
) -> None:
    token = issue(subject="root", extra={"admin": True, "name": "Root"})

    admin = await client.get("/admin", headers=bearer(token))
    me = await client.get("/me", headers=bearer(token))

    assert admin.json() == {"subject": "root"}
    assert me.json()["scopes"] == ["authenticated", "kind:access", "admin"]
    assert me.json()["display_name"] == "Root"


async def test_route_without_auth_works_with_a_garbage_cookie(
    client: httpx.AsyncClient,
) -> None:
    response = await client.post("/login", headers=cookie("garbage.garbage.garbage"))

    assert response.status_code == 200
    assert response.json() == {"authenticated": False}


async def test_service_without_revocation_list_skips_the_check(
    verifier: TokenVerifier, revocations: RevocationList, issue: Any
) -> None:
    token = issue()
    verified = await verifier.verify(token, kinds=BACKEND_KINDS)
    await revocations.revoke_token(verified.jti, verified.expires_at)
    async with client_for(make_app({"verifier": verifier})) as client:
        response = await client.get("/me", headers=bearer(token))

    assert response.status_code == 200


def connection(headers: dict[str, str], state: dict[str, Any]) -> HTTPConnection:
    return HTTPConnection(
        {
            "type": "http",
            "method": "GET",
            "path": "/",
            "headers": [(k.lower().encode(), v.encode()) for k, v in headers.items()],
            "state": state,
        }
    )


async def test_revocation_check_fails_closed_when_redis_is_down(
    verifier: TokenVerifier, issue: Any
) -> None:
    redis = create_redis(f"redis://127.0.0.1:{free_port()}/0", timeout=0.5)
    backend = JWTAuthBackend(cookie_name=COOKIE, kinds=BACKEND_KINDS)
    conn = connection(
        bearer(issue()),
        {"verifier": verifier, "revocations": RevocationList(redis, Keys("down"))},
    )
    try:
        with pytest.raises(ServiceUnavailable):
            await backend.authenticate(conn)
    finally:
        await redis.aclose()


async def test_backend_returns_a_principal_wrapping_the_token(
    verifier: TokenVerifier, issue: Any
) -> None:
    user_id = uuid4()
    token = issue(subject=str(user_id))
    backend = JWTAuthBackend(cookie_name=COOKIE, kinds=BACKEND_KINDS)

    result = await backend.authenticate(connection(bearer(token), {"verifier": verifier}))

    assert result is not None
    credentials, user = result
    assert isinstance(user, Principal)
    assert user.is_authenticated
    assert user.token.raw == token
    assert user.user_id == user_id
    assert user.is_admin is False
    assert credentials.scopes == ["authenticated", "kind:access"]


@pytest.mark.parametrize(
    "headers",
    [
        [],
        [(b"authorization", b"Bearer a.b.c")],
        [(b"authorization", b"bearer   a.b.c  ")],
        [(b"authorization", b"Bearer")],
        [(b"authorization", b"Basic YWxpY2U6cHc=")],
        [(b"authorization", b"Basic x"), (b"authorization", b"Bearer second")],
        [(b"cookie", f"{COOKIE}=from-cookie".encode()), (b"authorization", b"Bearer b")],
        [(b"cookie", f"a=1; {COOKIE}=; b=2".encode()), (b"authorization", b"Bearer b")],
        [(b"cookie", f'{COOKIE}="quo\\"ted"'.encode())],
        [(b"cookie", f"{COOKIE}=first".encode()), (b"cookie", f"{COOKIE}=second".encode())],
        [(b"cookie", f"{COOKIE}=first; {COOKIE}=later".encode())],
        [(b"cookie", f"{COOKIE}=kept".encode()), (b"cookie", b"other=1")],
        [(b"cookie", b"no-equals-sign"), (b"authorization", b"Bearer b")],
    ],
)
def test_the_credential_is_read_as_starlettes_connection_reads_it(
    headers: list[tuple[bytes, bytes]],
) -> None:
    backend = JWTAuthBackend(cookie_name=COOKIE, kinds=BACKEND_KINDS)
    conn = HTTPConnection({"type": "http", "headers": headers})

    assert backend.credential(conn.scope) == (conn.cookies.get(COOKIE) or bearer_token(conn))


class Refusing(AuthenticationBackend):
    async def authenticate(self, conn: HTTPConnection) -> None:
        raise AuthenticationError("no entry")


async def test_an_authentication_error_is_answered_by_on_error() -> None:
    def on_error(conn: HTTPConnection, exc: AuthenticationError) -> Response:
        return PlainTextResponse(f"{conn.url.path}: {exc}", status_code=418)

    for middleware, expected in [
        (Middleware(AuthMiddleware, backend=Refusing()), (400, "no entry")),
        (Middleware(AuthMiddleware, backend=Refusing(), on_error=on_error), (418, "/me: no entry")),
    ]:
        app = Starlette(routes=[Route("/me", me)], middleware=[middleware])
        async with client_for(app) as client:
            response = await client.get("/me")
        assert (response.status_code, response.text) == expected


async def test_a_websocket_refused_by_the_backend_is_closed() -> None:
    sent: list[Message] = []

    async def send(message: Message) -> None:
        sent.append(message)

    async def receive() -> Message:
        return {"type": "websocket.connect"}

    async def never(scope: Any, receive: Any, send: Any) -> None:
        raise AssertionError("the app must not run")

    middleware = AuthMiddleware(never, backend=Refusing())
    await middleware({"type": "websocket", "path": "/ws", "headers": []}, receive, send)
    assert sent == [{"type": "websocket.close", "code": 1000}]
