package colossus

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"google.golang.org/grpc"
	"google.golang.org/protobuf/encoding/protowire"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/reflect/protoregistry"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// contractMethod is one RPC of the contract, read from the generated descriptors.
type contractMethod struct {
	path string
	desc protoreflect.MethodDescriptor
}

func contractMethods(t *testing.T) []contractMethod {
	t.Helper()
	var methods []contractMethod
	for _, file := range []protoreflect.FileDescriptor{
		pb.File_colossus_api_v1alpha1_system_proto,
		pb.File_colossus_api_v1alpha1_run_service_proto,
		pb.File_colossus_api_v1alpha1_runs_proto,
		pb.File_colossus_api_v1alpha1_artifacts_proto,
		pb.File_colossus_api_v1alpha1_errors_proto,
	} {
		services := file.Services()
		for i := range services.Len() {
			service := services.Get(i)
			for j := range service.Methods().Len() {
				m := service.Methods().Get(j)
				methods = append(methods, contractMethod{path: fmt.Sprintf("/%s/%s", service.FullName(), m.Name()), desc: m})
			}
		}
	}
	if len(methods) == 0 {
		t.Fatal("no RPC found in the contract's descriptors")
	}
	return methods
}

// padded is the method's request type carrying an unknown field of n bytes, so every
// request type, even one with no fields, can be made as large as a test needs.
func padded(t *testing.T, m protoreflect.MethodDescriptor, n int) proto.Message {
	t.Helper()
	mt, err := protoregistry.GlobalTypes.FindMessageByName(m.Input().FullName())
	if err != nil {
		t.Fatal(err)
	}
	msg := mt.New().Interface()
	pad := protowire.AppendTag(nil, 1000, protowire.BytesType)
	msg.ProtoReflect().SetUnknown(protowire.AppendBytes(pad, make([]byte, n)))
	return msg
}

// paddedTo is the method's request encoded to exactly size bytes.
func paddedTo(t *testing.T, m protoreflect.MethodDescriptor, size int) proto.Message {
	t.Helper()
	for n := range size {
		if msg := padded(t, m, n); proto.Size(msg) == size {
			return msg
		}
	}
	t.Fatalf("%s cannot be padded to %d bytes", m.Input().FullName(), size)
	return nil
}

// send makes one call of the method through the client's channel, as its stub would.
func send(ctx context.Context, s *session, m contractMethod, req proto.Message) error {
	if !m.desc.IsStreamingClient() && !m.desc.IsStreamingServer() {
		reply, err := protoregistry.GlobalTypes.FindMessageByName(m.desc.Output().FullName())
		if err != nil {
			return err
		}
		return s.conn.Invoke(ctx, m.path, req, reply.New().Interface(), s.callOpts...)
	}
	desc := &grpc.StreamDesc{ClientStreams: m.desc.IsStreamingClient(), ServerStreams: m.desc.IsStreamingServer()}
	stream, err := s.conn.NewStream(ctx, desc, m.path, s.callOpts...)
	if err != nil {
		return err
	}
	if err := stream.SendMsg(req); err != nil {
		return err
	}
	if err := stream.CloseSend(); err != nil {
		return err
	}
	reply, err := protoregistry.GlobalTypes.FindMessageByName(m.desc.Output().FullName())
	if err != nil {
		return err
	}
	for {
		if err := stream.RecvMsg(reply.New().Interface()); err != nil {
			return err
		}
	}
}

