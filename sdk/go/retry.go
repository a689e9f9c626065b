package colossus

import (
	"context"
	"math/rand/v2"
	"time"
)

// RetryPolicy bounds the automatic retries of reads and the reconnects of a watch. Only
// UNAVAILABLE is retried, and only for reads; mutations are never retried.
//
// A budget is spent when either MaxAttempts retries were made or MaxElapsed passed since
// the first failure (counted afresh after every delivered watch event). Each delay is
// "equal jitter": half the current ceiling plus a random part of the other half, so a
// restarting worker gets a predictable minimum of time to come back.
type RetryPolicy struct {
	// MaxAttempts is the number of retries (reconnects) after the first failure; 0 means
	// none when other fields are set.
	MaxAttempts int
	// InitialBackoff is the ceiling of the first delay.
	InitialBackoff time.Duration
	// MaxBackoff caps every delay.
	MaxBackoff time.Duration
	// Multiplier grows the ceiling per attempt (at least 1).
	Multiplier float64
	// MaxElapsed is the elapsed-time budget; 0 means no time limit beyond MaxAttempts.
	MaxElapsed time.Duration
}

// DefaultReadRetry is the policy of reads: 4 retries within 10 s.
var DefaultReadRetry = RetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond,
	MaxBackoff: 2 * time.Second, Multiplier: 2, MaxElapsed: 10 * time.Second}

// DefaultWatchRetry is the reconnect policy of watches: up to 10 reconnects without a
// newly delivered event, within 30 s. The delays add up to at least 6.5 s, so a worker
// restart of a few seconds does not end a watch.
var DefaultWatchRetry = RetryPolicy{MaxAttempts: 10, InitialBackoff: 100 * time.Millisecond,
	MaxBackoff: 2 * time.Second, Multiplier: 2, MaxElapsed: 30 * time.Second}

// NoRetry disables retries and reconnects.
var NoRetry = RetryPolicy{MaxAttempts: 0, Multiplier: 1, InitialBackoff: 1}

func (p RetryPolicy) validate(name string) error {
	if p == (RetryPolicy{}) {
		return nil
	}
	if p.MaxAttempts < 0 || p.InitialBackoff < 0 || p.MaxBackoff < 0 || p.MaxElapsed < 0 {
		return invalidField(name, "%s values must not be negative", name)
	}
	if p.Multiplier < 1 {
		return invalidField(name, "%s.Multiplier must be at least 1", name)
	}
	return nil
}

// backoff is one budget in progress. It has no I/O: the caller sleeps.
type backoff struct {
	policy  RetryPolicy
	attempt int
	started time.Time
	ceiling time.Duration
	now     func() time.Time
	jitter  func(n int64) int64
}

func newBackoff(p RetryPolicy, now func() time.Time) *backoff {
	if now == nil {
		now = time.Now
	}
	return &backoff{policy: p, now: now, jitter: rand.Int64N}
}

// next returns the delay before the next retry and its 1-based number, or ok=false when
// the budget is spent.
func (b *backoff) next() (delay time.Duration, attempt int, ok bool) {
	now := b.now()
	if b.attempt == 0 {
		b.started = now
		b.ceiling = b.policy.InitialBackoff
	}
	if b.attempt >= b.policy.MaxAttempts {
		return 0, b.attempt, false
	}
	if b.policy.MaxElapsed > 0 && now.Sub(b.started) >= b.policy.MaxElapsed {
		return 0, b.attempt, false
	}
	ceiling := min(b.ceiling, b.policy.MaxBackoff)
	if ceiling <= 0 {
		ceiling = 0
	}
	half := ceiling / 2
	delay = half
	if rest := int64(ceiling - half); rest > 0 {
		delay += time.Duration(b.jitter(rest + 1))
	}
	if b.policy.MaxElapsed > 0 {
		if left := b.policy.MaxElapsed - now.Sub(b.started); delay > left {
			delay = left
		}
	}
	b.attempt++
	b.ceiling = time.Duration(float64(b.ceiling) * b.policy.Multiplier)
	return delay, b.attempt, true
}

// reset starts a fresh budget (after progress).
func (b *backoff) reset() { b.attempt = 0 }

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
		if !ok || !e.Retryable() || ctx.Err() != nil {
			return v, err
		}
		delay, n, more := b.next()
		if !more {
			return v, err
		}
		c.log.Info("retrying read", "call", what, "attempt", n, "delay", delay)
		if serr := sleep(ctx, delay); serr != nil {
			return v, err
		}
	}
}
