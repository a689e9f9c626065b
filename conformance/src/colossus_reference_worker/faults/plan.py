"""Parsing of the fault lists a conformance case arms (W15).

A case sends a JSON list of fault objects (see ``conformance/docs/fault-control.md``).
This module turns that list into typed, validated values so the rest of the
fault machinery never handles raw JSON. Anything unexpected is refused with a
:class:`FaultSpecError` whose text goes back to the runner verbatim.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from grpclib.const import Status

from .replies import DOWNLOAD_MODES, REPLY_KINDS, UPLOAD_MODES, ReplyFault

WATCH_KINDS = frozenset(
    {"replay", "replay_altered", "skip", "clean_close", "fail", "stall", "resend_before_cursor",
     "other_run", "after_terminal"}
)
ALL_KINDS = WATCH_KINDS | {"rpc_fail", "server_info", "silent_close", "shutdown"} | REPLY_KINDS

# Fields every kind accepts beyond ``kind`` itself.
_FIELDS: dict[str, tuple[frozenset[str], frozenset[str]]] = {
    # kind: (required, optional)
    "replay": (frozenset({"after_sequence", "count"}), frozenset({"watch"})),
    "replay_altered": (frozenset({"after_sequence"}), frozenset({"watch"})),
    "skip": (frozenset({"sequence"}), frozenset({"watch"})),
    "resend_before_cursor": (frozenset(), frozenset({"watch"})),
    "other_run": (frozenset({"after_sequence"}), frozenset({"watch"})),
    "after_terminal": (frozenset(), frozenset({"watch"})),
    "clean_close": (frozenset({"after_sequence"}), frozenset({"watch"})),
    "fail": (frozenset({"after_sequence", "code"}), frozenset({"watch", "reason"})),
    "stall": (frozenset({"after_sequence", "seconds"}), frozenset({"watch"})),
    "rpc_fail": (frozenset({"rpc", "code"}), frozenset({"after_commit", "count", "reason"})),
    "download": (frozenset({"mode"}), frozenset({"after_chunks", "code", "reason", "count"})),
    "upload_reply": (frozenset({"mode"}), frozenset({"count"})),
    "list_runs_repeat": (frozenset(), frozenset({"from_call"})),
    "get_run_other_run": (frozenset(), frozenset({"count"})),
    "silent_close": (frozenset(), frozenset({"count"})),
    "shutdown": (frozenset({"rpc"}), frozenset({"down_seconds"})),
    "server_info": (
        frozenset(),
        frozenset({"instance_id", "api_package", "api_major", "deployment_mode", "capabilities", "limits"}),
    ),
}

# Integer ``Limits`` fields a server_info fault may lower (or raise): what the SDK is told,
# not what the worker enforces, so a case can prove the SDK applies the advertised value.
OVERRIDABLE_LIMITS = frozenset(
    {"max_request_bytes", "max_response_bytes", "max_input_parts", "max_input_bytes"}
)

# Longest time a ``shutdown`` fault may keep the worker down before it starts again.
MAX_SHUTDOWN_DOWN_SECONDS = 5.0

# Longest stall a case may ask for; keeps a broken runner from wedging a worker.
MAX_STALL_SECONDS = 300.0

DEPLOYMENT_MODES = {
    "UNSPECIFIED": 0,
    "SHARED_DAEMON": 1,
    "SIDECAR": 2,
}


class FaultSpecError(ValueError):
    """A fault list that cannot be armed."""


@dataclass(frozen=True, slots=True)
class WatchFault:
    """One fault applied to the N-th ``WatchRun`` call of a case."""

    kind: str
    watch: int = 1
    after_sequence: int = 0
    count: int = 0
    sequence: int = 0
    code: Status = Status.OK
    reason: str | None = None
    seconds: float = 0.0


@dataclass(slots=True)
class RpcFault:
    """Fail calls of one method, either before or after the work is done."""

    method: str  # "<Service>/<Method>"
    code: Status
    reason: str | None
    after_commit: bool
    remaining: int


@dataclass(frozen=True, slots=True)
class ServerInfoOverride:
    """Values ``GetServerInfo`` reports instead of the genuine ones."""

    instance_id: str | None = None
    api_package: str | None = None
    api_major: int | None = None
    deployment_mode: int | None = None
    # Replaces the whole advertised list, so a case can hide a capability the worker
    # really has and check that the SDK refuses locally (S4).
    capabilities: tuple[str, ...] | None = None
    # Advertised limit values that replace the genuine ones (OVERRIDABLE_LIMITS).
    limits: tuple[tuple[str, int], ...] = ()


@dataclass(frozen=True, slots=True)
class SilentClose:
    """Close the next ``count`` accepted connections before the TLS handshake."""

    count: int


@dataclass(frozen=True, slots=True)
class Shutdown:
    """Begin the worker's graceful stop when a call of ``method`` arrives, with that call in
    flight; start again in place ``down_seconds`` later, or (``None``) when the case ends."""

    method: str
    down_seconds: float | None = None


@dataclass(slots=True)
class FaultPlan:
    """Everything one case armed."""

    watch: list[WatchFault] = field(default_factory=list)
    rpc: list[RpcFault] = field(default_factory=list)
    server_info: ServerInfoOverride | None = None
    replies: list[ReplyFault] = field(default_factory=list)
    # Accepted TCP connections still to be closed before any TLS byte (silent_close).
    silent_closes: int = 0
    # The worker's graceful stop, begun by a call of the named method (at most one a case).
    shutdown: Shutdown | None = None

    def watch_faults(self, n: int) -> list[WatchFault]:
        """Faults aimed at the n-th watch of the case (1-based)."""
        return [f for f in self.watch if f.watch == n]


# Methods a runner may name in ``rpc_fail``. Bare names resolve to their service.
_METHODS = {
    "GetServerInfo": "SystemService",
    "CreateRun": "RunService",
    "GetRun": "RunService",
    "ListRuns": "RunService",
    "WatchRun": "RunService",
    "CancelRun": "RunService",
    "RespondInteraction": "RunService",
    "UploadArtifact": "ArtifactService",
    "DownloadArtifact": "ArtifactService",
}


def _int(obj: dict[str, Any], name: str, *, minimum: int = 0) -> int:
    value = obj[name]
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FaultSpecError(f"{name} must be an integer >= {minimum}")
    return value


def _status(obj: dict[str, Any]) -> Status:
    name = obj["code"]
    if not isinstance(name, str):
        raise FaultSpecError("code must be a gRPC code name such as UNAVAILABLE")
    try:
        status = Status[name.upper()]
    except KeyError:
        raise FaultSpecError(f"unknown gRPC code {name!r}") from None
    if status is Status.OK:
        raise FaultSpecError("code OK is not a failure; use clean_close")
    return status


def _reason(obj: dict[str, Any]) -> str | None:
    reason = obj.get("reason")
    if reason is None:
        return None
    if not isinstance(reason, str) or not reason or len(reason) > 64:
        raise FaultSpecError("reason must be a short ErrorReason name")
    return reason.removeprefix("ERROR_REASON_")


def method_name(rpc: str) -> str:
    """Normalise ``CreateRun`` or ``RunService/CreateRun`` to ``RunService/CreateRun``."""
    service, _, method = rpc.rpartition("/")
    if method not in _METHODS or (service and service != _METHODS[method]):
        raise FaultSpecError(f"unknown rpc {rpc!r}")
    return f"{_METHODS[method]}/{method}"


def parse_fault(
    obj: Any,
) -> WatchFault | RpcFault | ServerInfoOverride | ReplyFault | SilentClose | Shutdown:
    """Validate one fault object."""
    if not isinstance(obj, dict):
        raise FaultSpecError("each fault must be a JSON object")
    kind = obj.get("kind")
    if kind not in ALL_KINDS:
        raise FaultSpecError(f"unknown fault kind {kind!r}")
    required, optional = _FIELDS[kind]
    present = set(obj) - {"kind"}
    if missing := required - present:
        raise FaultSpecError(f"{kind}: missing {', '.join(sorted(missing))}")
    if unknown := present - required - optional:
        raise FaultSpecError(f"{kind}: unknown member {', '.join(sorted(unknown))}")

    if kind == "server_info":
        mode = obj.get("deployment_mode")
        if mode is not None:
            if isinstance(mode, str):
                key = mode.upper().removeprefix("DEPLOYMENT_MODE_")
                if key not in DEPLOYMENT_MODES:
                    raise FaultSpecError(f"unknown deployment_mode {mode!r}")
                mode = DEPLOYMENT_MODES[key]
            elif isinstance(mode, bool) or not isinstance(mode, int) or mode < 0:
                raise FaultSpecError("deployment_mode must be a name or a number")
        for text in ("instance_id", "api_package"):
            if text in obj and not isinstance(obj[text], str):
                raise FaultSpecError(f"{text} must be a string")
        major = _int(obj, "api_major") if "api_major" in obj else None
        capabilities = obj.get("capabilities")
        if capabilities is not None and (
            not isinstance(capabilities, list) or not all(isinstance(c, str) for c in capabilities)
        ):
            raise FaultSpecError("capabilities must be a list of strings")
        limits = obj.get("limits", {})
        if not isinstance(limits, dict) or not set(limits) <= OVERRIDABLE_LIMITS:
            raise FaultSpecError(f"limits must be an object with members from {sorted(OVERRIDABLE_LIMITS)}")
        for name, value in limits.items():
            if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value < 2**32:
                raise FaultSpecError(f"limits.{name} must be an integer from 1 to 2^32-1")
        return ServerInfoOverride(
            limits=tuple(sorted(limits.items())),
            capabilities=None if capabilities is None else tuple(capabilities),
            instance_id=obj.get("instance_id"),
            api_package=obj.get("api_package"),
            api_major=major,
            deployment_mode=mode,
        )

    if kind in REPLY_KINDS:
        return _reply_fault(kind, obj)

    if kind == "silent_close":
        count = _int(obj, "count", minimum=1) if "count" in obj else 1
        if count > 64:
            raise FaultSpecError("silent_close: count must be at most 64")
        return SilentClose(count)

    if kind == "shutdown":
        if not isinstance(obj["rpc"], str):
            raise FaultSpecError("rpc must be a method name such as GetServerInfo")
        down = obj.get("down_seconds")
        if down is not None and (isinstance(down, bool) or not isinstance(down, (int, float))
                                 or not 0 <= down <= MAX_SHUTDOWN_DOWN_SECONDS):
            raise FaultSpecError(
                f"down_seconds must be between 0 and {MAX_SHUTDOWN_DOWN_SECONDS:g}")
        method = method_name(obj["rpc"])
        if method.endswith(("/WatchRun", "/DownloadArtifact", "/UploadArtifact")):
            raise FaultSpecError("shutdown applies to unary calls only")
        return Shutdown(method, None if down is None else float(down))

    if kind == "rpc_fail":
        rpc = obj["rpc"]
        if not isinstance(rpc, str):
            raise FaultSpecError("rpc must be a method name such as CreateRun")
        after_commit = obj.get("after_commit", False)
        if not isinstance(after_commit, bool):
            raise FaultSpecError("after_commit must be true or false")
        count = _int(obj, "count", minimum=1) if "count" in obj else 1
        method = method_name(rpc)
        if after_commit and method.endswith(("/WatchRun", "/DownloadArtifact")):
            raise FaultSpecError("after_commit applies to unary calls only")
        return RpcFault(
            method=method,
            code=_status(obj),
            reason=_reason(obj),
            after_commit=after_commit,
            remaining=count,
        )

    watch = _int(obj, "watch", minimum=1) if "watch" in obj else 1
    if kind == "skip":
        return WatchFault(kind, watch=watch, sequence=_int(obj, "sequence", minimum=1))
    if kind in ("resend_before_cursor", "after_terminal"):
        return WatchFault(kind, watch=watch)
    after = _int(obj, "after_sequence")
    if kind == "replay":
        return WatchFault(kind, watch=watch, after_sequence=after,
                          count=_int(obj, "count", minimum=1))
    if kind == "fail":
        return WatchFault(kind, watch=watch, after_sequence=after,
                          code=_status(obj), reason=_reason(obj))
    if kind == "stall":
        seconds = obj["seconds"]
        if (isinstance(seconds, bool) or not isinstance(seconds, (int, float))
                or not 0 <= seconds <= MAX_STALL_SECONDS):
            raise FaultSpecError(f"seconds must be between 0 and {MAX_STALL_SECONDS:g}")
        return WatchFault(kind, watch=watch, after_sequence=after, seconds=float(seconds))
    if kind in ("replay_altered", "other_run") and after < 1:
        raise FaultSpecError(f"{kind} needs after_sequence >= 1")
    return WatchFault(kind, watch=watch, after_sequence=after)


def _reply_fault(kind: str, obj: dict[str, Any]) -> ReplyFault:
    count = _int(obj, "count", minimum=1) if "count" in obj else 1
    if kind == "list_runs_repeat":
        from_call = _int(obj, "from_call", minimum=1) if "from_call" in obj else 2
        return ReplyFault(kind, from_call=from_call, remaining=1_000_000)
    if kind == "get_run_other_run":
        return ReplyFault(kind, remaining=count)
    mode = obj["mode"]
    modes = DOWNLOAD_MODES if kind == "download" else UPLOAD_MODES
    if mode not in modes:
        raise FaultSpecError(f"{kind}: mode must be one of {sorted(modes)}")
    fault = ReplyFault(kind, mode=mode, remaining=count)
    if kind == "download":
        if mode != "fail" and ({"after_chunks", "code", "reason"} & set(obj)):
            raise FaultSpecError("after_chunks, code and reason apply to mode fail only")
        if mode == "fail":
            fault.after_chunks = _int(obj, "after_chunks") if "after_chunks" in obj else 1
            fault.code = _status(obj) if "code" in obj else Status.UNAVAILABLE
            fault.reason = _reason(obj)
    return fault


def parse_plan(faults: Any) -> FaultPlan:
    """Validate a whole ``faults`` list; an empty or missing list arms nothing."""
    if faults is None:
        return FaultPlan()
    if not isinstance(faults, list):
        raise FaultSpecError("faults must be a JSON list")
    if len(faults) > 64:
        raise FaultSpecError("at most 64 faults per case")
    plan = FaultPlan()
    for obj in faults:
        fault = parse_fault(obj)
        if isinstance(fault, WatchFault):
            plan.watch.append(fault)
        elif isinstance(fault, RpcFault):
            plan.rpc.append(fault)
        elif isinstance(fault, ReplyFault):
            plan.replies.append(fault)
        elif isinstance(fault, SilentClose):
            plan.silent_closes += fault.count
        elif isinstance(fault, Shutdown):
            if plan.shutdown is not None:
                raise FaultSpecError("at most one shutdown fault per case")
            plan.shutdown = fault
        else:
            if plan.server_info is not None:
                raise FaultSpecError("at most one server_info fault per case")
            plan.server_info = fault
    return plan
