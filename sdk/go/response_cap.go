package colossus

import (
	"strconv"
	"strings"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"
)

// C7 for what the worker sends. Each call's MaxCallRecvMsgSize makes grpc-go refuse an
// inbound message over the accepted response cap before reading it, but as a
// RESOURCE_EXHAUSTED status that reads like the worker's: grpc-go gives that refusal no
// type of its own. responseTooLarge recognises it and reports the local RESPONSE_TOO_LARGE
// (no code), as REQUEST_TOO_LARGE is for requests and as every SDK reports it.

// responseTooLarge is the local refusal when err is grpc-go's own refusal of a message over
// limit, the session's receive cap; nil otherwise. grpc-go words it (rpc_util.go)
// "grpc: received message larger than max (N vs. LIMIT)", "grpc: message after
// decompression larger than max (N vs. LIMIT)" or "grpc: received message after
// decompression larger than max LIMIT". Only a status with no contract ErrorInfo whose text
// names this session's own limit qualifies, so a worker's refusal is never taken for it.
func responseTooLarge(err error, limit int) *Error {
	st, ok := status.FromError(err)
	if !ok || st.Code() != codes.ResourceExhausted || limit <= 0 {
		return nil
	}
	if reason, _ := errorInfo(st); reason != "" {
		return nil
	}
	text, n := st.Message(), strconv.Itoa(limit)
	if !strings.HasPrefix(text, "grpc: ") || !strings.Contains(text, " larger than max ") ||
		!(strings.HasSuffix(text, " vs. "+n+")") || strings.HasSuffix(text, " max "+n)) {
		return nil
	}
	e := newError(ErrResourceExhausted, ReasonResponseTooLarge,
		"a response is larger than the accepted response cap of %d bytes", limit)
	return e.withMeta("limit", n)
}
