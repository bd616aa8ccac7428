"""The intake's fast path answers exactly as the routed endpoint behind the full middleware
stack: every case is sent to the app as built (in-process, through ASGI), to the same app
served by uvicorn with the platform's protocol (the direct route: no ASGI cycle), and to a
copy without the fast path."""

from __future__ import annotations

import contextlib
import json
import uuid
from collections.abc import AsyncIterator, Awaitable, Callable
from typing import Any

import httpx
import pytest

from shared.http_protocol import HttpProtocol
from tests.shared.test_app import json_log, log_records
from tests.support.asgi import HostRouter, running, served
from tests.support.metrics import sample
from tests.support.redis_server import free_port
from tests.webhooks.support import (
    chat_headers,
    codehost_headers,
    custom_headers,
    push_body,
    tasks_headers,
)
from webhooks.app import create_app
from webhooks.intake.asgi import PATH, IntakeFastPath
from webhooks.settings import Settings

Send = Callable[[httpx.AsyncClient], Awaitable[httpx.Response]]
# Answer headers whose values differ from one answer to the next.
VARYING = {"date"}
SAME_ID = {"X-Request-ID": "same-id"}
REQUESTS = "platform_http_requests_total"
DELIVERIES = "platform_webhook_deliveries_total"


def without_fast_path(settings: Settings, transport: httpx.AsyncBaseTransport) -> Any:
    app = create_app(settings, http_transport=transport)
    app.front = None
    return app


