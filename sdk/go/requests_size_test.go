package colossus

import (
	"errors"
	"strings"
	"testing"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
	"google.golang.org/protobuf/proto"
)

// C7 at the boundary: a request of exactly the advertised cap is sent, one byte more is
// refused before it leaves the client (an off-by-one here would go unnoticed by any case
// that only sends far more than the cap).
func TestRequestCapIsExactAtTheBoundary(t *testing.T) {
	info := &ServerInfo{Limits: Limits{MaxInputParts: 16, MaxInputBytes: 1 << 20}}
	input := []InputPart{TextPart{Text: strings.Repeat("x", 5000)}}
	req, err := buildCreateRun(info, "key-boundary-0001", input, &callConfig{}, nil)
	if err != nil {
		t.Fatalf("an uncapped create was refused: %v", err)
	}
	size := uint64(proto.Size(req))

	info.Limits.MaxRequestBytes = size
	if _, err := buildCreateRun(info, "key-boundary-0001", input, &callConfig{}, nil); err != nil {
		t.Fatalf("a create of exactly the %d-byte cap was refused: %v", size, err)
	}
	info.Limits.MaxRequestBytes = size - 1
	_, err = buildCreateRun(info, "key-boundary-0001", input, &callConfig{}, nil)
	var e *Error
	if !errors.Is(err, ErrResourceExhausted) || !errors.As(err, &e) || e.Reason != ReasonRequestTooLarge {
		t.Fatalf("a create one byte over the cap: err %v, want ErrResourceExhausted with REQUEST_TOO_LARGE", err)
	}

	answer := PromptAnswer{Choice: strings.Repeat("y", 3000)}
	info.Limits.MaxRequestBytes = 0
	resp, err := buildRespond(info, "run_boundary", "int_boundary", answer)
	if err != nil {
		t.Fatalf("an uncapped answer was refused: %v", err)
	}
	size = uint64(proto.Size(resp))
	info.Limits.MaxRequestBytes = size
	if _, err := buildRespond(info, "run_boundary", "int_boundary", answer); err != nil {
		t.Fatalf("an answer of exactly the %d-byte cap was refused: %v", size, err)
	}
	info.Limits.MaxRequestBytes = size - 1
	if _, err := buildRespond(info, "run_boundary", "int_boundary", answer); !errors.Is(err, ErrResourceExhausted) {
		t.Fatalf("an answer one byte over the cap: err %v, want ErrResourceExhausted", err)
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
