"""Faults the fake worker can inject into its next matching call."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Fault:
    """One injected misbehaviour, used once by the next call it applies to.

    Build them with the class methods; hand them to :meth:`FakeWorker.inject`.

    Attributes:
        method: the RPC it applies to (``"WatchRun"``, ``"CreateRun"``...).
        kind: what goes wrong (``drop``, ``gap``, ``replay``, ``after_commit``, ``fail``,
            ``rate_limit``, ``not_started``).
        after_events: for watch faults, how many events are sent before it strikes.
        code: for ``fail``, the gRPC status code name.
        reason: for ``fail``, the ``ErrorInfo`` reason to attach, if any.
        retry_delay: for ``rate_limit``, the seconds of the ``RetryInfo`` it attaches.
    """

    method: str
    kind: str
    after_events: int = 0
    code: str = "UNAVAILABLE"
    reason: str | None = None
    retry_delay: float = 0.0

    @classmethod
    def drop_watch(cls, *, after_events: int = 0) -> Fault:
        """The next ``WatchRun`` sends ``after_events`` events, then fails with
        ``UNAVAILABLE`` (a dropped connection): the SDK reconnects from its cursor."""
        return cls("WatchRun", "drop", after_events=after_events)

    @classmethod
    def gap(cls, *, after_events: int = 0) -> Fault:
        """The next ``WatchRun`` skips one sequence after ``after_events`` events: the SDK
        raises :class:`~colossus_agent_client.WatchGapError`."""
        return cls("WatchRun", "gap", after_events=after_events)

    @classmethod
    def replay(cls, *, after_events: int = 1) -> Fault:
        """The next ``WatchRun`` sends its first event again after ``after_events``
        events (identical content): the SDK drops the duplicate."""
        return cls("WatchRun", "replay", after_events=after_events)

    @classmethod
    def unavailable_after_commit(cls, method: str = "CreateRun") -> Fault:
        """The next ``method`` call takes effect, then fails with ``UNAVAILABLE``: a
        mutation's outcome is unknown to the SDK
        (:class:`~colossus_agent_client.OutcomeUnknownError`)."""
        return cls(method, "after_commit")

    @classmethod
    def fail(cls, method: str, code: str = "UNAVAILABLE", reason: str | None = None) -> Fault:
        """The next ``method`` call fails before doing anything, with the gRPC status
        ``code`` (a ``grpc.StatusCode`` name) and an optional ``ErrorInfo`` ``reason``."""
        return cls(method, "fail", code=code.upper(), reason=reason)

    @classmethod
    def rate_limit(cls, *, retry_delay: float = 0.05) -> Fault:
        """The next ``CreateRun`` is refused as the worker's create rate limit refuses:
        ``RESOURCE_EXHAUSTED``, reason ``CREATE_RATE_LIMIT``, and a ``RetryInfo`` of
        ``retry_delay`` seconds. Nothing is created; ``rate_limit_retries`` retries it."""
        return cls("CreateRun", "rate_limit", retry_delay=retry_delay)

    @classmethod
    def not_started(cls) -> Fault:
        """The next ``GetRun`` answers as if the run had not started yet (``QUEUED`` at
        sequence 0), as a read that raced the run would: ``runs.wait`` then follows the
        run's watch to its end."""
        return cls("GetRun", "not_started")
