"""The bearer grammar and an opaque holder that never shows its value (C5)."""

from __future__ import annotations

import re
from typing import Final

from .._errors import CredentialError
from .._reasons import LocalReason

_BEARER_RE: Final = re.compile(r"[\x21-\x7e]{32,256}")


class Bearer:
    """Holds a validated bearer. ``repr``/``str`` never reveal it; it cannot be pickled."""

    __slots__ = ("__value",)

    def __init__(self, value: object) -> None:
        if not isinstance(value, str) or _BEARER_RE.fullmatch(value) is None:
            # The value itself is never echoed, not even in part.
            raise CredentialError(
                "the bearer is malformed: it must be 32-256 visible ASCII characters",
                reason=LocalReason.BEARER_MALFORMED,
            )
        self.__value = value

    def authorization_metadata(self) -> tuple[str, str]:
        """The ``authorization`` header pair for one call (its ``repr`` is redacted)."""
        return AuthorizationHeader(("authorization", "Bearer " + self.__value))

    def reveal(self) -> str:
        """The raw value, for the SDK's own redaction tests and for providers only."""
        return self.__value

    def __repr__(self) -> str:
        return "Bearer(<redacted>)"

    __str__ = __repr__

    def __reduce__(self) -> str:
        raise TypeError("a Bearer cannot be pickled")

    def __eq__(self, other: object) -> bool:
        return NotImplemented

    __hash__ = None  # type: ignore[assignment]


class AuthorizationHeader(tuple[str, str]):
    """The ``("authorization", "Bearer ...")`` pair, built per call for grpcio.

    A plain tuple would print the bearer wherever it is shown as a local variable or an
    attribute (``pytest --showlocals``, rich tracebacks, debuggers); this one shows
    ``<redacted>`` instead, and cannot be pickled.
    """

    __slots__ = ()

    def __repr__(self) -> str:
        return "('authorization', '<redacted>')"

    __str__ = __repr__

    def __reduce__(self) -> str:
        raise TypeError("an authorization header cannot be pickled")


class CallMetadata(tuple[tuple[str, str], ...]):
    """Per-call metadata whose ``repr`` redacts the authorization value (see above)."""

    __slots__ = ()

    def __repr__(self) -> str:
        return "(" + ", ".join(repr(pair) for pair in self) + ")"

    __str__ = __repr__

    def __reduce__(self) -> str:
        raise TypeError("call metadata cannot be pickled")
