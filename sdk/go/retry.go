package colossus

import (
	"context"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the automatic retries of reads and the reconnects of a watch. Only
// UNAVAILABLE is retried, and only for reads; mutations are never retried.
//
// Two budgets bound the retries and whichever runs out first ends them: MaxAttempts
// calls that reached the worker and failed, and MaxElapsed since the first failure (for
// a watch, both start afresh after every delivered event). While the worker cannot be
// reached at all (connection refused: it is restarting) no attempt is spent, only
// time, so a restart of a few seconds ends neither a read nor a watch. Each delay is
// "full jitter": uniform between zero and the current ceiling.
//
// Any subset of fields may be set: a field left at zero takes its default (so the zero
// value is [DefaultRetry], and RetryPolicy{MaxAttempts: 3} is the default with three
// attempts). The fields and defaults match the Python (RetryPolicy) and TypeScript
// (RetryPolicy) SDKs one for one.
type RetryPolicy struct {
	// MaxAttempts is the number of calls of one read, the first included (1 disables
	// retries); for a watch, the stream attempts in a row without a newly delivered
	// event. Default 5.
	MaxAttempts int
	// InitialBackoff is the ceiling of the first delay. Default 100 ms.
	InitialBackoff time.Duration
	// MaxBackoff caps every delay. Default 5 s.
	MaxBackoff time.Duration
	// Multiplier grows the ceiling per attempt (at least 1). Default 2.
	Multiplier float64
	// MaxElapsed is the elapsed-time budget, counted from the first failure. Default 30 s
	// (also when 0); [NoElapsedLimit] leaves MaxAttempts as the only bound.
	MaxElapsed time.Duration
}

// NoElapsedLimit as RetryPolicy.MaxElapsed turns the elapsed-time budget off (Python's
// max_elapsed=None): only MaxAttempts bounds the retries.
const NoElapsedLimit time.Duration = -1

// DefaultRetry is the policy of reads and watch reconnects when ClientOptions.Retry is
// the zero value: 5 attempts within 30 s, delays from 100 ms doubling up to 5 s.
var DefaultRetry = RetryPolicy{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond,
	MaxBackoff: 5 * time.Second, Multiplier: 2, MaxElapsed: 30 * time.Second}

// NoRetry disables retries and reconnects: one attempt.
var NoRetry = RetryPolicy{MaxAttempts: 1, Multiplier: 1}

// unreachableCeiling caps the delay growth while the worker cannot be reached: those
// retries spend no attempt, so they poll at most once a second until it is back.
const unreachableCeiling = time.Second

// validate checks the fields that are set (a zero field takes its default).
func (p RetryPolicy) validate(name string) error {
	if p.MaxAttempts < 0 {
		return invalidField(name, "%s.MaxAttempts must be at least 1 (1 disables retries; 0 takes the default)", name)
	}
	if p.InitialBackoff < 0 || p.MaxBackoff < 0 || (p.MaxElapsed < 0 && p.MaxElapsed != NoElapsedLimit) {
		return invalidField(name, "%s durations must not be negative (MaxElapsed: NoElapsedLimit for none)", name)
	}
	if p.Multiplier != 0 && p.Multiplier < 1 {
		return invalidField(name, "%s.Multiplier must be at least 1 (0 takes the default)", name)
	}
	return nil
}

// orDefault returns p with every zero field replaced by DefaultRetry's.
func (p RetryPolicy) orDefault() RetryPolicy { return p.withDefaults(DefaultRetry) }

// withDefaults returns p with every zero field replaced by d's.
func (p RetryPolicy) withDefaults(d RetryPolicy) RetryPolicy {
	if p.MaxAttempts == 0 {
		p.MaxAttempts = d.MaxAttempts
	}
	if p.InitialBackoff == 0 {
		p.InitialBackoff = d.InitialBackoff
	}
	if p.MaxBackoff == 0 {
		p.MaxBackoff = d.MaxBackoff
	}
	if p.Multiplier == 0 {
		p.Multiplier = d.Multiplier
	}
	if p.MaxElapsed == 0 {
		p.MaxElapsed = d.MaxElapsed
	}
	return p
}

// backoff is one budget in progress. It has no I/O: the caller sleeps.
type backoff struct {
	policy  RetryPolicy
	attempt int // attempts that reached the worker and failed, after the first call
	started time.Time
	running bool
	ceiling time.Duration
	now     func() time.Time
	jitter  func(n int64) int64 // uniform in [0, n)
}

func newBackoff(p RetryPolicy, now func() time.Time) *backoff {
	if now == nil {
		now = time.Now
	}
	return &backoff{policy: p, now: now, jitter: rand.Int64N}
}

// next returns the delay before the next retry and the number of retries that reached
// the worker so far, or ok=false when a budget is spent. reachedWorker=false (the
// connection was refused) spends time but no attempt.
func (b *backoff) next(reachedWorker bool) (delay time.Duration, attempt int, ok bool) {
	now := b.now()
	if !b.running {
		b.running = true
		b.started = now
		b.ceiling = b.policy.InitialBackoff
	}
	elapsed := now.Sub(b.started)
	if b.policy.MaxElapsed > 0 && elapsed >= b.policy.MaxElapsed {
		return 0, b.attempt, false
	}
	if reachedWorker && b.attempt+1 >= b.policy.MaxAttempts {
		return 0, b.attempt, false
	}
	if ceiling := min(b.ceiling, b.policy.MaxBackoff); ceiling > 0 {
		delay = time.Duration(b.jitter(int64(ceiling) + 1))
	}
	if b.policy.MaxElapsed > 0 {
		delay = min(delay, b.policy.MaxElapsed-elapsed)
	}
	grown := time.Duration(float64(b.ceiling) * b.policy.Multiplier)
	if reachedWorker {
		b.attempt++
		b.ceiling = grown
	} else {
		b.ceiling = min(grown, unreachableCeiling)
	}
	return delay, b.attempt, true
}

// reset starts a fresh budget (after progress).
func (b *backoff) reset() { b.attempt, b.running = 0, false }

// sleep waits for d or until ctx ends.
func sleep(ctx context.Context, d time.Duration) error {
	if d <= 0 {
		return ctx.Err()
	}
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-ctx.Done():
		return ctx.Err()
	case <-t.C:
		return nil
	}
}

// retryRead runs a read, retrying it on UNAVAILABLE under policy.
func retryRead[T any](ctx context.Context, c *Client, what string, policy RetryPolicy, attempt func(context.Context) (T, error)) (T, error) {
	b := newBackoff(policy, nil)
	for {
		v, err := attempt(ctx)
		if err == nil {
			return v, nil
		}
		e, ok := asError(err)
		if !ok || !e.retryableRead() || ctx.Err() != nil {
			return v, err
		}
		delay, n, more := b.next(e.Reason != ReasonUnreachable)
		if !more {
			return v, err
		}
		c.log.Info("retrying read", "call", what, "attempt", n, "delay", delay)
		if c.currentSession().pauseBeforeRetry(ctx, delay) != nil {
			return v, err
		}
	}
}
