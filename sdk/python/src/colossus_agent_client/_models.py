"""Typed, immutable models for everything the public surface returns or accepts.

The generated ``_pb2`` classes never appear in a public signature; ``_convert`` translates
between them and these frozen dataclasses. Enum values match the contract's numbers, and a
value a newer worker adds is read as the enum's ``UNSPECIFIED`` member.
"""

from __future__ import annotations

import enum
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from typing import Literal, TypeAlias, Union

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


# The names an enum-typed argument also takes, so that ``ApprovalAnswer(b, "APPROVE")``
# passes ``mypy --strict`` as it passes at run time (names match in any case there).
ApprovalDecisionName: TypeAlias = Literal["APPROVE", "DENY", "approve", "deny"]
PlanActionKindName: TypeAlias = Literal[
    "REVISE", "EXECUTE_DIRECT", "EXECUTE_GOAL", "revise", "execute_direct", "execute_goal"
]
EvidenceLaneName: TypeAlias = Literal["REPOSITORY", "WEB", "MCP", "repository", "web", "mcp"]


@dataclass(frozen=True, slots=True)
class TokenBucket:
    """A rate limit as a token bucket.

    Attributes:
        refill_per_second: tokens added per second.
        burst: the most tokens the bucket holds (calls allowed at once after a pause).
    """

    refill_per_second: int
    burst: int


@dataclass(frozen=True, slots=True)
class Limits:
    """Every limit the worker enforces, as advertised by ``GetServerInfo``.

    Counts are per worker unless the name ends in ``_per_application``.

    Attributes:
        max_active_runs: runs not yet terminal, across all applications.
        max_active_runs_per_application: runs not yet terminal, for one application.
        create_rate: new-run rate across all applications (replays cost nothing).
        create_rate_per_application: new-run rate for one application.
        max_watches: open watch streams across all applications.
        max_watches_per_application: open watch streams for one application.
        max_concurrent_list_runs: listing calls in flight across all applications.
        max_concurrent_list_runs_per_application: listing calls in flight for one
            application.
        max_connections: simultaneous TLS connections.
        max_concurrent_streams_per_connection: HTTP/2 streams on one connection.
        max_request_bytes: the largest request message the worker accepts.
        max_response_bytes: the largest response message the worker sends.
        max_header_bytes: the largest block of request headers.
        max_events_per_run: ordinary events a run may record before progress stops.
        reserved_lifecycle_events: events kept back so a run at its cap can still finish.
        max_input_parts: input parts in one create request.
        max_input_bytes: UTF-8 bytes of input text in one create request.
        max_turns: the largest ``max_turns`` a create request may ask for.
        default_max_turns: the turns a run gets when the request leaves ``max_turns`` 0.
        max_list_page_size: the most runs on one listing page.
        max_list_status_filters: the most statuses one listing may filter on.
        max_artifact_bytes: the largest artifact (0 without the ``artifacts`` capability).
        max_artifact_chunk_bytes: the largest chunk of one upload or download message.
        handshake_timeout_seconds: seconds the worker allows for a TLS handshake.
        max_connection_age_seconds: seconds after which the worker gracefully closes a
            connection (the SDK reconnects transparently).
    """

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
    """The worker's verified self-description (``client.server_info``).

    Attributes:
        instance_id: the worker instance, as enrolment printed it.
        api_package: the contract's package, ``colossus.api.v1alpha1``.
        api_version: the contract version, ``v1alpha1``.
        api_major: the contract's major version.
        deployment_mode: shared daemon or sidecar.
        capabilities: optional features the worker offers (for example ``artifacts``).
        limits: every limit the worker enforces.
        server_version: the worker's own build, for diagnostics only.
    """

    instance_id: str
    api_package: str
    api_version: str
    api_major: int
    deployment_mode: DeploymentMode
    capabilities: frozenset[str]
    limits: Limits
    server_version: str

    def has_capability(self, name: str) -> bool:
        """Tells whether the worker offers an optional feature.

        Args:
            name: a capability name, for example ``artifacts`` or ``plans.continue``.

        Returns:
            True when the worker advertises ``name``.
        """
        return name in self.capabilities


# --- runs -------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Prompt:
    """A question with displayed choices; answer with one choice's exact text.

    Attributes:
        question: the text to show.
        choices: the answers to offer; :class:`PromptAnswer` must repeat one exactly.
    """

    question: str
    choices: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class Approval:
    """A request to allow one action; answer by echoing ``binding``.

    Attributes:
        action_class: what kind of action is asked for.
        binding: a one-use value tying the answer to this request; echo it unchanged.
        display_category: a public category to show, when the worker gives one.
        origin: where the action comes from, when the worker gives it instead.
    """

    action_class: ActionClass
    binding: str
    display_category: str | None = None
    origin: str | None = None


