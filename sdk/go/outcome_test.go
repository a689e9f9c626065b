package colossus_test

import (
	"context"
	"errors"
	"slices"
	"testing"
	"time"

	"google.golang.org/grpc/codes"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
	"github.com/obscuritylabs/colossus-sdks/sdk/go/colossustest"
)

// Runs.Wait, Runs.TextStream, the create retry under CREATE_RATE_LIMIT and
// Client.WithOptions (S11), against the SDK's own fake worker.

func fakeClient(t *testing.T) (*colossustest.FakeWorker, *colossus.Client) {
	t.Helper()
	w := colossustest.Start(t)
	c, err := colossus.Connect(context.Background(), w.DaemonOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return w, c
}

func created(t *testing.T, c *colossus.Client) string {
	t.Helper()
	res, err := c.Runs.Create(context.Background(), colossus.Text("x"))
	if err != nil {
		t.Fatal(err)
	}
	return res.Run.RunID
}

func countCalls(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}

func TestWaitReturnsAnEndedRunWithOneRead(t *testing.T) {
	w, c := fakeClient(t)
	w.Script(colossus.RunStatusSucceeded, "Hello", ", world")
	run, err := c.Runs.Wait(context.Background(), created(t, c))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != colossus.RunStatusSucceeded || run.Result == nil || run.Result.OutputText != "Hello, world" {
		t.Fatalf("run = %+v", run)
	}
	if got := w.Calls()[1:]; !slices.Equal(got, []string{"CreateRun", "GetRun"}) {
		t.Fatalf("calls = %v", got)
	}
}

func TestWaitFollowsARunThatHasNotEndedThroughItsWatch(t *testing.T) {
	w, c := fakeClient(t)
	w.Script(colossus.RunStatusFailed, "a", "b", "c")
	id := created(t, c)
	w.Inject(colossustest.NotStarted(), colossustest.DropWatch(2))
	var reconnects []colossus.ReconnectInfo
	run, err := c.Runs.Wait(context.Background(), id, colossus.WithOnReconnect(func(i colossus.ReconnectInfo) { reconnects = append(reconnects, i) }))
	if err != nil {
		t.Fatal(err)
	}
	if run.Status != colossus.RunStatusFailed || run.LastSequence != 4 {
		t.Fatalf("run = %+v", run)
	}
	if want := []string{"CreateRun", "GetRun", "WatchRun", "WatchRun", "GetRun"}; !slices.Equal(w.Calls()[1:], want) {
		t.Fatalf("calls = %v, want %v", w.Calls()[1:], want)
	}
	if len(reconnects) != 1 || reconnects[0].AfterSequence != 2 {
		t.Fatalf("reconnects = %+v", reconnects)
	}
}

func TestWaitFailsAsTheWatchFails(t *testing.T) {
	w, c := fakeClient(t)
	w.Script(colossus.RunStatusSucceeded, "a", "b", "c")
	id := created(t, c)
	w.Inject(colossustest.NotStarted(), colossustest.Gap(1))
	if _, err := c.Runs.Wait(context.Background(), id); !errors.Is(err, colossus.ErrWatchGap) {
		t.Fatalf("err = %v, want ErrWatchGap", err)
	}
}

func TestTextStreamYieldsOnlyOutputTextOnceEach(t *testing.T) {
	w, c := fakeClient(t)
	w.Script(colossus.RunStatusSucceeded, "one ", "two ", "three")
	id := created(t, c)
	w.Inject(colossustest.Replay(2))
	progress := &colossus.WatchProgress{}
	var pieces []string
	for piece, err := range c.Runs.TextStream(context.Background(), id, colossus.WithProgress(progress)) {
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, piece)
	}
	if !slices.Equal(pieces, []string{"one ", "two ", "three"}) {
		t.Fatalf("pieces = %q", pieces)
	}
	if final := progress.FinalRun(); final == nil || final.Status != colossus.RunStatusSucceeded || progress.LastSequence() != 4 {
		t.Fatalf("final = %+v, last = %d", final, progress.LastSequence())
	}
}

