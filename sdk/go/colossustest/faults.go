package colossustest

import (
	"time"

	"google.golang.org/grpc/codes"
)

// Fault is one injected misbehaviour, used once by the next call it applies to. Build it
// with the functions below and pass it to [FakeWorker.Inject].
type Fault struct {
	// Method is the RPC it applies to ("WatchRun", "CreateRun", "GetRun"...).
	Method string
	// Kind is what goes wrong: drop, gap, replay, after_commit, fail, rate_limit, not_started.
	Kind string
	// AfterEvents is, for watch faults, how many events are sent before it strikes.
	AfterEvents int
	// Code is, for fail, the status code.
	Code codes.Code
	// Reason is, for fail, the ErrorInfo reason to attach ("" for none).
	Reason string
	// RetryDelay is, for rate_limit, the delay of the RetryInfo it attaches.
	RetryDelay time.Duration
}

// DropWatch makes the next WatchRun send afterEvents events, then fail with UNAVAILABLE
// (a dropped connection): the SDK reconnects from its cursor.
func DropWatch(afterEvents int) Fault {
	return Fault{Method: "WatchRun", Kind: "drop", AfterEvents: afterEvents}
}

// Gap makes the next WatchRun skip one sequence after afterEvents events: the SDK fails
// the watch with a *colossus.WatchGapError.
func Gap(afterEvents int) Fault {
	return Fault{Method: "WatchRun", Kind: "gap", AfterEvents: afterEvents}
}

// Replay makes the next WatchRun send its first event again after afterEvents events
// (identical content): the SDK drops the copy.
func Replay(afterEvents int) Fault {
	return Fault{Method: "WatchRun", Kind: "replay", AfterEvents: afterEvents}
}

// UnavailableAfterCommit makes the next call of method take effect, then fail with
// UNAVAILABLE: a mutation's outcome is unknown to the SDK (colossus.ErrOutcomeUnknown).
func UnavailableAfterCommit(method string) Fault { return Fault{Method: method, Kind: "after_commit"} }

// Fail makes the next call of method fail before doing anything, with code and, unless
// reason is empty, an ErrorInfo reason.
func Fail(method string, code codes.Code, reason string) Fault {
	return Fault{Method: method, Kind: "fail", Code: code, Reason: reason}
}

// RateLimit makes the next CreateRun be refused as the worker's create rate limit refuses:
// RESOURCE_EXHAUSTED, reason CREATE_RATE_LIMIT, and a RetryInfo of retryDelay. Nothing is
// created; colossus.WithRateLimitRetries retries it.
func RateLimit(retryDelay time.Duration) Fault {
	return Fault{Method: "CreateRun", Kind: "rate_limit", Code: codes.ResourceExhausted, Reason: "CREATE_RATE_LIMIT", RetryDelay: retryDelay}
}

// NotStarted makes the next GetRun answer as if the run had not started yet (QUEUED at
// sequence 0), as a read that raced the run would: Runs.Wait then follows the run's watch.
func NotStarted() Fault { return Fault{Method: "GetRun", Kind: "not_started"} }
