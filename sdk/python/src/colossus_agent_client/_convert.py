"""Translation between the generated messages and the public models."""

from __future__ import annotations

import dataclasses
from datetime import UTC, datetime, timedelta
from enum import Enum
from typing import Any, TypeVar

from google.protobuf import timestamp_pb2

from . import _models as m
from .api.v1alpha1 import artifacts_pb2, runs_pb2, system_pb2

_E = TypeVar("_E", bound=Enum)


def _enum(cls: type[_E], value: int) -> _E:
    try:
        return cls(value)
    except ValueError:
        return cls(0)


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


def _time(msg: timestamp_pb2.Timestamp, present: bool) -> datetime | None:
    if not present:
        return None
    return _EPOCH + timedelta(seconds=msg.seconds, microseconds=msg.nanos // 1000)


def server_info(pb: system_pb2.ServerInfo) -> m.ServerInfo:
    lim = pb.limits
    return m.ServerInfo(
        instance_id=pb.instance_id,
        api_package=pb.api_package,
        api_version=pb.api_version,
        api_major=pb.api_major,
        deployment_mode=_enum(m.DeploymentMode, pb.deployment_mode),
        capabilities=frozenset(pb.capabilities),
        server_version=pb.server_version,
        limits=m.Limits(
            max_active_runs=lim.max_active_runs,
            max_active_runs_per_application=lim.max_active_runs_per_application,
            create_rate=m.TokenBucket(lim.create_rate.refill_per_second, lim.create_rate.burst),
            create_rate_per_application=m.TokenBucket(
                lim.create_rate_per_application.refill_per_second,
                lim.create_rate_per_application.burst,
            ),
            max_watches=lim.max_watches,
            max_watches_per_application=lim.max_watches_per_application,
            max_concurrent_list_runs=lim.max_concurrent_list_runs,
            max_concurrent_list_runs_per_application=lim.max_concurrent_list_runs_per_application,
            max_connections=lim.max_connections,
            max_concurrent_streams_per_connection=lim.max_concurrent_streams_per_connection,
            max_request_bytes=lim.max_request_bytes,
            max_response_bytes=lim.max_response_bytes,
            max_header_bytes=lim.max_header_bytes,
            max_events_per_run=lim.max_events_per_run,
            reserved_lifecycle_events=lim.reserved_lifecycle_events,
            max_input_parts=lim.max_input_parts,
            max_input_bytes=lim.max_input_bytes,
            max_turns=lim.max_turns,
            default_max_turns=lim.default_max_turns,
            max_list_page_size=lim.max_list_page_size,
            max_list_status_filters=lim.max_list_status_filters,
            max_artifact_bytes=lim.max_artifact_bytes,
            max_artifact_chunk_bytes=lim.max_artifact_chunk_bytes,
            handshake_timeout_seconds=lim.handshake_timeout.ToTimedelta().total_seconds(),
            max_connection_age_seconds=lim.max_connection_age.ToTimedelta().total_seconds(),
        ),
    )


def interaction(pb: runs_pb2.Interaction) -> m.Interaction:
    kind = pb.WhichOneof("kind")
    prompt = approval = None
    if kind == "prompt":
        prompt = m.Prompt(question=pb.prompt.question, choices=tuple(pb.prompt.choices))
    elif kind == "approval":
        target = pb.approval.WhichOneof("target")
        approval = m.Approval(
            action_class=_enum(m.ActionClass, pb.approval.action_class),
            binding=pb.approval.binding,
            display_category=pb.approval.display_category if target == "display_category" else None,
            origin=pb.approval.origin if target == "origin" else None,
        )
    return m.Interaction(
        interaction_id=pb.interaction_id,
        prompt=prompt,
        approval=approval,
        create_time=_time(pb.create_time, pb.HasField("create_time")),
    )


def run_result(pb: runs_pb2.RunResult) -> m.RunResult:
    return m.RunResult(
        output_text=pb.output_text,
        plan=m.PlanResult(pb.plan.plan_id, pb.plan.revision, _enum(m.PlanStatus, pb.plan.status))
        if pb.HasField("plan")
        else None,
        research=m.ResearchResult(
            report=pb.research.report,
            citations=tuple(
                m.Citation(_enum(m.EvidenceLane, c.lane), c.label, c.url)
                for c in pb.research.citations
            ),
        )
        if pb.HasField("research")
        else None,
        failure=m.RunFailure(pb.failure.code, pb.failure.message)
        if pb.HasField("failure")
        else None,
    )


def run(pb: runs_pb2.Run) -> m.Run:
    return m.Run(
        run_id=pb.run_id,
        session_id=pb.session_id,
        mode=_enum(m.RunMode, pb.mode),
        role=pb.role,
        status=_enum(m.RunStatus, pb.status),
        last_sequence=pb.last_sequence,
        create_time=_time(pb.create_time, pb.HasField("create_time")),
        update_time=_time(pb.update_time, pb.HasField("update_time")),
        idempotency_key=pb.idempotency_key,
        end_user_id=pb.end_user_id if pb.HasField("end_user_id") else None,
        max_turns=pb.max_turns,
        pending_interaction=interaction(pb.pending_interaction)
        if pb.HasField("pending_interaction")
        else None,
        result=run_result(pb.result) if pb.HasField("result") else None,
    )


def _mutable_twin(cls: type, names: tuple[str, ...]) -> type:
    """A plain class with exactly the slots of the frozen slots dataclass ``cls``.

    The watch builds its two hottest models (``RunEvent``, ``OutputDelta``) as an instance
    of this twin, fills the slots with ordinary attribute stores, then switches the
    instance's class to ``cls``: about half the cost of the generated frozen
    ``__init__``, whose ``object.__setattr__`` per field costs as much as the rest of
    the conversion. The twin's memory layout equals the model's, which is what lets
    CPython accept the switch, and the result is the same immutable instance (``==``,
    ``hash``, ``repr``, pickling and assignment errors all come from ``cls``). This is
    sound only while ``cls`` has exactly these fields, in this order, and no
    ``__post_init__``; the checks below fail the import if that ever changes.
    """
    fields = tuple(f.name for f in dataclasses.fields(cls))
    if (
        fields != names
        or hasattr(cls, "__post_init__")
        or tuple(vars(cls).get("__slots__", ())) != names
    ):
        raise TypeError(f"{cls.__name__} no longer fits the watch's fast construction")
    twin: type = type(f"_Mutable{cls.__name__}", (), {"__slots__": names})
    probe = twin()
    probe.__class__ = cls  # raises TypeError at import if the layouts differ
    return twin


def _event_time_us(pb: runs_pb2.RunEvent) -> int | None:
    # The value first: only a zero time needs HasField to tell "unset" from the epoch.
    ts = pb.event_time
    micros: int = ts.seconds * 1_000_000 + ts.nanos // 1000
    return micros if micros or pb.HasField("event_time") else None


class _DeferredEventTime:
    """``RunEvent.event_time_us``, read through the slot, converted on its first read.

    ``run_event`` stores the received message in the slot instead of the converted time,
    so an event whose time nobody reads never pays for the conversion (about a fifth of
    the watch's own work per event). The first read (by the caller, ``==``, ``hash``,
    ``repr``, pickling, a copy or ``dataclasses``) converts it and stores the result, so
    every observer sees the same ``int`` or ``None`` as if it had been converted at once.
    Values stored any other way (the constructor) are returned as they are. The cost:
    an event keeps its decoded message (a few hundred bytes) until its time is read.
    """

    __slots__ = ("_slot",)

    def __init__(self, slot: Any) -> None:
        self._slot = slot

    def __get__(self, obj: object, owner: type | None = None) -> Any:
        if obj is None:
            return self._slot  # on the class: the slot itself, as without this wrapper
        value = self._slot.__get__(obj, owner)
        if type(value) is _PendingTime:
            value = _event_time_us(value)
            self._slot.__set__(obj, value)
        return value

    def __set__(self, obj: object, value: Any) -> None:
        self._slot.__set__(obj, value)

    def __delete__(self, obj: object) -> None:
        self._slot.__delete__(obj)


_PendingTime = runs_pb2.RunEvent


def _defer_event_time(cls: type[m.RunEvent]) -> None:
    """Puts :class:`_DeferredEventTime` in front of the ``event_time_us`` slot of ``cls``."""
    slot = vars(cls)["event_time_us"]
    if type(slot).__name__ != "member_descriptor":
        raise TypeError(f"{cls.__name__}.event_time_us is no longer a plain slot")
    setattr(cls, "event_time_us", _DeferredEventTime(slot))  # noqa: B010 (mypy types the attribute as an int)


_defer_event_time(m.RunEvent)


_EventTwin = _mutable_twin(m.RunEvent, ("run_id", "sequence", "payload", "event_time_us"))
_DeltaTwin = _mutable_twin(m.OutputDelta, ("text",))
_RunEvent, _OutputDelta = m.RunEvent, m.OutputDelta  # one global lookup each per event


def _payload(pb: runs_pb2.RunEvent, kind: str | None) -> m.EventPayload | None:
    if kind == "status_changed":
        return m.StatusChanged(
            _enum(m.RunStatus, pb.status_changed.previous_status),
            _enum(m.RunStatus, pb.status_changed.status),
        )
    if kind == "tool_activity":
        t = pb.tool_activity
        return m.ToolActivity(
            t.activity_id,
            _enum(m.ActionClass, t.action_class),
            t.display_category,
            _enum(m.ToolActivityPhase, t.phase),
        )
    if kind == "interaction_requested":
        return m.InteractionRequested(interaction(pb.interaction_requested.interaction))
    if kind == "interaction_resolved":
        r = pb.interaction_resolved
        return m.InteractionResolved(
            r.interaction_id, _enum(m.InteractionOutcome, r.outcome), r.choice
        )
    if kind == "terminated":
        return m.RunTerminated(
            _enum(m.RunStatus, pb.terminated.status), run_result(pb.terminated.result)
        )
    # output_delta is built by the caller; anything else is a kind this SDK does not know.
    return None


def output_delta_event(pb: runs_pb2.RunEvent, run_id: str, sequence: int) -> m.RunEvent:
    """Converts an ``output_delta`` event whose ``run_id`` and ``sequence`` were read already.

    The watch's commonest event, so both models are built through their twins (see
    ``_mutable_twin``) in one call. ``pb`` must not be changed afterwards: the event reads
    its time from it when first asked.
    """
    payload: Any = _DeltaTwin()
    payload.text = pb.output_delta.text
    payload.__class__ = _OutputDelta
    event: Any = _EventTwin()
    event.run_id = run_id
    event.sequence = sequence
    event.payload = payload
    event.event_time_us = pb  # converted on first read (see _DeferredEventTime)
    event.__class__ = _RunEvent
    result: m.RunEvent = event
    return result


def run_event(
    pb: runs_pb2.RunEvent,
    kind: str | None = "",
    run_id: str | None = None,
    sequence: int | None = None,
) -> m.RunEvent:
    """Converts one event.

    ``kind`` (the payload name), ``run_id`` and ``sequence`` may be passed when the caller
    already read them from ``pb``, so the watch reads each field once. ``pb`` must not be
    changed afterwards: the event reads its time from it when first asked.
    """
    if kind == "":
        kind = pb.WhichOneof("payload")
    if run_id is None:
        run_id = pb.run_id
    if sequence is None:
        sequence = pb.sequence
    if kind == "output_delta":
        return output_delta_event(pb, run_id, sequence)
    event: Any = _EventTwin()
    event.run_id = run_id
    event.sequence = sequence
    event.payload = _payload(pb, kind)
    event.event_time_us = pb  # converted on first read (see _DeferredEventTime)
    event.__class__ = _RunEvent
    result: m.RunEvent = event
    return result


def artifact(pb: artifacts_pb2.Artifact) -> m.Artifact:
    return m.Artifact(
        artifact_id=pb.artifact_id,
        media_type=pb.media_type,
        size_bytes=pb.size_bytes,
        sha256=pb.sha256,
        display_name=pb.display_name,
        create_time=_time(pb.create_time, pb.HasField("create_time")),
    )
