package colossus

import (
	"context"
	"log/slog"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// Contract identity a worker must report (C6).
const (
	apiPackage = "colossus.api.v1alpha1"
	apiMajor   = 1
	// requestHeadroom is added to the advertised request cap for gRPC framing.
	requestHeadroom = 64 * 1024
)

// target is a worker the caller decided to trust: where it is and what it must prove.
type target struct {
	endpoint           Endpoint
	expectedInstanceID string
	expectedPin        string
	expectedMode       DeploymentMode
}

// session is one verified channel. Every TLS handshake it makes (the first and each
// reconnect) runs the pinned TLS 1.3 policy; the bearer is loaded only once a handshake
// passed; the first call is GetServerInfo, whose verified answer it keeps.
type session struct {
	conn      *grpc.ClientConn
	system    pb.SystemServiceClient
	runs      pb.RunServiceClient
	artifacts pb.ArtifactServiceClient
	policy    *trustPolicy
	dials     *dialRecorder
	bearer    *bearerCredentials
	info      ServerInfo
	callOpts  []grpc.CallOption
	// recvCap is the inbound message cap of callOpts (C7), named in RESPONSE_TOO_LARGE.
	recvCap int
	// gone closes when the channel's worker is known to have exited (sidecar only).
	gone <-chan struct{}
}

// pauseBeforeRetry sleeps a retry's backoff delay, then holds the retry until the channel
// tries a new connection (awaitFreshAttempt), so that every retry is a real attempt.
func (s *session) pauseBeforeRetry(ctx context.Context, delay time.Duration) error {
	if err := sleep(ctx, delay); err != nil {
		return err
	}
	awaitFreshAttempt(ctx, s.conn, s.gone)
	return nil
}

// openSession runs C4-C7 against a target: a channel enforcing the TLS policy on every
// connection, the bearer loaded only after the first handshake passed, then a verified
// GetServerInfo before anything else.
func openSession(ctx context.Context, t target, creds func(context.Context) (*secret, error), o ClientOptions, log *slog.Logger) (*session, error) {
	ctx, cancel := context.WithTimeout(ctx, o.connectTimeout())
	defer cancel()
	policy, err := newTrustPolicy(t.expectedPin, o.connectTimeout())
	if err != nil {
		return nil, err
	}
	bearer := &bearerCredentials{load: creds, trace: o.TraceContext}
	recv := o.maxResponseBytes()
	dials := &dialRecorder{}
	s := &session{
		policy:   policy,
		dials:    dials,
		bearer:   bearer,
		callOpts: []grpc.CallOption{grpc.MaxCallRecvMsgSize(recv)},
		recvCap:  recv,
	}
	conn, err := grpc.NewClient("passthrough:///"+t.endpoint.address(),
		// C7 for every request of this channel, against s.info as it stands at each call:
		// empty (no cap) for the GetServerInfo below, then the verified answer.
		grpc.WithChainUnaryInterceptor(requestCapUnary(&s.info)),
		grpc.WithChainStreamInterceptor(requestCapStream(&s.info)),
		grpc.WithContextDialer(dials.dial),
		// grpc-go waits a second before its first reconnect by default, longer than the
		// first retry delays; reconnect at the pace of the retry policy instead.
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: reconnectBackoff, MinConnectTimeout: o.connectTimeout()}),
		grpc.WithTransportCredentials(policy.transportCredentials()),
		grpc.WithPerRPCCredentials(bearer),
		grpc.WithDisableRetry(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(recv)),
		// grpc-go's proto codec, but a large answer in pieces is not put in a 1 MiB buffer.
		grpc.WithDefaultCallOptions(grpc.ForceCodecV2(newRecvCodec())),
	)
	if err != nil {
		return nil, newError(ErrTransport, ReasonUnavailable, "cannot create the channel")
	}
	s.conn = conn
	s.system = pb.NewSystemServiceClient(conn)
	s.runs = pb.NewRunServiceClient(conn)
	s.artifacts = pb.NewArtifactServiceClient(conn)
	info, err := s.getServerInfo(ctx, o.retry(), log)
	if err != nil {
		_ = conn.Close()
		return nil, err
	}
	if err := verifyServerInfo(info, t); err != nil {
		_ = conn.Close()
		return nil, err
	}
	s.info = info
	if cap := info.Limits.MaxResponseBytes; cap > 0 && cap < uint64(recv) {
		recv = int(cap)
	}
	s.callOpts, s.recvCap = []grpc.CallOption{grpc.MaxCallRecvMsgSize(recv)}, recv
	if cap := info.Limits.MaxRequestBytes; cap > 0 {
		s.callOpts = append(s.callOpts, grpc.MaxCallSendMsgSize(int(cap)+requestHeadroom))
	}
	log.Info("connected", "endpoint", t.endpoint.String(), "instance_id", info.InstanceID)
	return s, nil
}

