package colossus

import "time"

// ServerInfo is the verified GetServerInfo answer.
type ServerInfo struct {
	// InstanceID is the worker's stable identity, the same as in its discovery descriptor.
	InstanceID string
	// APIPackage is the Protobuf package the worker serves, "colossus.api.v1alpha1".
	APIPackage string
	// APIVersion is the version segment of that package, "v1alpha1".
	APIVersion string
	// APIMajor is the contract's major version (1 for v1alpha1).
	APIMajor uint32
	// DeploymentMode says how the worker was placed: a shared daemon or a sidecar.
	DeploymentMode DeploymentMode
	// Capabilities are the optional features the worker supports; see
	// [ServerInfo.HasCapability].
	Capabilities []string
	// Limits are the limits the worker enforces, so calls over them are refused locally.
	Limits Limits
	// ServerVersion is the worker's free-form product version, for diagnostics only.
	ServerVersion string
}

// HasCapability reports whether the worker advertises capability.
func (s ServerInfo) HasCapability(capability string) bool {
	for _, c := range s.Capabilities {
		if c == capability {
			return true
		}
	}
	return false
}

// TokenBucket is a rate limit: a refill rate per second and a burst.
type TokenBucket struct {
	// RefillPerSecond is how many tokens are added each second.
	RefillPerSecond uint32
	// Burst is the bucket's capacity, also the number of tokens at start.
	Burst uint32
}

// Limits are every effective limit the worker advertises.
type Limits struct {
	// MaxActiveRuns is how many runs may be unfinished at once, across all applications.
	MaxActiveRuns uint32
	// MaxActiveRunsPerApplication is how many runs one application may have unfinished at
	// once.
	MaxActiveRunsPerApplication uint32
	// CreateRate is the new-run rate across all applications (idempotent replays are free).
	CreateRate TokenBucket
	// CreateRatePerApplication is the new-run rate for one application.
	CreateRatePerApplication TokenBucket
	// MaxWatches is how many WatchRun streams may be open across all applications.
	MaxWatches uint32
	// MaxWatchesPerApplication is how many WatchRun streams one application may have open.
	MaxWatchesPerApplication uint32
	// MaxConcurrentListRuns is how many ListRuns calls may run at once across all
	// applications.
	MaxConcurrentListRuns uint32
	// MaxConcurrentListRunsPerApplication is how many ListRuns calls one application may
	// run at once.
	MaxConcurrentListRunsPerApplication uint32
	// MaxConnections is how many TLS connections the worker accepts at once.
	MaxConnections uint32
	// MaxConcurrentStreamsPerConnection is how many HTTP/2 streams one connection may
	// carry.
	MaxConcurrentStreamsPerConnection uint32
	// MaxRequestBytes is the largest request message, in bytes; the SDK refuses a larger
	// one (C7).
	MaxRequestBytes uint64
	// MaxResponseBytes is the largest response message the worker sends, in bytes; the SDK
	// caps what it accepts there (C7).
	MaxResponseBytes uint64
	// MaxHeaderBytes is the largest block of request headers, in bytes.
	MaxHeaderBytes uint64
	// MaxEventsPerRun is how many ordinary events a run may hold before further progress is
	// refused.
	MaxEventsPerRun uint32
	// ReservedLifecycleEvents are the extra events kept so a run at its event cap can still
	// finish.
	ReservedLifecycleEvents uint32
	// MaxInputParts is how many input parts one create may send.
	MaxInputParts uint32
	// MaxInputBytes is the total UTF-8 bytes of input text one create may send.
	MaxInputBytes uint64
	// MaxTurns is the largest turn budget a create may ask for.
	MaxTurns uint32
	// DefaultMaxTurns is the turn budget a create gets when it asks for none.
	DefaultMaxTurns uint32
	// MaxListPageSize is the largest page ListRuns returns.
	MaxListPageSize uint32
	// MaxListStatusFilters is how many statuses one ListRuns call may filter on.
	MaxListStatusFilters uint32
	// MaxArtifactBytes is the largest artifact, in bytes; 0 without the artifacts
	// capability.
	MaxArtifactBytes uint64
	// MaxArtifactChunkBytes is the largest chunk of an artifact upload or download message,
	// in bytes.
	MaxArtifactChunkBytes uint32
	// HandshakeTimeout is the time the worker allows for a TLS handshake (0 when not
	// advertised).
	HandshakeTimeout time.Duration
	// MaxConnectionAge is the age after which the worker gracefully closes a connection (0
	// when not advertised).
	MaxConnectionAge time.Duration
}

