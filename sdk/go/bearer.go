package colossus

import (
	"context"
	"fmt"
)

// secret holds a validated bearer inside a closure: fmt and reflection print a func as an
// address, whatever the verb and depth, and the methods below print a placeholder, so
// neither fmt, %#v of an enclosing struct, nor slog can reveal it (C5).
type secret struct{ value func() string }

const redacted = "<redacted>"

func (*secret) String() string                { return redacted }
func (*secret) GoString() string              { return redacted }
func (*secret) Format(f fmt.State, verb rune) { _, _ = f.Write([]byte(redacted)) }
func (*secret) MarshalText() ([]byte, error)  { return []byte(redacted), nil }

// validBearer reports whether s is 32-256 visible ASCII characters.
func validBearer(s string) bool {
	if len(s) < 32 || len(s) > 256 {
		return false
	}
	for i := 0; i < len(s); i++ {
		if s[i] < 0x21 || s[i] > 0x7e {
			return false
		}
	}
	return true
}

// newSecret validates a bearer; the error never echoes the value, not even in part.
func newSecret(value string) (*secret, error) {
	if !validBearer(value) {
		return nil, newError(ErrCredential, ReasonCredentialInvalid,
			"the bearer is malformed: it must be 32-256 visible ASCII characters")
	}
	return &secret{value: func() string { return value }}, nil
}

// bearerCredentials sends the bearer as authorization metadata, and only over a
// connection whose transport security grpc-go has established (our pinned TLS).
type bearerCredentials struct {
	s     *secret
	trace TraceContextFunc
}

func (b *bearerCredentials) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	md := map[string]string{"authorization": "Bearer " + b.s.value()}
	if b.trace != nil {
		if tp, ts := b.trace(ctx); tp != "" {
			md["traceparent"] = tp
			if ts != "" {
				md["tracestate"] = ts
			}
		}
	}
	return md, nil
}

func (*bearerCredentials) RequireTransportSecurity() bool { return true }

func (*bearerCredentials) String() string   { return "bearerCredentials(" + redacted + ")" }
func (*bearerCredentials) GoString() string { return "bearerCredentials(" + redacted + ")" }
