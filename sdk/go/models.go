package colossus

import "time"

// ServerInfo is the verified GetServerInfo answer.
type ServerInfo struct {
	InstanceID     string
	APIPackage     string
	APIVersion     string
	APIMajor       uint32
	DeploymentMode DeploymentMode
	Capabilities   []string
	Limits         Limits
	ServerVersion  string
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
	RefillPerSecond uint32
	Burst           uint32
}

// Limits are every effective limit the worker advertises.
type Limits struct {
	MaxActiveRuns                       uint32
	MaxActiveRunsPerApplication         uint32
	CreateRate                          TokenBucket
	CreateRatePerApplication            TokenBucket
	MaxWatches                          uint32
	MaxWatchesPerApplication            uint32
	MaxConcurrentListRuns               uint32
	MaxConcurrentListRunsPerApplication uint32
	MaxConnections                      uint32
	MaxConcurrentStreamsPerConnection   uint32
	MaxRequestBytes                     uint64
	MaxResponseBytes                    uint64
	MaxHeaderBytes                      uint64
	MaxEventsPerRun                     uint32
	ReservedLifecycleEvents             uint32
	MaxInputParts                       uint32
	MaxInputBytes                       uint64
	MaxTurns                            uint32
	DefaultMaxTurns                     uint32
	MaxListPageSize                     uint32
	MaxListStatusFilters                uint32
	MaxArtifactBytes                    uint64
	MaxArtifactChunkBytes               uint32
	HandshakeTimeout                    time.Duration
	MaxConnectionAge                    time.Duration
}

// Run is a run's current state.
type Run struct {
	RunID          string
	SessionID      string
	Mode           RunMode
	Role           string
	Status         RunStatus
	LastSequence   uint64 // the cursor that proves a watch saw everything
	CreateTime     time.Time
	UpdateTime     time.Time
	IdempotencyKey string
	EndUserID      string // empty when none was given
	MaxTurns       uint32
	// PendingInteraction is the interaction the run waits for, or nil.
	PendingInteraction *Interaction
	// Result is set once the run is terminal.
	Result *RunResult
}

// RunResult is a terminal run's outcome.
type RunResult struct {
	OutputText string
	Plan       *PlanResult
	Research   *ResearchResult
	Failure    *RunFailure
}

// PlanResult is the plan a PLAN run produced.
type PlanResult struct {
	PlanID   string
	Revision uint64
	Status   PlanStatus
}

// ResearchResult is a RESEARCH run's report.
type ResearchResult struct {
	Report    string
	Citations []Citation
}

// Citation is one source of a research report.
type Citation struct {
	Lane  EvidenceLane
	Label string
	URL   string
}

// RunFailure says why a run failed.
type RunFailure struct {
	Code    string
	Message string
}

// Interaction is a durable, one-use question to the application: a prompt or an approval.
type Interaction struct {
	InteractionID string
	Prompt        *Prompt   // set for a prompt
	Approval      *Approval // set for an approval
	CreateTime    time.Time
}

// Prompt shows choices; answer with [PromptAnswer] echoing one exactly.
type Prompt struct {
	Question string
	Choices  []string
}

// Approval shows a public action class and a category or origin; answer with
// [ApprovalAnswer] echoing Binding.
type Approval struct {
	ActionClass     ActionClass
	DisplayCategory string
	Origin          string
	Binding         string
}

// RunEvent is one event of a run's watch.
type RunEvent struct {
	RunID     string
	Sequence  uint64
	EventTime time.Time
	// Payload is one of *StatusChanged, *OutputDelta, *InteractionRequested,
	// *InteractionResolved, *ToolActivity, *RunTerminated or *UnknownPayload.
	Payload EventPayload
}

// EventPayload is the closed set of event payloads; use a type switch.
type EventPayload interface{ isEventPayload() }

// StatusChanged reports a status transition.
type StatusChanged struct{ PreviousStatus, Status RunStatus }

// OutputDelta is a piece of output text.
type OutputDelta struct{ Text string }

// InteractionRequested asks the application a question.
type InteractionRequested struct{ Interaction Interaction }

// InteractionResolved reports how an interaction ended.
type InteractionResolved struct {
	InteractionID string
	Outcome       InteractionOutcome
	Choice        string
}

// ToolActivity reports a tool's progress in public terms only.
type ToolActivity struct {
	ActivityID      string
	ActionClass     ActionClass
	DisplayCategory string
	Phase           ToolActivityPhase
}

// RunTerminated is the last event of a run.
type RunTerminated struct {
	Status RunStatus
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
	Run Run
	// Replayed is true when the key had already created this run.
	Replayed bool
	// IdempotencyKey is the key sent (yours, or the one generated for this call).
	IdempotencyKey string
}

// RunPage is one ListRuns page. An empty page may still carry a token.
type RunPage struct {
	Runs          []Run
	NextPageToken string
}

// Artifact describes a stored artifact.
type Artifact struct {
	ArtifactID  string
	MediaType   string
	SizeBytes   uint64
	SHA256      string
	DisplayName string
	CreateTime  time.Time
}

// DownloadedArtifact is an artifact and its verified bytes.
type DownloadedArtifact struct {
	Artifact Artifact
	Data     []byte
}

// InputPart is one part of a run's input: [TextPart] or [ArtifactPart].
type InputPart interface{ isInputPart() }

// TextPart is text input.
type TextPart struct{ Text string }

// ArtifactPart references an uploaded artifact. MediaType, when known, lets the SDK apply
// the image capability gate locally.
type ArtifactPart struct {
	ArtifactID string
	MediaType  string
}

func (TextPart) isInputPart()     {}
func (ArtifactPart) isInputPart() {}

// Text is a one-part text input.
func Text(text string) []InputPart { return []InputPart{TextPart{Text: text}} }

// PlanAction continues a draft plan from a PLAN run.
type PlanAction struct {
	SourceRunID string
	Revision    uint64
	Kind        PlanActionKind
}

// ResearchOptions configure a RESEARCH run.
type ResearchOptions struct {
	Depth uint32
	Lanes []EvidenceLane
}

// Answer is [PromptAnswer] or [ApprovalAnswer].
type Answer interface{ isAnswer() }

// PromptAnswer echoes one of the prompt's choices exactly.
type PromptAnswer struct{ Choice string }

// ApprovalAnswer echoes an approval's binding with a decision.
type ApprovalAnswer struct {
	Binding  string
	Decision ApprovalDecision
}

func (PromptAnswer) isAnswer()   {}
func (ApprovalAnswer) isAnswer() {}
