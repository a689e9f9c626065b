package colossus

import (
	"errors"
	"testing"
	"time"
)

// These defaults are one concept in all four SDKs (docs/requirements.md, S1 and S7);
// the Python, TypeScript and Rust suites pin the same numbers. A change here must change there.

func TestDefaultRetryMatchesTheOtherSDKs(t *testing.T) {
	want := RetryPolicy{MaxAttempts: 5, InitialBackoff: 100 * time.Millisecond, MaxBackoff: 5 * time.Second,
		Multiplier: 2, MaxElapsed: 30 * time.Second}
	if DefaultRetry != want {
		t.Fatalf("DefaultRetry = %+v, want %+v", DefaultRetry, want)
	}
	if got := (ClientOptions{}).retry(); got != want {
		t.Fatalf("the zero ClientOptions retry with %+v, want %+v", got, want)
	}
	if got := (ClientOptions{}).retryFor(collect([]CallOption{WithRetry(NoRetry)})); got.MaxAttempts != 1 || got != NoRetry.orDefault() {
		t.Fatalf("WithRetry(NoRetry) gave %+v", got)
	}
}

// A partly filled policy is accepted; the fields left at zero take the defaults (issue 26:
// RetryPolicy{MaxAttempts: 3} was refused at connect, its Multiplier being 0).
func TestPartlyFilledRetryPolicyTakesTheDefaults(t *testing.T) {
	only := RetryPolicy{MaxAttempts: 3}
	if err := (ClientOptions{Retry: only}).validate(); err != nil {
		t.Fatalf("RetryPolicy{MaxAttempts: 3} refused: %v", err)
	}
	want := DefaultRetry
	want.MaxAttempts = 3
	if got := (ClientOptions{Retry: only}).retry(); got != want {
		t.Fatalf("got %+v, want %+v", got, want)
	}
	if got := (RetryPolicy{MaxElapsed: NoElapsedLimit}).orDefault(); got.MaxElapsed != NoElapsedLimit {
		t.Fatalf("NoElapsedLimit became %v", got.MaxElapsed)
	}
	b := newBackoff(RetryPolicy{MaxAttempts: 2, MaxElapsed: NoElapsedLimit}.orDefault(), (&fakeClock{}).now)
	if _, _, ok := b.next(true); !ok {
		t.Fatal("no retry left within NoElapsedLimit")
	}
	for _, bad := range []RetryPolicy{{MaxAttempts: -1}, {Multiplier: 0.5}, {InitialBackoff: -time.Second}, {MaxElapsed: -2}} {
		if err := bad.validate("Retry"); !errors.Is(err, ErrInvalidArgument) {
			t.Fatalf("%+v accepted: %v", bad, err)
		}
	}
}

func TestDefaultRetryMakesFiveCallsOfAReadThatReachesTheWorker(t *testing.T) {
	b := newBackoff(DefaultRetry, (&fakeClock{}).now)
	calls := 1
	for {
		if _, _, ok := b.next(true); !ok {
			break
		}
		calls++
	}
	if calls != 5 {
		t.Fatalf("%d calls, want 5 (MaxAttempts counts the first call)", calls)
	}
	if _, _, ok := newBackoff(NoRetry, nil).next(true); ok {
		t.Fatal("NoRetry retried")
	}
}

func TestBackoffIsFullJitterUpToTheCeiling(t *testing.T) {
	b := newBackoff(DefaultRetry, (&fakeClock{}).now)
	var asked []int64
	b.jitter = func(n int64) int64 { asked = append(asked, n); return 0 }
	for {
		d, _, ok := b.next(true)
		if !ok {
			break
		}
		if d != 0 {
			t.Fatalf("the smallest jitter gave %v, want 0 (full jitter)", d)
		}
	}
	want := []int64{int64(100*time.Millisecond) + 1, int64(200*time.Millisecond) + 1, int64(400*time.Millisecond) + 1, int64(800*time.Millisecond) + 1}
	if len(asked) != len(want) {
		t.Fatalf("jitter ranges %v, want %v", asked, want)
	}
	for i := range want {
		if asked[i] != want[i] {
			t.Fatalf("jitter ranges %v, want %v", asked, want)
		}
	}
}

func TestDefaultTimeoutsMatchTheOtherSDKs(t *testing.T) {
	var o ClientOptions
	if o.timeout() != 30*time.Second || o.connectTimeout() != 10*time.Second {
		t.Fatalf("timeout %v, connect timeout %v; want 30 s and 10 s", o.timeout(), o.connectTimeout())
	}
	if o.maxResponseBytes() != 4<<20 {
		t.Fatalf("max response bytes %d, want 4 MiB", o.maxResponseBytes())
	}
	if cfg := collect(nil); cfg.idleTimeout != 0 {
		t.Fatalf("a watch has an idle timeout of %v by default, want none", cfg.idleTimeout)
	}
}

func TestReplayWindowDefaultsMatchTheOtherSDKs(t *testing.T) {
	if replayWindowEvents != 1024 || replayWindowBytes != 8<<20 {
		t.Fatalf("replay window %d events / %d bytes, want 1024 / 8 MiB", replayWindowEvents, replayWindowBytes)
	}
	// The byte bound holds two responses of the largest size the client accepts.
	if replayWindowBytes < 2*DefaultMaxResponseBytes {
		t.Fatalf("the byte bound %d holds fewer than two %d-byte responses", replayWindowBytes, DefaultMaxResponseBytes)
	}
	c := newTestCore(0, DefaultRetry, nil)
	if len(c.window) != 1024 || c.maxBytes != 8<<20 {
		t.Fatalf("a new watch core uses %d events / %d bytes", len(c.window), c.maxBytes)
	}
}

func TestSidecarDefaultsMatchTheOtherSDKs(t *testing.T) {
	want := RetryPolicy{MaxAttempts: 4, InitialBackoff: 500 * time.Millisecond, MaxBackoff: 5 * time.Second,
		Multiplier: 2, MaxElapsed: 30 * time.Second}
	var o SidecarOptions
	if DefaultRestartBackoff != want || o.restartBackoff() != want {
		t.Fatalf("restart backoff %+v, want %+v", o.restartBackoff(), want)
	}
	if o.maxRestarts() != 3 {
		t.Fatalf("max restarts %d, want 3", o.maxRestarts())
	}
}
