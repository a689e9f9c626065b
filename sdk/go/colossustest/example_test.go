package colossustest_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
	"github.com/obscuritylabs/colossus-sdks/sdk/go/colossustest"
)

// summarise is the application code under test: it asks for a summary and returns its text.
func summarise(ctx context.Context, c *colossus.Client, text string) (string, error) {
	created, err := c.Runs.Create(ctx, colossus.Text("summarise: "+text),
		colossus.WithRateLimitRetries(3))
	if err != nil {
		return "", err
	}
	var b strings.Builder
	for piece, err := range c.Runs.TextStream(ctx, created.Run.RunID) {
		if err != nil {
			return "", err
		}
		b.WriteString(piece)
	}
	return b.String(), nil
}

func connect(t *testing.T, w *colossustest.FakeWorker) *colossus.Client {
	t.Helper()
	c, err := colossus.Connect(context.Background(), w.DaemonOptions())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// The documented example: an application's own test of summarise, against the fake.
func TestSummaryIsTheRunsOutputText(t *testing.T) {
	w := colossustest.Start(t)
	w.Script(colossus.RunStatusSucceeded, "A short ", "summary.")
	got, err := summarise(context.Background(), connect(t, w), "a long text")
	if err != nil || got != "A short summary." {
		t.Fatalf("summarise = %q, %v", got, err)
	}
	if want := []string{"GetServerInfo", "CreateRun", "WatchRun", "GetRun"}; !slices.Equal(w.Calls(), want) {
		t.Fatalf("calls = %v, want %v", w.Calls(), want)
	}
}

func TestADroppedStreamAndARateLimitDoNotChangeTheSummary(t *testing.T) {
	w := colossustest.Start(t)
	w.Script(colossus.RunStatusSucceeded, "one ", "two ", "three")
	w.Inject(colossustest.RateLimit(20*time.Millisecond), colossustest.DropWatch(2))
	got, err := summarise(context.Background(), connect(t, w), "x")
	if err != nil || got != "one two three" {
		t.Fatalf("summarise = %q, %v", got, err)
	}
	calls := w.Calls()
	if n := count(calls, "CreateRun"); n != 2 {
		t.Fatalf("CreateRun calls = %d, want 2 (one refused, one retried)", n)
	}
	if n := count(calls, "WatchRun"); n != 2 {
		t.Fatalf("WatchRun calls = %d, want 2 (one dropped, one resumed)", n)
	}
}

func TestAGapInTheStreamFailsLoudly(t *testing.T) {
	w := colossustest.Start(t)
	w.Script(colossus.RunStatusSucceeded, "a", "b", "c")
	w.Inject(colossustest.Gap(1))
	_, err := summarise(context.Background(), connect(t, w), "x")
	if !errors.Is(err, colossus.ErrWatchGap) {
		t.Fatalf("err = %v, want ErrWatchGap", err)
	}
}

func TestAnUnknownCreateOutcomeIsRecoveredWithTheSameKey(t *testing.T) {
	w := colossustest.Start(t)
	w.Inject(colossustest.UnavailableAfterCommit("CreateRun"))
	c := connect(t, w)
	ctx := context.Background()
	_, err := c.Runs.Create(ctx, colossus.Text("x"))
	var e *colossus.Error
	if !errors.Is(err, colossus.ErrOutcomeUnknown) || !errors.As(err, &e) || e.IdempotencyKey == "" {
		t.Fatalf("err = %v, want ErrOutcomeUnknown with a key", err)
	}
	again, err := c.Runs.Create(ctx, colossus.Text("x"), colossus.WithIdempotencyKey(e.IdempotencyKey))
	if err != nil || !again.Replayed {
		t.Fatalf("retry = %+v, %v; want the replayed run", again, err)
	}
}

func count(calls []string, name string) int {
	n := 0
	for _, c := range calls {
		if c == name {
			n++
		}
	}
	return n
}
