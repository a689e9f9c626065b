package colossus

import (
	"context"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// Runs is client.Runs: create, read, list, watch, cancel and answer runs.
//
// Reads (Get, List, Watch) retry UNAVAILABLE under the client's policies. Mutations
// (Create, Cancel, Respond) run exactly once; when their outcome is unknown they fail with
// [ErrOutcomeUnknown].
type Runs struct{ c *Client }

// Create starts a run (scope runs:execute). Every create carries an idempotency key: the
// one given with [WithIdempotencyKey], or one generated once for this call. The key is on
// the result and on every error, so after [ErrOutcomeUnknown] the same call with
// WithIdempotencyKey(err.IdempotencyKey) safely returns the run it may have created.
func (r *Runs) Create(ctx context.Context, input []InputPart, opts ...CallOption) (*CreateRunResult, error) {
	cfg, err := collectFor("Runs.Create", opts, "WithTimeout", "WithIdempotencyKey", "WithMode", "WithRole", "WithMaxTurns", "WithSessionID", "WithEndUserID",
		"WithTraceContext", "WithPlanAction", "WithResearch", "WithRateLimitRetries")
	// The key first: every refusal of the create, an option refused here included, carries it.
	key := newIdempotencyKey()
	if given := collect(opts).idempotencyKey; given != nil {
		key = *given
	}
	if err != nil {
		return nil, withKey(err, key)
	}
	s, err := r.c.session(ctx)
	if err != nil {
		return nil, withKey(err, key)
	}
	var ctxTrace func() (string, string)
	if f := r.c.opts.TraceContext; f != nil {
		ctxTrace = func() (string, string) { return f(ctx) }
	}
	req, err := buildCreateRun(&s.info, key, input, cfg, ctxTrace)
	if err != nil {
		return nil, withKey(err, key)
	}
	retries, err := rateLimitRetries(cfg)
	if err != nil {
		return nil, withKey(err, key)
	}
	for {
		resp, err := r.createOnce(ctx, s, req, cfg, key)
		if err == nil {
			return &CreateRunResult{Run: toRun(resp.GetRun()), Replayed: resp.GetReplayed(), IdempotencyKey: key}, nil
		}
		delay, again := rateLimitDelay(err, &s.info, retries)
		if !again {
			return nil, err
		}
		retries--
		r.c.log.Info("create rate-limited; retrying with the same key", "idempotency_key", key, "delay", delay)
		if err := sleep(ctx, delay); err != nil {
			return nil, withKey(mapRPCError(ctx, err, readCall, ""), key)
		}
		if s, err = r.c.session(ctx); err != nil {
			return nil, withKey(err, key)
		}
	}
}

// createOnce sends one CreateRun: the one call a create makes, or each of its rate-limit
// retries (the same request, so the same idempotency key).
func (r *Runs) createOnce(ctx context.Context, s *session, req *pb.CreateRunRequest, cfg *callConfig, key string) (*pb.CreateRunResponse, error) {
	callCtx, cancel := callContext(ctx, r.c.opts, cfg)
	defer cancel()
	resp, err := s.runs.CreateRun(callCtx, req, s.callOpts...)
	if err != nil {
		return nil, s.mapError(callCtx, err, mutationCall, key)
	}
	return resp, nil
}

func withKey(err error, key string) error {
	if e, ok := asError(err); ok && e.IdempotencyKey == "" {
		e.IdempotencyKey = key
	}
	return err
}

// Get returns one run (scope runs:read).
func (r *Runs) Get(ctx context.Context, runID string, opts ...CallOption) (*Run, error) {
	if err := checkID(runID, "run_id"); err != nil {
		return nil, err
	}
	cfg, err := collectFor("Runs.Get", opts, "WithTimeout", "WithRetry")
	if err != nil {
		return nil, err
	}
	return retryRead(ctx, r.c, "GetRun", r.c.opts.retryFor(cfg), func(ctx context.Context) (*Run, error) {
		s, err := r.c.session(ctx)
		if err != nil {
			return nil, err
		}
		req := &pb.GetRunRequest{RunId: runID}
		callCtx, cancel := callContext(ctx, r.c.opts, cfg)
		defer cancel()
		resp, err := s.runs.GetRun(callCtx, req, s.callOpts...)
		if err != nil {
			return nil, s.mapError(callCtx, err, readCall, "")
		}
		run := toRun(resp.GetRun())
		return &run, nil
	})
}

// Cancel asks a run to stop (scope runs:control). It is idempotent on the worker and
// never retried by the SDK.
func (r *Runs) Cancel(ctx context.Context, runID string, opts ...CallOption) (*Run, error) {
	if err := checkID(runID, "run_id"); err != nil {
		return nil, err
	}
	cfg, err := collectFor("Runs.Cancel", opts, "WithTimeout")
	if err != nil {
		return nil, err
	}
	s, err := r.c.session(ctx)
	if err != nil {
		return nil, err
	}
	req := &pb.CancelRunRequest{RunId: runID}
	callCtx, cancel := callContext(ctx, r.c.opts, cfg)
	defer cancel()
	resp, err := s.runs.CancelRun(callCtx, req, s.callOpts...)
	if err != nil {
		return nil, s.mapError(callCtx, err, mutationCall, "")
	}
	run := toRun(resp.GetRun())
	return &run, nil
}

// Respond answers a pending interaction: a [PromptAnswer] (scope prompts:respond) or an
// [ApprovalAnswer] (scope approvals:respond). Never retried.
func (r *Runs) Respond(ctx context.Context, runID, interactionID string, answer Answer, opts ...CallOption) (*Run, error) {
	cfg, err := collectFor("Runs.Respond", opts, "WithTimeout")
	if err != nil {
		return nil, err
	}
	s, err := r.c.session(ctx)
	if err != nil {
		return nil, err
	}
	req, err := buildRespond(&s.info, runID, interactionID, answer)
	if err != nil {
		return nil, err
	}
	callCtx, cancel := callContext(ctx, r.c.opts, cfg)
	defer cancel()
	resp, err := s.runs.RespondInteraction(callCtx, req, s.callOpts...)
	if err != nil {
		return nil, s.mapError(callCtx, err, mutationCall, "")
	}
	run := toRun(resp.GetRun())
	return &run, nil
}

// ListPage fetches one page of this application's runs, newest first (scope runs:read).
// Pass [WithPageToken] with a previous page's NextPageToken to resume.
func (r *Runs) ListPage(ctx context.Context, opts ...CallOption) (*RunPage, error) {
	cfg, err := collectFor("Runs.ListPage", opts, "WithTimeout", "WithRetry", "WithStatuses", "WithPageSize", "WithPageToken")
	if err != nil {
		return nil, err
	}
	return retryRead(ctx, r.c, "ListRuns", r.c.opts.retryFor(cfg), func(ctx context.Context) (*RunPage, error) {
		s, err := r.c.session(ctx)
		if err != nil {
			return nil, err
		}
		req, err := buildListRuns(&s.info, cfg)
		if err != nil {
			return nil, err
		}
		callCtx, cancel := callContext(ctx, r.c.opts, cfg)
		defer cancel()
		resp, err := s.runs.ListRuns(callCtx, req, s.callOpts...)
		if err != nil {
			return nil, s.mapError(callCtx, err, readCall, "")
		}
		page := &RunPage{NextPageToken: resp.GetNextPageToken(), Runs: make([]Run, 0, len(resp.GetRuns()))}
		for _, run := range resp.GetRuns() {
			page.Runs = append(page.Runs, toRun(run))
		}
		return page, nil
	})
}
