package colossus

import (
	"time"

	"google.golang.org/protobuf/types/known/durationpb"
	"google.golang.org/protobuf/types/known/timestamppb"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// The one boundary where generated messages become public models.

func toTime(ts *timestamppb.Timestamp) time.Time {
	if ts == nil {
		return time.Time{}
	}
	return ts.AsTime()
}

func toDuration(d *durationpb.Duration) time.Duration {
	if d == nil {
		return 0
	}
	return d.AsDuration()
}

func toBucket(b *pb.TokenBucket) TokenBucket {
	return TokenBucket{RefillPerSecond: b.GetRefillPerSecond(), Burst: b.GetBurst()}
}

func toServerInfo(s *pb.ServerInfo) ServerInfo {
	l := s.GetLimits()
	return ServerInfo{
		InstanceID:     s.GetInstanceId(),
		APIPackage:     s.GetApiPackage(),
		APIVersion:     s.GetApiVersion(),
		APIMajor:       s.GetApiMajor(),
		DeploymentMode: DeploymentMode(deployModeNames.name(s.GetDeploymentMode().Number())),
		Capabilities:   append([]string(nil), s.GetCapabilities()...),
		ServerVersion:  s.GetServerVersion(),
		Limits: Limits{
			MaxActiveRuns:                       l.GetMaxActiveRuns(),
			MaxActiveRunsPerApplication:         l.GetMaxActiveRunsPerApplication(),
			CreateRate:                          toBucket(l.GetCreateRate()),
			CreateRatePerApplication:            toBucket(l.GetCreateRatePerApplication()),
			MaxWatches:                          l.GetMaxWatches(),
			MaxWatchesPerApplication:            l.GetMaxWatchesPerApplication(),
			MaxConcurrentListRuns:               l.GetMaxConcurrentListRuns(),
			MaxConcurrentListRunsPerApplication: l.GetMaxConcurrentListRunsPerApplication(),
			MaxConnections:                      l.GetMaxConnections(),
			MaxConcurrentStreamsPerConnection:   l.GetMaxConcurrentStreamsPerConnection(),
			MaxRequestBytes:                     l.GetMaxRequestBytes(),
			MaxResponseBytes:                    l.GetMaxResponseBytes(),
			MaxHeaderBytes:                      l.GetMaxHeaderBytes(),
			MaxEventsPerRun:                     l.GetMaxEventsPerRun(),
			ReservedLifecycleEvents:             l.GetReservedLifecycleEvents(),
			MaxInputParts:                       l.GetMaxInputParts(),
			MaxInputBytes:                       l.GetMaxInputBytes(),
			MaxTurns:                            l.GetMaxTurns(),
			DefaultMaxTurns:                     l.GetDefaultMaxTurns(),
			MaxListPageSize:                     l.GetMaxListPageSize(),
			MaxListStatusFilters:                l.GetMaxListStatusFilters(),
			MaxArtifactBytes:                    l.GetMaxArtifactBytes(),
			MaxArtifactChunkBytes:               l.GetMaxArtifactChunkBytes(),
			HandshakeTimeout:                    toDuration(l.GetHandshakeTimeout()),
			MaxConnectionAge:                    toDuration(l.GetMaxConnectionAge()),
		},
	}
}

func toStatus(s pb.RunStatus) RunStatus { return RunStatus(runStatusNames.name(s.Number())) }

func toRun(r *pb.Run) Run {
	return Run{
		RunID:              r.GetRunId(),
		SessionID:          r.GetSessionId(),
		Mode:               RunMode(runModeNames.name(r.GetMode().Number())),
		Role:               r.GetRole(),
		Status:             toStatus(r.GetStatus()),
		LastSequence:       r.GetLastSequence(),
		CreateTime:         toTime(r.GetCreateTime()),
		UpdateTime:         toTime(r.GetUpdateTime()),
		IdempotencyKey:     r.GetIdempotencyKey(),
		EndUserID:          r.GetEndUserId(),
		MaxTurns:           r.GetMaxTurns(),
		PendingInteraction: toInteractionPtr(r.GetPendingInteraction()),
		Result:             toResult(r.GetResult()),
	}
}

func toResult(r *pb.RunResult) *RunResult {
	if r == nil {
		return nil
	}
	out := &RunResult{OutputText: r.GetOutputText()}
	if p := r.GetPlan(); p != nil {
		out.Plan = &PlanResult{PlanID: p.GetPlanId(), Revision: p.GetRevision(),
			Status: PlanStatus(planStatusNames.name(p.GetStatus().Number()))}
	}
	if rr := r.GetResearch(); rr != nil {
		out.Research = &ResearchResult{Report: rr.GetReport()}
		for _, c := range rr.GetCitations() {
			out.Research.Citations = append(out.Research.Citations, Citation{
				Lane: EvidenceLane(laneNames.name(c.GetLane().Number())), Label: c.GetLabel(), URL: c.GetUrl()})
		}
	}
	if f := r.GetFailure(); f != nil {
		out.Failure = &RunFailure{Code: f.GetCode(), Message: f.GetMessage()}
	}
	return out
}

func toInteractionPtr(i *pb.Interaction) *Interaction {
	if i == nil {
		return nil
	}
	v := toInteraction(i)
	return &v
}

func toInteraction(i *pb.Interaction) Interaction {
	out := Interaction{InteractionID: i.GetInteractionId(), CreateTime: toTime(i.GetCreateTime())}
	if p := i.GetPrompt(); p != nil {
		out.Prompt = &Prompt{Question: p.GetQuestion(), Choices: append([]string(nil), p.GetChoices()...)}
	}
	if a := i.GetApproval(); a != nil {
		out.Approval = &Approval{
			ActionClass:     ActionClass(actionClassNames.name(a.GetActionClass().Number())),
			DisplayCategory: a.GetDisplayCategory(),
			Origin:          a.GetOrigin(),
			Binding:         a.GetBinding(),
		}
	}
	return out
}

// toEvent converts one watch event; the payload switch is on the generated oneof wrapper.
func toEvent(e *pb.RunEvent) RunEvent {
	out := RunEvent{RunID: e.GetRunId(), Sequence: e.GetSequence(), EventTime: toTime(e.GetEventTime())}
	switch p := e.GetPayload().(type) {
	case *pb.RunEvent_OutputDelta:
		out.Payload = &OutputDelta{Text: p.OutputDelta.GetText()}
	case *pb.RunEvent_StatusChanged:
		out.Payload = &StatusChanged{PreviousStatus: toStatus(p.StatusChanged.GetPreviousStatus()),
			Status: toStatus(p.StatusChanged.GetStatus())}
	case *pb.RunEvent_InteractionRequested:
		out.Payload = &InteractionRequested{Interaction: toInteraction(p.InteractionRequested.GetInteraction())}
	case *pb.RunEvent_InteractionResolved:
		r := p.InteractionResolved
		out.Payload = &InteractionResolved{InteractionID: r.GetInteractionId(),
			Outcome: InteractionOutcome(outcomeNames.name(r.GetOutcome().Number())), Choice: r.GetChoice()}
	case *pb.RunEvent_ToolActivity:
		t := p.ToolActivity
		out.Payload = &ToolActivity{ActivityID: t.GetActivityId(),
			ActionClass:     ActionClass(actionClassNames.name(t.GetActionClass().Number())),
			DisplayCategory: t.GetDisplayCategory(),
			Phase:           ToolActivityPhase(phaseNames.name(t.GetPhase().Number()))}
	case *pb.RunEvent_Terminated:
		out.Payload = &RunTerminated{Status: toStatus(p.Terminated.GetStatus()), Result: toResult(p.Terminated.GetResult())}
	default:
		out.Payload = &UnknownPayload{}
	}
	return out
}

func toArtifact(a *pb.Artifact) Artifact {
	return Artifact{ArtifactID: a.GetArtifactId(), MediaType: a.GetMediaType(), SizeBytes: a.GetSizeBytes(),
		SHA256: a.GetSha256(), DisplayName: a.GetDisplayName(), CreateTime: toTime(a.GetCreateTime())}
}
