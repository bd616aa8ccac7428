"""What every provider implements, and the pieces they share."""

from __future__ import annotations

import hashlib
import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, ClassVar, NamedTuple, Protocol
from urllib.parse import parse_qs

import orjson
from pydantic import BaseModel

from webhooks.intake.signatures import hmac_hex, same

MAX_ERROR_SUMMARY = 4096

INVALID_SIGNATURE = "Invalid webhook signature."
NOT_JSON = "Request body must be valid JSON."
NOT_OBJECT = "Request body must contain a top-level JSON object."


RequestHeaders = Mapping[str, str]
"""A request's headers by lower-case name, first value wins (a Starlette ``Headers``, or the
plain dict the intake's own front door builds)."""


class PayloadError(Exception):
    """The delivery is authentic but unusable: 400 with this message (counted as
    ``invalid_payload`` when it happens after authentication)."""


class Delivery(NamedTuple):
    """A parsed, authenticated delivery. ``event_type`` is ``None`` for a control
    delivery (Slack's URL verification and rate-limit notices), which carries no event.

    ``key`` names the event, and so its replays: a delivery id the signature covers, or
    ``None`` when the sender signs none (the intake then names the event by its body,
    :func:`body_key`), so a replay cannot change it. ``delivery_id`` is the sender's own
    id where that is not the key (an unsigned header, such as GitHub's
    ``X-GitHub-Delivery``): what consumers see, never what decides a replay. (A named
    tuple: one is made for every delivery, and a frozen dataclass's ``__init__`` costs
    several times as much.)"""

    event_type: str | None
    key: str | None
    status_code: int = 202
    text: str | None = None  # a text/plain answer (Slack's URL verification challenge)
    delivery_id: str | None = None


def body_key(body: bytes) -> str:
    """The key of a delivery whose sender signs no delivery id (only the body): the body's
    BLAKE2b-256. A replay re-sent with any delivery header, or none, has the same key; two
    genuine events never share a body (GitHub's and ClickUp's carry unique ids). (BLAKE2b,
    not SHA-256: hashlib's own code, where OpenSSL's SHA-256 set up a context for every
    delivery: callgrind, a 110-byte body: 5,000 instructions against 8,600.)"""
    return "blake2b:" + hashlib.blake2b(body, digest_size=32).hexdigest()


@dataclass(frozen=True)
class SemanticEvent:
    """A curated event a trigger's target can filter on: its type and its fields (a
    string, a list of strings for collections, or ``None`` when absent)."""

    type: str
    fields: Mapping[str, str | Sequence[str] | None]
    data: Mapping[str, Any] = field(default_factory=dict)


class Provider(Protocol):
    name: ClassVar[str]
    # Semantic target types → the model of their filter fields (strict: unknown fields
    # are rejected when a trigger is saved).
    targets: ClassVar[Mapping[str, type[BaseModel]]]
    min_targets: ClassVar[int]

    def pre_validate(self, headers: RequestHeaders) -> bool:
        """Headers only, before the webhook is looked up: ``False`` ignores the delivery
        (202, nothing counted); :class:`PayloadError` answers 400."""
        ...

    def authenticate(
        self, body: bytes, headers: RequestHeaders, secret: str, now: float
    ) -> str | None:
        """``None`` when the delivery is authentic, else the error summary."""
        ...

    def parse(self, body: bytes, headers: RequestHeaders) -> tuple[Delivery, dict[str, Any] | None]:
        """The delivery and its JSON payload (:class:`PayloadError` when unusable)."""
        ...

    def semantic_events(self, event_type: str, payload: Mapping[str, Any]) -> list[SemanticEvent]:
        """The curated events this delivery is (most deliveries are one or none)."""
        ...


def header(headers: RequestHeaders, names: Sequence[str]) -> str | None:
    """The first of ``names`` present (our name first, then the real sender's)."""
    for name in names:
        value = headers.get(name)
        if value is not None:
            return value
    return None


def decode_payload(body: bytes, content_type: str | None) -> dict[str, Any]:
    """The JSON object a body carries: the body itself, or (form content, as GitHub can
    send) its ``payload`` field."""
    media = (content_type or "").split(";")[0].strip().lower()
    if media == "application/x-www-form-urlencoded":
        try:
            fields = parse_qs(body.decode(), strict_parsing=False)
        except UnicodeDecodeError:
            raise PayloadError(NOT_JSON) from None
        body = (fields.get("payload") or [""])[-1].encode()
    return json_object(body)


def stored_payload(body: bytes) -> dict[str, Any]:
    """The JSON object of a body accepted earlier (JSON, or GitHub's form content)."""
    try:
        return json_object(body)
    except PayloadError:
        return decode_payload(body, "application/x-www-form-urlencoded")


# A number orjson may read otherwise than the json module: one with a fraction or an
# exponent (a digit then ".", "e" or "E"), or an integer of 19 digits or more (past what
# 64 bits hold, orjson reads a float). Strings that look like numbers match too: those
# bodies are read by the json module alone, at its speed.
_INEXACT_NUMBER = re.compile(rb"[0-9](?:[.eE]|[0-9]{18})")


def json_object(body: bytes) -> dict[str, Any]:
    """The JSON object ``body`` holds, exactly as the json module reads it. orjson reads it
    when it can (a fifth of the json module's instructions on a small delivery: this runs
    for every one), and where they could differ the json module does: numbers that
    :data:`_INEXACT_NUMBER` finds, and everything orjson refuses but the json module takes
    (``NaN``, a byte order mark, UTF-16, lone surrogates)."""
    payload: Any = None
    if _INEXACT_NUMBER.search(body) is None:
        try:
            payload = orjson.loads(body)
        except orjson.JSONDecodeError:
            payload = None
    if payload is None:  # also JSON's null, which the json module reads as None too
        try:
            payload = json.loads(body)
        except (ValueError, RecursionError):
            raise PayloadError(NOT_JSON) from None
    if not isinstance(payload, dict):
        raise PayloadError(NOT_OBJECT)
    return payload


def check_prefixed(
    body: bytes, headers: RequestHeaders, secret: str, names: Sequence[str], prefix: str = "sha256="
) -> str | None:
    """GitHub-style ``sha256=<hex>`` over the raw body (case-sensitive, as GitHub's)."""
    presented = header(headers, names)
    if presented is None or not presented.startswith(prefix):
        return f"Missing or malformed {names[-1].lower()} header."
    expected = prefix + hmac_hex(secret.encode(), body)
    return None if same(expected, presented) else INVALID_SIGNATURE


def text(value: Any) -> str | None:
    """A scalar id or name as a string (ids may come as numbers); ``None`` otherwise."""
    if isinstance(value, bool) or value is None:
        return None
    if isinstance(value, str | int | float):
        return str(value)
    return None


def nested(payload: Mapping[str, Any], *path: str) -> Any:
    value: Any = payload
    for key in path:
        if not isinstance(value, Mapping):
            return None
        value = value.get(key)
    return value
