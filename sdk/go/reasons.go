package colossus

// Reasons the contract defines (errors.proto), without the ERROR_REASON_ prefix. Error.Reason
// is a plain string so that a reason added by a newer worker is still visible.
const (
	ReasonCredentialMissing          = "CREDENTIAL_MISSING"
	ReasonCredentialInvalid          = "CREDENTIAL_INVALID"
	ReasonCredentialNotActive        = "CREDENTIAL_NOT_ACTIVE"
	ReasonCredentialRevoked          = "CREDENTIAL_REVOKED"
	ReasonScopeMissing               = "SCOPE_MISSING"
	ReasonRoleNotGranted             = "ROLE_NOT_GRANTED"
	ReasonRunNotFound                = "RUN_NOT_FOUND"
	ReasonInteractionNotFound        = "INTERACTION_NOT_FOUND"
	ReasonArtifactNotFound           = "ARTIFACT_NOT_FOUND"
	ReasonFieldInvalid               = "FIELD_INVALID"
	ReasonIdempotencyKeyInvalid      = "IDEMPOTENCY_KEY_INVALID"
	ReasonIdempotencyConflict        = "IDEMPOTENCY_CONFLICT"
	ReasonInputTooManyParts          = "INPUT_TOO_MANY_PARTS"
	ReasonInputTooLarge              = "INPUT_TOO_LARGE"
	ReasonMaxTurnsOutOfRange         = "MAX_TURNS_OUT_OF_RANGE"
	ReasonSkillsNotSupported         = "SKILLS_NOT_SUPPORTED"
	ReasonStatusFilterTooLarge       = "STATUS_FILTER_TOO_LARGE"
	ReasonPageTokenInvalid           = "PAGE_TOKEN_INVALID"
	ReasonInteractionAnswerMismatch  = "INTERACTION_ANSWER_MISMATCH"
	ReasonArtifactIntegrityMismatch  = "ARTIFACT_INTEGRITY_MISMATCH"
	ReasonArtifactNotAccepted        = "ARTIFACT_NOT_ACCEPTED"
	ReasonCapabilityNotSupported     = "CAPABILITY_NOT_SUPPORTED"
	ReasonInteractionAlreadyResolved = "INTERACTION_ALREADY_RESOLVED"
	ReasonRunTerminal                = "RUN_TERMINAL"
	ReasonPlanRevisionStale          = "PLAN_REVISION_STALE"
	ReasonActiveRunLimit             = "ACTIVE_RUN_LIMIT"
	ReasonCreateRateLimit            = "CREATE_RATE_LIMIT"
	ReasonWatchLimit                 = "WATCH_LIMIT"
	ReasonListConcurrencyLimit       = "LIST_CONCURRENCY_LIMIT"
	ReasonEventLimit                 = "EVENT_LIMIT"
	ReasonRequestTooLarge            = "REQUEST_TOO_LARGE"
	ReasonArtifactTooLarge           = "ARTIFACT_TOO_LARGE"
	ReasonUnavailable                = "UNAVAILABLE"
	ReasonJournalIntegrity           = "JOURNAL_INTEGRITY"
	ReasonInternal                   = "INTERNAL"
)

// Local reasons: the SDK's own, for failures it detects itself (Error.Code is codes.OK,
// except ReasonUnreachable and ReasonAborted, which keep the transport's code). The same
// names in every Colossus SDK; docs/requirements.md (S9) says which failure carries which.
const (
	// trust (C1-C4, C6)
	ReasonDescriptorInvalid  = "DESCRIPTOR_INVALID"
	ReasonCertificateInvalid = "CERTIFICATE_INVALID"
	ReasonPinMismatch        = "PIN_MISMATCH"
	ReasonInstanceMismatch   = "INSTANCE_MISMATCH"
	ReasonTLSVersion         = "TLS_VERSION"
	ReasonTLSChain           = "TLS_CHAIN"
	ReasonTLSHandshake       = "TLS_HANDSHAKE"
	ReasonServerInfoMismatch = "SERVER_INFO_MISMATCH"

	// credentials (C5, C8)
	ReasonBearerMalformed     = "BEARER_MALFORMED"
	ReasonProviderFailed      = "PROVIDER_FAILED"
	ReasonKeyringUnavailable  = "KEYRING_UNAVAILABLE"
	ReasonKeyringEntryMissing = "KEYRING_ENTRY_MISSING"

	// transport and the caller
	ReasonUnreachable      = "UNREACHABLE"
	ReasonAborted          = "ABORTED"
	ReasonClientClosed     = "CLIENT_CLOSED"
	ReasonResponseTooLarge = "RESPONSE_TOO_LARGE"

	// answers that break the contract
	ReasonResponseMalformed      = "RESPONSE_MALFORMED"
	ReasonPageNoProgress         = "PAGE_NO_PROGRESS"
	ReasonWatchGap               = "WATCH_GAP"
	ReasonWatchReplayAltered     = "WATCH_REPLAY_ALTERED"
	ReasonWatchReplayUnverified  = "WATCH_REPLAY_UNVERIFIABLE"
	ReasonWatchWrongRun          = "WATCH_WRONG_RUN"
	ReasonWatchAfterTerminal     = "WATCH_AFTER_TERMINAL"
	ReasonWatchReconcileMismatch = "WATCH_RECONCILE_MISMATCH"
	ReasonWatchReconnectsSpent   = "WATCH_RECONNECTS_EXHAUSTED"
	ReasonWatchIdleTimeout       = "WATCH_IDLE_TIMEOUT"
	ReasonArtifactMismatch       = "ARTIFACT_MISMATCH"
	ReasonArtifactStreamOrder    = "ARTIFACT_STREAM_ORDER"
	ReasonArtifactSizeMismatch   = "ARTIFACT_SIZE_MISMATCH"
	ReasonArtifactDigestMismatch = "ARTIFACT_DIGEST_MISMATCH"

	// sidecar (S7, W16)
	ReasonSidecarProgramNotFound = "SIDECAR_PROGRAM_NOT_FOUND"
	ReasonSidecarSpawnFailed     = "SIDECAR_SPAWN_FAILED"
	ReasonStateDirInvalid        = "STATE_DIR_INVALID"
	ReasonBootstrapTooLarge      = "BOOTSTRAP_TOO_LARGE"
	ReasonBootstrapMalformed     = "BOOTSTRAP_MALFORMED"
	ReasonBootstrapRefused       = "BOOTSTRAP_REFUSED"
	ReasonBootstrapIO            = "BOOTSTRAP_IO"
	ReasonBootstrapEOF           = "BOOTSTRAP_EOF"
	ReasonBootstrapTimeout       = "BOOTSTRAP_TIMEOUT"
	ReasonSidecarRestartsSpent   = "SIDECAR_RESTARTS_EXHAUSTED"
)
