"""Typed, immutable models for everything the public surface returns or accepts.

The generated ``_pb2`` classes never appear in a public signature; ``_convert`` translates
between them and these frozen dataclasses. Enum values match the contract's numbers, and a
value a newer worker adds is read as the enum's ``UNSPECIFIED`` member.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass, field
from datetime import datetime, timedelta, timezone
from typing import Union

from ._coerce import enum_arg, enum_args

# --- enums ------------------------------------------------------------------------------


class RunStatus(enum.Enum):
    """A run's lifecycle state."""

    UNSPECIFIED = 0
    QUEUED = 1
    RUNNING = 2
    WAITING_FOR_INPUT = 3
    CANCELLING = 4
    SUCCEEDED = 5
    FAILED = 6
    CANCELLED = 7
    INTERRUPTED = 8
    OUTCOME_UNKNOWN = 9

    @property
    def is_terminal(self) -> bool:
        """True for the five statuses a run never leaves."""
        return self in _TERMINAL


_TERMINAL = frozenset(
    {
        RunStatus.SUCCEEDED,
        RunStatus.FAILED,
        RunStatus.CANCELLED,
        RunStatus.INTERRUPTED,
        RunStatus.OUTCOME_UNKNOWN,
    }
)


class RunMode(enum.Enum):
    """What a run produces."""

    UNSPECIFIED = 0
    EXECUTE = 1
    PLAN = 2
    RESEARCH = 3


class DeploymentMode(enum.Enum):
    """Who owns the worker process."""

    UNSPECIFIED = 0
    SHARED_DAEMON = 1
    SIDECAR = 2


class EvidenceLane(enum.Enum):
    """A source a research run may consult."""

    UNSPECIFIED = 0
    REPOSITORY = 1
    WEB = 2
    MCP = 3


class PlanActionKind(enum.Enum):
    """What a plan action does with a Draft."""

    UNSPECIFIED = 0
    REVISE = 1
    EXECUTE_DIRECT = 2
    EXECUTE_GOAL = 3


class PlanStatus(enum.Enum):
    """The state of a plan."""

    UNSPECIFIED = 0
    DRAFT = 1
    SUPERSEDED = 2
    EXECUTED = 3
    ABANDONED = 4


class ActionClass(enum.Enum):
    """The public taxonomy of actions."""

    UNSPECIFIED = 0
    READ = 1
    WRITE = 2
    EXECUTE = 3
    NETWORK = 4
    ADMINISTRATION = 5
    DELEGATION = 6
    LOCAL_STATE = 7


class InteractionOutcome(enum.Enum):
    """How an interaction was closed."""

    UNSPECIFIED = 0
    ANSWERED = 1
    APPROVED = 2
    DENIED = 3
    CANCELLED = 4
    INTERRUPTED = 5


class ToolActivityPhase(enum.Enum):
    """The stage of one tool call."""

    UNSPECIFIED = 0
    STARTED = 1
    COMPLETED = 2
    FAILED = 3


class ApprovalDecision(enum.Enum):
    """The verdict on an approval."""

    APPROVE = 1
    DENY = 2


# --- server info ------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TokenBucket:
    """A rate limit: ``burst`` tokens at most, refilled at ``refill_per_second``."""

    refill_per_second: int
    burst: int


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit the worker enforces, as advertised by ``GetServerInfo``."""

    max_active_runs: int
    max_active_runs_per_application: int
    create_rate: TokenBucket
    create_rate_per_application: TokenBucket
    max_watches: int
    max_watches_per_application: int
    max_concurrent_list_runs: int
    max_concurrent_list_runs_per_application: int
    max_connections: int
    max_concurrent_streams_per_connection: int
    max_request_bytes: int
    max_response_bytes: int
    max_header_bytes: int
    max_events_per_run: int
    reserved_lifecycle_events: int
    max_input_parts: int
    max_input_bytes: int
    max_turns: int
    default_max_turns: int
    max_list_page_size: int
    max_list_status_filters: int
    max_artifact_bytes: int
    max_artifact_chunk_bytes: int
    handshake_timeout_seconds: float
    max_connection_age_seconds: float


@dataclass(frozen=True, slots=True)
class ServerInfo:
    """The worker's verified self-description."""

    instance_id: str
    api_package: str
    api_version: str
    api_major: int
    deployment_mode: DeploymentMode
    capabilities: frozenset[str]
    limits: Limits
    server_version: str

    def has_capability(self, name: str) -> bool:
        """True when the worker advertises ``name`` (for example ``artifacts``)."""
        return name in self.capabilities


# --- runs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question with displayed choices; answer with one choice's exact text."""

    question: str
    choices: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Approval:
    """A request to allow one action; answer by echoing ``binding``."""

    action_class: ActionClass
    binding: str
    display_category: str | None = None
    origin: str | None = None


@dataclass(frozen=True, slots=True)
class Interaction:
    """A durable, one-use question the run asks. Exactly one of prompt/approval is set."""

    interaction_id: str
    prompt: Prompt | None
    approval: Approval | None
    create_time: datetime | None


@dataclass(frozen=True, slots=True)
class PlanResult:
    """The plan a PLAN run created or revised."""

    plan_id: str
    revision: int
    status: PlanStatus


@dataclass(frozen=True, slots=True)
class Citation:
    """One source of a research report."""

    lane: EvidenceLane
    label: str
    url: str


