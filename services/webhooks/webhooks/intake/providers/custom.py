"""``custom``: any sender. It signs as GitHub does (``X-Webhook-Signature-256`` or the
reference's ``X-ZenML-Signature-256``), or as a Standard Webhooks sender
(``webhook-id``/``webhook-timestamp``/``webhook-signature``)."""

from __future__ import annotations

import base64
import binascii
import hashlib
import hmac
from collections.abc import Mapping
from typing import Any, ClassVar

from pydantic import BaseModel

from webhooks.intake.providers.base import (
    INVALID_SIGNATURE,
    Delivery,
    PayloadError,
    RequestHeaders,
    SemanticEvent,
    check_prefixed,
    header,
    json_object,
)

SIGNATURE_HEADERS = ("x-webhook-signature-256", "x-zenml-signature-256")
EVENT_HEADERS = ("x-webhook-event", "x-zenml-event")
DELIVERY_HEADERS = ("x-webhook-delivery", "x-zenml-delivery")
SW_ID, SW_TIMESTAMP, SW_SIGNATURE = "webhook-id", "webhook-timestamp", "webhook-signature"
SW_SECRET_PREFIX = "whsec_"


def standard_webhooks_key(secret: str) -> bytes:
    """A ``whsec_`` secret's key is its base64 part decoded, padded or not (as the
    Standard Webhooks libraries read it); any other secret is used as its UTF-8 bytes."""
    if secret.startswith(SW_SECRET_PREFIX):
        encoded = secret.removeprefix(SW_SECRET_PREFIX)
        try:
            return base64.b64decode(encoded + "=" * (-len(encoded) % 4), validate=True)
        except (binascii.Error, ValueError):
            pass
    return secret.encode()


def standard_webhooks_signature(secret: str, msg_id: str, timestamp: str, body: bytes) -> str:
    mac = hmac.new(standard_webhooks_key(secret), digestmod=hashlib.sha256)
    mac.update(f"{msg_id}.{timestamp}.".encode())
    mac.update(body)
    return base64.b64encode(mac.digest()).decode()


class Custom:
    name: ClassVar[str] = "custom"
    min_targets: ClassVar[int] = 0
    targets: ClassVar[Mapping[str, type[BaseModel]]] = {}

    def __init__(self, tolerance: float) -> None:
        self.tolerance = tolerance

    def pre_validate(self, headers: RequestHeaders) -> bool:
        return True

    def authenticate(
        self, body: bytes, headers: RequestHeaders, secret: str, now: float
    ) -> str | None:
        if SW_SIGNATURE in headers:
            return self._standard_webhooks(body, headers, secret, now)
        return check_prefixed(body, headers, secret, SIGNATURE_HEADERS)

    def _standard_webhooks(
        self, body: bytes, headers: RequestHeaders, secret: str, now: float
    ) -> str | None:
        msg_id, timestamp = headers.get(SW_ID, ""), headers.get(SW_TIMESTAMP, "")
        if not msg_id or "." in msg_id:
            return "Missing or malformed webhook-id header."
        if not (timestamp.isascii() and timestamp.isdigit() and len(timestamp) <= 20):
            return "Missing or malformed webhook-timestamp header."
        if abs(now - int(timestamp)) > self.tolerance:
            return "Webhook timestamp is outside the allowed tolerance."
        expected = standard_webhooks_signature(secret, msg_id, timestamp, body).encode()
        # A space-separated list of `version,signature`; any v1 that verifies passes, so
        # a sender can sign with an old and a new secret while it rotates.
        for candidate in headers[SW_SIGNATURE].split():
            version, _, signature = candidate.partition(",")
            if version == "v1" and hmac.compare_digest(expected, signature.encode()):
                return None
        return INVALID_SIGNATURE

    def parse(self, body: bytes, headers: RequestHeaders) -> tuple[Delivery, dict[str, Any] | None]:
        payload = json_object(body)
        event_type = header(headers, EVENT_HEADERS)
        if not event_type and SW_SIGNATURE in headers and isinstance(payload.get("type"), str):
            event_type = payload["type"]  # Standard Webhooks carry the type in the body
        if not event_type:
            raise PayloadError("Missing required x-zenml-event header.")
        if SW_SIGNATURE in headers:  # the signed webhook-id names the message, alone
            return Delivery(event_type, headers[SW_ID]), payload
        # `sha256=` signs the body alone: the delivery header is a label (see codehost).
        delivery_id = header(headers, DELIVERY_HEADERS) or None
        return Delivery(event_type, None, delivery_id=delivery_id), payload

    def semantic_events(self, event_type: str, payload: Mapping[str, Any]) -> list[SemanticEvent]:
        return []
