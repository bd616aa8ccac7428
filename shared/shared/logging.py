"""Structured JSON logging that never prints secrets.

Each record is one JSON object on stderr with the request id of the request being served
(see :mod:`shared.middleware`) and, while tracing is on, its trace id. Values under
secret-looking keys and anything that looks like a bearer token, JWT or API key inside a
message are masked before they are written.
"""

from __future__ import annotations

import contextlib
import contextvars
import functools
import json
import logging
import math
import re
import sys
import threading
import time
from typing import Any

__all__ = ["MASK", "PRE_REDACTED", "SECRET_KEY_PATTERN", "configure_logging", "redact_text"]

request_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar(
    "request_id", default=None
)
trace_id_var: contextvars.ContextVar[str | None] = contextvars.ContextVar("trace_id", default=None)
"""The trace id (32 hex digits) of the current span, while tracing is on
(:mod:`shared.tracing`)."""

SECRET_KEY_PATTERN = re.compile(
    r"pass(word)?|secret|token|api[_-]?key|authorization|cookie|credential|code|signature",
    re.IGNORECASE,
)
_SECRET_VALUE_PATTERNS = [
    # JWTs: three base64url segments, the first two starting with '{"' encoded.
    re.compile(r"eyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*"),
    re.compile(r"(?i)(bearer\s+)[^\s\"',;]+"),
    re.compile(r"\b(ZENKEY|SVCKEY|KITKEY)_[A-Za-z0-9_\-=+/]+"),
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

# A character every pattern above needs ("J" of "eyJ", the "b" of bearer, "_" of the key
# prefixes, "=", quotes): most text has none, and one scan for them costs a fraction of
# the five substitutions that would find nothing.
_MAYBE_SECRET_VALUE = re.compile(r"[JbB_=\"']")


def redact_text(text: str) -> str:
    """Mask anything in ``text`` that looks like a credential."""
    if _MAYBE_SECRET_VALUE.search(text) is None:
        return text
    return mask_every_pattern(text)


def mask_every_pattern(text: str) -> str:
    """``text`` with every secret-value pattern substituted (what :func:`redact_text`
    does once a character they all need is present)."""
    for pattern in _SECRET_VALUE_PATTERNS:
        if pattern.groups:
            text = pattern.sub(lambda m: m.group(1) + MASK, text)
        else:
            text = pattern.sub(MASK, text)
    return text


@functools.lru_cache(maxsize=1024)
def is_secret_key(key: str) -> bool:
    """Whether values under ``key`` (a field, parameter or header name) are masked."""
    # Cached: logs carry the same few keys over and over, and the pattern is costly.
    return SECRET_KEY_PATTERN.search(key) is not None


_PLAIN_TYPES = frozenset({int, float, bool, type(None)})


def redact(value: Any, key: str | None = None) -> Any:
    """Mask ``value`` when its key looks secret; walk dicts and lists."""
    if key is not None and is_secret_key(key) and value not in (None, ""):
        return MASK
    if type(value) in _PLAIN_TYPES:
        return value
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
    return message if record.__dict__.get(PRE_REDACTED) else redact_text(message)


_extra_names: dict[tuple[str, ...], tuple[str, ...]] = {}


def _extras(record: logging.LogRecord) -> dict[str, Any]:
    """The record's ``extra`` fields, secrets masked, in the order they were set."""
    fields = record.__dict__
    # The records of one logging call have the same attributes in the same order: which
    # of them are extras is worked out once per set, not by a pass over every attribute.
    attributes = tuple(fields)
    names = _extra_names.get(attributes)
    if names is None:
        if len(_extra_names) >= 256:  # extras that vary from record to record
            _extra_names.clear()
        names = tuple(k for k in attributes if k not in _RESERVED and not k.startswith("_"))
        _extra_names[attributes] = names
    return {k: redact(fields[k], k) for k in names}


_second = (-1, "")


def iso_timestamp(created: float) -> str:
    """``datetime.fromtimestamp(created, UTC).isoformat(timespec="milliseconds")``, with
    the date and time of day formatted once a second instead of once a record."""
    global _second
    # fromtimestamp's rounding: to the microsecond, half to even.
    fraction, whole = math.modf(created)
    micros = round(fraction * 1e6)
    if micros >= 1_000_000:
        whole, micros = whole + 1, micros - 1_000_000
    elif micros < 0:
        whole, micros = whole - 1, micros + 1_000_000
    second, text = _second
    if second != whole:
        t = time.gmtime(whole)
        text = f"{t.tm_year:04d}-{t.tm_mon:02d}-{t.tm_mday:02d}T"
        text += f"{t.tm_hour:02d}:{t.tm_min:02d}:{t.tm_sec:02d}"
        _second = (int(whole), text)
    return f"{text}.{micros // 1000:03d}+00:00"


_JSON = json.JSONEncoder(default=str)  # json.dumps(..., default=str) builds one per call


class JSONFormatter(logging.Formatter):
    """One JSON object per record; extra fields are kept, secrets masked."""

    def format(self, record: logging.LogRecord) -> str:
        payload: dict[str, Any] = {
            "ts": iso_timestamp(record.created),
            "level": record.levelname.lower(),
            "logger": record.name,
            "msg": _message(record),
        }
        request_id = request_id_var.get()
        if request_id:
            payload["request_id"] = request_id
        trace_id = trace_id_var.get()
        if trace_id:
            payload["trace_id"] = trace_id
        payload.update(_extras(record))
        if record.exc_info:
            payload["exc"] = redact_text(self.formatException(record.exc_info))
        return _JSON.encode(payload)


class TextFormatter(logging.Formatter):
    """Readable lines for a terminal, with the same masking."""

    def format(self, record: logging.LogRecord) -> str:
        request_id, trace_id = request_id_var.get(), trace_id_var.get()
        ids = [request_id] if request_id else []
        if trace_id:
            ids.append(f"trace={trace_id}")
        prefix = f"[{' '.join(ids)}] " if ids else ""
        extras = _extras(record)
        tail = f" {extras}" if extras else ""
        line = f"{record.levelname:<7} {record.name}: {prefix}{_message(record)}"
        if record.exc_info:
            line += "\n" + redact_text(self.formatException(record.exc_info))
        return line + tail


class BatchingStreamHandler(logging.StreamHandler):  # type: ignore[type-arg]
    """A stream handler that writes routine lines in batches.

    A service logs a line per request. Written one by one, each is a system call, and
    where the stream is a pipe (the local stack's launcher gathers its children's output)
    it also wakes the reader for every line: more CPU than nginx spends on the request.
    Here records below ``WARNING`` wait, formatted, until ``batch_bytes`` of them are
    pending or the oldest has waited ``interval`` seconds (a thread of the handler's own
    writes those), and go out in one write. A record at ``WARNING`` or above goes out at
    once, with everything pending before it, so order holds and nothing that needs
    attention is late. Pending lines are written by :meth:`flush` (``logging.shutdown``
    at exit); a process killed outright loses at most ``interval`` of routine lines, as
    nginx's buffered access log does.
    """

    def __init__(
        self, stream: Any = None, *, interval: float = 0.5, batch_bytes: int = 32 * 1024
    ) -> None:
        super().__init__(stream)
        self.interval = interval
        self.batch_bytes = batch_bytes
        self._pending: list[str] = []
        self._pending_size = 0
        self._oldest = 0.0
        self._writer: threading.Thread | None = None

    def emit(self, record: logging.LogRecord) -> None:
        try:
            line = self.format(record) + self.terminator
        except Exception:
            self.handleError(record)  # what logging's own handlers do
            return
        pending = self._pending
        pending.append(line)
        self._pending_size += len(line)
        if record.levelno >= logging.WARNING or self._pending_size >= self.batch_bytes:
            self._write_pending()
        elif len(pending) == 1:
            self._oldest = time.monotonic()
            self._start_writer()

    def flush(self) -> None:
        with self.lock:  # type: ignore[union-attr]
            self._write_pending()
            super().flush()

    def _write_pending(self) -> None:
        """Write what is pending (the caller holds the handler's lock)."""
        if not self._pending:
            return
        text = "".join(self._pending)
        self._pending.clear()
        self._pending_size = 0
        # A stream that is gone (closed, or its reader exited) takes the lines nowhere.
        with contextlib.suppress(OSError, ValueError):
            self.stream.write(text)
            self.stream.flush()

    def _start_writer(self) -> None:
        # First use, or a forked child: threads do not survive fork, and threading marks
        # the parent's as stopped in the child.
        if self._writer is not None and self._writer.is_alive():
            return
        self._writer = threading.Thread(target=self._write_late, name="log-writer", daemon=True)
        self._writer.start()

    def _write_late(self) -> None:
        while True:
            time.sleep(self.interval / 2)
            with self.lock:  # type: ignore[union-attr]
                if self._pending and time.monotonic() - self._oldest >= self.interval:
                    self._write_pending()


def configure_logging(level: str = "INFO", *, json_output: bool = True) -> None:
    """Route the root logger (and uvicorn's) through one stderr handler, which writes
    routine lines in batches (:class:`BatchingStreamHandler`)."""
    handler = BatchingStreamHandler(sys.stderr)
    # Our formatters write neither; every record would ask the OS for the process id and
    # look up the current thread for them.
    logging.logProcesses = False
    logging.logThreads = False
    handler.setFormatter(JSONFormatter() if json_output else TextFormatter())
    root = logging.getLogger()
    root.handlers[:] = [handler]
    root.setLevel(level.upper())
    for name in ("uvicorn", "uvicorn.error"):
        logger = logging.getLogger(name)
        logger.handlers[:] = []
        logger.propagate = True
    # Our own access log (shared.middleware.ServiceMiddleware) replaces uvicorn's, which
    # would print query strings that may carry download tokens.
    logging.getLogger("uvicorn.access").disabled = True
