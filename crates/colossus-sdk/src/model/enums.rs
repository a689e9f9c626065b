//! The contract's enumerations, named as the other SDKs print them (`WAITING_FOR_INPUT`).
//! A value newer than this SDK reads as `Unknown`.

macro_rules! contract_enum {
    (
        $(#[$doc:meta])*
        $name:ident { $($(#[$vdoc:meta])* $variant:ident = $num:literal => $text:literal,)* }
    ) => {
        $(#[$doc])*
        #[non_exhaustive]
        #[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Default)]
        pub enum $name {
            /// The zero value: not set.
            #[default]
            Unspecified,
            $($(#[$vdoc])* $variant,)*
            /// A value newer than this SDK.
            Unknown,
        }

        impl $name {
            /// The name without the contract's type prefix (`"UNSPECIFIED"` for the zero value).
            pub const fn as_str(self) -> &'static str {
                match self {
                    Self::Unspecified => "UNSPECIFIED",
                    $(Self::$variant => $text,)*
                    Self::Unknown => "UNKNOWN",
                }
            }

            /// The wire number (0 for `Unspecified` and `Unknown`).
            #[allow(dead_code)]
            pub(crate) const fn number(self) -> i32 {
                match self {
                    $(Self::$variant => $num,)*
                    _ => 0,
                }
            }

            /// The value of a wire number.
            #[allow(dead_code)]
            pub(crate) const fn from_number(n: i32) -> Self {
                match n {
                    0 => Self::Unspecified,
                    $($num => Self::$variant,)*
                    _ => Self::Unknown,
                }
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(self.as_str())
            }
        }
    };
}

contract_enum! {
    /// A run's lifecycle state. The last five are terminal ([`RunStatus::is_terminal`]).
    RunStatus {
        /// Accepted, not started.
        Queued = 1 => "QUEUED",
        /// Executing.
        Running = 2 => "RUNNING",
        /// Waiting for an answer to an interaction.
        WaitingForInput = 3 => "WAITING_FOR_INPUT",
        /// A cancel was accepted; the run is stopping.
        Cancelling = 4 => "CANCELLING",
        /// Finished with a result (terminal).
        Succeeded = 5 => "SUCCEEDED",
        /// Finished with a failure (terminal).
        Failed = 6 => "FAILED",
        /// Cancelled (terminal).
        Cancelled = 7 => "CANCELLED",
        /// Stopped by a worker restart (terminal).
        Interrupted = 8 => "INTERRUPTED",
        /// The worker cannot tell how the run ended (terminal).
        OutcomeUnknown = 9 => "OUTCOME_UNKNOWN",
    }
}

impl RunStatus {
    /// Whether the run can no longer change.
    ///
    /// ```
    /// use colossus_sdk::model::RunStatus;
    /// assert!(RunStatus::Succeeded.is_terminal());
    /// assert!(!RunStatus::WaitingForInput.is_terminal());
    /// ```
    pub const fn is_terminal(self) -> bool {
        matches!(
            self,
            Self::Succeeded
                | Self::Failed
                | Self::Cancelled
                | Self::Interrupted
                | Self::OutcomeUnknown
        )
    }
}

contract_enum! {
    /// What a run does.
    RunMode {
        /// Carry out the request (the default of a create).
        Execute = 1 => "EXECUTE",
        /// Produce a draft plan.
        Plan = 2 => "PLAN",
        /// Produce a research report with citations.
        Research = 3 => "RESEARCH",
    }
}

contract_enum! {
    /// The placement a worker advertises.
    DeploymentMode {
        /// A shared, installed worker.
        SharedDaemon = 1 => "SHARED_DAEMON",
        /// A private worker supervised by one application.
        Sidecar = 2 => "SIDECAR",
    }
}

contract_enum! {
    /// The public class of an action needing approval or reported as tool activity.
    ActionClass {
        /// Reads data.
        Read = 1 => "READ",
        /// Writes data.
        Write = 2 => "WRITE",
        /// Executes a program.
        Execute = 3 => "EXECUTE",
        /// Uses the network.
        Network = 4 => "NETWORK",
        /// Administers the system.
        Administration = 5 => "ADMINISTRATION",
        /// Delegates to another agent.
        Delegation = 6 => "DELEGATION",
        /// Changes local state.
        LocalState = 7 => "LOCAL_STATE",
    }
}

contract_enum! {
    /// How an interaction was resolved.
    InteractionOutcome {
        /// A prompt was answered.
        Answered = 1 => "ANSWERED",
        /// An approval was granted.
        Approved = 2 => "APPROVED",
        /// An approval was denied.
        Denied = 3 => "DENIED",
        /// The run was cancelled first.
        Cancelled = 4 => "CANCELLED",
        /// The worker restarted first.
        Interrupted = 5 => "INTERRUPTED",
    }
}

contract_enum! {
    /// The phase of a tool activity.
    ToolActivityPhase {
        /// The tool started.
        Started = 1 => "STARTED",
        /// The tool completed.
        Completed = 2 => "COMPLETED",
        /// The tool failed.
        Failed = 3 => "FAILED",
    }
}

contract_enum! {
    /// The state of a plan produced by a PLAN run.
    PlanStatus {
        /// The current draft.
        Draft = 1 => "DRAFT",
        /// Replaced by a revision.
        Superseded = 2 => "SUPERSEDED",
        /// Executed.
        Executed = 3 => "EXECUTED",
        /// Abandoned.
        Abandoned = 4 => "ABANDONED",
    }
}

contract_enum! {
    /// What to do with a draft plan ([`PlanAction`](crate::model::PlanAction)).
    PlanActionKind {
        /// Produce a new revision.
        Revise = 1 => "REVISE",
        /// Execute the plan's steps.
        ExecuteDirect = 2 => "EXECUTE_DIRECT",
        /// Execute toward the plan's goal.
        ExecuteGoal = 3 => "EXECUTE_GOAL",
    }
}

contract_enum! {
    /// A source a research run may use.
    EvidenceLane {
        /// The local repository.
        Repository = 1 => "REPOSITORY",
        /// The web.
        Web = 2 => "WEB",
        /// MCP servers.
        Mcp = 3 => "MCP",
    }
}

contract_enum! {
    /// The decision of an approval answer.
    ApprovalDecision {
        /// Allow the action.
        Approve = 1 => "APPROVE",
        /// Refuse the action.
        Deny = 2 => "DENY",
    }
}

#[cfg(test)]
mod tests;
