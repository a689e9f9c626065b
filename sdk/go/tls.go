package colossus

import (
	"context"
	"crypto/sha256"
	"crypto/subtle"
	"crypto/tls"
	"encoding/hex"
	"errors"
	"net"
	"strings"
	"sync"
	"time"

	"google.golang.org/grpc/credentials"
)

// trustPolicy enforces C4 on every TLS connection this client makes, the pre-flight and
// each one grpc-go opens (reconnects included): TLS 1.3 only, exactly one presented
// certificate, and that certificate's SHA-256 equal to the provisioned pin.
//
// It remembers the last violation so a failed RPC on a reconnect can report the typed
// trust error rather than grpc-go's generic UNAVAILABLE.
type trustPolicy struct {
	pin [sha256.Size]byte
	// probeTimeout bounds the version probe after a handshake the server ended silently.
	probeTimeout time.Duration

	mu   sync.Mutex
	last *Error
}

func newTrustPolicy(pinHex string, probeTimeout time.Duration) (*trustPolicy, error) {
	raw, err := hex.DecodeString(pinHex)
	if err != nil || len(raw) != sha256.Size || !isPin(pinHex) {
		return nil, invalidField("expected_certificate_sha256", "the pin must be 64 lower-case hex characters")
	}
	p := &trustPolicy{probeTimeout: probeTimeout}
	copy(p.pin[:], raw)
	return p, nil
}

func (p *trustPolicy) config() *tls.Config {
	return &tls.Config{
		MinVersion: tls.VersionTLS13,
		MaxVersion: tls.VersionTLS13,
		// The chain is judged by VerifyConnection alone: an exact pin on a single leaf
		// is stricter than any path building, and gives typed errors.
		InsecureSkipVerify: true, //nolint:gosec // replaced by the exact pin check below
		VerifyConnection:   p.verify,
		NextProtos:         []string{"h2"},
	}
}

func (p *trustPolicy) verify(cs tls.ConnectionState) error {
	var violation *Error
	switch {
	case cs.Version != tls.VersionTLS13:
		violation = newError(ErrTLSPolicy, ReasonTLSVersion, "the worker did not negotiate TLS 1.3")
	case len(cs.PeerCertificates) != 1:
		violation = newError(ErrTLSPolicy, ReasonTLSChain,
			"the worker presented %d certificates; exactly one pinned leaf is allowed", len(cs.PeerCertificates))
	default:
		sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
		if subtle.ConstantTimeCompare(sum[:], p.pin[:]) != 1 {
			violation = newError(ErrPinMismatch, ReasonPinMismatch,
				"the worker presented a certificate that does not hash to the provisioned pin")
		} else if cs.NegotiatedProtocol != "h2" {
			// gRPC is HTTP/2 only: a listener that did not agree to h2 is refused here, in
			// the handshake, so before the first request and the bearer (C4).
			violation = newError(ErrTLSPolicy, ReasonTLSHandshake, "the worker did not agree to HTTP/2 through ALPN (h2)")
		}
	}
	p.record(violation)
	if violation != nil {
		return violation
	}
	return nil
}

// record remembers the outcome of the latest handshake: a violation, or nil after a
// handshake that passed (so an old violation is never blamed for a later failure).
func (p *trustPolicy) record(v *Error) {
	p.mu.Lock()
	p.last = v
	p.mu.Unlock()
}

func (p *trustPolicy) hasViolation() bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.last != nil
}

// isVersionRefusal reports a peer that refused TLS 1.3 with a protocol_version alert.
func isVersionRefusal(err error) bool {
	var alert tls.AlertError
	return errors.As(err, &alert) && uint8(alert) == 70 || strings.Contains(err.Error(), "protocol version")
}

// policedCredentials wraps grpc-go's TLS credentials so that a reconnect refused for
// its TLS version is remembered as a policy violation, like a failed pin check.
type policedCredentials struct {
	credentials.TransportCredentials
	policy *trustPolicy
}

func (c policedCredentials) ClientHandshake(ctx context.Context, authority string, conn net.Conn) (net.Conn, credentials.AuthInfo, error) {
	counted := &countingConn{Conn: conn}
	out, info, err := c.TransportCredentials.ClientHandshake(ctx, authority, counted)
	if err == nil || c.policy.hasViolation() {
		return out, info, err
	}
	switch {
	case isVersionRefusal(err) || counted.bytesRead() > 0:
		// The server spoke TLS and refused ours (an alert, a pre-1.3 ServerHello).
		c.policy.record(c.policy.classifyHandshake(err))
	case ctx.Err() == nil:
		// Closed or reset without a TLS byte: a listener that drops its alert, or a
		// worker that died mid-handshake. Only a probe can tell; a dead listener stays a
		// retryable transport failure.
		if refusal := probeTLSVersion(ctx, conn.RemoteAddr().String(), c.policy.probeTimeout); refusal != nil {
			refusal.cause = err
			c.policy.record(refusal)
		}
	}
	return out, info, err
}

func (c policedCredentials) Clone() credentials.TransportCredentials {
	return policedCredentials{TransportCredentials: c.TransportCredentials.Clone(), policy: c.policy}
}

func (p *trustPolicy) transportCredentials() credentials.TransportCredentials {
	return policedCredentials{TransportCredentials: credentials.NewTLS(p.config()), policy: p}
}

// takeViolation returns and clears the last recorded violation.
func (p *trustPolicy) takeViolation() *Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.last
	p.last = nil
	return v
}

// classifyHandshake turns a handshake the server answered and then failed into a trust
// error: the recorded policy violation when there is one, else a TLS policy failure.
func (p *trustPolicy) classifyHandshake(err error) *Error {
	if v := p.takeViolation(); v != nil {
		return v
	}
	if isVersionRefusal(err) {
		return &Error{kind: ErrTLSPolicy.(*kind), Reason: ReasonTLSVersion, cause: err, Message: "the worker does not speak TLS 1.3"}
	}
	return &Error{kind: ErrTLSPolicy.(*kind), Reason: ReasonTLSHandshake, cause: err, Message: "the TLS 1.3 handshake with the worker failed"}
}