func TestTextStreamResumesAfterASequence(t *testing.T) {
	w, c := fakeClient(t)
	w.Script(colossus.RunStatusSucceeded, "one ", "two ", "three")
	var pieces []string
	for piece, err := range c.Runs.TextStream(context.Background(), created(t, c), colossus.WithAfterSequence(2)) {
		if err != nil {
			t.Fatal(err)
		}
		pieces = append(pieces, piece)
	}
	if !slices.Equal(pieces, []string{"three"}) {
		t.Fatalf("pieces = %q", pieces)
	}
}

func TestARateLimitedCreateIsRetriedWithTheSameKeyAfterTheWorkersDelay(t *testing.T) {
	w, c := fakeClient(t)
	w.Inject(colossustest.RateLimit(200 * time.Millisecond))
	start := time.Now()
	res, err := c.Runs.Create(context.Background(), colossus.Text("x"), colossus.WithIdempotencyKey("k-1"), colossus.WithRateLimitRetries(2))
	if err != nil {
		t.Fatal(err)
	}
	if time.Since(start) < 200*time.Millisecond || res.IdempotencyKey != "k-1" || res.Replayed {
		t.Fatalf("res = %+v after %v", res, time.Since(start))
	}
	if n := countCalls(w.Calls(), "CreateRun"); n != 2 {
		t.Fatalf("CreateRun calls = %d, want 2", n)
	}
}

func TestWithoutRetriesTheRefusalCarriesTheDelayAndIsRetryable(t *testing.T) {
	w, c := fakeClient(t)
	w.Inject(colossustest.RateLimit(1500 * time.Millisecond))
	_, err := c.Runs.Create(context.Background(), colossus.Text("x"))
	var e *colossus.Error
	if !errors.As(err, &e) || !errors.Is(err, colossus.ErrResourceExhausted) || e.Reason != colossus.ReasonCreateRateLimit {
		t.Fatalf("err = %v", err)
	}
	if e.RetryDelay != 1500*time.Millisecond || !e.Retryable() || e.IdempotencyKey == "" {
		t.Fatalf("RetryDelay = %v, Retryable = %v, key = %q", e.RetryDelay, e.Retryable(), e.IdempotencyKey)
	}
	if n := countCalls(w.Calls(), "CreateRun"); n != 1 {
		t.Fatalf("CreateRun calls = %d, want 1", n)
	}
}

func TestTheRetriesRunOutAndTheLastRefusalIsReturned(t *testing.T) {
	w, c := fakeClient(t)
	w.Inject(colossustest.RateLimit(5*time.Millisecond), colossustest.RateLimit(5*time.Millisecond), colossustest.RateLimit(5*time.Millisecond))
	_, err := c.Runs.Create(context.Background(), colossus.Text("x"), colossus.WithRateLimitRetries(2))
	if !errors.Is(err, colossus.ErrResourceExhausted) {
		t.Fatalf("err = %v", err)
	}
	if n := countCalls(w.Calls(), "CreateRun"); n != 3 {
		t.Fatalf("CreateRun calls = %d, want 3", n)
	}
}

func TestOtherExhaustionIsNeverRetriedNorRetryable(t *testing.T) {
	w, c := fakeClient(t)
	w.Inject(colossustest.Fail("CreateRun", codes.ResourceExhausted, "ACTIVE_RUN_LIMIT"))
	_, err := c.Runs.Create(context.Background(), colossus.Text("x"), colossus.WithRateLimitRetries(5))
	var e *colossus.Error
	if !errors.As(err, &e) || e.RetryDelay != 0 || e.Retryable() {
		t.Fatalf("err = %v", err)
	}
	if n := countCalls(w.Calls(), "CreateRun"); n != 1 {
		t.Fatalf("CreateRun calls = %d, want 1", n)
	}
}

