package colossus

import (
	"errors"
	"time"
)

// maxRateLimitRetries is the most retries [WithRateLimitRetries] accepts.
const maxRateLimitRetries = 10

// WithRateLimitRetries lets [Runs.Create] send the same request again, with the same
// idempotency key, up to n times (0 to 10) when the worker refuses it under its create
// rate limit (ReasonCreateRateLimit), each after the refusal's [Error.RetryDelay] (or one
// refill period of the slower advertised bucket when the worker named none). A refused
// create created nothing, so the retry is safe. Default 0: the refusal is returned.
func WithRateLimitRetries(n int) CallOption {
	return func(c *callConfig) { c.mark("WithRateLimitRetries"); c.rateLimitRetries = &n }
}

func rateLimitRetries(cfg *callConfig) (int, error) {
	if cfg.rateLimitRetries == nil {
		return 0, nil
	}
	n := *cfg.rateLimitRetries
	if n < 0 || n > maxRateLimitRetries {
		return 0, invalidField("rate_limit_retries", "WithRateLimitRetries takes 0 to %d retries, not %d", maxRateLimitRetries, n)
	}
	return n, nil
}

// rateLimitDelay is how long to wait before retrying a create that failed with err, and
// whether to retry at all: only a CREATE_RATE_LIMIT refusal, and only while retries remain.
func rateLimitDelay(err error, info *ServerInfo, retries int) (time.Duration, bool) {
	var e *Error
	if retries <= 0 || !errors.As(err, &e) || !errors.Is(e, ErrResourceExhausted) || e.Reason != ReasonCreateRateLimit {
		return 0, false
	}
	if e.RetryDelay > 0 {
		return e.RetryDelay, true
	}
	slowest := uint32(0)
	for _, bucket := range []TokenBucket{info.Limits.CreateRate, info.Limits.CreateRatePerApplication} {
		if r := bucket.RefillPerSecond; r > 0 && (slowest == 0 || r < slowest) {
			slowest = r
		}
	}
	if slowest == 0 {
		return time.Second, true
	}
	return time.Second / time.Duration(slowest), true
}
