//! Reason names, the machine-readable half of every [`Error`](crate::Error).
//!
//! The first group is the contract's `ErrorReason` enum without its `ERROR_REASON_`
//! prefix, as the worker sends it in `google.rpc.ErrorInfo`. The second group is the SDK's
//! own: refusals and contract breaches it detects before or after a call. Every SDK of the
//! family uses the same names (docs/requirements.md, the local-reason table).
//!
//! [`Error::reason`](crate::Error::reason) is a plain `&str` so a reason added by a newer
//! worker is still visible; compare it with these constants.

macro_rules! reasons {
    ($($(#[$doc:meta])* $name:ident = $value:literal;)*) => {
        $($(#[$doc])* pub const $name: &str = $value;)*
        /// Every reason name this SDK knows, contract and local ones alike.
        pub const ALL: &[&str] = &[$($value),*];
    };
}

reasons! {
    /// No bearer was sent.
    CREDENTIAL_MISSING = "CREDENTIAL_MISSING";
    /// The bearer is malformed or unknown.
    CREDENTIAL_INVALID = "CREDENTIAL_INVALID";
    /// The credential is enrolled but not yet activated.
    CREDENTIAL_NOT_ACTIVE = "CREDENTIAL_NOT_ACTIVE";
    /// The credential was revoked.
    CREDENTIAL_REVOKED = "CREDENTIAL_REVOKED";
    /// The application's grant lacks the scope the call needs.
    SCOPE_MISSING = "SCOPE_MISSING";
    /// The logical role is not in the application's grant.
    ROLE_NOT_GRANTED = "ROLE_NOT_GRANTED";
    /// No run with that ID is visible to this application.
    RUN_NOT_FOUND = "RUN_NOT_FOUND";
    /// No interaction with that ID is visible to this application.
    INTERACTION_NOT_FOUND = "INTERACTION_NOT_FOUND";
    /// No artifact with that ID is visible to this application.
    ARTIFACT_NOT_FOUND = "ARTIFACT_NOT_FOUND";
    /// A field is malformed; metadata `field` names it.
    FIELD_INVALID = "FIELD_INVALID";
    /// The idempotency key breaks its grammar.
    IDEMPOTENCY_KEY_INVALID = "IDEMPOTENCY_KEY_INVALID";
    /// The idempotency key was used for a different request.
    IDEMPOTENCY_CONFLICT = "IDEMPOTENCY_CONFLICT";
    /// More input parts than the worker accepts.
    INPUT_TOO_MANY_PARTS = "INPUT_TOO_MANY_PARTS";
    /// More input bytes than the worker accepts.
    INPUT_TOO_LARGE = "INPUT_TOO_LARGE";
    /// `max_turns` is outside 0..=100.
    MAX_TURNS_OUT_OF_RANGE = "MAX_TURNS_OUT_OF_RANGE";
    /// `selected_skills` must be empty in v1alpha1.
    SKILLS_NOT_SUPPORTED = "SKILLS_NOT_SUPPORTED";
    /// Too many status values in a ListRuns filter.
    STATUS_FILTER_TOO_LARGE = "STATUS_FILTER_TOO_LARGE";
    /// The page token is tampered, foreign or stale.
    PAGE_TOKEN_INVALID = "PAGE_TOKEN_INVALID";
    /// The answer does not echo a displayed choice or the approval binding.
    INTERACTION_ANSWER_MISMATCH = "INTERACTION_ANSWER_MISMATCH";
    /// Uploaded bytes differ from the declared size or digest.
    ARTIFACT_INTEGRITY_MISMATCH = "ARTIFACT_INTEGRITY_MISMATCH";
    /// The worker does not accept this artifact here.
    ARTIFACT_NOT_ACCEPTED = "ARTIFACT_NOT_ACCEPTED";
    /// The worker does not advertise a capability the call needs.
    CAPABILITY_NOT_SUPPORTED = "CAPABILITY_NOT_SUPPORTED";
    /// The interaction was already answered.
    INTERACTION_ALREADY_RESOLVED = "INTERACTION_ALREADY_RESOLVED";
    /// The run is already terminal.
    RUN_TERMINAL = "RUN_TERMINAL";
    /// The plan revision is not the current Draft.
    PLAN_REVISION_STALE = "PLAN_REVISION_STALE";
    /// Too many active runs.
    ACTIVE_RUN_LIMIT = "ACTIVE_RUN_LIMIT";
    /// Creates arrive faster than the rate limit allows.
    CREATE_RATE_LIMIT = "CREATE_RATE_LIMIT";
    /// Too many open watches.
    WATCH_LIMIT = "WATCH_LIMIT";
    /// Too many concurrent ListRuns calls.
    LIST_CONCURRENCY_LIMIT = "LIST_CONCURRENCY_LIMIT";
    /// The run reached its event limit.
    EVENT_LIMIT = "EVENT_LIMIT";
    /// The request is over the advertised request cap.
    REQUEST_TOO_LARGE = "REQUEST_TOO_LARGE";
    /// The artifact is over the advertised artifact cap.
    ARTIFACT_TOO_LARGE = "ARTIFACT_TOO_LARGE";
    /// The worker is unavailable.
    UNAVAILABLE = "UNAVAILABLE";
    /// The worker's journal failed its integrity check.
    JOURNAL_INTEGRITY = "JOURNAL_INTEGRITY";
    /// An internal worker fault.
    INTERNAL = "INTERNAL";

    /// A watch received a sequence beyond the last delivered one plus one.
    WATCH_GAP = "WATCH_GAP";
    /// A replayed event differs from the one delivered under the same sequence.
    WATCH_REPLAY_ALTERED = "WATCH_REPLAY_ALTERED";
    /// A replay reached behind the bounded replay window, so it cannot be compared.
    WATCH_REPLAY_UNVERIFIABLE = "WATCH_REPLAY_UNVERIFIABLE";
    /// An event named another run.
    WATCH_WRONG_RUN = "WATCH_WRONG_RUN";
    /// An event arrived after the terminal event.
    WATCH_AFTER_TERMINAL = "WATCH_AFTER_TERMINAL";
    /// GetRun after a clean close did not confirm the delivered cursor as terminal.
    WATCH_RECONCILE_MISMATCH = "WATCH_RECONCILE_MISMATCH";
    /// The watch's reconnect policy (attempts or elapsed time) is spent.
    WATCH_RECONNECTS_EXHAUSTED = "WATCH_RECONNECTS_EXHAUSTED";
    /// No event arrived within the watch's idle timeout.
    WATCH_IDLE_TIMEOUT = "WATCH_IDLE_TIMEOUT";
    /// A page carried a token but made no progress.
    PAGE_NO_PROGRESS = "PAGE_NO_PROGRESS";
    /// GetServerInfo named another instance, API package, major or deployment mode.
    SERVER_INFO_MISMATCH = "SERVER_INFO_MISMATCH";
    /// `endpoint.json`, its folder or an endpoint string broke its rules (C1).
    DESCRIPTOR_INVALID = "DESCRIPTOR_INVALID";
    /// `certificate.pem` (or a bootstrap certificate) broke its rules (C2).
    CERTIFICATE_INVALID = "CERTIFICATE_INVALID";
    /// The descriptor names an instance other than the provisioned one (C3).
    INSTANCE_MISMATCH = "INSTANCE_MISMATCH";
    /// A bearer is not 32-256 visible ASCII characters (C5).
    BEARER_MALFORMED = "BEARER_MALFORMED";
    /// The credential provider failed.
    PROVIDER_FAILED = "PROVIDER_FAILED";
    /// No OS credential store could be reached (a headless session, say).
    KEYRING_UNAVAILABLE = "KEYRING_UNAVAILABLE";
    /// The OS credential store holds no entry for this application.
    KEYRING_ENTRY_MISSING = "KEYRING_ENTRY_MISSING";
    /// The sidecar worker program was not found.
    SIDECAR_PROGRAM_NOT_FOUND = "SIDECAR_PROGRAM_NOT_FOUND";
    /// The sidecar worker could not be started.
    SIDECAR_SPAWN_FAILED = "SIDECAR_SPAWN_FAILED";
    /// The sidecar's state folder is not an absolute, private folder.
    STATE_DIR_INVALID = "STATE_DIR_INVALID";
    /// The bootstrap request is over the frame cap.
    BOOTSTRAP_TOO_LARGE = "BOOTSTRAP_TOO_LARGE";
    /// The bootstrap pipes failed.
    BOOTSTRAP_IO = "BOOTSTRAP_IO";
    /// The sidecar closed its bootstrap pipe before replying.
    BOOTSTRAP_EOF = "BOOTSTRAP_EOF";
    /// The sidecar did not reply within the bootstrap timeout.
    BOOTSTRAP_TIMEOUT = "BOOTSTRAP_TIMEOUT";
    /// The handshake was not TLS 1.3.
    TLS_VERSION = "TLS_VERSION";
    /// The server presented more than its one pinned certificate.
    TLS_CHAIN = "TLS_CHAIN";
    /// The TLS handshake failed for another reason.
    TLS_HANDSHAKE = "TLS_HANDSHAKE";
    /// A certificate or identity differs from the provisioned one.
    PIN_MISMATCH = "PIN_MISMATCH";
    /// The worker could not be reached.
    UNREACHABLE = "UNREACHABLE";
    /// A response is over the advertised response cap.
    RESPONSE_TOO_LARGE = "RESPONSE_TOO_LARGE";
    /// The client was used after it was closed.
    CLIENT_CLOSED = "CLIENT_CLOSED";
    /// A response broke the contract's shape (a missing message or a malformed ID).
    RESPONSE_MALFORMED = "RESPONSE_MALFORMED";
    /// The worker stored an artifact that differs from the upload.
    ARTIFACT_MISMATCH = "ARTIFACT_MISMATCH";
    /// A download's length differs from the declared size.
    ARTIFACT_SIZE_MISMATCH = "ARTIFACT_SIZE_MISMATCH";
    /// A download's SHA-256 differs from the declared digest.
    ARTIFACT_DIGEST_MISMATCH = "ARTIFACT_DIGEST_MISMATCH";
    /// A download stream broke its chunk order.
    ARTIFACT_STREAM_ORDER = "ARTIFACT_STREAM_ORDER";
    /// The sidecar worker refused the bootstrap.
    BOOTSTRAP_REFUSED = "BOOTSTRAP_REFUSED";
    /// The sidecar's bootstrap reply broke its rules.
    BOOTSTRAP_MALFORMED = "BOOTSTRAP_MALFORMED";
    /// The sidecar worker kept exiting: its restart budget is spent.
    SIDECAR_RESTARTS_EXHAUSTED = "SIDECAR_RESTARTS_EXHAUSTED";
}
