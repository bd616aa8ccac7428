"""Calls of one Redis script gathered into one ``EVALSHA`` over a
:class:`~shared.redis_pipe.RedisPipe` (:class:`BatchedScript`): the webhook intake's
record script, where a call made while another is in flight waits to go out with the
next batch. Part of the Redis pipe shortcut (``docs/performance.md``).
"""

from __future__ import annotations

import asyncio
from collections.abc import Callable, Sequence
from typing import Any

import hiredis
from redis._parsers import BaseParser
from redis.exceptions import ConnectionError as RedisConnectionError
from redis.exceptions import RedisError

from shared.redis_pipe import RedisPipe, Script

__all__ = ["BatchedScript"]


class BatchedScript:
    """Calls of one script gathered into one ``EVALSHA`` while an earlier one is in
    flight, as a database groups commits.

    The script takes its work as groups of ``keys_per_call`` keys and ``args_per_call``
    arguments (``KEYS`` and ``ARGV`` are the groups one after another) and answers a list
    of one reply per group, in order. A call made when no batch is in flight goes out at the
    end of the loop's turn, with whatever else was called in that turn; calls made while a
    batch is in flight wait for its reply, then go out together (at most ``max_calls`` a
    batch, so no batch holds Redis for long), written as soon as that reply is read,
    before its callers resume. Under load the script's own overhead in
    Redis (the call, and with an append-only file the ``MULTI``/``EXEC`` its writes are
    logged in) is paid once a batch, and a script that sums its groups' effects (counters,
    say) writes them once.

    Every batch starts with ``head_keys`` and ``head_args`` (what all its groups share,
    such as settings: sent once a batch, not once a group), then its groups. A call's
    future holds its group's reply, or what ``convert`` makes of it (a reply it refuses,
    by raising, is a :class:`~redis.exceptions.RedisError` for that call).

    A batch is atomic, like any script: when it fails (Redis out of reach, an error
    reply), every call in it raises that error, and none of its groups took effect.
    """

    def __init__(
        self,
        pipe: RedisPipe,
        script: Script,
        *,
        keys_per_call: int,
        args_per_call: int,
        head_keys: Sequence[Any] = (),
        head_args: Sequence[Any] = (),
        convert: Callable[[Any], Any] | None = None,
        max_calls: int = 256,
    ) -> None:
        if keys_per_call < 0 or args_per_call < 0 or max_calls < 1:
            raise ValueError("a batch needs max_calls >= 1 and no negative group width")
        self.pipe = pipe
        self.script = script
        self.keys_per_call = keys_per_call
        self.args_per_call = args_per_call
        self.max_calls = max_calls
        self.head_keys = list(head_keys)
        self.head_args = list(head_args)
        self.convert = convert
        self._keys: list[Any] = []
        self._args: list[Any] = []
        self._callers: list[asyncio.Future[Any]] = []
        self._busy = False  # a batch in flight, or one about to be sent
        self._loop: asyncio.AbstractEventLoop  # the batches' loop (set while busy)

    def __call__(self, keys: Sequence[Any], args: Sequence[Any]) -> asyncio.Future[Any]:
        """Run the script on one group: the future of its reply. (A future, not a
        coroutine awaiting it: one frame less for every call, and cancelling its waiter
        cancels it alike.)"""
        if len(keys) != self.keys_per_call or len(args) != self.args_per_call:
            raise ValueError(
                f"a call takes {self.keys_per_call} keys and {self.args_per_call} arguments"
            )
        # While a batch is in flight (nearly always, under load) its loop is this call's:
        # no get_running_loop(), a getpid() system call on Python 3.11.
        loop = self._loop if self._busy else asyncio.get_running_loop()
        future: asyncio.Future[Any] = loop.create_future()
        self._keys += keys
        self._args += args
        self._callers.append(future)
        if not self._busy:
            self._busy = True
            self._loop = loop
            loop.call_soon(self._send)
        return future

    def _send(self) -> None:
        """Send the next batch (or fall idle when there is none)."""
        callers = self._callers
        if not callers:
            self._busy = False
            return
        count = min(len(callers), self.max_calls)
        keys_end, args_end = count * self.keys_per_call, count * self.args_per_call
        if count == len(callers):
            keys, args, self._keys, self._args, self._callers = self._keys, self._args, [], [], []
        else:
            keys, args, callers = self._keys[:keys_end], self._args[:args_end], callers[:count]
            del self._keys[:keys_end], self._args[:args_end], self._callers[:count]
        if self.head_keys:
            keys = self.head_keys + keys
        if self.head_args:
            args = self.head_args + args
        self._submit(keys, args, callers)

    def _submit(
        self,
        keys: list[Any],
        args: list[Any],
        callers: list[asyncio.Future[Any]],
        *,
        load: bool = False,
    ) -> None:
        """Write one batch now (no task, no turn of the loop in between); through the
        pipe's coroutine when it must connect first or (``load``) load the script."""
        reply: asyncio.Future[Any] | None = None
        if not load:
            try:
                reply = self.pipe.submit("EVALSHA", self.script.sha, len(keys), *keys, *args)
            except Exception as exc:  # an argument hiredis cannot pack: the batch fails
                for future in callers:
                    if not future.done():
                        future.set_exception(exc)
                self._loop.call_soon(self._send)
                return
        if reply is None:
            reply = asyncio.ensure_future(self.pipe.run(self.script, keys, args))
        reply.add_done_callback(lambda done: self._answered(done, keys, args, callers))

    def _answered(
        self,
        done: asyncio.Future[Any],
        keys: list[Any],
        args: list[Any],
        callers: list[asyncio.Future[Any]],
    ) -> None:
        error: BaseException | None
        replies: Any = None
        if done.cancelled():
            error = RedisConnectionError("The batch was cancelled before Redis answered")
        elif (error := done.exception()) is None:
            replies = done.result()
            if isinstance(replies, hiredis.ReplyError):
                if str(replies).startswith("NOSCRIPT"):
                    # Redis restarted (or its scripts were flushed): the script did not
                    # run; the pipe's coroutine loads it and sends the batch again.
                    self._submit(keys, args, callers, load=True)
                    return
                error = BaseParser.parse_error(str(replies))  # type: ignore[no-untyped-call]
            elif not isinstance(replies, list) or len(replies) != len(callers):
                error = RedisError(f"{self.script.sha}: expected {len(callers)} replies")
        # The next batch is written before this one's callers run: Redis works on it
        # while they write their answers, instead of waiting for all of them.
        self._send()
        if error is not None:
            for future in callers:
                if not future.done():
                    future.set_exception(error)
        else:
            convert = self.convert
            for future, reply in zip(callers, replies, strict=True):
                if future.done():  # a caller that was cancelled
                    continue
                try:
                    future.set_result(reply if convert is None else convert(reply))
                except Exception as exc:  # a reply convert refuses
                    future.set_exception(
                        RedisError(f"{self.script.sha}: unexpected reply {reply!r} ({exc!r})")
                    )
