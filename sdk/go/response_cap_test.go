package colossus

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

func isResponseTooLarge(err error, limit int) bool {
	var e *Error
	return errors.Is(err, ErrResourceExhausted) && errors.As(err, &e) && e.Reason == ReasonResponseTooLarge &&
		e.Code == codes.OK && e.Metadata["limit"] == fmt.Sprint(limit)
}

// grpc-go's three wordings of its refusal count only with this session's own limit, and
// never when the status carries the contract's ErrorInfo (the worker's own refusal).
func TestResponseTooLargeRecognisesOnlyGrpcGosOwnRefusal(t *testing.T) {
	const limit = 4096
	withInfo, _ := status.New(codes.ResourceExhausted, "grpc: received message larger than max (5000 vs. 4096)").
		WithDetails(&errdetails.ErrorInfo{Reason: "ERROR_REASON_EVENT_LIMIT", Domain: errorDomain})
	for _, c := range []struct {
		err  error
		want bool
	}{
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5000 vs. 4096)"), true},
		{status.Error(codes.ResourceExhausted, "grpc: message after decompression larger than max (9000 vs. 4096)"), true},
		{status.Error(codes.ResourceExhausted, "grpc: received message after decompression larger than max 4096"), true},
		{status.Error(codes.ResourceExhausted, "grpc: received message larger than max (5000 vs. 2048)"), false},
		{status.Error(codes.ResourceExhausted, "grpc: received message after decompression larger than max 40960"), false},
		{status.Error(codes.Internal, "grpc: received message larger than max (5000 vs. 4096)"), false},
		{status.Error(codes.ResourceExhausted, "too many runs"), false},
		{withInfo.Err(), false},
		{errors.New("grpc: received message larger than max (5000 vs. 4096)"), false},
	} {
		got := responseTooLarge(c.err, limit)
		if (got != nil) != c.want || (got != nil && !isResponseTooLarge(got, limit)) {
			t.Errorf("%v: got %+v, want match %v", c.err, got, c.want)
		}
	}
}

// Against a worker advertising a 4 KiB response cap, a larger GetRun answer and a larger
// watch event are refused locally, and the watch does not reconnect after it.
func TestAResponseOverTheAdvertisedCapIsRefusedLocally(t *testing.T) {
	const limit = 4096
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.info.Limits.MaxResponseBytes = limit
	cursors := w.scriptWatches(sending(outputEvent(1, "small"), outputEvent(2, strings.Repeat("y", limit)), terminalEvent(3)))
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_RUNNING, IdempotencyKey: strings.Repeat("k", limit)}}, nil
	}
	c := connectFake(t, w)
	if _, err := c.Runs.Get(context.Background(), "run_1"); !isResponseTooLarge(err, limit) {
		t.Fatalf("GetRun: %v", err)
	}
	events, err := collectWatch(t, c)
	if !isResponseTooLarge(err, limit) {
		t.Fatalf("watch: %v", err)
	}
	if fmt.Sprint(sequences(events)) != "[1]" || cursors() != "[0]" {
		t.Fatalf("delivered %v, cursors %s (want [1] and [0]: no reconnect)", sequences(events), cursors())
	}
}
