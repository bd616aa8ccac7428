"""A pipelined lane to Redis for the commands a service sends on every request.

redis-py's asyncio client pays, for every command, a connection checkout from its pool, a
health check, a task per timed write and a reply parsed by coroutines in Python. For the
few commands that every request sends (the revocation check, the idempotency claim, the
webhook intake's script) that is most of what a request spends on Redis. A
:class:`RedisPipe` sends them over one connection of its own instead: hiredis packs the
commands and parses the replies (in C), and the commands of concurrent callers go out
together::

    pipe = pipe_of(redis)
    values = await pipe("MGET", *keys)
    result = await pipe.run(SCRIPT, keys, args)  # a Script: EVALSHA, loaded when unknown

A pipe of its own can also carry Redis's client-side caching, for a cache of values read
under some key prefixes (see :class:`RedisPipe`'s ``tracking``). Calls of one script can be
gathered into one ``EVALSHA`` over a pipe: :class:`shared.redis_batch.BatchedScript`.

A shortcut past redis-py's public API (its error-reply parser, its pool's connection
settings), measured and listed in ``docs/performance.md``; :data:`DIRECT` switches it off.
"""

from __future__ import annotations

import asyncio
import hashlib
import weakref
from collections import deque
from collections.abc import Callable, Iterable, Sequence
from typing import Any, cast

import hiredis
from redis._parsers import BaseParser
from redis.asyncio import Redis
from redis.asyncio.connection import Connection, UnixDomainSocketConnection
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import NoScriptError, RedisError
from redis.exceptions import TimeoutError as RedisTimeoutError

__all__ = ["DIRECT", "RedisPipe", "Script", "close_pipe_of", "pipe_of"]

DIRECT = True
"""Whether pipes made from now on use connections of their own. ``False`` (a service's or
the worker's ``--no-redis-pipe``) sends every command through redis-py, with the same
replies, and leaves client-side caching off."""


class Script:
    """A Lua script and its SHA1, the name ``EVALSHA`` calls it by."""

    __slots__ = ("sha", "source")

    def __init__(self, source: str) -> None:
        self.source = source
        self.sha = hashlib.sha1(source.encode()).hexdigest()  # noqa: S324  (Redis's script id)


def _pack(command: tuple[Any, ...]) -> bytes:
    """One command in Redis's wire format (hiredis's packer, in C)."""
    packed: bytes = hiredis.pack_command(command)
    return packed


_LOST: list[Any] = [b"invalidate", None]
"""What a tracking connection's loss means to its cache: as if every key had changed."""


class _Replies(asyncio.Protocol):
    """One Redis connection: replies are parsed as they arrive (hiredis) and handed, in
    order, to the futures of the commands written before them; ``on_idle`` is called when
    no reply is awaited any more."""

    def __init__(
        self,
        on_idle: Callable[[], None],
        reader: hiredis.Reader,
        on_push: Callable[[list[Any]], None] | None = None,
    ) -> None:
        self.on_idle = on_idle
        self.reader = reader
        self.on_push = on_push
        self.tracking = False  # Redis tells this connection of changes (see RedisPipe)
        self.waiting: deque[tuple[asyncio.Future[Any], float]] = deque()  # (caller, sent at)
        self.transport: asyncio.Transport | None = None
        self.lost: RedisError | None = None
        # Its loop, looked up once: on Python 3.11 every get_running_loop() is a getpid()
        # system call.
        self.loop = asyncio.get_running_loop()
        self.closed: asyncio.Future[None] = self.loop.create_future()

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        # A stream transport (uvloop's are not asyncio.Transport subclasses).
        self.transport = cast(asyncio.Transport, transport)

    def data_received(self, data: bytes) -> None:
        self.reader.feed(data)
        try:
            while (reply := self.reader.gets()) is not False:
                if type(reply) is hiredis.PushNotification and self.on_push is not None:
                    self.on_push(reply)  # RESP3 out-of-band data: no command's reply
                    continue
                future = self.waiting.popleft()[0]
                if not future.done():  # a caller that was cancelled still had its slot
                    future.set_result(reply)
        except (hiredis.ProtocolError, IndexError) as exc:  # garbage, or a reply nobody asked
            self.fail(RedisConnectionError(f"Redis sent an unexpected reply: {exc!r}"))
            return
        if not self.waiting:
            self.on_idle()

    def connection_lost(self, exc: Exception | None) -> None:
        self.fail(RedisConnectionError(f"Connection to Redis lost ({exc!r})"))
        if not self.closed.done():
            self.closed.set_result(None)

    def send(self, data: bytes, futures: Iterable[asyncio.Future[Any]], now: float) -> None:
        """Write ``data`` (one command or several) whose replies go to ``futures``, in order."""
        assert self.transport is not None
        self.transport.write(data)
        self.waiting.extend([(future, now) for future in futures])

    def fail(self, error: RedisError) -> None:
        """Every caller still waiting learns ``error``; the connection is dropped."""
        if self.lost is None:
            self.lost = error
            if self.tracking and self.on_push is not None:
                self.on_push(_LOST)  # changes from now on go untold: forget everything
        while self.waiting:
            future = self.waiting.popleft()[0]
            if not future.done():
                future.set_exception(self.lost)
        if self.transport is not None:
            self.transport.abort()
        self.on_idle()  # what was queued meanwhile learns the error too


