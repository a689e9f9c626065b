// Package colossus is the Go client for the Colossus public application API
// (colossus.api.v1alpha1).
//
// A [Client] talks gRPC over loopback TLS 1.3 to a long-running worker, pinned to the
// exact leaf certificate provisioned at enrolment. It reaches the worker in one of two
// placements: [Connect] attaches to an installed shared worker (daemon), and
// [StartSidecar] starts and supervises a private worker process (sidecar).
//
// Every call takes a [context.Context] first and optional per-call settings as
// functional options ([WithTimeout], [WithIdempotencyKey], ...). Errors are one type,
// [*Error], inspected with [errors.Is] against the sentinel values ([ErrPinMismatch],
// [ErrOutcomeUnknown], [ErrWatchGap], ...) or with [errors.As]. Streams are Go 1.23
// iterators: [Runs.Watch] and [Runs.List] return [iter.Seq2] values that end promptly
// when the loop is left or the context is cancelled.
//
// The generated protobuf bindings live under gen/ and never appear in this package's
// exported API.
package colossus
