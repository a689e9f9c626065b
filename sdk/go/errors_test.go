package colossus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

func TestSentinelHierarchy(t *testing.T) {
	cases := []struct {
		err     error
		is, not []error
	}{
		{newError(ErrPinMismatch, "", "x"), []error{ErrPinMismatch, ErrTrust, ErrColossus}, []error{ErrTLSPolicy, ErrAPI}},
		{newError(ErrCapabilityMissing, "", "x"), []error{ErrCapabilityMissing, ErrFailedPrecondition, ErrAPI}, []error{ErrTrust}},
		{newError(ErrWatchIdleTimeout, "", "x"), []error{ErrTransport}, []error{ErrDeadlineExceeded}},
		{&WatchGapError{Err: newError(ErrWatchGap, "", "x")}, []error{ErrWatchGap, ErrProtocolViolation}, []error{ErrTransport}},
		{fmt.Errorf("wrapped: %w", newError(ErrOutcomeUnknown, "", "x")), []error{ErrOutcomeUnknown}, []error{ErrAPI}},
	}
	for _, c := range cases {
		for _, s := range c.is {
			if !errors.Is(c.err, s) {
				t.Errorf("%v is not %v", c.err, s)
			}
		}
		for _, s := range c.not {
			if errors.Is(c.err, s) {
				t.Errorf("%v is %v", c.err, s)
			}
		}
	}
}

func statusWithReason(code codes.Code, reason string) error {
	st, _ := status.New(code, "refused").WithDetails(&errdetails.ErrorInfo{Reason: "ERROR_REASON_" + reason, Domain: errorDomain})
	return st.Err()
}

func TestStatusMapping(t *testing.T) {
	ctx := context.Background()
	cases := []struct {
		err  error
		call callKind
		want error
	}{
		{status.Error(codes.Unauthenticated, ""), readCall, ErrAuthentication},
		{status.Error(codes.PermissionDenied, ""), readCall, ErrPermissionDenied},
		{status.Error(codes.NotFound, ""), readCall, ErrNotFound},
		{status.Error(codes.InvalidArgument, ""), readCall, ErrInvalidArgument},
		{status.Error(codes.ResourceExhausted, ""), readCall, ErrResourceExhausted},
		{status.Error(codes.DataLoss, ""), readCall, ErrDataLoss},
		{status.Error(codes.Internal, ""), readCall, ErrInternal},
		{status.Error(codes.Unavailable, ""), readCall, ErrTransport},
		{status.Error(codes.DeadlineExceeded, ""), readCall, ErrDeadlineExceeded},
		{statusWithReason(codes.FailedPrecondition, ReasonCapabilityNotSupported), readCall, ErrCapabilityMissing},
		{statusWithReason(codes.AlreadyExists, ReasonIdempotencyConflict), mutationCall, ErrIdempotencyConflict},
		{status.Error(codes.Unavailable, ""), mutationCall, ErrOutcomeUnknown},
		{status.Error(codes.DeadlineExceeded, ""), mutationCall, ErrOutcomeUnknown},
		{status.Error(codes.Internal, ""), mutationCall, ErrOutcomeUnknown},
		{status.Error(codes.NotFound, ""), mutationCall, ErrNotFound},
	}
	for _, c := range cases {
		got := mapRPCError(ctx, c.err, c.call, "key-1")
		if !errors.Is(got, c.want) {
			t.Errorf("%v (%v): got %v, want %v", c.err, c.call, got, c.want)
		}
		if e, _ := asError(got); e.IdempotencyKey != "key-1" {
			t.Errorf("key lost: %v", got)
		}
	}
	// Only UNAVAILABLE reads are retryable.
	if e, _ := asError(mapRPCError(ctx, status.Error(codes.Unavailable, ""), readCall, "")); !e.Retryable() {
		t.Error("UNAVAILABLE read not retryable")
	}
	if e, _ := asError(mapRPCError(ctx, status.Error(codes.Internal, ""), readCall, "")); e.Retryable() {
		t.Error("INTERNAL retryable")
	}
	// A reason from another domain is ignored.
	st, _ := status.New(codes.FailedPrecondition, "x").WithDetails(&errdetails.ErrorInfo{Reason: "ERROR_REASON_CAPABILITY_NOT_SUPPORTED", Domain: "elsewhere"})
	if got := mapRPCError(ctx, st.Err(), readCall, ""); errors.Is(got, ErrCapabilityMissing) {
		t.Error("foreign ErrorInfo domain was trusted")
	}
}

// expiredByClock has a deadline in the past whose timer has not fired yet: the moment
// grpc-go can already report DEADLINE_EXCEEDED while ctx.Err() is still nil.
type expiredByClock struct{ context.Context }

func (expiredByClock) Deadline() (time.Time, bool) { return time.Now().Add(-time.Millisecond), true }

func TestADeadlinePassedByTheClockIsTheCallersDeadline(t *testing.T) {
	ctx := expiredByClock{context.Background()}
	err := mapRPCError(ctx, status.Error(codes.DeadlineExceeded, "stream terminated by RST_STREAM with error code: CANCEL"), readCall, "")
	if !errors.Is(err, ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("%v; want ErrDeadlineExceeded and context.DeadlineExceeded", err)
	}
}

// Go spells codes as the wire and the other SDKs do (S9): NOT_FOUND, not NotFound.
func TestErrorPrintsCanonicalCodeNames(t *testing.T) {
	st := status.New(codes.NotFound, "no such run")
	err := mapRPCError(context.Background(), st.Err(), readCall, "")
	if got := err.Error(); !strings.Contains(got, "code=NOT_FOUND") || strings.Contains(got, "NotFound") {
		t.Fatalf("Error() = %q, want code=NOT_FOUND", got)
	}
	for c, want := range map[codes.Code]string{codes.Canceled: "CANCELLED", codes.Unavailable: "UNAVAILABLE", codes.OK: ""} {
		if got := CodeName(c); got != want {
			t.Fatalf("CodeName(%v) = %q, want %q", c, got, want)
		}
	}
	// No code (a local refusal) is printed as none, as in the other SDKs: never "OK".
	local := invalidField("input", "input needs at least one part")
	if got := local.Error(); strings.Contains(got, "code=") || strings.Contains(got, "OK") {
		t.Fatalf("Error() = %q, want no code", got)
	}
}

// A caller's cancellation carries the reason TypeScript gives an aborted signal (S9).
func TestCallerCancellationIsAborted(t *testing.T) {
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := mapRPCError(ctx, status.Error(codes.Canceled, "context canceled"), readCall, "")
	var e *Error
	if !errors.As(err, &e) || e.Reason != ReasonAborted || e.Code != codes.Canceled {
		t.Fatalf("got %v, want reason ABORTED with code CANCELLED", err)
	}
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("errors.Is(err, context.Canceled) must still hold: %v", err)
	}
}
