package colossus

import "google.golang.org/grpc/codes"

// codeNames spell status codes as the wire, the contract and the other SDKs do.
var codeNames = map[codes.Code]string{
	codes.Canceled: "CANCELLED", codes.Unknown: "UNKNOWN",
	codes.InvalidArgument: "INVALID_ARGUMENT", codes.DeadlineExceeded: "DEADLINE_EXCEEDED",
	codes.NotFound: "NOT_FOUND", codes.AlreadyExists: "ALREADY_EXISTS",
	codes.PermissionDenied: "PERMISSION_DENIED", codes.ResourceExhausted: "RESOURCE_EXHAUSTED",
	codes.FailedPrecondition: "FAILED_PRECONDITION", codes.Aborted: "ABORTED",
	codes.OutOfRange: "OUT_OF_RANGE", codes.Unimplemented: "UNIMPLEMENTED",
	codes.Internal: "INTERNAL", codes.Unavailable: "UNAVAILABLE", codes.DataLoss: "DATA_LOSS",
	codes.Unauthenticated: "UNAUTHENTICATED",
}

// CodeName is a status code's canonical upper-case name ("NOT_FOUND", "CANCELLED"), as
// Error() prints it; grpc-go's own String() spells it "NotFound". codes.OK, what an
// [Error] carries when it has no code (a local refusal), has no name: "", as the other
// SDKs have none (Python's None, TypeScript's null, Rust's None), never "OK".
func CodeName(c codes.Code) string {
	if c == codes.OK {
		return ""
	}
	if n, ok := codeNames[c]; ok {
		return n
	}
	return c.String()
}