// Run is a run's current state.
type Run struct {
	// RunID is the worker-assigned opaque identifier; do not parse it.
	RunID string
	// SessionID is the session the run belongs to, given on create or assigned by the
	// worker.
	SessionID string
	// Mode is what the run produces: execute, plan or research.
	Mode RunMode
	// Role is the logical role the run executes as.
	Role string
	// Status is the run's lifecycle state.
	Status RunStatus
	// LastSequence is the sequence of the newest recorded event (0 before the first): the
	// cursor that proves a watch saw everything.
	LastSequence uint64
	// CreateTime is when the worker accepted the run.
	CreateTime time.Time
	// UpdateTime is when the run last changed.
	UpdateTime time.Time
	// IdempotencyKey is the key the run was created with.
	IdempotencyKey string
	// EndUserID is the caller-asserted end user sent on create; empty when none was given.
	EndUserID string
	// MaxTurns is the effective turn budget (never 0).
	MaxTurns uint32
	// PendingInteraction is the interaction the run waits for, or nil.
	PendingInteraction *Interaction
	// Result is set once the run is terminal.
	Result *RunResult
}

// RunResult is a terminal run's outcome.
type RunResult struct {
	// OutputText is the final released assistant text, if any.
	OutputText string
	// Plan is set for PLAN runs (also when cancelled after the draft was created).
	Plan *PlanResult
	// Research is set for RESEARCH runs that produced a report.
	Research *ResearchResult
	// Failure is set for failed runs and says why.
	Failure *RunFailure
}

// PlanResult is the plan a PLAN run produced.
type PlanResult struct {
	// PlanID is the plan's opaque identity, for display and correlation only.
	PlanID string
	// Revision is the revision this run produced, starting at 1.
	Revision uint64
	// Status is the plan's status when the run ended.
	Status PlanStatus
}

// ResearchResult is a RESEARCH run's report.
type ResearchResult struct {
	// Report is the report text.
	Report string
	// Citations are the sources the report cites, in citation order.
	Citations []Citation
}

// Citation is one source of a research report.
type Citation struct {
	// Lane is where the evidence came from.
	Lane EvidenceLane
	// Label is a short human-readable label.
	Label string
	// URL is the https URL of the page for the web lane; empty otherwise.
	URL string
}

// RunFailure says why a run failed.
type RunFailure struct {
	// Code is a stable lower-case token such as "runtime_error" or "turn_limit".
	Code string
	// Message is a human-readable explanation with no internal detail.
	Message string
}

// Interaction is a durable, one-use question to the application: a prompt or an approval.
type Interaction struct {
	// InteractionID is the interaction's opaque identifier, unique within the run.
	InteractionID string
	// Prompt is set for a prompt.
	Prompt *Prompt
	// Approval is set for an approval.
	Approval *Approval
	// CreateTime is when the run asked.
	CreateTime time.Time
}

// Prompt shows choices; answer with [PromptAnswer] echoing one exactly.
type Prompt struct {
	// Question is the question, as plain text.
	Question string
	// Choices are the options, at least one, each unique.
	Choices []string
}

// Approval shows a public action class and a category or origin; answer with
// [ApprovalAnswer] echoing Binding.
type Approval struct {
	// ActionClass is the kind of action, from the public taxonomy.
	ActionClass ActionClass
	// DisplayCategory is what the action touches, such as "source files"; empty when Origin
	// is set.
	DisplayCategory string
	// Origin is the http or https origin the action talks to; empty when DisplayCategory is
	// set.
	Origin string
	// Binding is a fresh random value for this approval alone; the answer echoes it.
	Binding string
}

// RunEvent is one event of a run's watch.
type RunEvent struct {
	// RunID is the run the event belongs to.
	RunID string
	// Sequence is the event's position in the run's history: 1 for the first, then
	// consecutive.
	Sequence uint64
	// EventTime is when the worker recorded the event.
	EventTime time.Time
	// Payload is one of *StatusChanged, *OutputDelta, *InteractionRequested,
	// *InteractionResolved, *ToolActivity, *RunTerminated or *UnknownPayload.
	Payload EventPayload
}

// EventPayload is the closed set of event payloads; use a type switch.
type EventPayload interface{ isEventPayload() }

// StatusChanged reports a status transition.
type StatusChanged struct {
	// PreviousStatus is the status before the change.
	PreviousStatus RunStatus
	// Status is the status after the change.
	Status RunStatus
}

// OutputDelta is a piece of output text.
type OutputDelta struct {
	// Text is the new text, to append in sequence order.
	Text string
}

// InteractionRequested asks the application a question.
type InteractionRequested struct {
	// Interaction is the question.
	Interaction Interaction
}

// InteractionResolved reports how an interaction ended.
type InteractionResolved struct {
	// InteractionID is the interaction that was closed.
	InteractionID string
	// Outcome is how it was closed.
	Outcome InteractionOutcome
	// Choice is the chosen text of an answered prompt; empty otherwise.
	Choice string
}

