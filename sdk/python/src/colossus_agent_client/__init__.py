"""Python SDK for the Colossus public application API (``colossus.api.v1alpha1``).

Start with :class:`Client` (or :class:`AsyncClient`) and one of the two placements:
:class:`DaemonOptions` for an installed shared worker, :class:`SidecarOptions` for a
private worker the SDK starts. Every error is a :class:`ColossusError`. The generated
bindings stay importable for advanced use as ``colossus_agent_client.api.v1alpha1``;
nothing public here exposes them.
"""

from ._artifacts import Artifacts, AsyncArtifacts
from ._client import AsyncClient, Client
from ._credentials import CredentialProvider, InMemoryCredentialProvider, KeyringCredentialProvider
from ._errors import (
    ApiError,
    ArtifactIntegrityError,
    AuthenticationError,
    CapabilityMissingError,
    CertificateError,
    ClientClosedError,
    ColossusError,
    CredentialError,
    DataLossError,
    DeadlineExceededError,
    DescriptorError,
    FailedPreconditionError,
    IdempotencyConflictError,
    IncompatibleServerError,
    InternalServerError,
    InvalidArgumentError,
    NotFoundError,
    OutcomeUnknownError,
    PermissionDeniedError,
    PinMismatchError,
    ProtocolViolationError,
    ResourceExhaustedError,
    SidecarError,
    TlsPolicyError,
    TransportError,
    TrustError,
    WatchGapError,
    WatchIdleTimeoutError,
)
from ._models import (
    ActionClass,
    Approval,
    ApprovalAnswer,
    ApprovalDecision,
    Artifact,
    ArtifactPart,
    Citation,
    CreateRunResult,
    DeploymentMode,
    DownloadedArtifact,
    EventPayload,
    EvidenceLane,
    Interaction,
    InteractionOutcome,
    InteractionRequested,
    InteractionResolved,
    Limits,
    OutputDelta,
    PlanAction,
    PlanActionKind,
    PlanResult,
    PlanStatus,
    Prompt,
    PromptAnswer,
    ResearchOptions,
    ResearchResult,
    Run,
    RunEvent,
    RunFailure,
    RunMode,
    RunPage,
    RunResult,
    RunStatus,
    RunTerminated,
    ServerInfo,
    StatusChanged,
    TextPart,
    TokenBucket,
    ToolActivity,
    ToolActivityPhase,
)
from ._options import ClientOptions, DaemonOptions, RetryPolicy, SidecarOptions
from ._outcome import AsyncTextStream, TextStream
from ._pagination import AsyncRunPager, RunPager
from ._reasons import ErrorReason, LocalReason
from ._runs import AsyncRuns, Runs
from ._watch import AsyncWatch, ReconnectInfo, Watch

__version__ = "0.1.0a1"

__all__ = [
    "ActionClass",
    "ApiError",
    "Approval",
    "ApprovalAnswer",
    "ApprovalDecision",
    "Artifact",
    "ArtifactIntegrityError",
    "ArtifactPart",
    "Artifacts",
    "AsyncArtifacts",
    "AsyncClient",
    "AsyncRunPager",
    "AsyncRuns",
    "AsyncTextStream",
    "AsyncWatch",
    "AuthenticationError",
    "CapabilityMissingError",
    "CertificateError",
    "Citation",
    "Client",
    "ClientClosedError",
    "ClientOptions",
    "ColossusError",
    "CreateRunResult",
    "CredentialError",
    "CredentialProvider",
    "DaemonOptions",
    "DataLossError",
    "DeadlineExceededError",
    "DeploymentMode",
    "DescriptorError",
    "DownloadedArtifact",
    "ErrorReason",
    "EventPayload",
    "EvidenceLane",
    "FailedPreconditionError",
    "IdempotencyConflictError",
    "InMemoryCredentialProvider",
    "IncompatibleServerError",
    "Interaction",
    "InteractionOutcome",
    "InteractionRequested",
    "InteractionResolved",
    "InternalServerError",
    "InvalidArgumentError",
    "KeyringCredentialProvider",
    "Limits",
    "LocalReason",
    "NotFoundError",
    "OutcomeUnknownError",
    "OutputDelta",
    "PermissionDeniedError",
    "PinMismatchError",
    "PlanAction",
    "PlanActionKind",
    "PlanResult",
    "PlanStatus",
    "Prompt",
    "PromptAnswer",
    "ProtocolViolationError",
    "ReconnectInfo",
    "ResearchOptions",
    "ResearchResult",
    "ResourceExhaustedError",
    "RetryPolicy",
    "Run",
    "RunEvent",
    "RunFailure",
    "RunMode",
    "RunPage",
    "RunPager",
    "RunResult",
    "RunStatus",
    "RunTerminated",
    "Runs",
    "ServerInfo",
    "SidecarError",
    "SidecarOptions",
    "StatusChanged",
    "TextPart",
    "TextStream",
    "TlsPolicyError",
    "TokenBucket",
    "ToolActivity",
    "ToolActivityPhase",
    "TransportError",
    "TrustError",
    "Watch",
    "WatchGapError",
    "WatchIdleTimeoutError",
    "__version__",
]


def _show_public_module() -> None:
    """Tracebacks, reprs and help() name ``colossus_agent_client.NotFoundError``, the path
    users import, instead of the private module it happens to live in."""
    for name in __all__:
        obj = globals()[name]
        if isinstance(obj, type) and obj.__module__.startswith(__name__ + "._"):
            obj.__module__ = __name__


_show_public_module()
