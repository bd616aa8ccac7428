"""``POST /api/v1/webhooks/{webhook_type}/{webhook_id}/events``: no login, the signature
is the credential."""

from __future__ import annotations

import uuid

from starlette.requests import Request
from starlette.responses import PlainTextResponse, Response

from shared.routing import ApiRoute, api_route, path_param
from webhooks.intake.service import IGNORED, Answer, IntakeService


def respond(answer: Answer) -> Response:
    if answer.text is not None:
        return PlainTextResponse(answer.text, status_code=answer.status_code)
    return Response(status_code=answer.status_code)


async def receive(request: Request) -> Response:
    """Reached only by the requests :class:`webhooks.intake.asgi.IntakeFastPath` leaves to
    the router; the fast path answers the others alike (``intake_endpoint``)."""
    intake: IntakeService = request.state.intake
    webhook_id = path_param(request, "webhook_id", uuid.UUID)
    provider = intake.provider(request.path_params["webhook_type"])
    if not intake.pre_validate(provider, request.headers):
        return respond(IGNORED)
    body = await request.body()
    return respond(await intake.receive(provider, webhook_id, request.headers, body))


def routes() -> list[ApiRoute]:
    return [
        api_route(
            "/api/v1/webhooks/{webhook_type}/{webhook_id}/events",
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
