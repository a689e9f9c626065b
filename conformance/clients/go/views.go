package main

import (
	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// Plain conversions from SDK models to protocol JSON.

func interactionView(i *colossus.Interaction) any {
	if i == nil {
		return nil
	}
	view := map[string]any{"interaction_id": i.InteractionID}
	switch {
	case i.Prompt != nil:
		view["kind"] = "prompt"
		view["question"] = i.Prompt.Question
		view["choices"] = orEmpty(i.Prompt.Choices)
	case i.Approval != nil:
		a := i.Approval
		view["kind"] = "approval"
		view["action_class"] = string(a.ActionClass)
		view["display_category"] = nullable(a.DisplayCategory)
		view["origin"] = nullable(a.Origin)
		view["binding"] = a.Binding
	}
	return view
}

func nullable(s string) any {
	if s == "" {
		return nil
	}
	return s
}

func orEmpty(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

func runView(r *colossus.Run) map[string]any {
	var result any
	if r.Result != nil {
		res := map[string]any{"output_text": r.Result.OutputText, "failure_code": nil, "plan": nil}
		if r.Result.Failure != nil {
			res["failure_code"] = r.Result.Failure.Code
		}
		if p := r.Result.Plan; p != nil {
			res["plan"] = map[string]any{"plan_id": p.PlanID, "revision": p.Revision, "status": string(p.Status)}
		}
		result = res
	}
	return map[string]any{
		"run_id":              r.RunID,
		"session_id":          r.SessionID,
		"mode":                string(r.Mode),
		"role":                r.Role,
		"status":              string(r.Status),
		"last_sequence":       r.LastSequence,
		"idempotency_key":     r.IdempotencyKey,
		"end_user_id":         nullable(r.EndUserID),
		"max_turns":           r.MaxTurns,
		"pending_interaction": interactionView(r.PendingInteraction),
		"result":              result,
	}
}

func eventView(e colossus.RunEvent) map[string]any {
	view := map[string]any{"run_id": e.RunID, "sequence": e.Sequence}
	switch p := e.Payload.(type) {
	case *colossus.StatusChanged:
		view["kind"] = "status_changed"
		view["previous_status"] = string(p.PreviousStatus)
		view["status"] = string(p.Status)
	case *colossus.OutputDelta:
		view["kind"] = "output_delta"
		view["text"] = p.Text
	case *colossus.InteractionRequested:
		view["kind"] = "interaction_requested"
		view["interaction"] = interactionView(&p.Interaction)
	case *colossus.InteractionResolved:
		view["kind"] = "interaction_resolved"
		view["interaction_id"] = p.InteractionID
		view["outcome"] = string(p.Outcome)
		view["choice"] = p.Choice
	case *colossus.ToolActivity:
		view["kind"] = "tool_activity"
		view["action_class"] = string(p.ActionClass)
		view["display_category"] = p.DisplayCategory
		view["phase"] = string(p.Phase)
	case *colossus.RunTerminated:
		view["kind"] = "terminated"
		view["terminal_status"] = string(p.Status)
	default:
		view["kind"] = "unknown"
	}
	return view
}

func bucketView(b colossus.TokenBucket) map[string]any {
	return map[string]any{"refill_per_second": b.RefillPerSecond, "burst": b.Burst}
}

func serverInfoView(s colossus.ServerInfo) map[string]any {
	l := s.Limits
	caps := append([]string{}, s.Capabilities...)
	sortStrings(caps)
	return map[string]any{
		"instance_id":     s.InstanceID,
		"api_package":     s.APIPackage,
		"api_version":     s.APIVersion,
		"api_major":       s.APIMajor,
		"deployment_mode": string(s.DeploymentMode),
		"capabilities":    caps,
		"limits": map[string]any{
			"max_active_runs":                          l.MaxActiveRuns,
			"max_active_runs_per_application":          l.MaxActiveRunsPerApplication,
			"create_rate":                              bucketView(l.CreateRate),
			"create_rate_per_application":              bucketView(l.CreateRatePerApplication),
			"max_watches":                              l.MaxWatches,
			"max_watches_per_application":              l.MaxWatchesPerApplication,
			"max_concurrent_list_runs":                 l.MaxConcurrentListRuns,
			"max_concurrent_list_runs_per_application": l.MaxConcurrentListRunsPerApplication,
			"max_connections":                          l.MaxConnections,
			"max_concurrent_streams_per_connection":    l.MaxConcurrentStreamsPerConnection,
			"max_request_bytes":                        l.MaxRequestBytes,
			"max_response_bytes":                       l.MaxResponseBytes,
			"max_header_bytes":                         l.MaxHeaderBytes,
			"max_events_per_run":                       l.MaxEventsPerRun,
			"reserved_lifecycle_events":                l.ReservedLifecycleEvents,
			"max_input_parts":                          l.MaxInputParts,
			"max_input_bytes":                          l.MaxInputBytes,
			"max_turns":                                l.MaxTurns,
			"default_max_turns":                        l.DefaultMaxTurns,
			"max_list_page_size":                       l.MaxListPageSize,
			"max_list_status_filters":                  l.MaxListStatusFilters,
			"max_artifact_bytes":                       l.MaxArtifactBytes,
			"max_artifact_chunk_bytes":                 l.MaxArtifactChunkBytes,
			"handshake_timeout":                        l.HandshakeTimeout.Seconds(),
			"max_connection_age":                       l.MaxConnectionAge.Seconds(),
		},
	}
}

func artifactView(a colossus.Artifact) map[string]any {
	return map[string]any{
		"artifact_id":  a.ArtifactID,
		"media_type":   a.MediaType,
		"size_bytes":   a.SizeBytes,
		"sha256":       a.SHA256,
		"display_name": a.DisplayName,
	}
}

func sortStrings(s []string) {
	for i := 1; i < len(s); i++ {
		for j := i; j > 0 && s[j] < s[j-1]; j-- {
			s[j], s[j-1] = s[j-1], s[j]
		}
	}
}
