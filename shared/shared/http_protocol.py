"""uvicorn's httptools protocol, with a response's head and body sent in one write.

uvicorn writes the status line and headers when the app sends ``http.response.start``,
and the body when it sends ``http.response.body``: two ``send`` system calls for every
answer. Behind the gateway each one also wakes nginx, which reads the head, then waits to
be woken again for the body. On a virtual machine that second wake-up cost about as much
as a sequential create spent in SQLite (~50 µs of a ~600 µs request).

:class:`HttpProtocol` gives each connection a transport that keeps what is written and
sends it as one write when the response is complete, when the connection closes, or at
the end of the loop's current turn, whichever comes first. A plain response (head and
body sent together, as every ``Response`` does) becomes one write; a streamed one still
goes out chunk by chunk, each within the turn of the loop that wrote it.
"""

from __future__ import annotations

import asyncio
from typing import Any, cast

from uvicorn.protocols.http.httptools_impl import HttpToolsProtocol

__all__ = ["CoalescingTransport", "HttpProtocol"]


class CoalescingTransport:
    """A stream transport whose writes wait (see the module docstring) until :meth:`flush`,
    :meth:`close` or the end of the loop's turn; everything else is the wrapped
    transport's."""

    __slots__ = ("_loop", "_pending", "_scheduled", "transport")

    def __init__(self, transport: asyncio.Transport, loop: asyncio.AbstractEventLoop) -> None:
        self.transport = transport
        self._loop = loop
        self._pending: list[bytes] = []
        self._scheduled = False

    def write(self, data: bytes | bytearray | memoryview) -> None:
        if not data:
            return
        self._pending.append(bytes(data))
        if not self._scheduled:
            # A chunk of a streamed answer (or a 100 Continue) is not held past this turn.
            self._scheduled = True
            self._loop.call_soon(self._flush_scheduled)

    def _flush_scheduled(self) -> None:
        self._scheduled = False
        self.flush()

    def flush(self) -> None:
        """Send what is pending, as one write."""
        pending = self._pending
        if not pending:
            return
        data = pending[0] if len(pending) == 1 else b"".join(pending)
        pending.clear()
        if not self.transport.is_closing():
            self.transport.write(data)

    def writelines(self, chunks: list[bytes]) -> None:
        for chunk in chunks:
            self.write(chunk)

    def close(self) -> None:
        self.flush()
        self.transport.close()

    def abort(self) -> None:
        self._pending.clear()
        self.transport.abort()

    def is_closing(self) -> bool:
        return self.transport.is_closing()

    def __getattr__(self, name: str) -> Any:
        # get_extra_info, set_protocol, pause_reading, ... (not on the hot path)
        return getattr(self.transport, name)


class HttpProtocol(HttpToolsProtocol):
    """``uvicorn.run(http=HttpProtocol)``: httptools, with coalesced writes."""

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        # Flow control (pause/resume reading, the write-buffer callbacks) stays on the real
        # transport; requests and answers see the coalescing one.
        self.transport = cast(asyncio.Transport, CoalescingTransport(self.transport, self.loop))

    def on_response_complete(self) -> None:
        transport = self.transport
        if isinstance(transport, CoalescingTransport):
            transport.flush()  # the answer's head and body, in one write
        super().on_response_complete()
