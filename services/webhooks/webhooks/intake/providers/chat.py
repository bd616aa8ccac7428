"""``chat`` (the Slack Events API and senders speaking its protocol)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel

from webhooks.intake.providers.base import (
    INVALID_SIGNATURE,
    Delivery,
    PayloadError,
    RequestHeaders,
    SemanticEvent,
    header,
    json_object,
    nested,
    text,
)
from webhooks.intake.providers.targets import target_model
from webhooks.intake.signatures import hmac_hex, same

SIGNATURE_HEADERS = ("x-chat-signature", "x-slack-signature")
TIMESTAMP_HEADERS = ("x-chat-request-timestamp", "x-slack-request-timestamp")
COMMON = ("team_id", "channel_id", "user_id")
UNSUPPORTED = "Unsupported Slack delivery type."


def _threaded(event: Mapping[str, Any]) -> str:
    thread = event.get("thread_ts")
    return "true" if thread and thread != event.get("ts") else "false"


class Chat:
    name: ClassVar[str] = "chat"
    min_targets: ClassVar[int] = 1
    targets: ClassVar[Mapping[str, type[BaseModel]]] = {
        "app_mention": target_model("app_mention", (*COMMON, "text"), ("threaded",)),
        "message": target_model(
            "message",
            (*COMMON, "channel_type", "text", "subtype"),
            ("include_subtypes", "threaded"),
        ),
        **{
            kind: target_model(kind, (*COMMON, "reaction", "item_user_id", "item_type", "item_id"))
            for kind in ("reaction_added", "reaction_removed")
        },
        **{
            kind: target_model(kind, (*COMMON, "app_id", "bot_id", "metadata_event_type"))
            for kind in ("message_metadata_posted", "message_metadata_updated")
        },
        "file_shared": target_model("file_shared", (*COMMON, "file_id")),
    }

    def __init__(self, tolerance: float) -> None:
        self.tolerance = tolerance

    def pre_validate(self, headers: RequestHeaders) -> bool:
        return True

    def authenticate(
        self, body: bytes, headers: RequestHeaders, secret: str, now: float
    ) -> str | None:
        signature = header(headers, SIGNATURE_HEADERS)
        if signature is None or not signature.startswith("v0="):
            return "Missing or malformed x-slack-signature header."
        timestamp = header(headers, TIMESTAMP_HEADERS) or ""
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 20):
            return "Missing or malformed x-slack-request-timestamp header."
        if abs(now - int(timestamp)) > self.tolerance:
            return "Slack request timestamp is outside the allowed tolerance."
        expected = "v0=" + hmac_hex(secret.encode(), b"v0:", timestamp.encode(), b":", body)
        return None if same(expected, signature) else INVALID_SIGNATURE

    def parse(self, body: bytes, headers: RequestHeaders) -> tuple[Delivery, dict[str, Any] | None]:
        payload = json_object(body)
        kind = payload.get("type")
        if kind == "url_verification":
            challenge = payload.get("challenge")
            if not isinstance(challenge, str) or not challenge:
                raise PayloadError("Slack URL verification needs a non-empty 'challenge'.")
            return Delivery(None, None, status_code=200, text=challenge), None
        if kind == "app_rate_limited":
            if not (
                isinstance(payload.get("team_id"), str)
                and isinstance(payload.get("api_app_id"), str)
                and type(payload.get("minute_rate_limited")) is int
            ):
                raise PayloadError(
                    "Slack rate-limit notices need 'team_id', 'api_app_id' and "
                    "'minute_rate_limited'."
                )
            return Delivery(None, None, status_code=200), None
        if kind != "event_callback":
            raise PayloadError(UNSUPPORTED)
        event_type = nested(payload, "event", "type")
        event_id = payload.get("event_id")
        if not isinstance(event_type, str) or not event_type:
            raise PayloadError("Slack event callbacks need an 'event' with a 'type'.")
        if not isinstance(event_id, str) or not event_id:
            raise PayloadError("Slack event callbacks need an 'event_id'.")
        return Delivery(event_type, event_id, status_code=200), payload

    def semantic_events(self, event_type: str, payload: Mapping[str, Any]) -> list[SemanticEvent]:
        event = payload.get("event")
        if (
            not isinstance(event, dict)
            or not payload.get("event_id")
            or not payload.get("team_id")
            or type(payload.get("event_time")) is not int
            or not event.get("event_ts")
        ):
            return []
        item = event.get("item") if isinstance(event.get("item"), dict) else {}
        assert isinstance(item, dict)
        common = {
            "team_id": text(payload.get("team_id")),
            "channel_id": text(event.get("channel")) or text(item.get("channel")),
            "user_id": text(event.get("user")),
        }
        fields: dict[str, str | list[str] | None]
        if event_type == "app_mention":
            if event.get("bot_id"):
                return []
            fields = {**common, "text": text(event.get("text")), "threaded": _threaded(event)}
        elif event_type == "message":
            fields = {
                **common,
                "channel_type": text(event.get("channel_type")),
                "text": text(event.get("text")),
                "subtype": text(event.get("subtype")),
                "threaded": _threaded(event),
            }
        elif event_type in ("reaction_added", "reaction_removed"):
            fields = {
                **common,
                "reaction": text(event.get("reaction")),
                "item_user_id": text(event.get("item_user")),
                "item_type": text(item.get("type")),
                "item_id": text(item.get("ts"))
                or text(item.get("file"))
                or text(item.get("file_comment")),
            }
        elif event_type in ("message_metadata_posted", "message_metadata_updated"):
            fields = {
                **common,
                "app_id": text(event.get("app_id")),
                "bot_id": text(event.get("bot_id")),
                "metadata_event_type": text(nested(event, "metadata", "event_type")),
            }
        elif event_type == "file_shared":
            fields = {**common, "file_id": text(event.get("file_id"))}
        else:
            return []
        return [SemanticEvent(event_type, fields)]

    def extra_match(self, target: BaseModel, event: SemanticEvent) -> bool:
        """Messages: only plain human ones unless the target names a subtype or asks for
        every subtype; mentions and messages: the ``threaded`` flag."""
        threaded = getattr(target, "threaded", None)
        if threaded is not None and event.fields.get("threaded") != str(threaded).lower():
            return False
        plain_only = getattr(target, "subtype", None) is None and not getattr(
            target, "include_subtypes", None
        )
        if event.type == "message" and plain_only:
            return event.fields.get("subtype") is None
        return True
