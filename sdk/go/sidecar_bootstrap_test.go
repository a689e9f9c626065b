package colossus

import (
	"bytes"
	"encoding/binary"
	"encoding/json"
	"errors"
	"io"
	"strings"
	"testing"
)

func TestBootstrapFrames(t *testing.T) {
	frame, err := encodeFrame(bootstrapRequest{Version: 1, StateDir: "/tmp/s", ApplicationID: "app",
		Grant: bootstrapGrant{Scopes: []string{"runs:read"}, Roles: []string{"default"}, Tools: []string{}}})
	if err != nil {
		t.Fatal(err)
	}
	body, err := readFrame(bytes.NewReader(frame))
	if err != nil {
		t.Fatal(err)
	}
	var got map[string]any
	if err := json.Unmarshal(body, &got); err != nil || got["application_id"] != "app" {
		t.Fatalf("round trip: %v %v", got, err)
	}
	if grant := got["grant"].(map[string]any); grant["tools"] == nil {
		t.Fatal("an empty tool list must be sent as [], not null")
	}
	// A declared length over the cap is refused before any body is read.
	var header [4]byte
	binary.BigEndian.PutUint32(header[:], maxBootstrapFrame+1)
	reader := io.MultiReader(bytes.NewReader(header[:]), strings.NewReader("never read"))
	if _, err := readFrame(reader); !errors.Is(err, ErrSidecar) {
		t.Fatalf("oversized frame: %v", err)
	}
	// A frame cut short is an I/O error, which the caller reports as an early close.
	if _, err := readFrame(bytes.NewReader(frame[:len(frame)-1])); err == nil {
		t.Fatal("a truncated frame was accepted")
	}
}

func TestBootstrapErrorReplyIsTypedAndSanitised(t *testing.T) {
	_, err := parseBootstrapReply([]byte(`{"version": 1, "error": {"code": "state_locked", "message": "busy\u0007 folder"}}`))
	var e *Error
	if !errors.Is(err, ErrSidecar) || !errors.As(err, &e) || e.Metadata["code"] != "state_locked" || strings.ContainsRune(e.Message, '\a') {
		t.Fatalf("err %#v", err)
	}
}
