package colossus

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"google.golang.org/grpc/codes"
)

// kind is a node of the error taxonomy. Every sentinel is a kind; a kind's parent makes
// errors.Is(err, ErrTrust) true for a pin mismatch, like the Python class hierarchy.
type kind struct {
	name   string
	parent *kind
}

func (k *kind) Error() string { return "colossus: " + k.name }

func (k *kind) isA(target *kind) bool {
	for c := k; c != nil; c = c.parent {
		if c == target {
			return true
		}
	}
	return false
}

func newKind(name string, parent error) *kind {
	k := &kind{name: name}
	if parent != nil {
		k.parent = parent.(*kind)
	}
	return k
}

// Sentinel errors. Compare with errors.Is; every error the SDK returns on purpose is an
// [*Error] whose Is method matches its own sentinel and every ancestor listed here.
var (
	// ErrColossus matches every error the SDK returns on purpose.
	ErrColossus error = newKind("error", nil)

	// ErrTrust: the worker could not be shown to be the provisioned one (C1-C4, C6).
	ErrTrust error = newKind("trust check failed", ErrColossus)
	// ErrDescriptor: endpoint.json or a sidecar bootstrap endpoint broke its rules (C1).
	ErrDescriptor error = newKind("descriptor rejected", ErrTrust)
	// ErrCertificate: certificate.pem broke its rules (C2).
	ErrCertificate error = newKind("certificate rejected", ErrTrust)
	// ErrPinMismatch: a certificate or instance ID differs from the provisioned identity.
	ErrPinMismatch error = newKind("pin mismatch", ErrTrust)
	// ErrTLSPolicy: a handshake was not TLS 1.3 with exactly one presented certificate.
	ErrTLSPolicy error = newKind("TLS policy violated", ErrTrust)
	// ErrIncompatibleServer: GetServerInfo named another instance, package, major or mode.
	ErrIncompatibleServer error = newKind("incompatible server", ErrTrust)

	// ErrCredential: the credential provider failed or returned a malformed bearer.
	ErrCredential error = newKind("credential rejected", ErrColossus)

	// ErrAPI: the worker refused the call with a definite status.
	ErrAPI error = newKind("request refused", ErrColossus)
	// ErrAuthentication: UNAUTHENTICATED (missing, unknown, inactive or revoked bearer).
	ErrAuthentication error = newKind("authentication failed", ErrAPI)
	// ErrPermissionDenied: a scope or role is not in the application's grant.
	ErrPermissionDenied error = newKind("permission denied", ErrAPI)
	// ErrNotFound: the run, interaction or artifact is not visible to this application.
	ErrNotFound error = newKind("not found", ErrAPI)
	// ErrInvalidArgument: INVALID_ARGUMENT, or a request the SDK refused before sending.
	ErrInvalidArgument error = newKind("invalid argument", ErrAPI)
	// ErrIdempotencyConflict: the idempotency key was used for a different request.
	ErrIdempotencyConflict error = newKind("idempotency conflict", ErrAPI)
	// ErrFailedPrecondition: the run or interaction is not in a state that allows this.
	ErrFailedPrecondition error = newKind("failed precondition", ErrAPI)
	// ErrCapabilityMissing: the worker does not advertise a capability the call needs.
	ErrCapabilityMissing error = newKind("capability missing", ErrFailedPrecondition)
	// ErrResourceExhausted: RESOURCE_EXHAUSTED, or a message over a size cap (C7).
	ErrResourceExhausted error = newKind("resource exhausted", ErrAPI)
	// ErrDataLoss: the worker's journal failed its integrity check.
	ErrDataLoss error = newKind("data loss", ErrAPI)
	// ErrInternal: INTERNAL or another server fault without a more specific meaning.
	ErrInternal error = newKind("internal server error", ErrAPI)

	// ErrTransport: no definite answer (connection lost, unavailable, cancelled).
	ErrTransport error = newKind("transport failure", ErrColossus)
	// ErrDeadlineExceeded: the per-call timeout expired.
	ErrDeadlineExceeded error = newKind("deadline exceeded", ErrTransport)
	// ErrWatchIdleTimeout: a watch received no event for longer than its idle timeout.
	ErrWatchIdleTimeout error = newKind("watch idle timeout", ErrTransport)

	// ErrOutcomeUnknown: a mutation failed in a way that leaves its effect unknown. For a
	// create, call again with the same idempotency key (Error.IdempotencyKey).
	ErrOutcomeUnknown error = newKind("outcome unknown", ErrColossus)

	// ErrProtocolViolation: the worker broke the contract.
	ErrProtocolViolation error = newKind("protocol violation", ErrColossus)
	// ErrWatchGap: a watch received a sequence beyond the last delivered one plus one.
	ErrWatchGap error = newKind("watch gap", ErrProtocolViolation)
	// ErrArtifactIntegrity: downloaded bytes differ from the declared size or SHA-256.
	ErrArtifactIntegrity error = newKind("artifact integrity", ErrProtocolViolation)

	// ErrSidecar: the sidecar worker failed to start, broke the bootstrap or kept exiting.
	ErrSidecar error = newKind("sidecar failure", ErrColossus)
	// ErrClientClosed: the client was used after Close.
	ErrClientClosed error = newKind("client closed", ErrColossus)
)

