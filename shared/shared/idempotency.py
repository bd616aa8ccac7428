"""``Idempotency-Key``: a retried write returns the first answer instead of running twice.

:class:`IdempotencyMiddleware` sits inside the authentication middleware (it keys records
by the caller). The rules:

- Only an **authenticated** request (any authenticated Starlette user, such as a
  :class:`~shared.auth.Principal`; keyed by its ``identity``) that carries the
  header and uses **POST, PUT, PATCH or DELETE** is recorded. Everything else streams
  through untouched: GETs (the ``zenml`` client sends a fresh key on every request),
  unauthenticated calls such as ``/login`` or webhook intake, and requests without a key.
- The key must be a UUID, else **422** in the request-validation shape
  ``{"detail": [{"loc": ["header", "Idempotency-Key"], "msg": …, "type": "uuid_parsing"}]}``
  (the reference answers 500 ``text/plain``). This is checked on every method of an
  authenticated request, **GET included**: the header has one meaning wherever it is sent,
  and a client that sends garbage on a read would send it on its writes too (the reference
  fails on any method, so no compatible client depends on it). Unauthenticated requests
  are not checked: a third-party webhook sender may use the header with its own format.
- A record belongs to one principal (the token's subject), method, path and key; another
  caller reusing the key runs its own request.
- The first request claims the record in Redis (``SET NX``, TTL :data:`RECORD_TTL`) and
  runs; a **2xx** answer up to :data:`MAX_STORED_BODY` bytes is stored (status,
  ``Content-Type``, body) for :data:`RECORD_TTL` seconds. A replay answers from the record
  with the header ``Idempotent-Replayed: true`` and does not run the handler. An error
  answer or a larger body is not stored and the claim is released, so the client may retry.
- A duplicate that arrives while the first is still running waits up to ``wait`` seconds
  for its answer, then gets **409** ``["EntityExistsError", "A request with this
  Idempotency-Key is still being processed."]``.
- The same key with a different request (body or query string) is refused with **422**
  (type ``idempotency_key_reused``), whether the first is done or still running.
- Redis unreachable while claiming or waiting: **503** ``ServiceUnavailable`` before the
  handler runs, so a retried create can never run twice. (Authenticated requests already
  fail closed on the revocation check when Redis is down.)
- Once a handler has answered 2xx its effects are committed, so the claim is never
  released after that (except for an oversized body): if storing the answer fails or the
  request is cancelled mid-response, duplicates get 409 until the claim expires rather
  than running again.
- An answer its handler marks ``Cache-Control: no-store`` carries a secret (a token, an
  API key, an activation token). Without a ``cipher`` it is not stored (the claim is
  released, so a retry runs again). With a ``cipher`` (a :class:`~cryptography.fernet.
  MultiFernet`) its body is stored **encrypted** and a replay decrypts it and answers
  with ``Cache-Control: no-store`` again; the plaintext never reaches Redis. A stored
  answer that no configured key decrypts any more (the key was dropped within the
  window) is **409** ``EntityExistsError``, never a second run.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import logging
import secrets
import time
import uuid
from dataclasses import dataclass, field
from typing import Any

from cryptography.fernet import InvalidToken, MultiFernet
from pydantic import TypeAdapter, ValidationError
from redis.asyncio import Redis
from redis.exceptions import RedisError
from starlette.authentication import BaseUser
from starlette.datastructures import Headers
from starlette.responses import Response
from starlette.types import ASGIApp, Message, Receive, Scope, Send

from shared.errors import Conflict, PlatformError, RequestValidationFailed, ServiceUnavailable
from shared.redis import Keys
from shared.redis_pipe import RedisPipe, Script, pipe_of
from shared.responses import error_response

__all__ = ["read_body"]

logger = logging.getLogger(__name__)

HEADER = "Idempotency-Key"
REPLAYED_HEADER = "Idempotent-Replayed"
RECORDED_METHODS = frozenset({"POST", "PUT", "PATCH", "DELETE"})
RECORD_TTL = 300
"""Seconds a claim, and then a stored answer, is kept (the reference's window)."""
MAX_STORED_BODY = 1024 * 1024
"""Answers with a larger body are not stored (and their claim is released)."""

_HEADER_BYTES = HEADER.lower().encode()
_UUID = TypeAdapter(uuid.UUID)

# Compare-and-set on the claim this request wrote, so a request that outlived its claim
# (a handler slower than the TTL) cannot overwrite or delete another request's record.
_STORE = Script("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
    redis.call('SET', KEYS[1], ARGV[2], 'EX', ARGV[3])
    return 1
end
return 0
""")
_RELEASE = Script("""
if redis.call('GET', KEYS[1]) == ARGV[1] then
    return redis.call('DEL', KEYS[1])
end
return 0
""")


class IdempotencyKeyReused(RequestValidationFailed):
    def __init__(self) -> None:
        super().__init__(
            [
                {
                    "loc": ["header", HEADER],
                    "msg": "This Idempotency-Key was already used for a different request.",
                    "type": "idempotency_key_reused",
                }
            ]
        )


class StillProcessing(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "A request with this Idempotency-Key is still being processed.",
            headers={"Retry-After": "1"},
        )


class AnswerUnreadable(Conflict):
    def __init__(self) -> None:
        super().__init__(
            "The stored answer of this Idempotency-Key can no longer be decrypted; "
            "retry with a new key."
        )


class RecordsUnavailable(ServiceUnavailable):
    def __init__(self) -> None:
        super().__init__(
            "Idempotency records cannot be reached; retry later.", headers={"Retry-After": "1"}
        )


def parse_key(values: list[bytes]) -> uuid.UUID:
    """The ``Idempotency-Key`` header's UUID, or :class:`RequestValidationFailed`."""
    loc = ["header", HEADER]
    if len({v.strip() for v in values}) > 1:
        raise RequestValidationFailed.single(loc, "Give one Idempotency-Key.", "value_error")
    try:
        return _UUID.validate_python(values[0].decode("latin-1").strip())
    except ValidationError as exc:
        error = exc.errors(include_url=False, include_input=False)[0]
        raise RequestValidationFailed.single(loc, error["msg"], error["type"]) from None


def record_key(keys: Keys, subject: str, method: str, path: str, key: uuid.UUID) -> str:
    """The Redis key of one record (hashed: subjects and paths may be long or odd)."""
    digest = hashlib.sha256("\0".join((subject, method, path, str(key))).encode()).hexdigest()
    return keys("idempotency", digest)


@dataclass(frozen=True)
class Record:
    """A claim (``status`` is ``None``) or a stored answer."""

    fingerprint: str
    status: int | None = None
    content_type: str | None = None
    body: bytes = b""
    owner: str = ""
    sealed: bool = False
    """The body is a Fernet token of the answer (a ``no-store`` answer)."""

    def encode(self) -> bytes:
        # One JSON line of metadata, then the raw body: no base64 inflation.
        meta = {
            "fingerprint": self.fingerprint,
            "status": self.status,
            "content_type": self.content_type,
            "owner": self.owner,
            "sealed": self.sealed,
        }
        return json.dumps(meta, separators=(",", ":")).encode() + b"\n" + self.body

    @classmethod
    def decode(cls, raw: bytes) -> Record | None:
        meta_line, _, body = raw.partition(b"\n")
        try:
            meta: dict[str, Any] = json.loads(meta_line)
            return cls(
                fingerprint=str(meta["fingerprint"]),
                status=meta["status"],
                content_type=meta["content_type"],
                body=body,
                owner=str(meta.get("owner", "")),
                sealed=bool(meta.get("sealed", False)),
            )
        except (ValueError, KeyError, TypeError):
            return None

    def response(self, cipher: MultiFernet | None) -> Response:
        """The replayed answer; :class:`AnswerUnreadable` when a sealed body cannot be
        decrypted with ``cipher``."""
        assert self.status is not None
        headers = {REPLAYED_HEADER: "true"}
        if self.content_type is not None:
            headers["Content-Type"] = self.content_type
        body = self.body
        if self.sealed:
            if cipher is None:
                raise AnswerUnreadable()
            try:
                body = cipher.decrypt(body)
            except InvalidToken:
                raise AnswerUnreadable() from None
            headers["Cache-Control"] = "no-store"
        return Response(body, status_code=self.status, headers=headers)


@dataclass
class _Recorder:
    """Follows the answer as it streams to the client and keeps a copy of a 2xx one."""

    limit: int
    keep_secrets: bool = False
    status: int | None = None
    content_type: str | None = None
    chunks: list[bytes] = field(default_factory=list)
    size: int = 0
    oversized: bool = False
    """Not kept: too large, or a secret that cannot be kept encrypted."""
    secret: bool = False
    finished: bool = False

    @property
    def succeeded(self) -> bool:
        return self.status is not None and 200 <= self.status < 300

    def observe(self, message: Message) -> None:
        if message["type"] == "http.response.start":
            self.status = int(message["status"])
            headers = Headers(raw=list(message.get("headers", [])))
            self.content_type = headers.get("content-type")
            # An answer its handler marks no-store carries a secret (a token, an API key,
            # an activation token): kept only encrypted, never in plaintext.
            if "no-store" in headers.get("cache-control", "").lower():
                self.secret = True
                self.oversized = not self.keep_secrets
        elif message["type"] == "http.response.body":
            self.finished = not message.get("more_body", False)
            if self.succeeded and not self.oversized:
                chunk: bytes = message.get("body", b"")
                self.size += len(chunk)
                if self.size > self.limit:
                    self.oversized = True
                    self.chunks.clear()
                else:
                    self.chunks.append(chunk)


async def read_body(receive: Receive) -> bytes | None:
    """The whole request body, or ``None`` when the client went away first."""
    chunks: list[bytes] = []
    while True:
        message = await receive()
        if message["type"] == "http.disconnect":
            return None
        chunks.append(message.get("body", b""))
        if not message.get("more_body", False):
            return b"".join(chunks)


def _fingerprint(scope: Scope, body: bytes) -> str:
    digest = hashlib.sha256(scope.get("query_string", b""))
    digest.update(b"\0")
    digest.update(body)
    return digest.hexdigest()


class IdempotencyMiddleware:
    """Replays the stored answer of an authenticated write retried with the same
    ``Idempotency-Key`` (see the module docstring for the rules).

    Reads ``redis`` and ``keys`` from the request state (the lifespan yields them) and the
    caller from ``scope["user"]``, so it must run inside the authentication middleware.
    """

    def __init__(
        self,
        app: ASGIApp,
        *,
        ttl: int = RECORD_TTL,
        max_stored_body: int = MAX_STORED_BODY,
        wait: float = 2.0,
        poll_interval: float = 0.05,
        cipher: MultiFernet | None = None,
    ) -> None:
        """``cipher`` lets secret-carrying (``no-store``) answers be kept encrypted and
        replayed; without it they are not kept."""
        self.app = app
        self.cipher = cipher
        self.ttl = ttl
        self.max_stored_body = max_stored_body
        self.wait = wait
        self.poll_interval = poll_interval

    async def __call__(self, scope: Scope, receive: Receive, send: Send) -> None:
        user = scope.get("user") if scope["type"] == "http" else None
        values = (
            [v for n, v in scope["headers"] if n == _HEADER_BYTES]
            if isinstance(user, BaseUser) and user.is_authenticated
            else []
        )
        if not values:
            await self.app(scope, receive, send)
            return
        assert isinstance(user, BaseUser)
        try:
            key = parse_key(values)
        except RequestValidationFailed as exc:
            await self._error(exc, scope, receive, send)
            return
        if scope["method"] not in RECORDED_METHODS:
            await self.app(scope, receive, send)
            return

        body = await read_body(receive)
        if body is None:
            return
        state = scope.get("state", {})
        redis: Redis | None = state.get("redis")
        keys: Keys | None = state.get("keys")
        if redis is None or keys is None:
            raise RuntimeError("IdempotencyMiddleware needs state.redis and state.keys")
        # The client's pipe: every keyed write claims and stores.
        pipe = pipe_of(redis)
        name = record_key(keys, user.identity, scope["method"], scope["path"], key)
        claim = Record(_fingerprint(scope, body), owner=secrets.token_hex(8))
        try:
            stored = await self._claim_or_wait(pipe, name, claim)
        except (RedisError, OSError):
            logger.warning("idempotency records unreachable", exc_info=True)
            await self._error(RecordsUnavailable(), scope, receive, send)
            return
        except PlatformError as exc:
            await self._error(exc, scope, receive, send)
            return
        if stored is not None:
            logger.info("idempotent replay", extra={"path": scope["path"], "key": str(key)})
            try:
                replay = stored.response(self.cipher)
            except AnswerUnreadable as exc:
                await self._error(exc, scope, receive, send)
                return
            await replay(scope, receive, send)
            return
        await self._run(scope, _replaying(body, receive), send, pipe, name, claim)

    async def _claim_or_wait(self, pipe: RedisPipe, name: str, claim: Record) -> Record | None:
        """``None`` once this request holds the claim; the stored answer to replay; or
        raises 409 (still running past the wait) or 422 (key used for another request)."""
        deadline = time.monotonic() + self.wait
        while True:
            if await pipe("SET", name, claim.encode(), "NX", "EX", self.ttl):
                return None
            raw = await pipe("GET", name)
            existing = Record.decode(raw) if raw is not None else None
            if raw is not None and existing is None:
                # Not ours to interpret (a foreign or damaged value): start afresh.
                await pipe("DEL", name)
                continue
            if existing is None:
                continue  # released or expired between SET and GET: claim again
            if existing.fingerprint != claim.fingerprint:
                raise IdempotencyKeyReused()
            if existing.status is not None:
                return existing
            if time.monotonic() >= deadline:
                raise StillProcessing()
            await asyncio.sleep(self.poll_interval)

    async def _run(
        self, scope: Scope, receive: Receive, send: Send, pipe: RedisPipe, name: str, claim: Record
    ) -> None:
        recorder = _Recorder(self.max_stored_body, keep_secrets=self.cipher is not None)
        stored = False

        async def recording_send(message: Message) -> None:
            nonlocal stored
            recorder.observe(message)
            if recorder.finished and recorder.succeeded and not recorder.oversized and not stored:
                # Stored before the last chunk goes out: a client that retries after
                # reading the answer always finds it.
                stored = True
                await self._store(pipe, name, claim, recorder)
            await send(message)

        try:
            await self.app(scope, receive, recording_send)
        except Exception:
            if not recorder.succeeded:
                await self._release(pipe, name, claim)
            raise
        if not recorder.succeeded or recorder.oversized:
            await self._release(pipe, name, claim)

    async def _store(self, pipe: RedisPipe, name: str, claim: Record, recorder: _Recorder) -> None:
        body = b"".join(recorder.chunks)
        sealed = recorder.secret and self.cipher is not None
        if sealed:
            assert self.cipher is not None
            body = self.cipher.encrypt(body)
        record = Record(
            claim.fingerprint,
            status=recorder.status,
            content_type=recorder.content_type,
            body=body,
            sealed=sealed,
        )
        try:
            await pipe.run(_STORE, [name], [claim.encode(), record.encode(), self.ttl])
        except (RedisError, OSError):
            # The claim stays until it expires: a duplicate gets 409, never a second run.
            logger.warning("could not store an idempotent answer", exc_info=True)

    async def _release(self, pipe: RedisPipe, name: str, claim: Record) -> None:
        try:
            await pipe.run(_RELEASE, [name], [claim.encode()])
        except (RedisError, OSError):
            logger.warning("could not release an idempotency claim", exc_info=True)

    @staticmethod
    async def _error(exc: PlatformError, scope: Scope, receive: Receive, send: Send) -> None:
        await error_response(exc, scope.get("state", {}).get("request_id"))(scope, receive, send)


def _replaying(body: bytes, receive: Receive) -> Receive:
    """A ``receive`` that hands the app the body already read, then the real channel
    (so disconnects still arrive)."""
    delivered = False

    async def replay() -> Message:
        nonlocal delivered
        if not delivered:
            delivered = True
            return {"type": "http.request", "body": body, "more_body": False}
        return await receive()

    return replay
