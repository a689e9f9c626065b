package colossus

import (
	"strings"

	"google.golang.org/protobuf/reflect/protoreflect"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// RunStatus is a run's lifecycle state.
type RunStatus string

// Run statuses. The last five are terminal.
const (
	RunStatusUnspecified     RunStatus = "UNSPECIFIED"
	RunStatusQueued          RunStatus = "QUEUED"
	RunStatusRunning         RunStatus = "RUNNING"
	RunStatusWaitingForInput RunStatus = "WAITING_FOR_INPUT"
	RunStatusCancelling      RunStatus = "CANCELLING"
	RunStatusSucceeded       RunStatus = "SUCCEEDED"
	RunStatusFailed          RunStatus = "FAILED"
	RunStatusCancelled       RunStatus = "CANCELLED"
	RunStatusInterrupted     RunStatus = "INTERRUPTED"
	RunStatusOutcomeUnknown  RunStatus = "OUTCOME_UNKNOWN"
)

// IsTerminal reports whether the run can no longer change.
func (s RunStatus) IsTerminal() bool {
	switch s {
	case RunStatusSucceeded, RunStatusFailed, RunStatusCancelled, RunStatusInterrupted, RunStatusOutcomeUnknown:
		return true
	}
	return false
}

// RunMode is what a run does.
type RunMode string

// Run modes.
const (
	RunModeUnspecified RunMode = "UNSPECIFIED"
	RunModeExecute     RunMode = "EXECUTE"
	RunModePlan        RunMode = "PLAN"
	RunModeResearch    RunMode = "RESEARCH"
)

// DeploymentMode is the placement a worker advertises.
type DeploymentMode string

// Deployment modes.
const (
	DeploymentModeUnspecified  DeploymentMode = "UNSPECIFIED"
	DeploymentModeSharedDaemon DeploymentMode = "SHARED_DAEMON"
	DeploymentModeSidecar      DeploymentMode = "SIDECAR"
)

// ActionClass is the public class of an action needing approval or reported as activity.
type ActionClass string

// Action classes.
const (
	ActionClassUnspecified    ActionClass = "UNSPECIFIED"
	ActionClassRead           ActionClass = "READ"
	ActionClassWrite          ActionClass = "WRITE"
	ActionClassExecute        ActionClass = "EXECUTE"
	ActionClassNetwork        ActionClass = "NETWORK"
	ActionClassAdministration ActionClass = "ADMINISTRATION"
	ActionClassDelegation     ActionClass = "DELEGATION"
	ActionClassLocalState     ActionClass = "LOCAL_STATE"
)

// InteractionOutcome is how an interaction was resolved.
type InteractionOutcome string

// Interaction outcomes.
const (
	InteractionOutcomeUnspecified InteractionOutcome = "UNSPECIFIED"
	InteractionOutcomeAnswered    InteractionOutcome = "ANSWERED"
	InteractionOutcomeApproved    InteractionOutcome = "APPROVED"
	InteractionOutcomeDenied      InteractionOutcome = "DENIED"
	InteractionOutcomeCancelled   InteractionOutcome = "CANCELLED"
	InteractionOutcomeInterrupted InteractionOutcome = "INTERRUPTED"
)

// ToolActivityPhase is the phase of a tool activity.
type ToolActivityPhase string

// Tool activity phases.
const (
	ToolActivityPhaseUnspecified ToolActivityPhase = "UNSPECIFIED"
	ToolActivityPhaseStarted     ToolActivityPhase = "STARTED"
	ToolActivityPhaseCompleted   ToolActivityPhase = "COMPLETED"
	ToolActivityPhaseFailed      ToolActivityPhase = "FAILED"
)

// PlanStatus is the state of a plan produced by a PLAN run.
type PlanStatus string

// Plan statuses.
const (
	PlanStatusUnspecified PlanStatus = "UNSPECIFIED"
	PlanStatusDraft       PlanStatus = "DRAFT"
	PlanStatusSuperseded  PlanStatus = "SUPERSEDED"
	PlanStatusExecuted    PlanStatus = "EXECUTED"
	PlanStatusAbandoned   PlanStatus = "ABANDONED"
)

// PlanActionKind is what to do with a draft plan.
type PlanActionKind string

// Plan action kinds.
const (
	PlanActionRevise        PlanActionKind = "REVISE"
	PlanActionExecuteDirect PlanActionKind = "EXECUTE_DIRECT"
	PlanActionExecuteGoal   PlanActionKind = "EXECUTE_GOAL"
)

// EvidenceLane is a source a research run may use.
type EvidenceLane string

// Evidence lanes.
const (
	EvidenceLaneRepository EvidenceLane = "REPOSITORY"
	EvidenceLaneWeb        EvidenceLane = "WEB"
	EvidenceLaneMCP        EvidenceLane = "MCP"
)

// ApprovalDecision answers an approval.
type ApprovalDecision string

// Approval decisions.
const (
	ApprovalApprove ApprovalDecision = "APPROVE"
	ApprovalDeny    ApprovalDecision = "DENY"
)

// enumNames maps an enum's numbers to names without their type prefix, computed once
// from the descriptor so the per-event path is a slice index.
type enumNames []string

func newEnumNames(d protoreflect.EnumDescriptor, prefix string) enumNames {
	values := d.Values()
	var highest protoreflect.EnumNumber
	for i := range values.Len() {
		highest = max(highest, values.Get(i).Number())
	}
	names := make(enumNames, highest+1)
	for i := range values.Len() {
		v := values.Get(i)
		names[v.Number()] = strings.TrimPrefix(string(v.Name()), prefix)
	}
	return names
}

// name returns the prefix-less name, or "UNKNOWN_<n>" for a value newer than this SDK.
func (n enumNames) name(v protoreflect.EnumNumber) string {
	if v >= 0 && int(v) < len(n) && n[v] != "" {
		return n[v]
	}
	return "UNKNOWN"
}

// number is the inverse lookup; ok=false for an unknown name.
func (n enumNames) number(name string) (protoreflect.EnumNumber, bool) {
	for i, s := range n {
		if s == name && i != 0 {
			return protoreflect.EnumNumber(i), true
		}
	}
	return 0, false
}

var (
	runStatusNames   = newEnumNames(pb.RunStatus(0).Descriptor(), "RUN_STATUS_")
	runModeNames     = newEnumNames(pb.RunMode(0).Descriptor(), "RUN_MODE_")
	deployModeNames  = newEnumNames(pb.DeploymentMode(0).Descriptor(), "DEPLOYMENT_MODE_")
	actionClassNames = newEnumNames(pb.ActionClass(0).Descriptor(), "ACTION_CLASS_")
	outcomeNames     = newEnumNames(pb.InteractionOutcome(0).Descriptor(), "INTERACTION_OUTCOME_")
	phaseNames       = newEnumNames(pb.ToolActivityPhase(0).Descriptor(), "TOOL_ACTIVITY_PHASE_")
	planStatusNames  = newEnumNames(pb.PlanStatus(0).Descriptor(), "PLAN_STATUS_")
	planKindNames    = newEnumNames(pb.PlanActionKind(0).Descriptor(), "PLAN_ACTION_KIND_")
	laneNames        = newEnumNames(pb.EvidenceLane(0).Descriptor(), "EVIDENCE_LANE_")
	decisionNames    = newEnumNames(pb.ApprovalDecision(0).Descriptor(), "APPROVAL_DECISION_")
)