// Every RPC of the contract, unary or streamed, is held to the advertised request cap by
// the channel itself: a request one byte over it is refused before the worker sees the
// call, one of exactly the cap is sent. A method added to the contract is covered here
// without a line of its own, and goes through the same channel.
func TestEveryContractMethodIsHeldToTheRequestCapByTheChannel(t *testing.T) {
	const limit = 200
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.info.Limits.MaxRequestBytes = limit
	w.listFn = func(*pb.ListRunsRequest) (*pb.ListRunsResponse, error) { return &pb.ListRunsResponse{}, nil }
	c := connectFake(t, w)
	s, err := c.session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range contractMethods(t) {
		t.Run(m.path, func(t *testing.T) {
			exact, over := paddedTo(t, m.desc, limit), paddedTo(t, m.desc, limit+1)

			before := w.requests.Load()
			err := send(context.Background(), s, m, over)
			var e *Error
			if !errors.Is(err, ErrResourceExhausted) || !errors.As(err, &e) || e.Reason != ReasonRequestTooLarge || e.Metadata["limit"] != "200" {
				t.Fatalf("a request one byte over the cap: got %v, want a local REQUEST_TOO_LARGE refusal", err)
			}
			if got := w.requests.Load(); got != before {
				t.Fatalf("a request over the cap reached the worker (%d calls, want %d)", got, before)
			}

			err = send(context.Background(), s, m, exact)
			if errors.As(err, &e) && e.Reason == ReasonRequestTooLarge {
				t.Fatalf("a request of exactly the cap was refused: %v", err)
			}
			if got := w.requests.Load(); got != before+1 {
				t.Fatalf("a request of exactly the cap did not reach the worker (%d calls, want %d)", got, before+1)
			}
		})
	}
}

// The cap applied is the session's ServerInfo at the time of the call, not a copy taken
// when the channel was built (before GetServerInfo answered there is none).
func TestTheRequestCapFollowsTheSessionsServerInfo(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	c := connectFake(t, w)
	s, err := c.session(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	req := &pb.GetRunRequest{RunId: "run_follows_the_current_info"}
	s.info.Limits.MaxRequestBytes = uint64(proto.Size(req)) - 1
	if _, err := c.Runs.Get(context.Background(), req.RunId); !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("under a lowered cap: got %v, want ErrResourceExhausted", err)
	}
	s.info.Limits.MaxRequestBytes = 0 // none advertised
	if _, err := c.Runs.Get(context.Background(), req.RunId); !errors.Is(err, ErrNotFound) {
		t.Fatalf("with no cap: got %v, want the fake worker's NOT_FOUND", err)
	}
}

// A stream's later message over the cap is refused before it is sent; the messages
// before it went out.
func TestAStreamsLaterMessageOverTheCapIsNotSent(t *testing.T) {
	info := &ServerInfo{Limits: Limits{MaxRequestBytes: 64}}
	sent := 0
	inner := &recordingStream{sent: &sent}
	stream, err := requestCapStream(info)(context.Background(), &grpc.StreamDesc{ClientStreams: true}, nil, "/m",
		func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			return inner, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	small := &pb.UploadArtifactRequest{Part: &pb.UploadArtifactRequest_Chunk{Chunk: make([]byte, 10)}}
	large := &pb.UploadArtifactRequest{Part: &pb.UploadArtifactRequest_Chunk{Chunk: make([]byte, 64)}}
	if err := stream.SendMsg(small); err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(large); !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("a later message over the cap: got %v, want ErrResourceExhausted", err)
	}
	if sent != 1 {
		t.Fatalf("%d messages sent, want only the one within the cap", sent)
	}
}

// A stream whose first message is refused is never opened (no headers, no call).
func TestAStreamWhoseFirstMessageIsRefusedIsNeverOpened(t *testing.T) {
	info := &ServerInfo{Limits: Limits{MaxRequestBytes: 8}}
	opened := false
	stream, err := requestCapStream(info)(context.Background(), &grpc.StreamDesc{ServerStreams: true}, nil, "/m",
		func(context.Context, *grpc.StreamDesc, *grpc.ClientConn, string, ...grpc.CallOption) (grpc.ClientStream, error) {
			opened = true
			return &recordingStream{sent: new(int)}, nil
		})
	if err != nil {
		t.Fatal(err)
	}
	if err := stream.SendMsg(&pb.WatchRunRequest{RunId: "run_longer_than_eight_bytes"}); !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("got %v, want ErrResourceExhausted", err)
	}
	if stream.Context() == nil || stream.Trailer() != nil || opened {
		t.Fatal("the refused stream was opened")
	}
}

type recordingStream struct {
	grpc.ClientStream
	sent *int
}

func (r *recordingStream) SendMsg(any) error { *r.sent++; return nil }
