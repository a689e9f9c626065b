package colossus

import (
	"crypto/rand"
	"fmt"
	"regexp"
	"strconv"
	"strings"
	"unicode/utf8"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// Capabilities a worker may advertise.
const (
	CapabilityArtifacts       = "artifacts"
	CapabilityTextAttachments = "attachments.text"
	CapabilityImageInput      = "attachments.image_input"
	CapabilityDelegation      = "delegation"
	CapabilityPlansContinue   = "plans.continue"
	CapabilityResearch        = "research"
)

var (
	idempotencyKeyPattern = regexp.MustCompile(`\A[A-Za-z0-9._:-]{1,128}\z`)
	endUserPattern        = regexp.MustCompile(`\A[A-Za-z0-9._:@+-]{1,128}\z`)
	traceparentPattern    = regexp.MustCompile(`\A00-([0-9a-f]{32})-([0-9a-f]{16})-[0-9a-f]{2}\z`)
	mediaTypePattern      = regexp.MustCompile(`\A[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*/[A-Za-z0-9][A-Za-z0-9!#$&^_.+-]*\z`)
)

const maxTracestateBytes = 512

// newIdempotencyKey returns a fresh key in the contract's grammar, made once per create.
func newIdempotencyKey() string {
	var b [16]byte
	_, _ = rand.Read(b[:])
	b[6] = b[6]&0x0f | 0x40
	b[8] = b[8]&0x3f | 0x80
	return fmt.Sprintf("go-%x-%x-%x-%x-%x", b[0:4], b[4:6], b[6:8], b[8:10], b[10:16])
}

func checkIdempotencyKey(key string) error {
	if !idempotencyKeyPattern.MatchString(key) {
		e := newError(ErrInvalidArgument, ReasonIdempotencyKeyInvalid, "idempotency_key must be 1-128 characters of [A-Za-z0-9._:-]")
		return e.withMeta("field", "idempotency_key")
	}
	return nil
}

func checkID(value, field string) error {
	if !isOpaqueID(value) {
		return invalidField(field, "%s must be 1-64 characters of [A-Za-z0-9_-]", field)
	}
	return nil
}

func checkTraceContext(traceparent, tracestate string) error {
	m := traceparentPattern.FindStringSubmatch(traceparent)
	if m == nil || strings.Trim(m[1], "0") == "" || strings.Trim(m[2], "0") == "" {
		return invalidField("traceparent", "traceparent must be a W3C version-00 traceparent")
	}
	if len(tracestate) > maxTracestateBytes || strings.ContainsAny(tracestate, "\r\n") {
		return invalidField("tracestate", "tracestate must be printable ASCII of at most %d bytes", maxTracestateBytes)
	}
	for i := 0; i < len(tracestate); i++ {
		if tracestate[i] < 0x20 || tracestate[i] > 0x7e {
			return invalidField("tracestate", "tracestate must be printable ASCII of at most %d bytes", maxTracestateBytes)
		}
	}
	return nil
}

// requireCapability is S4: refuse locally what the worker does not advertise.
func requireCapability(info *ServerInfo, capability, what string) error {
	if info.HasCapability(capability) {
		return nil
	}
	e := newError(ErrCapabilityMissing, ReasonCapabilityNotSupported,
		"%s needs the %q capability, which this worker does not advertise", what, capability)
	return e.withMeta("capability", capability)
}

func buildInput(parts []InputPart, info *ServerInfo) ([]*pb.InputPart, error) {
	limits := info.Limits
	if len(parts) == 0 {
		return nil, invalidField("input", "input needs at least one part")
	}
	if limits.MaxInputParts > 0 && len(parts) > int(limits.MaxInputParts) {
		e := newError(ErrInvalidArgument, ReasonInputTooManyParts, "input has %d parts; the worker accepts %d", len(parts), limits.MaxInputParts)
		return nil, e.withMeta("field", "input").withMeta("limit", strconv.Itoa(int(limits.MaxInputParts)))
	}
	out := make([]*pb.InputPart, 0, len(parts))
	var textBytes uint64
	for i, part := range parts {
		switch p := part.(type) {
		case TextPart:
			if !utf8.ValidString(p.Text) {
				return nil, invalidField("input", "input part %d is not valid UTF-8", i)
			}
			textBytes += uint64(len(p.Text))
			out = append(out, &pb.InputPart{Kind: &pb.InputPart_Text{Text: p.Text}})
		case ArtifactPart:
			if err := requireCapability(info, CapabilityArtifacts, "an artifact input part"); err != nil {
				return nil, err
			}
			if strings.HasPrefix(strings.ToLower(p.MediaType), "image/") {
				if err := requireCapability(info, CapabilityImageInput, "an image input part"); err != nil {
					return nil, err
				}
			}
			if err := checkID(p.ArtifactID, "input.artifact.artifact_id"); err != nil {
				return nil, err
			}
			out = append(out, &pb.InputPart{Kind: &pb.InputPart_Artifact{Artifact: &pb.ArtifactReference{ArtifactId: p.ArtifactID}}})
		default:
			return nil, invalidField("input", "input part %d has an unsupported type %T", i, part)
		}
	}
	if limits.MaxInputBytes > 0 && textBytes > limits.MaxInputBytes {
		e := newError(ErrInvalidArgument, ReasonInputTooLarge, "input text is %d bytes; the worker accepts %d", textBytes, limits.MaxInputBytes)
		return nil, e.withMeta("field", "input").withMeta("limit", strconv.FormatUint(limits.MaxInputBytes, 10))
	}
	return out, nil
}

func buildCreateRun(info *ServerInfo, key string, input []InputPart, cfg *callConfig, ctxTrace func() (string, string)) (*pb.CreateRunRequest, error) {
	if err := checkIdempotencyKey(key); err != nil {
		return nil, err
	}
	parts, err := buildInput(input, info)
	if err != nil {
		return nil, err
	}
	req := &pb.CreateRunRequest{IdempotencyKey: key, Input: parts}
	mode := cfg.mode
	if mode == "" || mode == RunModeUnspecified {
		mode = RunModeExecute
	}
	n, ok := runModeNames.number(string(mode))
	if !ok {
		return nil, invalidField("mode", "mode %q is not a run mode", mode)
	}
	req.Mode = pb.RunMode(n)
	if mode == RunModeResearch {
		if err := requireCapability(info, CapabilityResearch, "a research run"); err != nil {
			return nil, err
		}
		r := cfg.research
		if r == nil {
			return nil, invalidField("research", "a research run needs research options")
		}
		if r.Depth < 1 || r.Depth > 5 {
			return nil, invalidField("research.depth", "research depth must be between 1 and 5")
		}
		if len(r.Lanes) == 0 {
			return nil, invalidField("research.lanes", "research lanes must be distinct, known and non-empty")
		}
		seen := map[EvidenceLane]bool{}
		req.Research = &pb.ResearchOptions{Depth: r.Depth}
		for _, lane := range r.Lanes {
			v, ok := laneNames.number(string(lane))
			if !ok || seen[lane] {
				return nil, invalidField("research.lanes", "research lanes must be distinct, known and non-empty")
			}
			seen[lane] = true
			req.Research.Lanes = append(req.Research.Lanes, pb.EvidenceLane(v))
		}
	} else if cfg.research != nil {
		return nil, invalidField("research", "research options are only for research runs")
	}
	req.Role = cfg.role
	if limit := info.Limits.MaxTurns; limit > 0 && cfg.maxTurns > limit {
		e := newError(ErrInvalidArgument, ReasonMaxTurnsOutOfRange, "max_turns must be between 0 and %d", limit)
		return nil, e.withMeta("field", "max_turns").withMeta("limit", strconv.Itoa(int(limit)))
	}
	req.MaxTurns = cfg.maxTurns
	if cfg.sessionID != nil {
		if err := checkID(*cfg.sessionID, "session_id"); err != nil {
			return nil, err
		}
		req.SessionId = cfg.sessionID
	}
	if cfg.endUserID != nil {
		if !endUserPattern.MatchString(*cfg.endUserID) {
			return nil, invalidField("end_user_id", "end_user_id must be 1-128 characters of [A-Za-z0-9._:@+-]")
		}
		req.EndUserId = cfg.endUserID
	}
	if a := cfg.planAction; a != nil {
		// An older worker would ignore the unknown field and start an ordinary run.
		if err := requireCapability(info, CapabilityPlansContinue, "a plan action"); err != nil {
			return nil, err
		}
		kind, ok := planKindNames.number(string(a.Kind))
		if !ok {
			return nil, invalidField("plan_action.kind", "plan_action.kind must be REVISE, EXECUTE_DIRECT or EXECUTE_GOAL")
		}
		if err := checkID(a.SourceRunID, "plan_action.source_run_id"); err != nil {
			return nil, err
		}
		req.PlanAction = &pb.PlanAction{SourceRunId: a.SourceRunID, Revision: a.Revision, Kind: pb.PlanActionKind(kind)}
	}
	tp, ts := cfg.traceparent, cfg.tracestate
	if tp == "" && ctxTrace != nil {
		tp, ts = ctxTrace()
	}
	if tp != "" {
		if err := checkTraceContext(tp, ts); err != nil {
			return nil, err
		}
		req.TraceContext = &pb.TraceContext{Traceparent: tp, Tracestate: ts}
	}
	return req, nil
}

func buildListRuns(info *ServerInfo, cfg *callConfig) (*pb.ListRunsRequest, error) {
	seen := map[pb.RunStatus]bool{}
	var statuses []pb.RunStatus
	for _, s := range cfg.statuses {
		n, ok := runStatusNames.number(string(s))
		if !ok {
			return nil, invalidField("statuses", "status %q is not a run status", s)
		}
		if !seen[pb.RunStatus(n)] {
			seen[pb.RunStatus(n)] = true
			statuses = append(statuses, pb.RunStatus(n))
		}
	}
	if limit := info.Limits.MaxListStatusFilters; limit > 0 && len(statuses) > int(limit) {
		e := newError(ErrInvalidArgument, ReasonStatusFilterTooLarge, "at most %d status filters are accepted", limit)
		return nil, e.withMeta("field", "statuses").withMeta("limit", strconv.Itoa(int(limit)))
	}
	return &pb.ListRunsRequest{Statuses: statuses, PageSize: cfg.pageSize, PageToken: cfg.pageToken}, nil
}

func buildRespond(info *ServerInfo, runID, interactionID string, answer Answer) (*pb.RespondInteractionRequest, error) {
	if err := checkID(runID, "run_id"); err != nil {
		return nil, err
	}
	if err := checkID(interactionID, "interaction_id"); err != nil {
		return nil, err
	}
	req := &pb.RespondInteractionRequest{RunId: runID, InteractionId: interactionID}
	switch a := answer.(type) {
	case PromptAnswer:
		req.Answer = &pb.RespondInteractionRequest_Prompt{Prompt: &pb.PromptAnswer{Choice: a.Choice}}
	case ApprovalAnswer:
		d, ok := decisionNames.number(string(a.Decision))
		if !ok {
			return nil, invalidField("decision", "decision must be APPROVE or DENY")
		}
		req.Answer = &pb.RespondInteractionRequest_Approval{Approval: &pb.ApprovalAnswer{Binding: a.Binding, Decision: pb.ApprovalDecision(d)}}
	default:
		return nil, invalidField("answer", "answer must be a PromptAnswer or an ApprovalAnswer")
	}
	return req, nil
}

func checkManifest(info *ServerInfo, size uint64, digest, mediaType string, displayName *string) (*pb.ArtifactManifest, error) {
	if err := requireCapability(info, CapabilityArtifacts, "an artifact upload"); err != nil {
		return nil, err
	}
	if limit := info.Limits.MaxArtifactBytes; size > limit {
		e := newError(ErrResourceExhausted, ReasonArtifactTooLarge, "the artifact is %d bytes; the worker accepts %d", size, limit)
		return nil, e.withMeta("limit", strconv.FormatUint(limit, 10))
	}
	if len(mediaType) > 127 || !mediaTypePattern.MatchString(mediaType) {
		return nil, invalidField("media_type", "media_type must look like type/subtype (at most 127 characters)")
	}
	name := ""
	if displayName != nil {
		name = *displayName
		if name == "" || len(name) > 255 || strings.ContainsAny(name, "/\\\x00") || !utf8.ValidString(name) {
			return nil, invalidField("display_name", "display_name must be 1-255 bytes with no path separators")
		}
	}
	return &pb.ArtifactManifest{MediaType: mediaType, SizeBytes: size, Sha256: digest, DisplayName: name}, nil
}
