package colossus

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func stringsEqual(a, b string) bool { return a == b }

func newTestCore(after uint64, policy RetryPolicy, clock *fakeClock) *watchCore[string] {
	var now func() time.Time
	if clock != nil {
		now = clock.now
	}
	c := newWatchCore("run_1", after, policy, stringsEqual, now)
	c.budget.jitter = func(n int64) int64 { return n - 1 } // the largest delay, deterministic
	return c
}

type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time          { return c.t }
func (c *fakeClock) advance(d time.Duration) { c.t = c.t.Add(d) }

func deliver(t *testing.T, c *watchCore[string], seq uint64, content string) {
	t.Helper()
	v, err := c.onEvent("run_1", seq, content, len(content), false)
	if err != nil || v != verdictDeliver {
		t.Fatalf("event %d: verdict %v err %v, want deliver", seq, v, err)
	}
}

func TestWatchCoreDeliversInOrderAndDropsExactReplays(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	deliver(t, c, 1, "a")
	deliver(t, c, 2, "b")
	v, err := c.onEvent("run_1", 1, "a", 1, false)
	if err != nil || v != verdictDrop {
		t.Fatalf("exact replay: verdict %v err %v, want drop", v, err)
	}
	if c.lastSequence() != 2 {
		t.Fatalf("cursor %d, want 2", c.lastSequence())
	}
}

func TestWatchCoreAlteredReplayIsAProtocolViolation(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	deliver(t, c, 1, "a")
	_, err := c.onEvent("run_1", 1, "changed", 7, false)
	if !errors.Is(err, ErrProtocolViolation) || errors.Is(err, ErrWatchGap) {
		t.Fatalf("err %v, want a protocol violation", err)
	}
	if e, _ := asError(err); e.Reason != ReasonWatchReplayAltered {
		t.Fatalf("reason %q", e.Reason)
	}
}

func TestWatchCoreGapFailsWithTypedError(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	deliver(t, c, 1, "a")
	_, err := c.onEvent("run_1", 3, "c", 1, false)
	var gap *WatchGapError
	if !errors.As(err, &gap) || !errors.Is(err, ErrWatchGap) || !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("err %v, want *WatchGapError", err)
	}
	if gap.Expected != 2 || gap.Received != 3 || c.lastSequence() != 1 {
		t.Fatalf("gap %+v cursor %d", gap, c.lastSequence())
	}
	var base *Error
	if !errors.As(err, &base) || base.Metadata["expected"] != "2" {
		t.Fatalf("errors.As to *Error failed: %v", base)
	}
}

func TestWatchCoreWrongRunAndAfterTerminal(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	if _, err := c.onEvent("run_2", 1, "a", 1, false); !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("wrong run: %v", err)
	}
	if _, err := c.onEvent("run_1", 1, "end", 3, true); err != nil {
		t.Fatal(err)
	}
	if !c.finished() {
		t.Fatal("terminal event not recorded")
	}
	_, err := c.onEvent("run_1", 2, "late", 4, false)
	if e, ok := asError(err); !ok || e.Reason != ReasonWatchAfterTerminal {
		t.Fatalf("after terminal: %v", err)
	}
	// An exact replay of the terminal event is still only a duplicate.
	if v, err := c.onEvent("run_1", 1, "end", 3, true); err != nil || v != verdictDrop {
		t.Fatalf("terminal replay: %v %v", v, err)
	}
}

func TestWatchCoreReplayAtOrBeforeCallerCursorCannotBeVerified(t *testing.T) {
	c := newTestCore(5, DefaultRetry, nil)
	_, err := c.onEvent("run_1", 5, "x", 1, false)
	if e, ok := asError(err); !ok || e.Reason != ReasonWatchReplayUnverified {
		t.Fatalf("err %v", err)
	}
	deliver(t, c, 6, "y")
}

func TestWatchCoreWindowIsBoundedInCountAndBytes(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	for i := uint64(1); i <= replayWindowEvents+10; i++ {
		deliver(t, c, i, "e")
	}
	if c.count != replayWindowEvents {
		t.Fatalf("window holds %d events, want %d", c.count, replayWindowEvents)
	}
	// The oldest event fell out of the window: its replay cannot be verified any more.
	if _, err := c.onEvent("run_1", 5, "e", 1, false); err == nil {
		t.Fatal("a replay older than the window was accepted")
	}
	big := strings.Repeat("x", replayWindowBytes/4)
	d := newTestCore(0, DefaultRetry, nil)
	for i := uint64(1); i <= 10; i++ {
		if _, err := d.onEvent("run_1", i, big, len(big), false); err != nil {
			t.Fatal(err)
		}
	}
	if d.bytes > replayWindowBytes || d.count > 4 {
		t.Fatalf("window holds %d bytes in %d events, over %d", d.bytes, d.count, replayWindowBytes)
	}
	if v, err := d.onEvent("run_1", 10, big, len(big), false); err != nil || v != verdictDrop {
		t.Fatalf("the newest event must stay comparable: %v %v", v, err)
	}
}

