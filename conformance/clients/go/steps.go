package main

import (
	"context"
	"crypto/sha256"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"log"
	"strconv"
	"strings"
	"sync/atomic"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// countingProvider hands the SDK the bearer as given (the SDK judges it) and counts how
// often the SDK asks, so the runner can prove C5.
// A failing one errs as a broken keyring would, with the bearer in its message: the SDK
// must report a credential failure without repeating that text.
type countingProvider struct {
	bearer  string
	failing bool
	calls   atomic.Int64
}

func (p *countingProvider) Bearer(context.Context) (string, error) {
	p.calls.Add(1)
	if p.failing {
		return "", errors.New("the keyring daemon refused the entry " + p.bearer)
	}
	return p.bearer, nil
}

func (p *countingProvider) String() string { return "countingProvider(<redacted>)" }

type caseRun struct {
	instruction map[string]any
	specs       map[string]map[string]any
	order       []string
	bearers     map[string]string
	clients     map[string]*colossus.Client
	providers   map[string]*countingProvider
	results     map[string]map[string]any
	deadline    time.Duration
	// calls of a step's provider when its sync point was released, by step id
	callsAtRelease map[string]int64
}

func newCaseRun(msg map[string]any, bearers map[string]string) *caseRun {
	c := &caseRun{instruction: msg, specs: map[string]map[string]any{}, bearers: bearers,
		clients: map[string]*colossus.Client{}, providers: map[string]*countingProvider{},
		results: map[string]map[string]any{}, deadline: 60 * time.Second, callsAtRelease: map[string]int64{}}
	conns, _ := msg["connections"].([]any)
	for _, raw := range conns {
		spec, _ := raw.(map[string]any)
		name, _ := spec["name"].(string)
		c.specs[name] = spec
		c.order = append(c.order, name)
	}
	if n, ok := msg["timeout_seconds"].(json.Number); ok {
		if f, err := n.Float64(); err == nil && f > 0 {
			c.deadline = time.Duration(f * float64(time.Second))
		}
	}
	return c
}

func (c *caseRun) caseName() string {
	name, _ := c.instruction["case"].(string)
	return name
}

func (c *caseRun) connName(args map[string]any) string {
	if name, ok := args["conn"].(string); ok && name != "" {
		return name
	}
	if len(c.order) > 0 {
		return c.order[0]
	}
	return ""
}

func (c *caseRun) credentialCalls(name string) (int64, bool) {
	spec, ok := c.specs[name]
	if !ok || spec["placement"] != "daemon" {
		return 0, false
	}
	if p, ok := c.providers[name]; ok {
		return p.calls.Load(), true
	}
	return 0, true
}

func stringList(v any) []string {
	items, _ := v.([]any)
	out := make([]string, 0, len(items))
	for _, it := range items {
		s, _ := it.(string)
		out = append(out, s)
	}
	return out
}

func (c *caseRun) client(ctx context.Context, name string) (*colossus.Client, error) {
	if cl, ok := c.clients[name]; ok {
		return cl, nil
	}
	spec, ok := c.specs[name]
	if !ok {
		return nil, errUnsupported{"unknown connection " + name}
	}
	opts := colossus.ClientOptions{Timeout: 15 * time.Second, ConnectTimeout: 10 * time.Second}
	var cl *colossus.Client
	var err error
	if spec["placement"] == "sidecar" {
		grant, _ := spec["grant"].(map[string]any)
		command := stringList(spec["worker_command"])
		if len(command) == 0 {
			return nil, errUnsupported{"empty worker_command"}
		}
		appID, _ := spec["application_id"].(string)
		stateDir, _ := spec["state_dir"].(string)
		cl, err = colossus.StartSidecar(ctx, colossus.SidecarOptions{
			ClientOptions: opts, Executable: command[0], ExtraArgs: command[1:], ApplicationID: appID,
			Scopes: stringList(grant["scopes"]), Roles: stringList(grant["roles"]), Tools: stringList(grant["tools"]),
			StateDir: stateDir,
		})
	} else {
		provider, ok := c.providers[name]
		if !ok {
			failing := spec["credential_provider"] == "failing"
			provider = &countingProvider{bearer: c.bearers[name], failing: failing}
			c.providers[name] = provider
		}
		mode := colossus.DeploymentModeSharedDaemon
		if m, ok := spec["expected_deployment_mode"].(string); ok && m != "" {
			mode = colossus.DeploymentMode(m)
		}
		dir, _ := spec["public_api_dir"].(string)
		instance, _ := spec["expected_instance_id"].(string)
		pin, _ := spec["expected_certificate_sha256"].(string)
		cl, err = colossus.Connect(ctx, colossus.DaemonOptions{
			ClientOptions: opts, PublicAPIDir: dir, ExpectedInstanceID: instance,
			ExpectedCertificateSHA256: pin, Credentials: provider, ExpectedDeploymentMode: mode,
		})
	}
	if err != nil {
		return nil, err
	}
	c.clients[name] = cl
	return cl, nil
}

func (c *caseRun) close() {
	for name, cl := range c.clients {
		if err := cl.Close(); err != nil {
			log.Printf("close %s: %v", name, err)
		}
	}
	clear(c.clients)
}

func (c *caseRun) run() []any {
	ctx, cancel := context.WithTimeout(context.Background(), c.deadline)
	defer cancel()
	steps, _ := c.instruction["steps"].([]any)
	reports := make([]any, 0, len(steps))
	for _, raw := range steps {
		step, _ := raw.(map[string]any)
		id, _ := step["id"].(string)
		op, _ := step["op"].(string)
		report := map[string]any{"id": id, "op": op}
		started := time.Now()
		rawArgs, _ := step["args"].(map[string]any)
		name := c.connName(rawArgs)
		before, counted := int64(0), false
		if op != "sleep" && op != "sync" {
			before, counted = c.credentialCalls(name)
		}
		resolved, err := resolve(rawArgs, c.results)
		if err != nil {
			report["error"] = map[string]any{"kind": "unresolved_reference", "message": err.Error()}
		} else {
			args, _ := resolved.(map[string]any)
			if args == nil {
				args = map[string]any{}
			}
			value, err := c.perform(ctx, op, args, report)
			if value != nil {
				report["value"] = value
			}
			if err != nil {
				// The SDK's error text never holds a bearer; causes are I/O and gRPC errors, except
				// a credential error's, which is the provider's own error and may hold its secret.
				if errors.Is(err, colossus.ErrCredential) {
					log.Printf("step %s failed: %v", id, err)
				} else {
					log.Printf("step %s failed: %v (cause: %v)", id, err, errors.Unwrap(err))
				}
				report["error"] = errorView(err)
				var e *colossus.Error
				if errors.As(err, &e) && e.IdempotencyKey != "" {
					v, _ := report["value"].(map[string]any)
					if v == nil {
						v = map[string]any{}
					}
					v["idempotency_key"] = e.IdempotencyKey
					report["value"] = v
				}
			}
		}
		if counted && !(op == "close" && c.providers[name] == nil) {
			after, _ := c.credentialCalls(name)
			report["credential_calls"] = after - before
			if atRelease, synced := c.callsAtRelease[id]; synced {
				report["credential_calls_after_sync"] = after - atRelease
			}
		}
		report["elapsed_ms"] = float64(time.Since(started).Microseconds()) / 1000
		c.results[id] = report
		reports = append(reports, report)
	}
	return reports
}

type unresolved struct{ ref string }

func (u unresolved) Error() string { return "cannot resolve " + u.ref }

// descend follows one path segment: a key into a map, or an index into a list
// (a negative index counts from the end).
func descend(node any, seg string) (any, bool) {
	switch n := node.(type) {
	case map[string]any:
		next, ok := n[seg]
		return next, ok
	case []map[string]any:
		return atIndex(n, seg)
	case []any:
		return atIndex(n, seg)
	case []string:
		return atIndex(n, seg)
	}
	return nil, false
}

func atIndex[T any](list []T, seg string) (any, bool) {
	i, err := strconv.Atoi(seg)
	if err != nil || i < -len(list) || i >= len(list) {
		return nil, false
	}
	if i < 0 {
		i += len(list)
	}
	return list[i], true
}

// resolve replaces "$step.path" strings with values from earlier steps' reports.
func resolve(v any, results map[string]map[string]any) (any, error) {
	switch x := v.(type) {
	case string:
		if len(x) < 2 || x[0] != '$' {
			return x, nil
		}
		parts := strings.Split(x[1:], ".")
		step, ok := results[parts[0]]
		if !ok {
			return nil, unresolved{x}
		}
		current := step["value"]
		for _, seg := range parts[1:] {
			next, ok := descend(current, seg)
			if !ok {
				return nil, unresolved{x}
			}
			current = next
		}
		if current == nil {
			return nil, unresolved{x}
		}
		return normalize(current), nil
	case []any:
		out := make([]any, len(x))
		for i, item := range x {
			r, err := resolve(item, results)
			if err != nil {
				return nil, err
			}
			out[i] = r
		}
		return out, nil
	case map[string]any:
		out := make(map[string]any, len(x))
		for k, item := range x {
			r, err := resolve(item, results)
			if err != nil {
				return nil, err
			}
			out[k] = r
		}
		return out, nil
	}
	return v, nil
}

// normalize turns Go-typed report values into the shapes JSON decoding gives.
func normalize(v any) any {
	data, err := json.Marshal(v)
	if err != nil {
		return v
	}
	var out any
	dec := json.NewDecoder(strings.NewReader(string(data)))
	dec.UseNumber()
	if dec.Decode(&out) != nil {
		return v
	}
	return out
}

func argString(args map[string]any, key string) (string, bool) {
	v, ok := args[key]
	if !ok {
		return "", false
	}
	switch x := v.(type) {
	case string:
		return x, true
	case json.Number:
		return x.String(), true
	}
	return fmt.Sprint(v), true
}

// argUint reads a non-negative integer argument; a value Go's API cannot hold is
// reported as unsupported.
func argUint(args map[string]any, key string) (uint64, bool, error) {
	v, ok := args[key]
	if !ok {
		return 0, false, nil
	}
	n, isNum := v.(json.Number)
	if !isNum {
		return 0, true, errUnsupported{key + " is not a number"}
	}
	u, err := strconv.ParseUint(n.String(), 10, 64)
	if err != nil {
		return 0, true, errUnsupported{key + " does not fit an unsigned integer"}
	}
	return u, true, nil
}

func argFloat(args map[string]any, key string, fallback float64) float64 {
	if n, ok := args[key].(json.Number); ok {
		if f, err := n.Float64(); err == nil {
			return f
		}
	}
	return fallback
}

func (c *caseRun) perform(ctx context.Context, op string, args map[string]any, report map[string]any) (any, error) {
	name := c.connName(args)
	switch op {
	case "sleep":
		time.Sleep(time.Duration(argFloat(args, "seconds", 0) * float64(time.Second)))
		return map[string]any{}, nil
	case "sync":
		return map[string]any{}, waitForRelease(c.caseName(), report["id"].(string))
	case "close":
		if cl, ok := c.clients[name]; ok {
			delete(c.clients, name)
			return map[string]any{}, cl.Close()
		}
		return map[string]any{}, nil
	}
	cl, err := c.client(ctx, name)
	if err != nil {
		return nil, err
	}
	switch op {
	case "connect":
		return map[string]any{"server_info": serverInfoView(cl.ServerInfo())}, nil
	case "create_run":
		return c.createRun(ctx, cl, args)
	case "get_run":
		id, _ := argString(args, "run_id")
		run, err := cl.Runs.Get(ctx, id)
		if err != nil {
			return nil, err
		}
		return map[string]any{"run": runView(run)}, nil
	case "cancel_run":
		id, _ := argString(args, "run_id")
		run, err := cl.Runs.Cancel(ctx, id)
		if err != nil {
			return nil, err
		}
		return map[string]any{"run": runView(run)}, nil
	case "list_runs":
		return c.listRuns(ctx, cl, args, report)
	case "watch":
		return c.watch(ctx, cl, args, report)
	case "wait_run":
		id, _ := argString(args, "run_id")
		run, err := cl.Runs.Wait(ctx, id, colossus.WithIdleTimeout(time.Duration(argFloat(args, "idle_timeout_seconds", 20)*float64(time.Second))))
		if err != nil {
			return nil, err
		}
		return map[string]any{"run": runView(run)}, nil
	case "text_stream":
		return c.textStream(ctx, cl, args)
	case "respond":
		runID, _ := argString(args, "run_id")
		interactionID, _ := argString(args, "interaction_id")
		var answer colossus.Answer
		if choice, ok := argString(args, "choice"); ok {
			answer = colossus.PromptAnswer{Choice: choice}
		} else {
			binding, _ := argString(args, "binding")
			decision, ok := argString(args, "decision")
			if !ok {
				decision = "APPROVE"
			}
			answer = colossus.ApprovalAnswer{Binding: binding, Decision: colossus.ApprovalDecision(decision)}
		}
		run, err := cl.Runs.Respond(ctx, runID, interactionID, answer)
		if err != nil {
			return nil, err
		}
		return map[string]any{"run": runView(run)}, nil
	case "upload_artifact":
		var data []byte
		if text, ok := args["text"].(string); ok {
			data = []byte(text)
		} else if b64, ok := args["data_base64"].(string); ok {
			if data, err = base64.StdEncoding.DecodeString(b64); err != nil {
				return nil, errUnsupported{"data_base64 is not base64"}
			}
		} else {
			size, _, err := argUint(args, "size_bytes")
			if err != nil {
				return nil, err
			}
			data = make([]byte, size)
			for i := range data {
				data[i] = byte(i % 251)
			}
		}
		mediaType, _ := argString(args, "media_type")
		var opts []colossus.CallOption
		if dn, ok := argString(args, "display_name"); ok {
			opts = append(opts, colossus.WithDisplayName(dn))
		}
		art, err := cl.Artifacts.Upload(ctx, data, mediaType, opts...)
		if err != nil {
			return nil, err
		}
		return map[string]any{"artifact": artifactView(*art)}, nil
	case "download_artifact":
		id, _ := argString(args, "artifact_id")
		got, err := cl.Artifacts.Download(ctx, id)
		if err != nil {
			return nil, err
		}
		sum := sha256.Sum256(got.Data)
		return map[string]any{"artifact": artifactView(got.Artifact), "size": len(got.Data), "sha256": hex.EncodeToString(sum[:])}, nil
	}
	return nil, errUnsupported{"op " + op}
}

func (c *caseRun) createRun(ctx context.Context, cl *colossus.Client, args map[string]any) (any, error) {
	var parts []colossus.InputPart
	inputs, _ := args["input"].([]any)
	for _, raw := range inputs {
		part, _ := raw.(map[string]any)
		if text, ok := part["text"].(string); ok {
			parts = append(parts, colossus.TextPart{Text: text})
			continue
		}
		id, _ := argString(part, "artifact_id")
		mt, _ := argString(part, "media_type")
		parts = append(parts, colossus.ArtifactPart{ArtifactID: id, MediaType: mt})
	}
	var opts []colossus.CallOption
	if v, ok := argString(args, "idempotency_key"); ok {
		opts = append(opts, colossus.WithIdempotencyKey(v))
	}
	if v, ok := argString(args, "role"); ok {
		opts = append(opts, colossus.WithRole(v))
	}
	if v, ok := argString(args, "session_id"); ok {
		opts = append(opts, colossus.WithSessionID(v))
	}
	if v, ok := argString(args, "end_user_id"); ok {
		opts = append(opts, colossus.WithEndUserID(v))
	}
	if tp, ok := argString(args, "traceparent"); ok {
		ts, _ := argString(args, "tracestate")
		opts = append(opts, colossus.WithTraceContext(tp, ts))
	}
	if v, ok := argString(args, "mode"); ok {
		opts = append(opts, colossus.WithMode(colossus.RunMode(v)))
	}
	if n, ok, err := argUint(args, "max_turns"); err != nil {
		return nil, err
	} else if ok {
		if n > 1<<32-1 {
			return nil, errUnsupported{"max_turns does not fit uint32"}
		}
		opts = append(opts, colossus.WithMaxTurns(uint32(n)))
	}
	if pa, ok := args["plan_action"].(map[string]any); ok {
		src, _ := argString(pa, "source_run_id")
		rev, _, err := argUint(pa, "revision")
		if err != nil {
			return nil, err
		}
		kind, _ := argString(pa, "kind")
		opts = append(opts, colossus.WithPlanAction(colossus.PlanAction{SourceRunID: src, Revision: rev, Kind: colossus.PlanActionKind(kind)}))
	}
	if r, ok := args["research"].(map[string]any); ok {
		depth, _, err := argUint(r, "depth")
		if err != nil {
			return nil, err
		}
		var lanes []colossus.EvidenceLane
		for _, l := range stringList(r["lanes"]) {
			lanes = append(lanes, colossus.EvidenceLane(l))
		}
		opts = append(opts, colossus.WithResearch(colossus.ResearchOptions{Depth: uint32(depth), Lanes: lanes}))
	}
	if n, ok, err := argUint(args, "rate_limit_retries"); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, colossus.WithRateLimitRetries(int(min(n, 1<<31-1))))
	}
	created, err := cl.Runs.Create(ctx, parts, opts...)
	if err != nil {
		return nil, err
	}
	return map[string]any{"run": runView(&created.Run), "replayed": created.Replayed, "idempotency_key": created.IdempotencyKey}, nil
}