// Error is the one error type of the SDK.
//
// Branch on it with errors.Is against the sentinels, or read its fields after errors.As;
// never parse Message. Nothing in an Error ever holds a bearer.
type Error struct {
	kind *kind
	// Message is for people.
	Message string
	// Code is the gRPC status code the worker answered with; codes.OK when the SDK
	// refused locally before sending anything.
	Code codes.Code
	// Reason is the ErrorInfo reason without its ERROR_REASON_ prefix (compare with the
	// Reason* constants), or a local reason token; empty when there is none.
	Reason string
	// Metadata is the ErrorInfo metadata (field, limit, scope, capability...).
	Metadata map[string]string
	// IdempotencyKey is the key of the failed create, when the call was a create.
	IdempotencyKey string
	// RetryDelay is how long the worker asked the caller to wait before sending the same
	// request again (its google.rpc.RetryInfo, sent with CREATE_RATE_LIMIT); 0 when none.
	RetryDelay time.Duration
	cause      error
}

// Kind returns the most specific sentinel this error matches.
func (e *Error) Kind() error { return e.kind }

// Error renders the message, code, reason, metadata and idempotency key.
func (e *Error) Error() string {
	var b strings.Builder
	b.WriteString("colossus: ")
	b.WriteString(e.kind.name)
	if e.Message != "" {
		b.WriteString(": ")
		b.WriteString(e.Message)
	}
	var parts []string
	if e.Code != codes.OK {
		parts = append(parts, "code="+CodeName(e.Code))
	}
	if e.Reason != "" {
		parts = append(parts, "reason="+e.Reason)
	}
	if len(e.Metadata) > 0 {
		var kv []string
		for _, k := range slices.Sorted(maps.Keys(e.Metadata)) {
			kv = append(kv, k+"="+e.Metadata[k])
		}
		parts = append(parts, "metadata="+strings.Join(kv, ","))
	}
	if e.IdempotencyKey != "" {
		parts = append(parts, "idempotency_key="+e.IdempotencyKey)
	}
	if len(parts) > 0 {
		b.WriteString(" (")
		b.WriteString(strings.Join(parts, "; "))
		b.WriteString(")")
	}
	return b.String()
}

// Is reports whether target is this error's sentinel or one of its ancestors.
func (e *Error) Is(target error) bool {
	k, ok := target.(*kind)
	return ok && e.kind.isA(k)
}

// Unwrap returns the underlying cause (an I/O or gRPC error), if any.
func (e *Error) Unwrap() error { return e.cause }

// Retryable reports whether sending the same request again may succeed and repeats no
// effect: a read that failed with UNAVAILABLE, or a create refused under the worker's
// create rate limit (ReasonCreateRateLimit: nothing was created, so the same call with
// the same idempotency key is safe after RetryDelay; [WithRateLimitRetries] does that).
func (e *Error) Retryable() bool {
	return e.retryableRead() || (e.Code == codes.ResourceExhausted && e.Reason == ReasonCreateRateLimit)
}

// retryableRead is the SDK's own rule for retrying reads and watches: UNAVAILABLE only.
func (e *Error) retryableRead() bool {
	return e.Code == codes.Unavailable && e.kind.isA(ErrTransport.(*kind))
}

// WatchGapError is returned (wrapped in nothing else) when a watch skips a sequence.
// errors.Is(err, ErrWatchGap) and errors.As(err, new(*Error)) both work on it.
type WatchGapError struct {
	// Err carries the reason, message and metadata.
	Err *Error
	// Expected is the sequence that should have come next.
	Expected uint64
	// Received is the sequence that came instead.
	Received uint64
}

// Error describes the gap.
func (e *WatchGapError) Error() string { return e.Err.Error() }

// Unwrap exposes the underlying [*Error].
func (e *WatchGapError) Unwrap() error { return e.Err }

// newError builds a local error (Code OK) of the given sentinel.
func newError(sentinel error, reason, format string, args ...any) *Error {
	return &Error{kind: sentinel.(*kind), Reason: reason, Message: fmt.Sprintf(format, args...)}
}

// invalidField is the local refusal of a malformed argument, naming the field.
func invalidField(field, format string, args ...any) *Error {
	e := newError(ErrInvalidArgument, ReasonFieldInvalid, format, args...)
	e.Metadata = map[string]string{"field": field}
	return e
}

// withMeta returns e with one metadata entry added.
func (e *Error) withMeta(key, value string) *Error {
	if e.Metadata == nil {
		e.Metadata = map[string]string{}
	}
	e.Metadata[key] = value
	return e
}

// asError returns err as an *Error when it is one (directly or wrapped).
func asError(err error) (*Error, bool) {
	var e *Error
	if errors.As(err, &e) {
		return e, true
	}
	return nil, false
}
