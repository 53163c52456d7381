"""uvicorn's HTTP/1.1 protocol (h11) with a deadline for every request's head.

uvicorn closes a kept-alive connection that stays idle, but not one that sends nothing, or half a
request line and a few header lines, and then waits: ten thousand such connections (the red team
held 10,616) keep as many sockets and buffers for ever. Here each connection must deliver a request's
whole head (request line and headers) within ``head_timeout_s`` of opening, or of its previous
response; else it is closed. A request's body and a response (an event stream) are not timed.
"""

from __future__ import annotations

import asyncio

from uvicorn.protocols.http.h11_impl import H11Protocol


class HeadDeadlineProtocol(H11Protocol):
    head_timeout_s = 10.0
    _head_deadline: asyncio.TimerHandle | None = None

    def connection_made(self, transport: asyncio.Transport) -> None:  # type: ignore[override]
        super().connection_made(transport)
        self._arm_head_deadline()

    def connection_lost(self, exc: Exception | None) -> None:
        self._disarm_head_deadline()
        super().connection_lost(exc)

    def handle_events(self) -> None:
        super().handle_events()
        if self.cycle is not None and not self.cycle.response_complete:  # a whole head arrived
            self._disarm_head_deadline()

    def on_response_complete(self) -> None:
        self._arm_head_deadline()  # first: a pipelined request handled below disarms it again
        super().on_response_complete()

    def _arm_head_deadline(self) -> None:
        self._disarm_head_deadline()
        self._head_deadline = self.loop.call_later(self.head_timeout_s, self._head_too_slow)

    def _disarm_head_deadline(self) -> None:
        if self._head_deadline is not None:
            self._head_deadline.cancel()
            self._head_deadline = None

    def _head_too_slow(self) -> None:
        self._head_deadline = None
        waiting_for_head = self.cycle is None or self.cycle.response_complete
        if waiting_for_head and not self.transport.is_closing():
            self.transport.close()


def with_head_timeout(seconds: float) -> type[HeadDeadlineProtocol]:
    """The protocol class for ``uvicorn.run(http=...)`` with a head deadline of ``seconds``."""
    return type("HeadDeadlineProtocol", (HeadDeadlineProtocol,), {"head_timeout_s": seconds})