func TestRateLimitRetriesOutsideTheRangeAreRefusedBeforeSending(t *testing.T) {
	w, c := fakeClient(t)
	for _, n := range []int{-1, 11} {
		_, err := c.Runs.Create(context.Background(), colossus.Text("x"), colossus.WithRateLimitRetries(n))
		if !errors.Is(err, colossus.ErrInvalidArgument) {
			t.Fatalf("WithRateLimitRetries(%d): err = %v", n, err)
		}
	}
	if n := countCalls(w.Calls(), "CreateRun"); n != 0 {
		t.Fatalf("CreateRun calls = %d, want 0", n)
	}
}

func TestACancelDuringTheRateLimitWaitIsNoOutcomeUnknown(t *testing.T) {
	w, c := fakeClient(t)
	w.Inject(colossustest.RateLimit(5 * time.Second))
	ctx, cancel := context.WithTimeout(context.Background(), 100*time.Millisecond)
	defer cancel()
	_, err := c.Runs.Create(ctx, colossus.Text("x"), colossus.WithIdempotencyKey("k-2"), colossus.WithRateLimitRetries(1))
	var e *colossus.Error
	if !errors.As(err, &e) || errors.Is(err, colossus.ErrOutcomeUnknown) || e.IdempotencyKey != "k-2" || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("err = %v", err)
	}
}

func TestWithOptionsChangesTheDefaultsOverTheSameConnection(t *testing.T) {
	w, c := fakeClient(t)
	w.Script(colossus.RunStatusSucceeded, "a")
	id := created(t, c)
	fast, err := c.WithOptions(colossus.WithTimeout(2*time.Second), colossus.WithRetry(colossus.RetryPolicy{MaxAttempts: 2, InitialBackoff: time.Millisecond, MaxBackoff: 2 * time.Millisecond, Multiplier: 2, MaxElapsed: 5 * time.Second}))
	if err != nil {
		t.Fatal(err)
	}
	w.Inject(colossustest.Fail("GetRun", codes.Unavailable, ""), colossustest.Fail("GetRun", codes.Unavailable, ""), colossustest.Fail("GetRun", codes.Unavailable, ""))
	if _, err := fast.Runs.Get(context.Background(), id); !errors.Is(err, colossus.ErrTransport) {
		t.Fatalf("err = %v, want ErrTransport after two attempts", err)
	}
	if n := countCalls(w.Calls(), "GetRun"); n != 2 {
		t.Fatalf("GetRun calls = %d, want 2 (the derived policy)", n)
	}
	if run, err := c.Runs.Get(context.Background(), id); err != nil || run.Status != colossus.RunStatusSucceeded {
		t.Fatalf("parent get = %+v, %v", run, err)
	}
	if n := countCalls(w.Calls(), "GetServerInfo"); n != 1 {
		t.Fatalf("GetServerInfo calls = %d: a second connection was opened", n)
	}
	if fast.ServerInfo().InstanceID != c.ServerInfo().InstanceID {
		t.Fatal("the derived client sees another worker")
	}
}

func TestWithOptionsRefusesOtherOptionsAndClosingEitherClosesBoth(t *testing.T) {
	_, c := fakeClient(t)
	if _, err := c.WithOptions(colossus.WithIdempotencyKey("k")); !errors.Is(err, colossus.ErrInvalidArgument) {
		t.Fatalf("err = %v, want ErrInvalidArgument", err)
	}
	if _, err := c.WithOptions(colossus.WithRetry(colossus.RetryPolicy{MaxAttempts: -1})); err == nil {
		t.Fatal("an invalid policy was accepted")
	}
	derived, err := c.WithOptions(colossus.WithTimeout(0))
	if err != nil {
		t.Fatal(err)
	}
	_ = derived.Close()
	if _, err := c.Runs.Get(context.Background(), "run_1"); !errors.Is(err, colossus.ErrClientClosed) {
		t.Fatalf("err = %v, want ErrClientClosed", err)
	}
}
