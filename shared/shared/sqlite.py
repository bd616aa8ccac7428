"""An aiosqlite connection that runs SQLite calls on the event loop's thread.

aiosqlite hands every call to a thread of its own and back: two thread switches and a wake
of the event loop, which cost more than the call itself does on a local file (tens of
microseconds). :class:`InlineConnection` runs each call directly instead, with SQLite's
busy timeout at zero, so no call ever waits on the event loop's thread. A call that finds
the database locked by another connection (a writer taking the write lock while another
holds it; a reader during WAL recovery) fails at once with ``SQLITE_BUSY`` without having
changed anything, and is then run again on the connection's own thread, which waits there
up to the real busy timeout while the event loop goes on serving other requests.
"""

from __future__ import annotations

import asyncio
import logging
import sqlite3
import threading
import time
from collections.abc import Callable
from contextlib import suppress
from typing import Any

import aiosqlite

logger = logging.getLogger(__name__)

_BUSY_CODES = frozenset({sqlite3.SQLITE_BUSY, sqlite3.SQLITE_LOCKED})
RESTART_FRAMES = 4_000
"""Frames (pages) a WAL may keep after a passive checkpoint before :class:`WalCheckpointer`
has the next transaction finish the copying, so that the log starts over: about 16 MB,
four times SQLite's own threshold (its index of the log stays one hash table: one per
4,096 frames)."""


def _is_busy(exc: sqlite3.OperationalError) -> bool:
    code = getattr(exc, "sqlite_errorcode", None)
    if code is not None:
        return (code & 0xFF) in _BUSY_CODES
    return "locked" in str(exc) or "busy" in str(exc)  # pragma: no cover (Python < 3.11)