@dataclass(frozen=True, slots=True)
class ResearchResult:
    """A cited research report."""

    report: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class RunFailure:
    """Why a run failed, in public terms."""

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of a terminal run."""

    output_text: str
    plan: PlanResult | None = None
    research: ResearchResult | None = None
    failure: RunFailure | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """One durable unit of agent work."""

    run_id: str
    session_id: str
    mode: RunMode
    role: str
    status: RunStatus
    last_sequence: int
    """Sequence of the newest recorded event (0 before the first)."""
    create_time: datetime | None
    update_time: datetime | None
    idempotency_key: str
    end_user_id: str | None
    max_turns: int
    pending_interaction: Interaction | None
    result: RunResult | None


@dataclass(frozen=True, slots=True)
class CreateRunResult:
    """What ``runs.create`` returns."""

    run: Run
    replayed: bool
    """True when the key matched an earlier identical request and no new run was made."""
    idempotency_key: str
    """The key the request carried: the caller's or the one the SDK generated."""


# --- events -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusChanged:
    """The run moved to another status."""

    previous_status: RunStatus
    status: RunStatus


@dataclass(frozen=True, slots=True)
class OutputDelta:
    """Released assistant text, to be appended in sequence order."""

    text: str


@dataclass(frozen=True, slots=True)
class InteractionRequested:
    """The run asked a question."""

    interaction: Interaction


@dataclass(frozen=True, slots=True)
class InteractionResolved:
    """A question was answered or closed."""

    interaction_id: str
    outcome: InteractionOutcome
    choice: str


@dataclass(frozen=True, slots=True)
class ToolActivity:
    """Tool use in public terms only."""

    activity_id: str
    action_class: ActionClass
    display_category: str
    phase: ToolActivityPhase


@dataclass(frozen=True, slots=True)
class RunTerminated:
    """The run ended; always the last event."""

    status: RunStatus
    result: RunResult


EventPayload = Union[  # noqa: UP007 - a runtime alias usable on Python 3.10
    StatusChanged,
    OutputDelta,
    InteractionRequested,
    InteractionResolved,
    ToolActivity,
    RunTerminated,
]


_EPOCH = datetime(1970, 1, 1, tzinfo=timezone.utc)


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One entry of a run's ordered history. ``payload`` is ``None`` for a kind this SDK
    does not know yet."""

    run_id: str
    sequence: int
    payload: EventPayload | None
    event_time_us: int | None = None
    """When the worker recorded the event, in microseconds since the Unix epoch (UTC)."""

    @property
    def event_time(self) -> datetime | None:
        """``event_time_us`` as an aware UTC datetime (built on access: watches stay cheap)."""
        if self.event_time_us is None:
            return None
        return _EPOCH + timedelta(microseconds=self.event_time_us)

    @property
    def is_terminal(self) -> bool:
        """True for the run's last event."""
        return isinstance(self.payload, RunTerminated)


# --- requests ---------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class TextPart:
    """UTF-8 text input."""

    text: str


@dataclass(frozen=True, slots=True)
class ArtifactPart:
    """An uploaded artifact as input, named by its opaque ID (never a path).

    Give ``media_type`` (or pass the :class:`Artifact` from ``upload`` instead) so the SDK
    can check the ``attachments.image_input`` capability before sending an image.
    """

    artifact_id: str
    media_type: str | None = None


@dataclass(frozen=True, slots=True)
class ResearchOptions:
    """Bounds of a research run: depth 1-5 and a non-empty set of distinct lanes."""

    depth: int
    lanes: tuple[EvidenceLane, ...]
    """Members or names (``("web", "repository")``); stored as a tuple of members."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "lanes", enum_args(self.lanes, EvidenceLane, "research.lanes"))


@dataclass(frozen=True, slots=True)
class PlanAction:
    """Continue a Draft plan of an earlier PLAN run (needs ``plans.continue``)."""

    source_run_id: str
    revision: int
    kind: PlanActionKind
    """A member or its name (``"revise"``)."""

    def __post_init__(self) -> None:
        object.__setattr__(self, "kind", enum_arg(self.kind, PlanActionKind, "plan_action.kind"))


@dataclass(frozen=True, slots=True)
class PromptAnswer:
    """Answer to a prompt: the chosen text exactly as displayed."""

    choice: str


@dataclass(frozen=True, slots=True)
class ApprovalAnswer:
    """Answer to an approval: its binding echoed, and the decision."""

    binding: str
    decision: ApprovalDecision
    """A member or its name (``"approve"``)."""

    def __post_init__(self) -> None:
        object.__setattr__(
            self, "decision", enum_arg(self.decision, ApprovalDecision, "answer.decision")
        )


@dataclass(frozen=True, slots=True)
class RunPage:
    """One ``ListRuns`` page. ``runs`` may be empty while ``next_page_token`` is set."""

    runs: tuple[Run, ...]
    next_page_token: str


# --- artifacts --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Artifact:
    """A stored artifact."""

    artifact_id: str
    media_type: str
    size_bytes: int
    sha256: str
    display_name: str
    create_time: datetime | None


@dataclass(frozen=True, slots=True)
class DownloadedArtifact:
    """A downloaded artifact whose bytes matched its declared size and SHA-256."""

    artifact: Artifact
    data: bytes = field(repr=False)
