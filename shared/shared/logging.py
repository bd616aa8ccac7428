"""Structured JSON logging that never prints secrets.

Each record is one JSON object on stderr with the request id of the request being served
(see :mod:`shared.middleware`). Values under secret-looking keys and anything that looks
like a bearer token, JWT or API key inside a message are masked before they are written.
"""

from __future__ import annotations

import contextvars
import json
import logging
import re
import sys
from datetime import UTC, datetime
from typing import Any

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_id", default=None
)

SECRET_KEY_PATTERN = re.compile(
    r"pass(word)?|secret|token|api[_-]?key|authorization|cookie|credential|code|signature",
    re.IGNORECASE,
)
_SECRET_VALUE_PATTERNS = [
    # JWTs: three base64url segments, the first two starting with '{"' encoded.
    re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
    re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"),
    re.compile(r"\b(ZENKEY|SVCKEY)_[A-Za-z0-9_\-=+/]+"),
    re.compile(
        r"(?i)((?:password|secret|token|api_key|code)=)[^&\s\"']+",
    ),
    # The same keys quoted, as a dict or JSON body lands in a message: 'password': 'x'.
    re.compile(
        r"(?i)([\"'][\w-]*(?:password|secret|token|api_key|code)[\"']\s*:\s*[\"'])[^\"']+",
    ),
]
MASK = "***"

# uvicorn adds a colour-coded copy of its message; it is noise in structured logs.
_RESERVED = set(vars(logging.makeLogRecord({})).keys()) | {"message", "asctime", "color_message"}


def redact_text(text: str) -> str:
    """Mask anything in ``text`` that looks like a credential."""
    for pattern in _SECRET_VALUE_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text


def redact(value: Any, key: str | None = None) -> Any:
    """Mask ``value`` when its key looks secret; walk dicts and lists."""
    if key is not None and SECRET_KEY_PATTERN.search(key) and value not in (None, ""):
        return MASK
    if isinstance(value, dict):
        return {k: redact(v, str(k)) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [redact(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value


PRE_REDACTED = "_redacted"
"""An ``extra`` key marking a record whose message was built from masked parts (the access
log): it is written as it is, without the text patterns (a noticeable cost per request)."""


def _message(record: logging.LogRecord) -> str:
    message = record.getMessage()
    return message if getattr(record, PRE_REDACTED, False) else redact_text(message)


class JSONFormatter(logging.Formatter):
    """One JSON object per record; extra fields are kept, secrets masked."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": datetime.fromtimestamp(record.created, UTC).isoformat(timespec="milliseconds"),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _message(record),
        }
        request_id = request_id_var.get()
        if request_id:
            payload["request_id"] = request_id
        for key, value in record.__dict__.items():
            if key not in _RESERVED and not key.startswith("_"):
                payload[key] = redact(value, key)
        if record.exc_info:
            payload["exc"] = redact_text(self.formatException(record.exc_info))
        return json.dumps(payload, default=str)


class TextFormatter(logging.Formatter):
    """Readable lines for a terminal, with the same masking."""

    def format(self, record: logging.LogRecord) -> str:
        request_id = request_id_var.get()
        prefix = f"[{request_id}] " if request_id else ""
        extras = {
            k: redact(v, k)
            for k, v in record.__dict__.items()
            if k not in _RESERVED and not k.startswith("_")
        }
        tail = f" {extras}" if extras else ""
        line = f"{record.levelname:<7} {record.name}: {prefix}{_message(record)}"
        if record.exc_info:
            line += "\n" + redact_text(self.formatException(record.exc_info))
        return line + tail


def configure_logging(level: str = "INFO", *, json_output: bool = True) -> None:
    """Route the root logger (and uvicorn's) through one stderr handler."""
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(JSONFormatter() if json_output else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # Our own access log (shared.middleware.AccessLogMiddleware) replaces uvicorn's, which
    # would print query strings that may carry download tokens.
    logging.getLogger("uvicorn.access").disabled = True