class InlineConnection(aiosqlite.Connection):
    """See the module's docstring. ``wait_ms`` is the busy timeout of the waiting retry.

    Calls never overlap: while a call runs on the connection's thread (even one whose
    caller was cancelled and stopped waiting), every later call is queued behind it on that
    thread instead of running on the loop's, so the SQLite connection is never used by two
    threads at once (closing it under a running statement would crash the process).
    """

    def __init__(
        self, connector: Callable[[], sqlite3.Connection], iter_chunk_size: int, wait_ms: int
    ) -> None:
        super().__init__(connector, iter_chunk_size)
        self.wait_ms = wait_ms
        self.waited = 0  # calls that found the database busy and were retried on the thread
        self._on_thread = 0  # calls handed to the thread and not finished there yet

    async def _execute(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        if not self._running or self._connection is None:
            raise ValueError("Connection closed")
        if self._on_thread:
            return await self._run_on_thread(fn, *args, **kwargs)
        try:
            return fn(*args, **kwargs)
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                raise
        self.waited += 1
        return await self._run_on_thread(self._waiting, fn, args, kwargs)

    async def _run_on_thread(self, fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
        loop = asyncio.get_running_loop()
        self._on_thread += 1

        def run() -> Any:
            try:
                return fn(*args, **kwargs)
            finally:
                with suppress(RuntimeError):  # the loop is closed: nothing waits any more
                    loop.call_soon_threadsafe(self._finished_on_thread)

        return await super()._execute(run)  # type: ignore[no-untyped-call]

    def _finished_on_thread(self) -> None:
        self._on_thread -= 1

    def _waiting(self, fn: Callable[..., Any], args: Any, kwargs: Any) -> Any:
        """On the connection's thread: ``fn`` with the real busy timeout."""
        conn = self._conn
        conn.execute(f"PRAGMA busy_timeout={self.wait_ms:d}")
        try:
            return fn(*args, **kwargs)
        finally:
            conn.execute("PRAGMA busy_timeout=0")


def inline_connect(database: str, *, wait_ms: int = 10_000, **kwargs: Any) -> InlineConnection:
    """An :class:`InlineConnection` to ``database`` (for ``create_async_engine``'s
    ``async_creator``); awaiting it opens the file."""

    def connector() -> sqlite3.Connection:
        conn: sqlite3.Connection = sqlite3.connect(
            database, timeout=0, check_same_thread=False, **kwargs
        )
        conn.execute("PRAGMA busy_timeout=0")
        return conn

    connection = InlineConnection(connector, 64, wait_ms)
    connection._thread.daemon = True
    return connection


class WalCheckpointer:
    """WAL checkpoints on a thread of their own, every ``interval`` seconds.

    SQLite's automatic checkpoint runs inside the commit that takes the log past 1,000
    pages: on the event loop's thread here (calls run inline), where copying the log back
    into the database and syncing both stalled every request for up to tens of
    milliseconds, once every hundred or so writes. With this running, the service's
    connections turn theirs off (``PRAGMA wal_autocheckpoint=0``) and this thread runs
    ``PRAGMA wal_checkpoint(PASSIVE)`` instead, which never waits for a lock and never
    holds up readers or writers. The thread waits in SQLite's code with the GIL released.

    A passive checkpoint alone does not keep the log short under a steady stream of
    writes: the log starts over from its beginning only when a writer begins with all of
    it copied back, and writes keep landing while this thread copies, so that never
    happens and the log grows without end (hundreds of megabytes in a minute of creates;
    every read then searches a longer index of it, and creates ran at half speed). So
    when a pass leaves more than ``restart_frames`` frames in the log, the thread sets
    :attr:`long_log`, and the next transaction to begin on one of the service's
    connections first runs a passive checkpoint itself (see
    :func:`shared.db.start_background_checkpoints`): on the event loop's thread, where no
    other write can land meanwhile, it copies the little this thread left (the last
    pass's worth), so the writer after it starts the log over. Holding writers back
    instead (``RESTART`` from this thread) made them queue and back off in SQLite's busy
    handler, which put seconds on the slowest of 16 concurrent creates.
    """

    def __init__(
        self,
        database: str,
        *,
        interval: float = 0.2,
        restart_frames: int = RESTART_FRAMES,
    ) -> None:
        self.database = database
        self.interval = interval
        self.restart_frames = restart_frames
        self.long_log = False  # a transaction beginning should finish the copying
        self.runs = 0  # checkpoints run by the thread
        self.inline_runs = 0  # and by transactions beginning (checkpoint_inline)
        self.failures = 0  # checkpoints that failed (logged once a minute at most)
        self.busy = 0  # passes that found a lock they need taken for a moment
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="wal-checkpoint", daemon=True)
        self._last_warning = 0.0

    def start(self) -> WalCheckpointer:
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=10)

    def _loop(self) -> None:
        connection: sqlite3.Connection | None = None
        try:
            while not self._stop.wait(self.interval):
                if self.long_log:
                    continue  # left to the next transaction (a pass now would get in its way)
                try:
                    if connection is None:
                        connection = sqlite3.connect(self.database, timeout=0, isolation_level=None)
                    _busy, frames, _copied = connection.execute(
                        "PRAGMA wal_checkpoint(PASSIVE)"
                    ).fetchone()
                    self.runs += 1
                    if frames < 0:
                        # Opened before the database turned to WAL mode: this connection
                        # never notices, and its checkpoints do nothing. Open another.
                        connection.close()
                        connection = None
                    elif frames > self.restart_frames:
                        self.long_log = True
                except sqlite3.OperationalError as exc:
                    if _is_busy(exc):
                        self.busy += 1
                    else:
                        self._failed(exc)
                    # Busy: another connection held a lock the checkpoint needs for a
                    # moment (it never waits for one); the next pass goes on.
                except sqlite3.Error as exc:
                    self._failed(exc)
        finally:
            if connection is not None:
                connection.close()

    def _failed(self, exc: sqlite3.Error) -> None:
        """Counted, and logged once a minute at most."""
        self.failures += 1
        now = time.monotonic()
        if now - self._last_warning > 60:
            self._last_warning = now
            logger.warning("WAL checkpoint of %s failed: %s", self.database, exc)

    def checkpoint_inline(self, connection: sqlite3.Connection) -> None:
        """When the log is long: a passive checkpoint on ``connection`` (with no
        transaction open), on the caller's thread. One that could not copy the whole log
        (a lock taken for a moment, a reader still on an older snapshot) leaves the
        request standing for the next transaction."""
        if not self.long_log:
            return
        self.inline_runs += 1
        try:
            busy, frames, copied = connection.execute("PRAGMA wal_checkpoint(PASSIVE)").fetchone()
        except sqlite3.OperationalError as exc:
            if not _is_busy(exc):
                self._failed(exc)
            return
        if not busy and copied == frames:
            self.long_log = False
