"""``POST /api/v1/webhooks/{webhook_type}/{webhook_id}/events``: no login, the signature
is the credential.

The intake's entry path: the route, through the service's whole middleware stack. Its
answer comes from :func:`deliver`, which the direct path (:mod:`webhooks.intake.asgi`)
calls too.
"""

from __future__ import annotations

import uuid
from collections.abc import Awaitable, Callable

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from shared.routing import ApiRoute, api_route, path_param
from webhooks.intake.providers.base import RequestHeaders
from webhooks.intake.service import IGNORED, Answer, IntakeService
from webhooks.state import WebhooksState


async def deliver(
    intake: IntakeService,
    webhook_type: str,
    webhook_id: uuid.UUID,
    headers: RequestHeaders,
    body: Callable[[], Awaitable[bytes]],
) -> Answer:
    """The answer to one delivery: the provider's verdict on the headers alone, then
    (unless it ignores the delivery) the body, read with ``body``, through the intake."""
    provider = intake.provider(webhook_type)
    if not intake.pre_validate(provider, headers):
        return IGNORED
    return await intake.receive(provider, webhook_id, headers, await body())


def respond(answer: Answer) -> Response:
    if answer.text is not None:
        return PlainTextResponse(answer.text, status_code=answer.status_code)
    return Response(status_code=answer.status_code)


async def receive(request: Request) -> Response:
    webhook_id = path_param(request, "webhook_id", uuid.UUID)
    answer = await deliver(
        WebhooksState.of(request).intake,
        request.path_params["webhook_type"],
        webhook_id,
        request.headers,
        request.body,
    )
    return respond(answer)


def routes() -> list[ApiRoute]:
    return [
        api_route(
            "/api/v1/webhooks/{webhook_type}/{webhook_id:uuid_param}/events",
            receive,
            method="POST",
            summary="Receive Webhook Event",
            tags=["webhooks"],
            auth=False,
            status_code=202,
            response=None,
            errors=(400, 401, 404, 409, 413, 503),
            extra_responses={200: "Accepted (chat: the answer Slack expects)"},
        )
    ]