func (c *caseRun) listRuns(ctx context.Context, cl *colossus.Client, args map[string]any, report map[string]any) (any, error) {
	var opts []colossus.CallOption
	for _, s := range stringList(args["statuses"]) {
		opts = append(opts, colossus.WithStatuses(colossus.RunStatus(s)))
	}
	if n, ok, err := argUint(args, "page_size"); err != nil {
		return nil, err
	} else if ok {
		opts = append(opts, colossus.WithPageSize(uint32(n)))
	}
	if token, _ := args["page_token"].(string); token != "" {
		opts = append(opts, colossus.WithPageToken(token))
	}
	maxPages := 1000
	if n, ok, _ := argUint(args, "max_pages"); ok {
		maxPages = int(n)
	}
	runIDs, statuses, created := []string{}, []string{}, []string{}
	view := map[string]any{"run_ids": runIDs, "statuses": statuses, "created_run_ids": created, "pages": 0,
		"stopped_at_max_pages": false, "next_page_token": ""}
	pages := 0
	for page, err := range cl.Runs.Pages(ctx, opts...) {
		if err != nil {
			return view, err
		}
		pages++
		for _, r := range page.Runs {
			runIDs = append(runIDs, r.RunID)
			statuses = append(statuses, string(r.Status))
		}
		view["run_ids"], view["statuses"], view["pages"] = runIDs, statuses, pages
		view["next_page_token"] = page.NextPageToken
		if pages == 1 {
			for _, text := range stringList(args["create_after_first_page"]) {
				res, err := cl.Runs.Create(ctx, colossus.Text(text))
				if err != nil {
					return view, err
				}
				created = append(created, res.Run.RunID)
				view["created_run_ids"] = created
			}
		}
		if pages >= maxPages {
			view["stopped_at_max_pages"] = true
			break
		}
	}
	return view, nil
}