@dataclass(frozen=True, slots=True)
class Interaction:
    """A durable, one-use question the run asks. Exactly one of prompt/approval is set.

    Attributes:
        interaction_id: pass it to ``runs.respond``.
        prompt: the question, when it is a prompt.
        approval: the request, when it is an approval.
        create_time: when the run asked (UTC), if known.
    """

    interaction_id: str
    prompt: Prompt | None
    approval: Approval | None
    create_time: datetime | None


@dataclass(frozen=True, slots=True)
class PlanResult:
    """The plan a PLAN run created or revised.

    Attributes:
        plan_id: the plan.
        revision: its revision; a :class:`PlanAction` must name this exact number.
        status: whether it is still a Draft, or was superseded, executed or abandoned.
    """

    plan_id: str
    revision: int
    status: PlanStatus


@dataclass(frozen=True, slots=True)
class Citation:
    """One source of a research report.

    Attributes:
        lane: where the source was found.
        label: a short name to show.
        url: a link to the source (may be empty for local sources).
    """

    lane: EvidenceLane
    label: str
    url: str


@dataclass(frozen=True, slots=True)
class ResearchResult:
    """A cited research report.

    Attributes:
        report: the report text.
        citations: the sources it cites, in order.
    """

    report: str
    citations: tuple[Citation, ...]


@dataclass(frozen=True, slots=True)
class RunFailure:
    """Why a run failed, in public terms.

    Attributes:
        code: a stable token to branch on.
        message: a human-readable explanation; never branch on it.
    """

    code: str
    message: str


@dataclass(frozen=True, slots=True)
class RunResult:
    """The outcome of a terminal run.

    Attributes:
        output_text: all released output text, concatenated.
        plan: the plan, for a PLAN run.
        research: the report, for a RESEARCH run.
        failure: why it failed, for a FAILED run.
    """

    output_text: str
    plan: PlanResult | None = None
    research: ResearchResult | None = None
    failure: RunFailure | None = None


@dataclass(frozen=True, slots=True)
class Run:
    """One durable unit of agent work.

    Attributes:
        run_id: the run's opaque ID.
        session_id: the session the run belongs to.
        mode: execute, plan or research.
        role: the logical role it runs as.
        status: where it is in its lifecycle; see :attr:`RunStatus.is_terminal`.
        last_sequence: the sequence of its newest recorded event (0 before the first).
        create_time: when it was created (UTC), if known.
        update_time: when it last changed (UTC), if known.
        idempotency_key: the key of the create request that made it.
        end_user_id: your correlation ID for the end user, if you gave one.
        max_turns: the turn budget it runs with.
        pending_interaction: the question it is waiting on, while ``WAITING_FOR_INPUT``.
        result: the outcome, once terminal.
    """

    run_id: str
    session_id: str
    mode: RunMode
    role: str
    status: RunStatus
    last_sequence: int
    create_time: datetime | None
    update_time: datetime | None
    idempotency_key: str
    end_user_id: str | None
    max_turns: int
    pending_interaction: Interaction | None
    result: RunResult | None


@dataclass(frozen=True, slots=True)
class CreateRunResult:
    """What ``runs.create`` returns.

    Attributes:
        run: the run that was created (or found again).
        replayed: True when the key matched an earlier identical request and no new run
            was made.
        idempotency_key: the key the request carried (yours or a generated one).
    """

    run: Run
    replayed: bool
    idempotency_key: str


# --- events -----------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class StatusChanged:
    """The run moved to another status.

    Attributes:
        previous_status: the status it left.
        status: the status it entered.
    """

    previous_status: RunStatus
    status: RunStatus


@dataclass(frozen=True, slots=True)
class OutputDelta:
    """Released assistant text, to be appended in sequence order.

    Attributes:
        text: the new piece of output.
    """

    text: str


@dataclass(frozen=True, slots=True)
class InteractionRequested:
    """The run asked a question; answer it with ``runs.respond``.

    Attributes:
        interaction: the question.
    """

    interaction: Interaction


@dataclass(frozen=True, slots=True)
class InteractionResolved:
    """A question was answered or closed.

    Attributes:
        interaction_id: the question.
        outcome: answered, approved, denied, cancelled or interrupted.
        choice: the chosen text, for an answered prompt (otherwise empty).
    """

    interaction_id: str
    outcome: InteractionOutcome
    choice: str


@dataclass(frozen=True, slots=True)
class ToolActivity:
    """Tool use in public terms only.

    Attributes:
        activity_id: one tool call; its phases share this ID.
        action_class: what kind of action the tool performs.
        display_category: a public category to show.
        phase: started, completed or failed.
    """

    activity_id: str
    action_class: ActionClass
    display_category: str
    phase: ToolActivityPhase


@dataclass(frozen=True, slots=True)
class RunTerminated:
    """The run ended; always the last event.

    Attributes:
        status: the terminal status.
        result: the run's outcome.
    """

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
"""What a :class:`RunEvent` carries: one of these payload classes."""


_EPOCH = datetime(1970, 1, 1, tzinfo=UTC)


