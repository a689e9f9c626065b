package colossus

import (
	"context"
	"errors"
	"testing"
)

// S2: a key the caller passes is the key used. An empty one is a malformed key, refused
// before anything is sent, never swapped for a generated key: a caller retrying with the
// same (empty) option after an unknown outcome would otherwise create a second run.
func TestAnEmptyCallerKeyIsRefusedNotReplaced(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	c := connectFake(t, w)
	_, err := c.Runs.Create(context.Background(), Text("x"), WithIdempotencyKey(""))
	var e *Error
	if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Reason != ReasonIdempotencyKeyInvalid {
		t.Fatalf("an empty caller key: got %v, want a local IDEMPOTENCY_KEY_INVALID refusal", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.createCalls != 0 {
		t.Fatalf("CreateRun was sent %d times with an empty caller key", w.createCalls)
	}
}

// Without the option the SDK still generates a fresh key per call.
func TestWithoutACallerKeyOneIsGenerated(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	c := connectFake(t, w)
	first, err := c.Runs.Create(context.Background(), Text("x"))
	if err != nil {
		t.Fatal(err)
	}
	second, err := c.Runs.Create(context.Background(), Text("x"))
	if err != nil {
		t.Fatal(err)
	}
	if first.IdempotencyKey == "" || first.IdempotencyKey == second.IdempotencyKey {
		t.Fatalf("generated keys %q and %q: want two different non-empty keys", first.IdempotencyKey, second.IdempotencyKey)
	}
}

// S2: a create refused before it leaves the process (an option that does not apply, the
// request grammar, the rate-limit retry bound) carries the key it would have sent.
func TestACreateRefusedLocallyCarriesItsKey(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	c := connectFake(t, w)
	for name, opt := range map[string]CallOption{
		"an option of another call": WithAfterSequence(3),
		"the request grammar":       WithEndUserID("not a valid user id"),
		"the retry bound":           WithRateLimitRetries(11),
	} {
		_, err := c.Runs.Create(context.Background(), Text("x"), opt, WithIdempotencyKey("local-key.1"))
		var e *Error
		if !errors.As(err, &e) || e.IdempotencyKey != "local-key.1" {
			t.Fatalf("%s: %v, want the caller's key on the refusal", name, err)
		}
		_, err = c.Runs.Create(context.Background(), Text("x"), opt)
		if !errors.As(err, &e) || e.IdempotencyKey == "" {
			t.Fatalf("%s: %v, want the generated key on the refusal", name, err)
		}
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.createCalls != 0 {
		t.Fatalf("CreateRun was sent %d times", w.createCalls)
	}
}
