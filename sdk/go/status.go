package colossus

import (
	"context"
	"errors"
	"strings"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// errorDomain is the ErrorInfo domain of the contract; other domains are ignored.
const errorDomain = "colossus.api.v1alpha1"

var byCode = map[codes.Code]error{
	codes.Unauthenticated:    ErrAuthentication,
	codes.PermissionDenied:   ErrPermissionDenied,
	codes.NotFound:           ErrNotFound,
	codes.InvalidArgument:    ErrInvalidArgument,
	codes.OutOfRange:         ErrInvalidArgument,
	codes.AlreadyExists:      ErrAPI,
	codes.FailedPrecondition: ErrFailedPrecondition,
	codes.ResourceExhausted:  ErrResourceExhausted,
	codes.DataLoss:           ErrDataLoss,
	codes.Internal:           ErrInternal,
	codes.Unimplemented:      ErrAPI,
	codes.Aborted:            ErrAPI,
	codes.Unavailable:        ErrTransport,
	codes.DeadlineExceeded:   ErrDeadlineExceeded,
	codes.Canceled:           ErrTransport,
	codes.Unknown:            ErrTransport,
}

var byReason = map[string]error{
	ReasonIdempotencyConflict:    ErrIdempotencyConflict,
	ReasonCapabilityNotSupported: ErrCapabilityMissing,
}

// ambiguousForMutations are the codes after which a mutation may or may not have happened.
var ambiguousForMutations = map[codes.Code]bool{
	codes.Unavailable:      true,
	codes.DeadlineExceeded: true,
	codes.Canceled:         true,
	codes.Unknown:          true,
	codes.Internal:         true,
	codes.Aborted:          true,
}

// callKind tells the mapper whether an ambiguous failure leaves an effect unknown.
type callKind int

const (
	readCall callKind = iota
	mutationCall
)

// errorInfo extracts the contract's ErrorInfo from a status, if present.
func errorInfo(st *status.Status) (string, map[string]string) {
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.ErrorInfo)
		if !ok || info.GetDomain() != errorDomain {
			continue
		}
		var meta map[string]string
		if len(info.GetMetadata()) > 0 {
			meta = make(map[string]string, len(info.GetMetadata()))
			for k, v := range info.GetMetadata() {
				meta[k] = v
			}
		}
		return strings.TrimPrefix(info.GetReason(), "ERROR_REASON_"), meta
	}
	return "", nil
}

// maxRetryDelay bounds a RetryInfo delay the SDK honours: a larger hint is ignored.
const maxRetryDelay = time.Hour

// retryDelay is the delay of the status's google.rpc.RetryInfo, or 0 without a usable one.
func retryDelay(st *status.Status) time.Duration {
	for _, d := range st.Details() {
		info, ok := d.(*errdetails.RetryInfo)
		if !ok || info.GetRetryDelay() == nil {
			continue
		}
		delay := info.GetRetryDelay().AsDuration()
		if delay < 0 || delay > maxRetryDelay {
			return 0
		}
		return delay
	}
	return 0
}

// mapRPCError maps one failed gRPC call to an [*Error]. It is the only place that does.
// A local *Error (a trust violation recorded during a reconnect's handshake) passes through.
func mapRPCError(ctx context.Context, err error, call callKind, idempotencyKey string) error {
	if err == nil {
		return nil
	}
	var local *Error
	if errors.As(err, &local) {
		if idempotencyKey != "" && local.IdempotencyKey == "" {
			local.IdempotencyKey = idempotencyKey
		}
		return local
	}
	st, ok := status.FromError(err)
	if !ok {
		st = status.FromContextError(err)
	}
	code := st.Code()
	cause := err
	// A caller's cancellation is reported as such, not as a server fault, and keeps the
	// context's error reachable: errors.Is(err, context.Canceled) holds as in net/http.
	if ended := contextEnded(ctx); ended != nil && (code == codes.Canceled || code == codes.DeadlineExceeded) {
		if errors.Is(ended, context.DeadlineExceeded) {
			code = codes.DeadlineExceeded
		}
		if !errors.Is(err, ended) {
			cause = errors.Join(err, ended)
		}
	}
	reason, meta := errorInfo(st)
	if reason == "" && code == codes.Canceled && errors.Is(contextEnded(ctx), context.Canceled) {
		// The caller cancelled: the same reason TypeScript gives an aborted signal.
		reason = ReasonAborted
	}
	message := st.Message()
	if message == "" {
		message = strings.ToLower(code.String())
	}
	sentinel := ErrAPI
	if s, ok := byReason[reason]; ok {
		sentinel = s
	} else if s, ok := byCode[code]; ok {
		sentinel = s
	}
	if call == mutationCall && ambiguousForMutations[code] {
		sentinel = ErrOutcomeUnknown
		message = "the outcome of the call is unknown: " + message
	}
	return &Error{
		kind:           sentinel.(*kind),
		Message:        message,
		Code:           code,
		Reason:         reason,
		Metadata:       meta,
		IdempotencyKey: idempotencyKey,
		RetryDelay:     retryDelay(st),
		cause:          cause,
	}
}

// contextEnded is ctx's error, or context.DeadlineExceeded once its deadline has passed
// even if its timer has not fired yet: grpc-go reports a call whose deadline passed by the
// clock (a server's RST_STREAM after it gave up) before ctx.Err() is set.
func contextEnded(ctx context.Context) error {
	if ctx == nil {
		return nil
	}
	if err := ctx.Err(); err != nil {
		return err
	}
	if d, ok := ctx.Deadline(); ok && !time.Now().Before(d) {
		return context.DeadlineExceeded
	}
	return nil
}