@dataclass(frozen=True, slots=True)
class RunEvent:
    """One entry of a run's ordered history.

    Attributes:
        run_id: the run it belongs to.
        sequence: its position: 1 for the first event, then one more for each.
        payload: what happened (one of the :data:`EventPayload` classes), or ``None`` for
            a kind this SDK does not know yet.
        event_time_us: when the worker recorded it, in microseconds since the Unix epoch.
    """

    run_id: str
    sequence: int
    payload: EventPayload | None
    # The watch's events convert this on first read (_convert._DeferredEventTime).
    event_time_us: int | None = None

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
    """UTF-8 text input (a plain ``str`` in the input list means the same).

    Attributes:
        text: the text.
    """

    text: str


@dataclass(frozen=True, slots=True)
class ArtifactPart:
    """An uploaded artifact as input, named by its opaque ID (never a path).

    Give ``media_type`` (or pass the :class:`Artifact` from ``upload`` instead) so the SDK
    can check the ``attachments.image_input`` capability before sending an image.

    Attributes:
        artifact_id: the uploaded artifact's ID.
        media_type: its content type, when you know it.
    """

    artifact_id: str
    media_type: str | None = None


@dataclass(frozen=True, slots=True, init=False)
class ResearchOptions:
    """Bounds of a research run: depth 1-5 and a non-empty set of distinct lanes.

    Attributes:
        depth: how far the research goes, from 1 to 5.
        lanes: the sources it may consult.

    Raises:
        TypeError, InvalidArgumentError: a lane that is neither an :class:`EvidenceLane`
            nor one of its names.
    """

    depth: int
    lanes: tuple[EvidenceLane, ...]
    """Members or names (``("web", "repository")``); stored as a tuple of members."""

    def __init__(self, depth: int, lanes: Iterable[EvidenceLane | EvidenceLaneName]) -> None:
        object.__setattr__(self, "depth", depth)
        object.__setattr__(self, "lanes", enum_args(lanes, EvidenceLane, "research.lanes"))


@dataclass(frozen=True, slots=True, init=False)
class PlanAction:
    """Continue a Draft plan of an earlier PLAN run (needs ``plans.continue``).

    Attributes:
        source_run_id: the PLAN run whose plan to continue.
        revision: the plan revision you saw; a newer one makes the create fail.
        kind: revise the plan, or execute it.

    Raises:
        TypeError, InvalidArgumentError: ``kind`` is neither a :class:`PlanActionKind`
            nor one of its names.
    """

    source_run_id: str
    revision: int
    kind: PlanActionKind
    """A member or its name (``"revise"``)."""

    def __init__(
        self, source_run_id: str, revision: int, kind: PlanActionKind | PlanActionKindName
    ) -> None:
        object.__setattr__(self, "source_run_id", source_run_id)
        object.__setattr__(self, "revision", revision)
        object.__setattr__(self, "kind", enum_arg(kind, PlanActionKind, "plan_action.kind"))


@dataclass(frozen=True, slots=True)
class PromptAnswer:
    """Answer to a prompt: the chosen text exactly as displayed.

    Attributes:
        choice: one of :attr:`Prompt.choices`, unchanged.
    """

    choice: str


@dataclass(frozen=True, slots=True, init=False)
class ApprovalAnswer:
    """Answer to an approval: its binding echoed, and the decision.

    Attributes:
        binding: :attr:`Approval.binding`, unchanged.
        decision: approve or deny.

    Raises:
        TypeError, InvalidArgumentError: ``decision`` is neither an
            :class:`ApprovalDecision` nor one of its names.
    """

    binding: str
    decision: ApprovalDecision
    """A member or its name (``"approve"``)."""

    def __init__(self, binding: str, decision: ApprovalDecision | ApprovalDecisionName) -> None:
        object.__setattr__(self, "binding", binding)
        object.__setattr__(
            self, "decision", enum_arg(decision, ApprovalDecision, "answer.decision")
        )


@dataclass(frozen=True, slots=True)
class RunPage:
    """One listing page. ``runs`` may be empty while ``next_page_token`` is set.

    Attributes:
        runs: the runs on this page, newest first.
        next_page_token: pass it as ``page_token`` to continue; empty on the last page.
    """

    runs: tuple[Run, ...]
    next_page_token: str


# --- artifacts --------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Artifact:
    """A stored artifact.

    Attributes:
        artifact_id: its opaque ID.
        media_type: its content type.
        size_bytes: its size.
        sha256: the lower-case hex SHA-256 of its bytes.
        display_name: the file name to show (may be empty).
        create_time: when it was stored (UTC), if known.
    """

    artifact_id: str
    media_type: str
    size_bytes: int
    sha256: str
    display_name: str
    create_time: datetime | None


@dataclass(frozen=True, slots=True)
class DownloadedArtifact:
    """A downloaded artifact whose bytes matched its declared size and SHA-256.

    Attributes:
        artifact: its metadata.
        data: the verified bytes (left out of ``repr``).
    """

    artifact: Artifact
    data: bytes = field(repr=False)