func TestWatchCoreCleanCloseReconciliation(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	deliver(t, c, 1, "a")
	if done, err := c.onCleanClose(Run{RunID: "run_1", Status: RunStatusRunning, LastSequence: 1}); done || err != nil {
		t.Fatalf("running run: done=%v err=%v, want resume", done, err)
	}
	if _, err := c.onCleanClose(Run{RunID: "run_1", Status: RunStatusSucceeded, LastSequence: 3}); !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("terminal beyond cursor: %v", err)
	}
	if _, err := c.onCleanClose(Run{RunID: "run_x", Status: RunStatusSucceeded, LastSequence: 1}); !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("other run: %v", err)
	}
	if _, err := c.onCleanClose(Run{RunID: "run_1", Status: RunStatusRunning, LastSequence: 0}); !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("run behind cursor: %v", err)
	}
	if done, err := c.onCleanClose(Run{RunID: "run_1", Status: RunStatusSucceeded, LastSequence: 1}); !done || err != nil {
		t.Fatalf("terminal at cursor: done=%v err=%v", done, err)
	}
}

func TestWatchCoreReconnectBudgetCountsAttemptsAndRefillsOnProgress(t *testing.T) {
	// MaxAttempts counts stream attempts, the first included: 4 attempts, 3 reconnects.
	policy := RetryPolicy{MaxAttempts: 4, InitialBackoff: 100 * time.Millisecond, MaxBackoff: time.Second, Multiplier: 2}
	c := newTestCore(0, policy, &fakeClock{})
	var delays []time.Duration
	for {
		plan, ok := c.onRetryableFailure(true)
		if !ok {
			break
		}
		delays = append(delays, plan.delay)
		if plan.after != 0 || plan.attempt != len(delays) {
			t.Fatalf("plan %+v", plan)
		}
	}
	if len(delays) != 3 || delays[0] != 100*time.Millisecond || delays[2] != 400*time.Millisecond {
		t.Fatalf("delays %v", delays)
	}
	deliver(t, c, 1, "a")
	plan, ok := c.onRetryableFailure(true)
	if !ok || plan.attempt != 1 || plan.after != 1 {
		t.Fatalf("progress must start a fresh budget: %+v %v", plan, ok)
	}
}

func TestWatchCoreUnreachableWorkerSpendsTimeNotAttempts(t *testing.T) {
	clock := &fakeClock{}
	c := newTestCore(0, DefaultRetry, clock)
	// A refused connection for 20 s (a restarting worker): far more reconnects than
	// MaxAttempts, each delay capped at one second, all within the elapsed budget.
	n := 0
	for clock.t.Sub(time.Time{}) < 20*time.Second {
		plan, ok := c.onRetryableFailure(false)
		if !ok {
			t.Fatalf("the budget ended after %d refused reconnects at %v", n, clock.t.Sub(time.Time{}))
		}
		if plan.delay > time.Second {
			t.Fatalf("delay %v while the worker is unreachable, want at most 1 s", plan.delay)
		}
		n++
		clock.advance(max(plan.delay, 10*time.Millisecond))
	}
	if n <= DefaultRetry.MaxAttempts {
		t.Fatalf("only %d reconnects in 20 s", n)
	}
	// Once the worker answers again, failures that reach it spend the attempts.
	reached := 0
	for {
		if _, ok := c.onRetryableFailure(true); !ok {
			break
		}
		reached++
	}
	if reached != DefaultRetry.MaxAttempts-1 {
		t.Fatalf("%d reconnects that reached the worker, want %d", reached, DefaultRetry.MaxAttempts-1)
	}
}

func TestWatchCoreReconnectBudgetHasAnElapsedTimeLimit(t *testing.T) {
	clock := &fakeClock{}
	policy := RetryPolicy{MaxAttempts: 1000, InitialBackoff: time.Second, MaxBackoff: time.Second, Multiplier: 1, MaxElapsed: 5 * time.Second}
	c := newTestCore(0, policy, clock)
	n := 0
	for {
		plan, ok := c.onRetryableFailure(true)
		if !ok {
			break
		}
		n++
		clock.advance(plan.delay)
	}
	if n != 5 {
		t.Fatalf("%d reconnects within a 5 s budget of 1 s delays, want 5", n)
	}
}

func TestWatchCoreKeepsAnEventLargerThanTheByteBound(t *testing.T) {
	c := newTestCore(0, DefaultRetry, nil)
	deliver(t, c, 1, "small")
	huge := strings.Repeat("x", replayWindowBytes+1)
	deliver(t, c, 2, huge)
	if c.count != 1 || c.bytes != len(huge) {
		t.Fatalf("window holds %d events, %d bytes; want only the oversized newest one", c.count, c.bytes)
	}
	if v, err := c.onEvent("run_1", 2, huge, len(huge), false); err != nil || v != verdictDrop {
		t.Fatalf("an exact replay of the oversized event: %v %v, want drop", v, err)
	}
	if _, err := c.onEvent("run_1", 2, huge+"!", len(huge)+1, false); !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("an altered replay of the oversized event: %v, want a protocol violation", err)
	}
}
