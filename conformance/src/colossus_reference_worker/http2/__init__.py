"""HTTP/2 as the worker needs it: the rules and shortcuts h2 and grpclib leave out.

Each module patches or wraps one piece of h2 or grpclib (header blocks, stream errors,
stream limits, GOAWAY, HPACK reuse, frame tracing, non-gRPC requests, spent deadlines);
the listener applies them to every connection it serves.
"""
