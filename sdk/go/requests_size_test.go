package colossus

import (
	"errors"
	"strings"
	"testing"

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
