"""The server case catalogue: small async functions, each with one right answer.

A case is registered with ``@case(id, requirements, ...)``; its ID starts with
``server.`` and the group is the second part (``server.watch.resume-after-cursor`` is in
``watch``). A case raises ``CaseFailed`` (through ``expect``) when the worker got it
wrong. ``needs`` names the manifest capabilities it needs (a worker without one reports
the case as not applicable); ``alone`` cases stop, kill or restart the worker, so they run
one at a time on a worker of their own instead of the shared one.
"""

from __future__ import annotations

import fnmatch
from collections.abc import Awaitable, Callable, Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .context import CaseContext

CaseFunction = Callable[["CaseContext"], Awaitable[None]]


class CaseFailed(AssertionError):
    """The worker's behaviour differs from the one right answer of the case."""


def expect(condition: object, message: str) -> None:
    if not condition:
        raise CaseFailed(message)


def expect_equal(actual: Any, wanted: Any, what: str) -> None:
    if actual != wanted:
        raise CaseFailed(f"{what}: got {actual!r}, want {wanted!r}")


@dataclass(frozen=True)
class ServerCase:
    id: str
    title: str
    requirements: tuple[str, ...]
    run: CaseFunction
    needs: tuple[str, ...] = ()
    alone: bool = False
    tool: str = ""  # an external program the case needs (h2spec); missing means skipped

    @property
    def group(self) -> str:
        return self.id.split(".")[1]


CATALOGUE: list[ServerCase] = []


def case(
    case_id: str,
    requirements: Sequence[str],
    title: str,
    *,
    needs: Sequence[str] = (),
    alone: bool = False,
    tool: str = "",
) -> Callable[[CaseFunction], CaseFunction]:
    """Registers the decorated coroutine function as the server case ``server.<case_id>``."""

    def register(function: CaseFunction) -> CaseFunction:
        full = f"server.{case_id}"
        if any(c.id == full for c in CATALOGUE):
            raise ValueError(f"two server cases are named {full}")
        CATALOGUE.append(ServerCase(full, title, tuple(requirements), function, tuple(needs), alone, tool))
        return function

    return register


def select(cases: Iterable[ServerCase], patterns: Sequence[str]) -> list[ServerCase]:
    """Cases matching any glob (or ID prefix) of ``patterns``; all when there are none."""
    if not patterns:
        return list(cases)
    return [
        c
        for c in cases
        if any(
            fnmatch.fnmatch(c.id, p) or c.id.startswith(p.rstrip(".") + ".") or c.id == p for p in patterns
        )
    ]
