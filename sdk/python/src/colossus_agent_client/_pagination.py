"""Listing: follow ``next_page_token`` through short and empty pages, sync and async.

``PageCursor`` is the shared, I/O-free part; the two pagers only fetch.
"""

from __future__ import annotations

from collections.abc import AsyncIterator, Awaitable, Callable, Iterator

from ._errors import ProtocolViolationError
from ._models import Run, RunPage


class PageCursor:
    """Tracks the continuation token and refuses a worker that stops making progress."""

    __slots__ = ("done", "token")

    def __init__(self, token: str = "") -> None:
        self.token = token
        self.done = False

    def accept(self, page: RunPage) -> None:
        """Records one page. An empty page that repeats the same token would loop forever."""
        if page.next_page_token and page.next_page_token == self.token and not page.runs:
            raise ProtocolViolationError(
                "ListRuns returned an empty page with the same continuation token",
                reason="PAGE_NO_PROGRESS",
            )
        self.token = page.next_page_token
        self.done = not page.next_page_token


class RunPager:
    """Iterates every matching run, fetching pages lazily. ``pages()`` yields whole pages.

    Returned by :meth:`Runs.list` (never constructed directly). Each :class:`RunPage`
    carries ``next_page_token``; pass it to ``runs.list(page_token=...)`` (same filter) to
    resume a listing later. Iterating raises what :meth:`Runs.list` documents.
    """

    def __init__(self, fetch: Callable[[str], RunPage], page_token: str = "") -> None:
        self._fetch = fetch
        self._start = page_token

    def pages(self) -> Iterator[RunPage]:
        """Yields each page in turn (short and empty pages included).

        Returns:
            An iterator of :class:`RunPage`; it stops after the page without a token.

        Raises:
            ProtocolViolationError: the worker repeated an empty page with the same token.
            TransportError, ApiError: a page could not be fetched (see :meth:`Runs.list`).
        """
        cursor = PageCursor(self._start)
        while not cursor.done:
            page = self._fetch(cursor.token)
            cursor.accept(page)
            yield page

    def __iter__(self) -> Iterator[Run]:
        for page in self.pages():
            yield from page.runs


class AsyncRunPager:
    """The async twin of :class:`RunPager`: ``async for run in pager``.

    Returned by :meth:`AsyncRuns.list`; same pages, tokens and errors.
    """

    def __init__(self, fetch: Callable[[str], Awaitable[RunPage]], page_token: str = "") -> None:
        self._fetch = fetch
        self._start = page_token

    async def pages(self) -> AsyncIterator[RunPage]:
        """See :meth:`RunPager.pages`: ``async for page in pager.pages()``."""
        cursor = PageCursor(self._start)
        while not cursor.done:
            page = await self._fetch(cursor.token)
            cursor.accept(page)
            yield page

    async def _runs(self) -> AsyncIterator[Run]:
        async for page in self.pages():
            for run in page.runs:
                yield run

    def __aiter__(self) -> AsyncIterator[Run]:
        return self._runs()