@pytest.fixture
async def routed(
    webhooks_settings: Settings, router: HostRouter, webhooks_app: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """A second app on the same database and Redis, every request through the router."""
    async with running(without_fast_path(webhooks_settings, router)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://testserver") as client:
            yield client


@pytest.fixture
async def served_client(
    webhooks_settings: Settings, router: HostRouter, webhooks_app: Any
) -> AsyncIterator[httpx.AsyncClient]:
    """A third app on the same database and Redis, served by uvicorn over a socket."""
    async with (
        served(create_app(webhooks_settings, http_transport=router)) as url,
        httpx.AsyncClient(base_url=url, trust_env=False) as client,
    ):
        yield client


Clients = tuple[httpx.AsyncClient, httpx.AsyncClient, httpx.AsyncClient]


@contextlib.asynccontextmanager
async def each_way(
    settings: Settings, router: HostRouter
) -> AsyncIterator[list[httpx.AsyncClient]]:
    """Clients for the three ways of :func:`clients`, apps built with ``settings``."""
    async with contextlib.AsyncExitStack() as stack:
        found: list[httpx.AsyncClient] = []
        for app in (
            create_app(settings, http_transport=router),
            without_fast_path(settings, router),
        ):
            started = await stack.enter_async_context(running(app))
            transport = httpx.ASGITransport(app=started)
            client = httpx.AsyncClient(transport=transport, base_url="http://t")
            found.append(await stack.enter_async_context(client))
        url = await stack.enter_async_context(served(create_app(settings, http_transport=router)))
        found.append(await stack.enter_async_context(httpx.AsyncClient(base_url=url)))
        yield found


@pytest.fixture
def clients(
    client: httpx.AsyncClient, routed: httpx.AsyncClient, served_client: httpx.AsyncClient
) -> Clients:
    """The fast path through ASGI, the routed endpoint, the fast path as a direct route."""
    return client, routed, served_client


def comparable(response: httpx.Response) -> tuple[int, list[tuple[str, str]], bytes]:
    headers = [
        (k, httpx.URL(v).raw_path.decode() if k == "location" else v)  # each its own host
        for k, v in response.headers.multi_items()
        if k not in VARYING
    ]
    return response.status_code, headers, response.content


async def assert_same_answer(clients: Clients, send: Send, status: int) -> httpx.Response:
    client, routed, direct = clients
    fast, slow, served_answer = await send(client), await send(routed), await send(direct)
    assert comparable(fast) == comparable(slow), (fast.headers, slow.headers)
    assert comparable(served_answer) == comparable(slow), (served_answer.headers, slow.headers)
    assert fast.status_code == status
    return fast


def signed(hook: dict[str, Any], body: bytes, **headers: str) -> Send:
    async def send(client: httpx.AsyncClient) -> httpx.Response:
        url = f"/api/v1/webhooks/codehost/{hook['id']}/events"
        sent = {**codehost_headers(hook["secret"], body), "X-Request-ID": "same-id", **headers}
        return await client.post(url, content=body, headers=sent)

    return send


def post(path: str, headers: dict[str, str] | None = None) -> Send:
    async def send(client: httpx.AsyncClient) -> httpx.Response:
        return await client.post(path, content=b"{}", headers={**SAME_ID, **(headers or {})})

    return send


async def test_header_and_lookup_errors_answer_alike(clients, create_webhook):
    hook = await create_webhook("custom")
    unknown = uuid.uuid4()
    cases: list[tuple[Send, int]] = [
        (post(f"/api/v1/webhooks/jira/{unknown}/events"), 404),
        (post("/api/v1/webhooks/custom/nope/events"), 422),
        (post(f"/api/v1/webhooks/custom/{str(unknown).replace('-', '')}/events"), 404),
        (post(f"/api/v1/webhooks/custom/{str(unknown).upper()}/events"), 404),
        (post(f"/api/v1/webhooks/custom/{unknown}/events/"), 307),  # redirect_slashes
        (post(f"/api/v1/webhooks/codehost/{unknown}/events"), 400),
        (post(f"/api/v1/webhooks/codehost/{unknown}/events", {"X-GitHub-Event": "ping"}), 202),
        (post(f"/api/v1/webhooks/custom/{unknown}/events"), 404),
        (post(f"/api/v1/webhooks/codehost/{hook['id']}/events", {"X-GitHub-Event": "push"}), 404),
    ]
    for send, status in cases:
        await assert_same_answer(clients, send, status)


async def test_other_methods_on_the_intake_path_answer_alike(client, routed):
    path = f"/api/v1/webhooks/custom/{uuid.uuid4()}/events"
    fast, slow = await client.get(path), await routed.get(path)
    assert fast.status_code == slow.status_code == 405
    assert fast.headers["allow"] == slow.headers["allow"] == "POST"


async def test_signature_activity_and_payload_answers_alike(clients, auth, create_webhook):
    client = clients[0]
    hook = await create_webhook("codehost")
    body = push_body()
    await assert_same_answer(clients, signed(hook, body), 202)
    bad = {"X-Hub-Signature-256": "sha256=" + "0" * 64}
    await assert_same_answer(clients, signed(hook, body, **bad), 401)
    await assert_same_answer(clients, signed(hook, b"[1, 2]"), 400)
    await assert_same_answer(clients, signed(hook, b"not json"), 400)
    replayed = signed(hook, body, **{"X-GitHub-Delivery": "one-delivery"})
    await assert_same_answer(clients, replayed, 202)
    update = await client.put(
        f"/api/v1/webhooks/{hook['id']}", json={"active": False}, headers=auth
    )
    assert update.status_code == 200
    await assert_same_answer(clients, signed(hook, body), 409)
    await assert_same_answer(clients, signed(hook, body, **bad), 401)


async def test_chat_and_tasks_answers_alike(clients, create_webhook):
    chat = await create_webhook("chat", name="chat")
    challenge = json.dumps({"type": "url_verification", "challenge": "c-123"}).encode()

    async def verification(c: httpx.AsyncClient) -> httpx.Response:
        path = f"/api/v1/webhooks/chat/{chat['id']}/events"
        return await c.post(
            path, content=challenge, headers=chat_headers(chat["secret"], challenge) | SAME_ID
        )

    answer = await assert_same_answer(clients, verification, 200)
    assert answer.text == "c-123"
    assert answer.headers["content-type"] == "text/plain; charset=utf-8"

    tasks = await create_webhook("tasks", name="tasks")
    body = json.dumps({"event": "taskCreated", "task_id": "t1"}).encode()

    async def no_webhook_id(c: httpx.AsyncClient) -> httpx.Response:
        path = f"/api/v1/webhooks/tasks/{tasks['id']}/events"
        return await c.post(
            path, content=body, headers=tasks_headers(tasks["secret"], body) | SAME_ID
        )

    await assert_same_answer(clients, no_webhook_id, 400)


async def test_bodies_over_the_limit_answer_413_alike_declared_or_streamed(
    webhooks_settings, router, create_webhook
):
    hook = await create_webhook("codehost")
    settings = webhooks_settings.model_copy(update={"max_body_size": 2048})
    body = b'{"pad": "' + b"x" * 4096 + b'"}'

    async def chunks() -> AsyncIterator[bytes]:
        for start in range(0, len(body), 1024):
            yield body[start : start + 1024]

    answers: list[list[tuple[int, list[tuple[str, str]], bytes]]] = []
    async with each_way(settings, router) as ways:
        for c in ways:
            path = f"/api/v1/webhooks/codehost/{hook['id']}/events"
            headers = {**codehost_headers(hook["secret"], body), "X-Request-ID": "same-id"}
            declared = await c.post(path, content=body, headers=headers)
            streamed = await c.post(path, content=chunks(), headers=headers)
            assert "content-length" not in streamed.request.headers
            answers.append([comparable(declared), comparable(streamed)])
    assert answers[0] == answers[1] == answers[2]
    (status, _, content), _ = answers[0]
    assert status == 413
    assert json.loads(content) == {
        "detail": ["PayloadTooLarge", "Request body exceeds the limit of 2048 bytes."]
    }


async def test_redis_unreachable_answers_503_alike(webhooks_settings, router, create_webhook):
    hook = await create_webhook("custom")
    dead = f"redis://127.0.0.1:{free_port()}/0"
    settings = webhooks_settings.model_copy(update={"redis_url": dead, "run_migrations": False})
    body = b'{"a": 1}'
    answers = []
    async with each_way(settings, router) as ways:
        for c in ways:
            headers = {**custom_headers(hook["secret"], body), "X-Request-ID": "same-id"}
            path = f"/api/v1/webhooks/custom/{hook['id']}/events"
            answers.append(comparable(await c.post(path, content=body, headers=headers)))
    assert answers[0] == answers[1] == answers[2]
    status, answered, content = answers[0]
    assert (status, dict(answered)["retry-after"]) == (503, "5")
    assert json.loads(content)["detail"][0] == "ServiceUnavailable"


async def test_a_request_id_is_made_or_kept_and_echoed(client, create_webhook):
    hook = await create_webhook("custom")
    body = b'{"a": 1}'
    path = f"/api/v1/webhooks/custom/{hook['id']}/events"
    kept = await client.post(
        path, content=body, headers={**custom_headers(hook["secret"], body), "X-Request-ID": "r-1"}
    )
    assert kept.headers["x-request-id"] == "r-1"
    made = await client.post(path, content=body, headers=custom_headers(hook["secret"], body))
    assert len(made.headers["x-request-id"]) == 8
    assert made.headers["x-content-type-options"] == "nosniff"


async def test_errors_are_logged_one_by_one_and_accepted_deliveries_counted(
    webhooks_settings, router, create_webhook
):
    hook = await create_webhook("custom")
    body = b'{"a": 1}'
    path = f"/api/v1/webhooks/custom/{hook['id']}/events"
    good = custom_headers(hook["secret"], body)
    bad = {**good, "X-ZenML-Signature-256": "sha256=" + "0" * 64, "X-Request-ID": "bad-1"}
    with json_log("platform.access") as stream:
        async with running(create_app(webhooks_settings, http_transport=router)) as app:
            transport = httpx.ASGITransport(app=app)
            async with httpx.AsyncClient(transport=transport, base_url="http://t") as c:
                for _ in range(3):
                    assert (await c.post(path, content=body, headers=good)).status_code == 202
                assert (await c.post(path, content=body, headers=bad)).status_code == 401
        # The 2xx answers are counted in one line, written within a second or (as here)
        # when the app stops.
        records = log_records(stream)
    errors, summary = records
    assert (errors["status"], errors["request_id"], errors["msg"]) == (
        401,
        "bad-1",
        f"POST {path} 401",
    )
    assert str(summary["msg"]).startswith(
        "POST /api/v1/webhooks/{webhook_type}/{webhook_id}/events: 3 x 202 in "
    )
    assert summary["answered"] == {"202": 3}
    assert "request_id" not in summary


async def test_served_deliveries_take_the_direct_route_and_log_the_forwarded_client(
    webhooks_settings, router, create_webhook, monkeypatch
):
    hook = await create_webhook("custom")
    body = b'{"a": 1}'
    path = f"/api/v1/webhooks/custom/{hook['id']}/events"
    through: list[str] = []
    asgi_call, direct_answer = IntakeFastPath.__call__, HttpProtocol._answer

    async def asgi(self: Any, scope: Any, receive: Any, send: Any) -> None:
        through.append(f"asgi {scope['type']} {scope.get('path', '')}")
        await asgi_call(self, scope, receive, send)

    async def direct(self: Any, cycle: Any, handler: Any) -> None:
        through.append(f"direct {cycle.scope['path']}")
        await direct_answer(self, cycle, handler)

    monkeypatch.setattr(IntakeFastPath, "__call__", asgi)
    monkeypatch.setattr(HttpProtocol, "_answer", direct)
    good = custom_headers(hook["secret"], body)
    bad = {**good, "X-ZenML-Signature-256": "sha256=" + "0" * 64, "X-Request-ID": "bad-2"}
    with json_log("platform.access") as stream:
        async with (
            served(create_app(webhooks_settings, http_transport=router)) as url,
            httpx.AsyncClient(base_url=url) as c,
        ):
            assert (await c.post(path, content=body, headers=good)).status_code == 202
            forwarded = {**bad, "X-Forwarded-For": "203.0.113.9"}
            assert (await c.post(path, content=body, headers=forwarded)).status_code == 401
            assert (await c.get("/health")).status_code == 200
        records = log_records(stream)
    assert through == [
        "asgi lifespan ",
        f"direct {path}",
        f"direct {path}",
        "asgi http /health",
    ]
    errors = next(r for r in records if r.get("status") == 401)
    # uvicorn's proxy-headers rewrite, applied when the line needed the client.
    assert (errors["client"], errors["request_id"]) == ("203.0.113.9", "bad-2")


async def test_deliveries_are_counted_by_route_provider_and_outcome_on_either_path(
    webhooks_settings, router, create_webhook
):
    hook = await create_webhook("custom")
    path = f"/api/v1/webhooks/custom/{hook['id']}/events"
    series = [
        *((REQUESTS, {"method": "POST", "route": PATH, "status": s}) for s in ("2xx", "4xx")),
        *(
            (DELIVERIES, {"provider": "custom", "outcome": outcome})
            for outcome in ("accepted", "duplicate", "auth_failed", "invalid_payload")
        ),
    ]
    before = [sample(*each) for each in series]

    async def deliver(client: httpx.AsyncClient, body: bytes, **extra: str) -> int:
        headers = {**custom_headers(hook["secret"], body), **extra}
        return (await client.post(path, content=body, headers=headers)).status_code

    bad = {"X-ZenML-Signature-256": "sha256=" + "0" * 64}
    async with running(create_app(webhooks_settings, http_transport=router)) as app:
        transport = httpx.ASGITransport(app=app)
        async with httpx.AsyncClient(transport=transport, base_url="http://t") as through_asgi:
            assert await deliver(through_asgi, b'{"a": 1}') == 202
            assert await deliver(through_asgi, b'{"a": 1}') == 202  # a replay
            assert await deliver(through_asgi, b'{"a": 1}', **bad) == 401
    async with (
        served(create_app(webhooks_settings, http_transport=router)) as url,
        httpx.AsyncClient(base_url=url) as direct,
    ):
        assert await deliver(direct, b'{"a": 2}') == 202
        assert await deliver(direct, b"not json") == 400

    counted = [sample(*each) - was for each, was in zip(series, before, strict=True)]
    assert counted == [3, 2, 2, 1, 1, 1]
