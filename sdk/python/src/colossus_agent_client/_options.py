"""Keyword-only option objects for the two placements and the read-retry policy."""

from __future__ import annotations

import os
import random
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass, field
from pathlib import Path

from ._credentials import CredentialProvider
from ._errors import InvalidArgumentError
from ._models import DeploymentMode
from ._transport._descriptor import is_opaque_id, is_pin


def _invalid(field: str, message: str) -> InvalidArgumentError:
    """A malformed option: FIELD_INVALID naming it, as in every SDK (S9)."""
    return InvalidArgumentError(message, reason="FIELD_INVALID", metadata={"field": field})


DEFAULT_MAX_RESPONSE_BYTES = 4 * 1024 * 1024
"""The SDK's own inbound cap before ``GetServerInfo`` (and its ceiling afterwards)."""

TraceContextProvider = Callable[[], "tuple[str, str | None] | None"]
"""Returns ``(traceparent, tracestate)`` for the current span, or ``None``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class RetryPolicy:
    """Bounded, jittered exponential backoff for reads and watch reconnects.

    Only ``UNAVAILABLE`` is retried, and only for reads (``GetServerInfo``, ``GetRun``,
    ``ListRuns``, ``WatchRun``, ``DownloadArtifact``). Mutations are never retried.

    Two budgets bound the retries, and whichever runs out first ends them: the number of
    attempts that reached the worker and failed, and the time since the first failure
    (``max_elapsed``). While the worker cannot be reached at all (restarting, connection
    refused), the SDK waits for the channel to come back within ``max_elapsed`` instead of
    spending attempts, so a worker restart of a few seconds ends neither a read nor a watch.

    Raises:
        InvalidArgumentError: a negative backoff, fewer than one attempt, a multiplier
            below 1, or a ``max_elapsed`` that is not positive.
    """

    max_attempts: int = 5
    """Total attempts of one read, including the first (1 disables retries). For a watch:
    consecutive reconnects allowed without a newly delivered event."""
    max_elapsed: float | None = 30.0
    """Seconds after the first failure (for a watch: after the first failure since the
    last delivered event) during which retries may start; ``None`` for no time limit."""
    initial_backoff: float = 0.1
    """Seconds before the first retry."""
    max_backoff: float = 5.0
    """Ceiling of one delay, in seconds."""
    multiplier: float = 2.0
    """Growth of the ceiling per attempt."""

    def __post_init__(self) -> None:
        if self.max_attempts < 1 or self.initial_backoff < 0 or self.max_backoff < 0:
            raise _invalid("retry", "RetryPolicy values must be positive")
        if self.multiplier < 1:
            raise _invalid("retry.multiplier", "RetryPolicy.multiplier must be at least 1")
        if self.max_elapsed is not None and not self.max_elapsed > 0:
            raise _invalid("retry.max_elapsed", "RetryPolicy.max_elapsed must be positive or None")

    def remaining(self, first_failure: float, now: float) -> float | None:
        """Seconds left of the ``max_elapsed`` budget.

        Args:
            first_failure: when the first failure happened (``time.monotonic()``).
            now: the current ``time.monotonic()``.

        Returns:
            The seconds left; ``None`` when there is no time limit, ``0.0`` when spent.
        """
        if self.max_elapsed is None:
            return None
        return max(0.0, first_failure + self.max_elapsed - now)

    def delays(self, rng: random.Random | None = None) -> Iterator[float]:
        """Yields one "full jitter" delay per retry: uniform in [0, ceiling].

        Args:
            rng: the random source (the ``random`` module when omitted), for tests.

        Returns:
            An iterator of ``max_attempts - 1`` delays in seconds; the ceiling starts at
            ``initial_backoff``, grows by ``multiplier`` and never exceeds ``max_backoff``.
        """
        pick = (rng or random).uniform
        ceiling = self.initial_backoff
        for _ in range(self.max_attempts - 1):
            yield pick(0.0, min(ceiling, self.max_backoff))
            ceiling *= self.multiplier


NO_RETRY = RetryPolicy(max_attempts=1)


def _check_identity(instance_id: str, pin: str) -> None:
    if not is_opaque_id(instance_id):
        raise _invalid(
            "expected_instance_id", "expected_instance_id must be 1-64 characters of [A-Za-z0-9_-]"
        )
    if not is_pin(pin):
        raise _invalid(
            "expected_certificate_sha256",
            "expected_certificate_sha256 must be 64 lower-case hex characters",
        )


@dataclass(frozen=True, kw_only=True, slots=True)
class ClientOptions:
    """Behaviour shared by both placements (the fields every options object has)."""

    timeout: float | None = 30.0
    """Default per-call timeout in seconds (``None``: no deadline). Watches use
    ``idle_timeout`` instead and have no overall deadline."""
    connect_timeout: float = 10.0
    """Seconds allowed for the pre-flight handshake, channel readiness and GetServerInfo."""
    retry: RetryPolicy = field(default_factory=RetryPolicy)
    """Policy for reads and watch reconnects."""
    max_response_bytes: int = DEFAULT_MAX_RESPONSE_BYTES
    """The largest inbound message this client accepts; lowered to the worker's advertised
    response cap when that is smaller."""
    trace_context: TraceContextProvider | None = None
    """Optional source of W3C trace context, sent as ``traceparent``/``tracestate``
    metadata on every call and in ``CreateRunRequest.trace_context``."""


@dataclass(frozen=True, kw_only=True, slots=True)
class DaemonOptions(ClientOptions):
    """Connect to an installed shared worker (daemon placement).

    The four inputs are independent: the discovery folder (readiness hints only), the
    expected instance ID and certificate SHA-256 from enrolment, and a credential provider
    for the bearer. The expected values must come from trusted configuration, never from
    re-reading the discovery folder.

    Raises:
        TypeError: ``public_api_dir`` is neither a ``str`` nor path-like.
        InvalidArgumentError: a malformed expected instance ID or certificate SHA-256.
    """

    public_api_dir: Path | str | os.PathLike[str]
    """The worker's ``--public-api-dir`` (owner-only). A ``str`` or path-like is accepted
    and ``~`` is expanded; the attribute always holds a :class:`~pathlib.Path`."""
    expected_instance_id: str
    """The instance ID enrolment printed."""
    expected_certificate_sha256: str
    """The certificate SHA-256 enrolment printed (64 lower-case hex)."""
    credentials: CredentialProvider
    """Where the bearer comes from; asked only after every trust check passed."""
    expected_deployment_mode: DeploymentMode = DeploymentMode.SHARED_DAEMON
    """What ``GetServerInfo`` must report."""

    def __post_init__(self) -> None:
        if not isinstance(self.public_api_dir, str | os.PathLike):
            raise TypeError(
                "public_api_dir must be a str or os.PathLike, "
                f"not {type(self.public_api_dir).__name__}"
            )
        folder = Path(os.path.expanduser(os.fspath(self.public_api_dir)))
        object.__setattr__(self, "public_api_dir", folder)
        _check_identity(self.expected_instance_id, self.expected_certificate_sha256)


@dataclass(frozen=True, kw_only=True, slots=True)
class SidecarOptions(ClientOptions):
    """Start and supervise a private worker (sidecar placement).

    The SDK starts ``executable`` with a bootstrap pipe, issues a one-use bearer for
    ``application_id`` with exactly the given grants, and stops the worker on close.

    Raises:
        InvalidArgumentError: a malformed ``application_id`` or ``max_restarts`` outside
            0-3.
    """

    executable: Path | str
    """The worker program, e.g. ``colossus-reference-worker``; found on ``PATH`` if bare."""
    application_id: str
    """The application the one-use bearer is issued to."""
    scopes: Sequence[str] = ("runs:execute", "runs:read", "runs:control", "prompts:respond")
    """The exact scopes to grant."""
    roles: Sequence[str] = ("default",)
    """Logical roles to grant (empty denies all)."""
    tools: Sequence[str] = ()
    """Tools to grant (empty denies all)."""
    state_dir: Path | None = None
    """An existing directory owned by this user with mode 0700. ``None`` creates a private
    temporary one that is removed on close."""
    extra_args: Sequence[str] = ()
    """Extra non-secret arguments placed before the bootstrap flags."""
    startup_timeout: float = 30.0
    """Seconds allowed for the bootstrap reply."""
    max_restarts: int = 3
    """Unexpected exits restarted at most this many times over the client's life."""
    restart_backoff: RetryPolicy = field(
        default_factory=lambda: RetryPolicy(max_attempts=4, initial_backoff=0.5, max_backoff=5.0)
    )
    """Delays between restarts."""
    shutdown_grace: float = 5.0
    """Seconds the worker gets to exit after the bootstrap pipe closes before the process
    group is sent SIGTERM, then SIGKILL."""
    inherit_stderr: bool = False
    """Let the worker write to this process's stderr (otherwise it goes to /dev/null)."""

    def __post_init__(self) -> None:
        if not self.application_id or not is_opaque_id(self.application_id):
            raise _invalid(
                "application_id", "application_id must be 1-64 characters of [A-Za-z0-9_-]"
            )
        if not 0 <= self.max_restarts <= 3:
            raise _invalid("max_restarts", "max_restarts must be between 0 and 3")
