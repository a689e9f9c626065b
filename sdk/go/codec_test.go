package colossus

import (
	"context"
	"strings"
	"testing"

	"google.golang.org/grpc/mem"
	"google.golang.org/protobuf/proto"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// A message in pieces decodes to what proto.Unmarshal makes of the whole, on both sides
// of the size where recvCodec stops using grpc-go's pool.
func TestRecvCodecDecodesPiecesLikeTheWhole(t *testing.T) {
	codec := newRecvCodec()
	for _, size := range []int{10, pooledMessageBytes - 64, pooledMessageBytes + 1, 200 << 10} {
		want := &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", LastSequence: 7,
			Result: &pb.RunResult{OutputText: strings.Repeat("é", size/2)}}}
		wire, err := proto.Marshal(want)
		if err != nil {
			t.Fatal(err)
		}
		for _, pieces := range []int{1, 2, 5} {
			var data mem.BufferSlice
			step := (len(wire) + pieces - 1) / pieces
			for i := 0; i < len(wire); i += step {
				data = append(data, mem.SliceBuffer(wire[i:min(i+step, len(wire))]))
			}
			got := &pb.GetRunResponse{}
			if err := codec.Unmarshal(data, got); err != nil {
				t.Fatalf("size %d in %d pieces: %v", size, pieces, err)
			}
			if !proto.Equal(got, want) {
				t.Fatalf("size %d in %d pieces: decoded a different message", size, pieces)
			}
		}
	}
	if _, err := codec.Marshal(&pb.GetRunRequest{RunId: "run_1"}); err != nil {
		t.Fatal(err)
	}
}

// The forced codec must not show on the wire: every call keeps content-type
// application/grpc, and a long run's large answers arrive whole.
func TestRecvCodecKeepsTheContentTypeAndLargeAnswers(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	text := strings.Repeat("event of a long run\n", 10_000)
	result := &pb.RunResult{OutputText: text}
	w.getRunFn = func(req *pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: req.GetRunId(), Status: pb.RunStatus_RUN_STATUS_SUCCEEDED,
			LastSequence: 1, Result: result}}, nil
	}
	w.watchFn = func(_ int, _ *pb.WatchRunRequest, stream pb.RunService_WatchRunServer) error {
		return stream.Send(&pb.WatchRunResponse{Event: &pb.RunEvent{RunId: "run_1", Sequence: 1,
			Payload: &pb.RunEvent_Terminated{Terminated: &pb.RunTerminated{Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, Result: result}}}})
	}
	c := connectFake(t, w)
	var got []RunEvent
	for ev, err := range c.Runs.Watch(context.Background(), "run_1") {
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, ev)
	}
	if len(got) != 1 || got[0].Payload.(*RunTerminated).Result.OutputText != text {
		t.Fatalf("the terminal event's result did not arrive whole")
	}
	run, err := c.Runs.Get(context.Background(), "run_1")
	if err != nil || run.Result.OutputText != text {
		t.Fatalf("Get = %v; the result did not arrive whole", err)
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.contentTypes) < 3 {
		t.Fatalf("the worker saw %d calls, want GetServerInfo, WatchRun, GetRun", len(w.contentTypes))
	}
	for _, ct := range w.contentTypes {
		if ct != "application/grpc" {
			t.Fatalf("content-type %q, want application/grpc", ct)
		}
	}
}
