"""asyncio forms of the informer's waits and events."""

from __future__ import annotations

import asyncio
import functools
from collections.abc import Sequence
from types import TracebackType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from ._native import Event, Factory, Informer, WaitReport


class EventStream:
    """An informer's events as an asynchronous iterator (see
    ``Informer.events``). Events are queued without bound while nobody
    awaits them; ``close()`` (or leaving ``async with``) stops them."""

    def __init__(
        self,
        informer: Informer,
        *,
        resync: float = 0.0,
        filter: str | None = None,
        changes: str | Sequence[str] | None = None,
    ) -> None:
        self._loop = asyncio.get_running_loop()
        self._queue: asyncio.Queue[Event] = asyncio.Queue()
        self._handler = informer.on_event(self._push, resync=resync, filter=filter, changes=changes)

    def _push(self, event: Event) -> None:
        # Called on a handler thread: hand the event to the loop's thread.
        try:
            self._loop.call_soon_threadsafe(self._queue.put_nowait, event)
        except RuntimeError:  # the loop is closed: nobody is listening
            self._handler.remove()

    def __aiter__(self) -> EventStream:
        return self

    async def __anext__(self) -> Event:
        return await self._queue.get()

    def close(self) -> None:
        """Stops the events; those already queued can still be read."""
        self._handler.remove()

    async def __aenter__(self) -> EventStream:
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()


async def wait_for_sync(waiter: Informer | Factory, timeout: float) -> None:
    """``waiter.wait_for_sync(timeout)`` on a worker thread."""
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, waiter.wait_for_sync, timeout)


async def wait_until(waiter: Informer | Factory, goal: str, which: Any, **kwargs: Any) -> WaitReport:
    """``waiter.wait_until(goal, which, **kwargs)`` on a worker thread:
    ``which`` is an informer's keys, or a factory's informers."""
    loop = asyncio.get_running_loop()
    return await loop.run_in_executor(None, functools.partial(waiter.wait_until, goal, which, **kwargs))
