package colossus

import (
	"context"
	"strconv"
	"sync"
	"sync/atomic"

	"google.golang.org/grpc"
	"google.golang.org/grpc/metadata"
	"google.golang.org/protobuf/proto"
)

// C7 is applied where every request leaves the SDK: the channel's client interceptors.
// Each request message, unary or streamed (each upload message, each watch
// (re)connection's request), is measured against the cap of the session's ServerInfo at
// the moment it is sent, so no call site can forget the check.

// checkSize refuses a request over the advertised cap (none before GetServerInfo answered).
func checkSize(m proto.Message, info *ServerInfo) error {
	limit := info.Limits.MaxRequestBytes
	if size := proto.Size(m); limit > 0 && uint64(size) > limit {
		e := newError(ErrResourceExhausted, ReasonRequestTooLarge,
			"the request is %d bytes, over the worker's limit of %d", size, limit)
		return e.withMeta("limit", strconv.FormatUint(limit, 10))
	}
	return nil
}

// checkMessage is checkSize for what gRPC hands an interceptor; anything that is not a
// protobuf message cannot be measured, so it is refused.
func checkMessage(m any, info *ServerInfo) error {
	msg, ok := m.(proto.Message)
	if !ok {
		return newError(ErrInvalidArgument, ReasonFieldInvalid, "the request is not a protobuf message")
	}
	return checkSize(msg, info)
}

// requestCapUnary checks a unary call's request before the invoker sends it. info points
// at the session's ServerInfo and is read at each call.
func requestCapUnary(info *ServerInfo) grpc.UnaryClientInterceptor {
	return func(ctx context.Context, method string, req, reply any, cc *grpc.ClientConn, invoker grpc.UnaryInvoker, opts ...grpc.CallOption) error {
		if err := checkMessage(req, info); err != nil {
			return err
		}
		return invoker(ctx, method, req, reply, cc, opts...)
	}
}

// requestCapStream checks every message of a stream before it is sent. The stream itself
// is opened only when its first message passed: grpc-go sends the call's headers when a
// stream is created, and the worker would count a call whose only request was refused.
func requestCapStream(info *ServerInfo) grpc.StreamClientInterceptor {
	return func(ctx context.Context, desc *grpc.StreamDesc, cc *grpc.ClientConn, method string, streamer grpc.Streamer, opts ...grpc.CallOption) (grpc.ClientStream, error) {
		return &cappedStream{ctx: ctx, open: func() (grpc.ClientStream, error) {
			return streamer(ctx, desc, cc, method, opts...)
		}, info: info}, nil
	}
}

// cappedStream is a client stream opened on its first send or receive, whose SendMsg
// checks the cap first. A refused first message leaves no stream behind.
type cappedStream struct {
	ctx  context.Context
	info *ServerInfo
	open func() (grpc.ClientStream, error)

	// live is the opened stream, read without the lock: a watch receives thousands of
	// messages through RecvMsg, and the mutex was a visible part of its time per event.
	live atomic.Pointer[liveStream]

	// mu makes the one open attempt; err is its failure.
	mu    sync.Mutex
	err   error
	tried bool
}

// liveStream boxes the opened stream for cappedStream.live.
type liveStream struct{ grpc.ClientStream }

func (c *cappedStream) opened() (grpc.ClientStream, error) {
	if l := c.live.Load(); l != nil {
		return l.ClientStream, nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.tried {
		c.tried = true
		var stream grpc.ClientStream
		if stream, c.err = c.open(); c.err == nil {
			c.live.Store(&liveStream{stream})
		}
	}
	if c.err != nil {
		return nil, c.err
	}
	return c.live.Load().ClientStream, nil
}

// current is the stream if it was opened, without opening it.
func (c *cappedStream) current() grpc.ClientStream {
	if l := c.live.Load(); l != nil {
		return l.ClientStream
	}
	return nil
}

func (c *cappedStream) SendMsg(m any) error {
	if err := checkMessage(m, c.info); err != nil {
		return err
	}
	s, err := c.opened()
	if err != nil {
		return err
	}
	return s.SendMsg(m)
}

func (c *cappedStream) RecvMsg(m any) error {
	s, err := c.opened()
	if err != nil {
		return err
	}
	return s.RecvMsg(m)
}

func (c *cappedStream) CloseSend() error {
	s, err := c.opened()
	if err != nil {
		return err
	}
	return s.CloseSend()
}

func (c *cappedStream) Header() (metadata.MD, error) {
	s, err := c.opened()
	if err != nil {
		return nil, err
	}
	return s.Header()
}

func (c *cappedStream) Trailer() metadata.MD {
	if s := c.current(); s != nil {
		return s.Trailer()
	}
	return nil
}

func (c *cappedStream) Context() context.Context {
	if s := c.current(); s != nil {
		return s.Context()
	}
	return c.ctx
}