// ToolActivity reports a tool's progress in public terms only.
type ToolActivity struct {
	// ActivityID links the started and finishing events of one tool call.
	ActivityID string
	// ActionClass is the kind of action, from the public taxonomy.
	ActionClass ActionClass
	// DisplayCategory is a short display category such as "source files".
	DisplayCategory string
	// Phase is where in its life the call is: started, completed or failed.
	Phase ToolActivityPhase
}

// RunTerminated is the last event of a run.
type RunTerminated struct {
	// Status is the terminal status.
	Status RunStatus
	// Result is the outcome, equal to [Run.Result] from then on.
	Result *RunResult
}

// UnknownPayload stands for a payload kind newer than this SDK.
type UnknownPayload struct{}

func (*StatusChanged) isEventPayload()        {}
func (*OutputDelta) isEventPayload()          {}
func (*InteractionRequested) isEventPayload() {}
func (*InteractionResolved) isEventPayload()  {}
func (*ToolActivity) isEventPayload()         {}
func (*RunTerminated) isEventPayload()        {}
func (*UnknownPayload) isEventPayload()       {}

// CreateRunResult is the answer to a create.
type CreateRunResult struct {
	// Run is the created run, or the one the key had created before.
	Run Run
	// Replayed is true when the key had already created this run.
	Replayed bool
	// IdempotencyKey is the key sent (yours, or the one generated for this call).
	IdempotencyKey string
}

// RunPage is one ListRuns page. An empty page may still carry a token.
type RunPage struct {
	// Runs are the matching runs, newest first; the page may be empty while more follow.
	Runs []Run
	// NextPageToken asks for the next page; empty on the last one.
	NextPageToken string
}

// Artifact describes a stored artifact.
type Artifact struct {
	// ArtifactID is the worker-assigned opaque identifier.
	ArtifactID string
	// MediaType is the media type given at upload, such as "text/plain" or "image/png".
	MediaType string
	// SizeBytes is the exact length in bytes.
	SizeBytes uint64
	// SHA256 is the lower-case hex SHA-256 of the bytes (64 characters).
	SHA256 string
	// DisplayName is a display name with no path separators, at most 255 bytes.
	DisplayName string
	// CreateTime is when the upload completed.
	CreateTime time.Time
}

// DownloadedArtifact is an artifact and its verified bytes.
type DownloadedArtifact struct {
	// Artifact is the artifact's metadata.
	Artifact Artifact
	// Data are its bytes, checked against Artifact.SizeBytes and Artifact.SHA256.
	Data []byte
}

// InputPart is one part of a run's input: [TextPart] or [ArtifactPart].
type InputPart interface{ isInputPart() }

// TextPart is text input.
type TextPart struct {
	// Text is the UTF-8 text.
	Text string
}

// ArtifactPart references an uploaded artifact. MediaType, when known, lets the SDK apply
// the image capability gate locally.
type ArtifactPart struct {
	// ArtifactID is the ID an upload returned.
	ArtifactID string
	// MediaType is the artifact's media type, when known; an image type needs the
	// attachments.image_input capability.
	MediaType string
}

func (TextPart) isInputPart()     {}
func (ArtifactPart) isInputPart() {}

// Text is a one-part text input.
func Text(text string) []InputPart { return []InputPart{TextPart{Text: text}} }

// PlanAction continues a draft plan from a PLAN run.
type PlanAction struct {
	// SourceRunID is a PLAN run of this application whose result is a draft.
	SourceRunID string
	// Revision is the exact plan revision the user saw; a stale one is refused with
	// PLAN_REVISION_STALE.
	Revision uint64
	// Kind is what to do with the plan: revise it, or execute it directly or as one goal.
	Kind PlanActionKind
}

// ResearchOptions configure a RESEARCH run.
type ResearchOptions struct {
	// Depth is how many rounds of collection and synthesis to run, 1 to 5.
	Depth uint32
	// Lanes are the sources to consult: at least one, none repeated.
	Lanes []EvidenceLane
}

// Answer is [PromptAnswer] or [ApprovalAnswer].
type Answer interface{ isAnswer() }

// PromptAnswer echoes one of the prompt's choices exactly.
type PromptAnswer struct {
	// Choice is one of the prompt's choices, exactly as displayed.
	Choice string
}

// ApprovalAnswer echoes an approval's binding with a decision.
type ApprovalAnswer struct {
	// Binding is the approval's Binding, echoed exactly.
	Binding string
	// Decision approves or denies the action.
	Decision ApprovalDecision
}

func (PromptAnswer) isAnswer()   {}
func (ApprovalAnswer) isAnswer() {}
