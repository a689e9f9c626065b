"""Helpers over the watch: wait for a run's outcome, or read only its output text.

Both follow the run through a :class:`Watch` (or :class:`AsyncWatch`), so they keep every
rule of the watch (S1): each event once and in order, a gap or altered replay fails, a
clean close counts only once ``GetRun`` confirms it, retryable failures reconnect from
the last delivered event. Nothing here reads the stream a second way (S11).
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Iterator
from types import TracebackType
from typing import Generic, TypeVar

from ._errors import ClientClosedError
from ._models import OutputDelta, Run
from ._watch import AsyncWatch, Watch


def _confirmed(final: Run | None, run_id: str) -> Run:
    # A watch that ended by itself holds the run its closing GetRun confirmed; one that
    # ended without it was closed under us, which only the client's close does.
    if final is None:
        raise ClientClosedError(f"the client was closed while waiting for run {run_id}")
    return final


def wait_sync(watch: Watch) -> Run:
    """Drains ``watch`` to its end and returns the run as the worker confirmed it."""
    with watch:
        for _ in watch:
            pass
        return _confirmed(watch.final_run, watch.run_id)


async def wait_async(watch: AsyncWatch) -> Run:
    """The asyncio twin of :func:`wait_sync`."""
    async with watch:
        async for _ in watch:
            pass
        return _confirmed(watch.final_run, watch.run_id)


W = TypeVar("W", Watch, AsyncWatch)


class _TextStreamBase(Generic[W]):
    """What both text streams share: the watch they read and what it tells of the run."""

    _watch: W

    @property
    def run_id(self) -> str:
        """The run whose text this is."""
        return self._watch.run_id

    @property
    def last_sequence(self) -> int:
        """The sequence of the last event read (the resume cursor of a later watch)."""
        return self._watch.last_sequence

    @property
    def final_run(self) -> Run | None:
        """The ended run, once the iteration ended by itself; ``None`` before."""
        return self._watch.final_run


class TextStream(_TextStreamBase[Watch]):
    """The run's output text, one piece per ``OutputDelta`` event, in order.

    Created by ``client.runs.text_stream(run_id)``. Iterate it for ``str`` pieces; it
    ends after the run's terminal event. Every other event is skipped, with the same
    delivery rules and errors as :class:`Watch`. Use it as a context manager (or call
    :meth:`close`) to stop early; the run keeps going. Once the iteration ends by itself,
    :attr:`final_run` is the ended run (its status and result).

    Args:
        watch: the :class:`Watch` it reads (``runs.text_stream`` makes both).
    """

    def __init__(self, watch: Watch) -> None:
        self._watch = watch

    def __iter__(self) -> Iterator[str]:
        """The text pieces, in order; iterating again continues where it stopped."""
        for event in self._watch:
            if isinstance(event.payload, OutputDelta):
                yield event.payload.text

    def __enter__(self) -> TextStream:
        """Returns the stream itself; leaving the block closes it."""
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Closes the stream (the run keeps going)."""
        self.close()

    def close(self) -> None:
        """Stops the underlying watch; safe to call more than once."""
        self._watch.close()


class AsyncTextStream(_TextStreamBase[AsyncWatch]):
    """The asyncio twin of :class:`TextStream`: ``async for text in stream``.

    Args:
        watch: the :class:`AsyncWatch` it reads (``runs.text_stream`` makes both).
    """

    def __init__(self, watch: AsyncWatch) -> None:
        self._watch = watch

    async def __aiter__(self) -> AsyncIterator[str]:
        """The text pieces, in order; iterating again continues where it stopped."""
        async for event in self._watch:
            if isinstance(event.payload, OutputDelta):
                yield event.payload.text

    async def __aenter__(self) -> AsyncTextStream:
        """Returns the stream itself; leaving the block closes it."""
        return self

    async def __aexit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        """Closes the stream (the run keeps going)."""
        await self.close()

    async def close(self) -> None:
        """Stops the underlying watch; safe to call more than once."""
        await self._watch.close()
