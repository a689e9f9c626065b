//! The public model: what the SDK returns and accepts, independent of the wire.

mod artifact;
mod enums;
mod event;
mod request;
mod run;
mod server;

pub use artifact::{Artifact, ArtifactManifest, DownloadPart, DownloadedArtifact};
pub use enums::{
    ActionClass, ApprovalDecision, DeploymentMode, EvidenceLane, InteractionOutcome,
    PlanActionKind, PlanStatus, RunMode, RunStatus, ToolActivityPhase,
};
pub use event::{EventPayload, RunEvent};
pub use request::{
    Answer, CreateRunRequest, CreateRunRequestBuilder, InputPart, ListRunsQuery, PlanAction,
    ResearchOptions,
};
pub use run::{
    Approval, Citation, CreateRunResult, Interaction, InteractionKind, PlanResult, Prompt,
    ResearchResult, Run, RunFailure, RunPage, RunResult,
};
pub use server::{Limits, ServerInfo, TokenBucket, capabilities};
