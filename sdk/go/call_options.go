package colossus

import (
	"slices"
	"strings"
	"time"
)

// CallOption configures one call. Each option documents the calls it applies to; any
// other call refuses it with [ErrInvalidArgument] naming the option (metadata "option"),
// so a misplaced option is never silently ignored.
type CallOption func(*callConfig)

type callConfig struct {
	timeout        *time.Duration
	retry          *RetryPolicy
	idempotencyKey *string
	mode           RunMode
	role           string
	maxTurns       uint32
	sessionID      *string
	endUserID      *string
	traceparent    string
	tracestate     string
	planAction     *PlanAction
	research       *ResearchOptions
	statuses       []RunStatus
	pageSize       uint32
	pageToken      string
	afterSequence  uint64
	idleTimeout    time.Duration
	onReconnect    func(ReconnectInfo)
	displayName    *string
	progress       *WatchProgress
	// rateLimitRetries is set by WithRateLimitRetries (rate_limit.go).
	rateLimitRetries *int
	// used names the options given, in order, for [callConfig.only].
	used []string
}

// mark records that the option called name was given.
func (c *callConfig) mark(name string) { c.used = append(c.used, name) }

// only refuses an option that does not apply to call: every option given must be one of
// allowed. The error names the option and the call.
func (c *callConfig) only(call string, allowed ...string) error {
	for _, name := range c.used {
		if !slices.Contains(allowed, name) {
			return newError(ErrInvalidArgument, ReasonFieldInvalid, "%s does not apply to %s (it takes %s)",
				name, call, strings.Join(allowed, ", ")).withMeta("field", "opts").withMeta("option", name)
		}
	}
	return nil
}

// collectFor gathers opts for call, refusing any option that does not apply to it.
func collectFor(call string, opts []CallOption, allowed ...string) (*callConfig, error) {
	c := collect(opts)
	if err := c.only(call, allowed...); err != nil {
		return nil, err
	}
	return c, nil
}

func collect(opts []CallOption) *callConfig {
	c := &callConfig{}
	for _, o := range opts {
		if o != nil {
			o(c)
		}
	}
	return c
}

// WithTimeout sets this call's deadline (every call but a watch; 0 or negative: none).
// A watch refuses it: bound it with ctx or [WithIdleTimeout].
func WithTimeout(d time.Duration) CallOption {
	return func(c *callConfig) { c.mark("WithTimeout"); c.timeout = &d }
}

// WithRetry overrides the client's retry policy for one read or one watch (the zero
// value: [DefaultRetry]; unset fields take their defaults; [NoRetry]: a single attempt).
// Mutations refuse it: they are never retried.
func WithRetry(p RetryPolicy) CallOption {
	return func(c *callConfig) { c.mark("WithRetry"); c.retry = &p }
}

// WithIdempotencyKey sets a create's idempotency key (1-128 of [A-Za-z0-9._:-]). Without
// it the SDK generates one for the call and reports it on the result and every error. A
// key given here is used as given: an empty one is refused like any other malformed key,
// never replaced by a generated one (a retry would then create a second run).
func WithIdempotencyKey(key string) CallOption {
	return func(c *callConfig) { c.mark("WithIdempotencyKey"); c.idempotencyKey = &key }
}

// WithMode sets a create's run mode (default EXECUTE).
func WithMode(mode RunMode) CallOption {
	return func(c *callConfig) { c.mark("WithMode"); c.mode = mode }
}

// WithRole sets a create's logical role (default: the grant's first role).
func WithRole(role string) CallOption {
	return func(c *callConfig) { c.mark("WithRole"); c.role = role }
}

// WithMaxTurns sets a create's turn budget (0: the worker's default).
func WithMaxTurns(n uint32) CallOption {
	return func(c *callConfig) { c.mark("WithMaxTurns"); c.maxTurns = n }
}

// WithSessionID puts a create into an existing session.
func WithSessionID(id string) CallOption {
	return func(c *callConfig) { c.mark("WithSessionID"); c.sessionID = &id }
}

// WithEndUserID attaches caller-asserted end-user correlation data to a create. It is
// never an authorization input.
func WithEndUserID(id string) CallOption {
	return func(c *callConfig) { c.mark("WithEndUserID"); c.endUserID = &id }
}

// WithTraceContext sends W3C trace context with a create (overrides the client's source).
func WithTraceContext(traceparent, tracestate string) CallOption {
	return func(c *callConfig) { c.mark("WithTraceContext"); c.traceparent, c.tracestate = traceparent, tracestate }
}

// WithPlanAction continues a draft plan (needs the plans.continue capability).
func WithPlanAction(a PlanAction) CallOption {
	return func(c *callConfig) { c.mark("WithPlanAction"); c.planAction = &a }
}

// WithResearch configures a RESEARCH create (needs the research capability).
func WithResearch(r ResearchOptions) CallOption {
	return func(c *callConfig) { c.mark("WithResearch"); c.research = &r }
}

// WithStatuses filters a list to these statuses.
func WithStatuses(statuses ...RunStatus) CallOption {
	return func(c *callConfig) { c.mark("WithStatuses"); c.statuses = append(c.statuses, statuses...) }
}

// WithPageSize asks a list for pages of at most n runs (0: the worker's default).
func WithPageSize(n uint32) CallOption {
	return func(c *callConfig) { c.mark("WithPageSize"); c.pageSize = n }
}

// WithPageToken resumes a list from a page token a previous page returned.
func WithPageToken(token string) CallOption {
	return func(c *callConfig) { c.mark("WithPageToken"); c.pageToken = token }
}

// WithAfterSequence starts a watch after this cursor (exclusive).
func WithAfterSequence(seq uint64) CallOption {
	return func(c *callConfig) { c.mark("WithAfterSequence"); c.afterSequence = seq }
}

// WithIdleTimeout ends a watch with [ErrWatchIdleTimeout] when no event arrives for d.
func WithIdleTimeout(d time.Duration) CallOption {
	return func(c *callConfig) { c.mark("WithIdleTimeout"); c.idleTimeout = d }
}

// WithOnReconnect calls f before each watch reconnect.
func WithOnReconnect(f func(ReconnectInfo)) CallOption {
	return func(c *callConfig) { c.mark("WithOnReconnect"); c.onReconnect = f }
}

// WithDisplayName names an uploaded artifact.
func WithDisplayName(name string) CallOption {
	return func(c *callConfig) { c.mark("WithDisplayName"); c.displayName = &name }
}

// WithProgress exposes a watch's cursor while (and after) it runs.
func WithProgress(p *WatchProgress) CallOption {
	return func(c *callConfig) { c.mark("WithProgress"); c.progress = p }
}
