"""Small judgements several case modules share."""

from __future__ import annotations

from ..catalogue import CaseFailed
from ..wire import RpcError

NEVER = frozenset({"INTERNAL", "UNKNOWN", "OK"})


def expect_error(
    error: RpcError | None, code: str, reason: str | None = None, what: str = "the call"
) -> RpcError:
    """The call failed with exactly this status code (and ErrorInfo reason, when given)."""
    if error is None:
        raise CaseFailed(f"{what} succeeded; want {code}" + (f"/{reason}" if reason else ""))
    if error.code != code or (reason is not None and error.reason != reason):
        raise CaseFailed(f"{what}: got {error}; want {code}" + (f"/{reason}" if reason else ""))
    if reason is not None and error.domain != "colossus.api.v1alpha1":
        raise CaseFailed(f"{what}: ErrorInfo domain {error.domain!r}, want colossus.api.v1alpha1")
    return error