func (s *session) getServerInfo(ctx context.Context, policy RetryPolicy, log *slog.Logger) (ServerInfo, error) {
	b := newBackoff(policy, nil)
	for {
		// Not wait-for-ready: a handshake refused by the policy must fail this call at once.
		resp, err := s.system.GetServerInfo(ctx, &pb.GetServerInfoRequest{})
		if err == nil {
			return toServerInfo(resp.GetServerInfo()), nil
		}
		mapped := s.mapError(ctx, err, readCall, "")
		e, _ := asError(mapped)
		// A refused connection is not retried here: nothing listens, which the caller
		// should hear at once (a dropped handshake without a trust verdict is retried).
		if e == nil || !e.retryableRead() || e.Reason == ReasonUnreachable || ctx.Err() != nil {
			return ServerInfo{}, mapped
		}
		delay, n, ok := b.next(true)
		if !ok {
			return ServerInfo{}, mapped
		}
		log.Info("retrying GetServerInfo", "attempt", n, "delay", delay)
		if s.pauseBeforeRetry(ctx, delay) != nil {
			return ServerInfo{}, mapped
		}
	}
}

// mapError maps a failed call, preferring a trust violation recorded by this session's
// TLS policy: a reconnect that met the wrong server fails closed with a typed error.
func (s *session) mapError(ctx context.Context, err error, call callKind, key string) error {
	if f := s.bearer.takeFailure(); f != nil {
		return f
	}
	if e := responseTooLarge(err, s.recvCap); e != nil {
		return e
	}
	mapped := mapRPCError(ctx, err, call, key)
	if e, ok := asError(mapped); ok && e.Code == codes.Unavailable {
		if v := s.policy.takeViolation(); v != nil {
			v.IdempotencyKey = key
			return v
		}
		if call == readCall && e.Reason == "" && s.dials.refused() {
			// Nothing listens (the worker is restarting): a retry spends time, not an attempt.
			e.Reason = ReasonUnreachable
		}
	}
	return mapped
}

// verifyServerInfo is C6: the first answer must name the provisioned instance, the
// contract and the placement.
func verifyServerInfo(info ServerInfo, t target) error {
	var problems []string
	if info.InstanceID != t.expectedInstanceID {
		problems = append(problems, "instance_id")
	}
	if info.APIPackage != apiPackage {
		problems = append(problems, "api_package")
	}
	if info.APIMajor != apiMajor {
		problems = append(problems, "api_major")
	}
	if info.DeploymentMode != t.expectedMode {
		problems = append(problems, "deployment_mode")
	}
	if len(problems) == 0 {
		return nil
	}
	e := newError(ErrIncompatibleServer, ReasonServerInfoMismatch, "GetServerInfo disagrees with the expected worker: %v", problems)
	e.Metadata = map[string]string{"fields": joinComma(problems)}
	return e
}

func joinComma(items []string) string {
	out := ""
	for i, s := range items {
		if i > 0 {
			out += ","
		}
		out += s
	}
	return out
}

// callContext applies the per-call or default timeout.
func callContext(ctx context.Context, o ClientOptions, cfg *callConfig) (context.Context, context.CancelFunc) {
	d := o.timeout()
	if cfg != nil && cfg.timeout != nil {
		d = *cfg.timeout
	}
	if d <= 0 {
		return context.WithCancel(ctx)
	}
	return context.WithTimeout(ctx, d)
}
