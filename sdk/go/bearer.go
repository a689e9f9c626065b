package colossus

import (
	"context"
	"fmt"
	"sync"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
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
		return nil, newError(ErrCredential, ReasonBearerMalformed,
			"the bearer is malformed: it must be 32-256 visible ASCII characters")
	}
	return &secret{value: func() string { return value }}, nil
}

// bearerCredentials sends the bearer as authorization metadata. grpc-go asks for it only
// on a transport whose handshake has completed, which here means the pinned TLS 1.3 policy
// passed on that very connection: so the provider is asked only after C1-C4 (C5), and is
// asked once per client; the validated bearer then stays in memory.
type bearerCredentials struct {
	load  func(context.Context) (*secret, error)
	trace TraceContextFunc

	mu      sync.Mutex
	s       *secret
	failure *Error // the last load failure, reported by the failed call
}

func (b *bearerCredentials) bearer(ctx context.Context) (*secret, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.s != nil {
		return b.s, nil
	}
	s, err := b.load(ctx)
	if err != nil {
		e, ok := asError(err)
		if !ok {
			e = &Error{kind: ErrCredential.(*kind), Reason: ReasonCredentialMissing, Message: "the credential provider failed", cause: err}
		}
		b.failure = e
		return nil, e
	}
	b.s = s
	return s, nil
}

// takeFailure returns and clears the last load failure.
func (b *bearerCredentials) takeFailure() *Error {
	b.mu.Lock()
	defer b.mu.Unlock()
	f := b.failure
	b.failure = nil
	return f
}

func (b *bearerCredentials) GetRequestMetadata(ctx context.Context, _ ...string) (map[string]string, error) {
	s, err := b.bearer(ctx)
	if err != nil {
		// A status error keeps grpc-go from inventing a code; the caller maps takeFailure.
		return nil, status.Error(codes.FailedPrecondition, "the credential provider failed")
	}
	md := map[string]string{"authorization": "Bearer " + s.value()}
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
