package main

import (
	"errors"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
	"google.golang.org/grpc/codes"
)

// kinds maps the SDK's sentinels to the protocol's error kinds, most specific first: the
// first errors.Is match wins (the precedence of docs/client-protocol.md).
var kinds = []struct {
	sentinel error
	kind     string
	name     string
}{
	{colossus.ErrIncompatibleServer, "compatibility", "ErrIncompatibleServer"},
	{colossus.ErrDescriptor, "trust", "ErrDescriptor"},
	{colossus.ErrCertificate, "trust", "ErrCertificate"},
	{colossus.ErrPinMismatch, "trust", "ErrPinMismatch"},
	{colossus.ErrTLSPolicy, "trust", "ErrTLSPolicy"},
	{colossus.ErrTrust, "trust", "ErrTrust"},
	{colossus.ErrCredential, "credential", "ErrCredential"},
	{colossus.ErrSidecar, "sidecar", "ErrSidecar"},
	{colossus.ErrWatchGap, "watch_gap", "ErrWatchGap"},
	{colossus.ErrArtifactIntegrity, "integrity", "ErrArtifactIntegrity"},
	{colossus.ErrDataLoss, "integrity", "ErrDataLoss"},
	{colossus.ErrProtocolViolation, "protocol_violation", "ErrProtocolViolation"},
	{colossus.ErrOutcomeUnknown, "outcome_unknown", "ErrOutcomeUnknown"},
	{colossus.ErrDeadlineExceeded, "timeout", "ErrDeadlineExceeded"},
	{colossus.ErrWatchIdleTimeout, "timeout", "ErrWatchIdleTimeout"},
	{colossus.ErrTransport, "transport", "ErrTransport"},
	{colossus.ErrAuthentication, "authentication", "ErrAuthentication"},
	{colossus.ErrPermissionDenied, "permission", "ErrPermissionDenied"},
	{colossus.ErrNotFound, "not_found", "ErrNotFound"},
	{colossus.ErrIdempotencyConflict, "idempotency_conflict", "ErrIdempotencyConflict"},
	{colossus.ErrInvalidArgument, "invalid_argument", "ErrInvalidArgument"},
	{colossus.ErrCapabilityMissing, "capability_missing", "ErrCapabilityMissing"},
	{colossus.ErrFailedPrecondition, "failed_precondition", "ErrFailedPrecondition"},
	{colossus.ErrResourceExhausted, "resource_exhausted", "ErrResourceExhausted"},
	{colossus.ErrInternal, "internal", "ErrInternal"},
}

// errUnsupported marks a step the client cannot express through the SDK's API.
type errUnsupported struct{ what string }

func (e errUnsupported) Error() string { return "unsupported: " + e.what }

// errorView maps an error to the protocol's language-neutral error object.
func errorView(err error) map[string]any {
	view := map[string]any{"kind": "other", "grpc_code": nil, "reason": nil, "sdk_type": "error", "message": truncate(err.Error(), 2000)}
	var unsupported errUnsupported
	if errors.As(err, &unsupported) {
		view["kind"] = "unsupported"
		return view
	}
	for _, k := range kinds {
		if errors.Is(err, k.sentinel) {
			view["kind"], view["sdk_type"] = k.kind, k.name
			break
		}
	}
	var e *colossus.Error
	if errors.As(err, &e) {
		if e.Code != codes.OK {
			view["grpc_code"] = grpcCodeName(e.Code)
		}
		if e.Reason != "" {
			view["reason"] = e.Reason
		}
		if errors.Is(err, colossus.ErrResourceExhausted) && e.RetryDelay > 0 {
			view["retry_delay_seconds"] = e.RetryDelay.Seconds()
		}
	}
	return view
}

// grpcCodeName is the upper-case name of a status code, as the protocol spells it (the
// SDK's own spelling, the same in every SDK).
func grpcCodeName(c codes.Code) string { return colossus.CodeName(c) }

func truncate(s string, n int) string {
	if len(s) > n {
		return s[:n]
	}
	return s
}