func (c *caseRun) watch(ctx context.Context, cl *colossus.Client, args map[string]any, report map[string]any) (any, error) {
	runID, _ := argString(args, "run_id")
	until, _ := argString(args, "until_kind")
	limit, _, err := argUint(args, "max_events")
	if err != nil {
		return nil, err
	}
	syncAfter, _, err := argUint(args, "sync_after_events")
	if err != nil {
		return nil, err
	}
	events := []map[string]any{}
	hooks := []map[string]any{}
	view := map[string]any{"events": events, "completed": false, "reconnects": 0}
	opts := []colossus.CallOption{
		colossus.WithIdleTimeout(time.Duration(argFloat(args, "idle_timeout_seconds", 20) * float64(time.Second))),
		colossus.WithOnReconnect(func(info colossus.ReconnectInfo) {
			hooks = append(hooks, map[string]any{"hook": "reconnect", "after_sequence": info.AfterSequence, "attempt": info.Attempt})
		}),
	}
	if _, present := args["after_sequence"]; present {
		after, _, err := argUint(args, "after_sequence")
		if err != nil {
			return view, err
		}
		opts = append(opts, colossus.WithAfterSequence(after))
	}
	stoppedEarly := false
	var failure error
	for event, err := range cl.Runs.Watch(ctx, runID, opts...) {
		if err != nil {
			failure = err
			break
		}
		events = append(events, eventView(event))
		if syncAfter > 0 && uint64(len(events)) == syncAfter {
			// The sync point: the runner acts on the worker while this same iterator waits.
			if failure = waitForRelease(c.caseName(), report["id"].(string)); failure != nil {
				break
			}
			c.callsAtRelease[report["id"].(string)], _ = c.credentialCalls(c.connName(args))
		}
		if (until != "" && events[len(events)-1]["kind"] == until) || (limit > 0 && uint64(len(events)) >= limit) {
			stoppedEarly = true
			break
		}
	}
	view["events"], view["reconnects"] = events, len(hooks)
	view["completed"] = failure == nil && !stoppedEarly
	if len(hooks) > 0 {
		report["hooks"] = hooks
	}
	return view, failure
}

// textStream reports the text pieces in order; on failure, the pieces so far next to the error.
func (c *caseRun) textStream(ctx context.Context, cl *colossus.Client, args map[string]any) (any, error) {
	runID, _ := argString(args, "run_id")
	texts := []string{}
	view := map[string]any{"texts": texts, "completed": false}
	opts := []colossus.CallOption{
		colossus.WithIdleTimeout(time.Duration(argFloat(args, "idle_timeout_seconds", 20) * float64(time.Second))),
	}
	if _, present := args["after_sequence"]; present {
		after, _, err := argUint(args, "after_sequence")
		if err != nil {
			return view, err
		}
		opts = append(opts, colossus.WithAfterSequence(after))
	}
	for text, err := range cl.Runs.TextStream(ctx, runID, opts...) {
		if err != nil {
			view["texts"] = texts
			return view, err
		}
		texts = append(texts, text)
	}
	view["texts"], view["completed"] = texts, true
	return view, nil
}
