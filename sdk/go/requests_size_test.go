package colossus

import (
	"errors"
	"strings"
	"testing"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
	"google.golang.org/protobuf/proto"
)

// C7 at the boundary: a request of exactly the advertised cap passes the check, one
// byte more is refused (an off-by-one here would go unnoticed by any case that only
// sends far more than the cap). The channel applies this check to every request.
func TestRequestCapIsExactAtTheBoundary(t *testing.T) {
	info := &ServerInfo{Limits: Limits{MaxInputParts: 16, MaxInputBytes: 1 << 20}}
	input := []InputPart{TextPart{Text: strings.Repeat("x", 5000)}}
	req, err := buildCreateRun(info, "key-boundary-0001", input, &callConfig{}, nil)
	if err != nil {
		t.Fatalf("a create was refused: %v", err)
	}
	answer := PromptAnswer{Choice: strings.Repeat("y", 3000)}
	resp, err := buildRespond(info, "run_boundary", "int_boundary", answer)
	if err != nil {
		t.Fatalf("an answer was refused: %v", err)
	}
	for _, m := range []proto.Message{req, resp} {
		size := uint64(proto.Size(m))
		if err := checkSize(m, &ServerInfo{Limits: Limits{MaxRequestBytes: size}}); err != nil {
			t.Fatalf("a request of exactly the %d-byte cap was refused: %v", size, err)
		}
		err := checkSize(m, &ServerInfo{Limits: Limits{MaxRequestBytes: size - 1}})
		var e *Error
		if !errors.Is(err, ErrResourceExhausted) || !errors.As(err, &e) || e.Reason != ReasonRequestTooLarge {
			t.Fatalf("a request one byte over the cap: err %v, want ErrResourceExhausted with REQUEST_TOO_LARGE", err)
		}
	}
}

// Every upload chunk message fits the advertised request cap, even when the worker's
// chunk limit is larger than the cap allows.
func TestUploadChunksFitTheRequestCap(t *testing.T) {
	for _, l := range []Limits{
		{MaxArtifactChunkBytes: 256 * 1024, MaxRequestBytes: 64 * 1024},
		{MaxArtifactChunkBytes: 16 * 1024, MaxRequestBytes: 2 * 1024 * 1024},
		{MaxArtifactChunkBytes: 0, MaxRequestBytes: 1000},
		{MaxArtifactChunkBytes: 300, MaxRequestBytes: 0},
	} {
		chunk := uploadChunkBytes(l)
		if chunk <= 0 || (l.MaxArtifactChunkBytes > 0 && uint64(chunk) > uint64(l.MaxArtifactChunkBytes)) {
			t.Errorf("%+v: chunk %d breaks the chunk limit", l, chunk)
		}
		msg := &pb.UploadArtifactRequest{Part: &pb.UploadArtifactRequest_Chunk{Chunk: make([]byte, chunk)}}
		if size := uint64(proto.Size(msg)); l.MaxRequestBytes > 0 && size > l.MaxRequestBytes {
			t.Errorf("%+v: a full chunk message is %d bytes, over the request cap", l, size)
		}
	}
	if got := uploadChunkBytes(Limits{MaxArtifactChunkBytes: 256 * 1024, MaxRequestBytes: 64 * 1024}); got != 64*1024-chunkFraming {
		t.Errorf("chunk %d, want the cap less the framing", got)
	}
}