class RedisPipe:
    """Sends the commands of many concurrent callers over one connection of its own,
    pipelined: each caller gets its own reply (or error) as soon as it arrives. While a
    write's replies are awaited, new commands wait for them and then go out together (as
    a database groups commits): alone, a command is written at once; under load, each
    write carries many, and the writes (system calls, which cost this process and Redis
    more than the commands) grow fewer.

    Replies come as Redis sent them, with none of redis-py's per-command conversions:
    ``bytes`` (``str`` when the client decodes responses), ``int``, ``None`` and lists of
    them (RESP2 shapes); ``SET`` answers ``b"OK"``, not ``True``. An error reply raises the
    exception redis-py raises for it (a :class:`~redis.exceptions.ResponseError` such as
    :class:`~redis.exceptions.NoScriptError`) in its caller only.

    With ``tracking`` prefixes (a pipe of its own, not :func:`pipe_of`'s), the connection
    speaks RESP3 and turns on Redis's client-side caching in broadcast mode for them
    (``CLIENT TRACKING ON BCAST PREFIX …``): whenever any client changes a key under
    one of them (or it expires, or is evicted), Redis sends the key's name here, and
    ``on_invalidate`` is called with the names (``None``: every key, after ``FLUSHALL``
    or when the connection is lost). Redis sends these before it answers the command that
    made the change, so a cache dropping what it is told can keep values read through the
    pipe while :attr:`tracking` is true, and never serve one older than a change its
    writer has seen acknowledged. Servers without client-side caching (before Redis 6)
    leave :attr:`tracking` false.

    It connects like ``redis`` (host and port or Unix socket, username, password,
    database, client name, timeouts from its pool); connections it does not speak (TLS,
    credential providers, other connection classes), or any when :data:`DIRECT` is off,
    send each command through ``redis`` itself, with the same raw replies. A lost
    connection fails the commands waiting on it (``ConnectionError``, a ``RedisError``)
    and the next command connects again; a reply later than the pool's
    ``socket_timeout`` drops the connection (``TimeoutError``).
    """

    def __init__(
        self,
        redis: Redis,
        *,
        tracking: Sequence[str] = (),
        on_invalidate: Callable[[list[str] | None], None] | None = None,
    ) -> None:
        if tracking and on_invalidate is None:
            raise ValueError("tracking needs on_invalidate")
        self._tracking = tuple(tracking)
        self._on_invalidate = on_invalidate
        pool = redis.connection_pool
        self._options: dict[str, Any] = dict(pool.connection_kwargs)
        self.direct = (
            DIRECT
            and pool.connection_class in (Connection, UnixDomainSocketConnection)
            and self._options.get("credential_provider") is None
        )
        """Whether commands go over the pipe's own connection (else through redis-py)."""
        # Not ``redis`` itself: pipe_of keeps pipes by their client, weakly.
        self._fallback = Redis(connection_pool=pool)
        self._fallback.response_callbacks = {}  # raw replies, like the direct path's
        self._timeout: float = self._options.get("socket_timeout") or 5.0
        self._connect_timeout: float = self._options.get("socket_connect_timeout") or 5.0
        self._protocol: _Replies | None = None
        self._connecting = asyncio.Lock()
        # Commands waiting for the next write, and their callers.
        self._commands: list[bytes] = []
        self._callers: list[asyncio.Future[Any]] = []
        self._scheduled = False
        self._watching = False

    @property
    def tracking(self) -> bool:
        """Whether the current connection is connected and tracking its prefixes."""
        protocol = self._protocol
        return protocol is not None and protocol.lost is None and protocol.tracking

    def _pushed(self, push: list[Any]) -> None:
        if len(push) != 2 or push[0] not in (b"invalidate", "invalidate"):
            return  # not a key invalidation (no other pushes are asked for)
        assert self._on_invalidate is not None
        names = push[1]
        if names is None:
            self._on_invalidate(None)
        else:
            self._on_invalidate([n.decode() if isinstance(n, bytes) else n for n in names])

    async def __call__(self, *command: Any) -> Any:
        """Send ``command`` (``"MGET", key, …``) and return its reply."""
        if not self.direct:
            return await self._fallback.execute_command(*command)  # type: ignore[no-untyped-call]
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            protocol = await self._connect()
        # Inline rather than a helper coroutine: this runs on every request.
        future: asyncio.Future[Any] = protocol.loop.create_future()
        self._commands.append(_pack(command))
        self._callers.append(future)
        if not protocol.waiting:
            self._schedule()
        reply = await future
        if isinstance(reply, hiredis.ReplyError):
            # The exception redis-py's own parsers raise for this reply.
            raise BaseParser.parse_error(str(reply))  # type: ignore[no-untyped-call]
        return reply

    def submit(self, *command: Any) -> asyncio.Future[Any] | None:
        """Send ``command`` from code that cannot await: written at once when no reply is
        awaited (else with the next write, as :meth:`__call__` would). The future of its
        reply as Redis sent it: an error reply is a ``hiredis.ReplyError`` value, not
        raised. ``None`` when it cannot go out this way (not connected yet or any more, or
        a connection the pipe does not speak): await :meth:`__call__`, which connects."""
        protocol = self._protocol
        if not self.direct or protocol is None or protocol.lost is not None:
            return None
        future: asyncio.Future[Any] = protocol.loop.create_future()
        self._commands.append(_pack(command))
        self._callers.append(future)
        if not protocol.waiting:
            self._flush()
        return future

    async def run(self, script: Script, keys: Sequence[Any] = (), args: Sequence[Any] = ()) -> Any:
        """Run ``script`` (``EVALSHA``) and return its reply."""
        try:
            return await self("EVALSHA", script.sha, len(keys), *keys, *args)
        except NoScriptError:
            # Redis restarted (or its scripts were flushed): a script refused as unknown
            # did not run, so load it and send again.
            await self("SCRIPT", "LOAD", script.source)
            return await self("EVALSHA", script.sha, len(keys), *keys, *args)

    async def aclose(self) -> None:
        """Drop the connection (a later command connects again)."""
        protocol, self._protocol = self._protocol, None
        if protocol is not None:
            protocol.fail(RedisConnectionError("Connection to Redis closed"))
            await protocol.closed

    def _schedule(self) -> None:
        """Flush at the end of this turn of the loop (once), when commands are queued."""
        if self._callers and not self._scheduled:
            self._scheduled = True
            asyncio.get_running_loop().call_soon(self._flush)

    def _flush(self) -> None:
        """Writes every queued command in one write."""
        self._scheduled = False
        if not self._callers:
            return  # written already (by submit)
        commands, self._commands = self._commands, []
        callers, self._callers = self._callers, []
        protocol = self._protocol
        if protocol is None or protocol.lost is not None:
            error = protocol.lost if protocol else None
            for future in callers:
                if not future.done():
                    future.set_exception(error or RedisConnectionError("Not connected to Redis"))
            return
        loop = protocol.loop
        try:
            protocol.send(b"".join(commands), callers, loop.time())
        except Exception as exc:  # the transport closed before telling the protocol
            error = RedisConnectionError(f"Cannot write to Redis: {exc!r}")
            for future in callers:
                if not future.done():
                    future.set_exception(error)
            protocol.fail(error)
            return
        if not self._watching:
            self._watching = True
            loop.call_later(self._timeout, self._watch)

    def _watch(self) -> None:
        """While replies are awaited: drop the connection if the oldest is overdue."""
        self._watching = False
        protocol = self._protocol
        if protocol is None or protocol.lost is not None or not protocol.waiting:
            return
        loop = asyncio.get_running_loop()
        overdue = loop.time() - protocol.waiting[0][1] - self._timeout
        if overdue >= 0:
            protocol.fail(RedisTimeoutError(f"Redis did not answer within {self._timeout:g}s"))
            return
        self._watching = True
        loop.call_later(-overdue, self._watch)

    async def _connect(self) -> _Replies:
        async with self._connecting:
            if self._protocol is not None and self._protocol.lost is None:
                return self._protocol  # another caller connected meanwhile
            protocol: _Replies | None = None
            try:
                async with asyncio.timeout(self._connect_timeout):
                    protocol = await self._open()
                    await self._hello(protocol)
            except (OSError, TimeoutError, RedisError) as exc:
                if protocol is not None:
                    protocol.fail(RedisConnectionError("Connection to Redis abandoned"))
                    await protocol.closed
                if isinstance(exc, RedisError):
                    raise
                raise RedisConnectionError(f"Error connecting to Redis: {exc!r}") from exc
            self._protocol = protocol
            return protocol

    def _protocol_factory(self) -> _Replies:
        options = self._options
        if options.get("decode_responses"):
            reader = hiredis.Reader(
                encoding=options.get("encoding", "utf-8"),
                errors=options.get("encoding_errors", "strict"),
            )
        else:
            reader = hiredis.Reader()
        on_push = self._pushed if self._tracking else None
        return _Replies(on_idle=self._schedule, reader=reader, on_push=on_push)

    async def _open(self) -> _Replies:
        options = self._options
        loop = asyncio.get_running_loop()
        if "path" in options:
            _, protocol = await loop.create_unix_connection(self._protocol_factory, options["path"])
        else:
            host, port = options.get("host", "localhost"), options.get("port", 6379)
            _, protocol = await loop.create_connection(self._protocol_factory, host, port)
        return protocol

    async def _hello(self, protocol: _Replies) -> None:
        """What redis-py sends on a new connection that matters here: credentials,
        database, client name."""
        options = self._options
        hello: list[tuple[Any, ...]] = []
        if options.get("password"):
            user = (options["username"],) if options.get("username") else ()
            hello.append(("AUTH", *user, options["password"]))
        if options.get("db"):
            hello.append(("SELECT", options["db"]))
        if options.get("client_name"):
            hello.append(("CLIENT", "SETNAME", options["client_name"]))
        for command in hello:
            reply = await self._first(protocol, command)
            if isinstance(reply, hiredis.ReplyError):
                raise RedisConnectionError(f"Redis refused the connection: {reply}")
        if not self._tracking:
            return
        # Pushes need RESP3; a server without it or without tracking still serves the
        # commands (tracking stays off).
        if isinstance(await self._first(protocol, ("HELLO", 3)), hiredis.ReplyError):
            return
        prefixes = [arg for prefix in self._tracking for arg in ("PREFIX", prefix)]
        reply = await self._first(protocol, ("CLIENT", "TRACKING", "ON", "BCAST", *prefixes))
        protocol.tracking = not isinstance(reply, hiredis.ReplyError)

    @staticmethod
    async def _first(protocol: _Replies, command: tuple[Any, ...]) -> Any:
        """Send one command on a connection not yet in use and await its reply."""
        loop = asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        protocol.send(_pack(command), [future], loop.time())
        return await future


_pipes: weakref.WeakKeyDictionary[Redis, RedisPipe] = weakref.WeakKeyDictionary()


def pipe_of(redis: Redis) -> RedisPipe:
    """The pipe that every user of ``redis`` shares, made at the first call: one
    connection carries all the per-request commands of a process. Whoever closes the
    client closes its pipe with :func:`close_pipe_of`."""
    pipe = _pipes.get(redis)
    if pipe is None:
        pipe = _pipes[redis] = RedisPipe(redis)
    return pipe


async def close_pipe_of(redis: Redis) -> None:
    """Close the pipe of ``redis`` (if it has one); a later :func:`pipe_of` makes another."""
    pipe = _pipes.pop(redis, None)
    if pipe is not None:
        await pipe.aclose()
