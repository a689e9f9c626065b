package colossus

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// An option that does not apply to a call is an error naming it, never silently ignored (S8)
// (issue 26: Create with WithPageSize and Get with WithIdempotencyKey returned nil errors).
func TestAnOptionThatDoesNotApplyIsRefusedByName(t *testing.T) {
	ctx := context.Background()
	runs := &Runs{}
	check := func(call string, err error, option string) {
		t.Helper()
		var e *Error
		if !errors.As(err, &e) || !errors.Is(err, ErrInvalidArgument) || e.Metadata["option"] != option ||
			!strings.Contains(e.Message, option) || !strings.Contains(e.Message, call) {
			t.Fatalf("%s with %s: got %v, want an invalid argument naming the option and the call", call, option, err)
		}
	}
	_, err := runs.Create(ctx, Text("hi"), WithPageSize(5))
	check("Runs.Create", err, "WithPageSize")
	_, err = runs.Get(ctx, "run_1", WithIdempotencyKey("k"))
	check("Runs.Get", err, "WithIdempotencyKey")
	_, err = runs.Cancel(ctx, "run_1", WithRetry(NoRetry))
	check("Runs.Cancel", err, "WithRetry")
	_, err = runs.ListPage(ctx, WithAfterSequence(3))
	check("Runs.ListPage", err, "WithAfterSequence")
	for _, err := range runs.Watch(ctx, "run_1", WithTimeout(0)) {
		check("Runs.Watch", err, "WithTimeout")
	}
	for _, err := range runs.Pages(ctx, WithMode(RunModePlan)) {
		check("Runs.Pages", err, "WithMode")
	}
	_, err = (&Artifacts{}).Upload(ctx, []byte("x"), "text/plain", WithStatuses(RunStatusFailed))
	check("Artifacts.Upload", err, "WithStatuses")
	_, err = (&Client{}).WithOptions(WithIdleTimeout(1))
	check("Client.WithOptions", err, "WithIdleTimeout")
}

// Every option is accepted by the calls its documentation names.
func TestOptionsAreAcceptedWhereTheyApply(t *testing.T) {
	if _, err := collectFor("Runs.ListPage", []CallOption{WithStatuses(RunStatusFailed), WithPageSize(5), WithPageToken("t"), WithTimeout(1), WithRetry(NoRetry)},
		"WithTimeout", "WithRetry", "WithStatuses", "WithPageSize", "WithPageToken"); err != nil {
		t.Fatal(err)
	}
	if _, err := collectFor("Runs.Get", nil, "WithTimeout"); err != nil {
		t.Fatal(err)
	}
}
