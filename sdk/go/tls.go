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
)

// trustPolicy enforces C4 on every TLS connection this client makes, the pre-flight and
// each one grpc-go opens (reconnects included): TLS 1.3 only, exactly one presented
// certificate, and that certificate's SHA-256 equal to the provisioned pin.
//
// It remembers the last violation so a failed RPC on a reconnect can report the typed
// trust error rather than grpc-go's generic UNAVAILABLE.
type trustPolicy struct {
	pin [sha256.Size]byte

	mu   sync.Mutex
	last *Error
}

func newTrustPolicy(pinHex string) (*trustPolicy, error) {
	raw, err := hex.DecodeString(pinHex)
	if err != nil || len(raw) != sha256.Size || !isPin(pinHex) {
		return nil, invalidField("expected_certificate_sha256", "the pin must be 64 lower-case hex characters")
	}
	p := &trustPolicy{}
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
		}
	}
	if violation != nil {
		p.mu.Lock()
		p.last = violation
		p.mu.Unlock()
		return violation
	}
	return nil
}

// takeViolation returns and clears the last recorded violation.
func (p *trustPolicy) takeViolation() *Error {
	p.mu.Lock()
	defer p.mu.Unlock()
	v := p.last
	p.last = nil
	return v
}

// classifyHandshake turns a failed handshake into a trust error, or nil when the failure
// was not about the TLS policy (the caller then reports a transport error).
func (p *trustPolicy) classifyHandshake(err error) *Error {
	if v := p.takeViolation(); v != nil {
		return v
	}
	var alert tls.AlertError
	text := err.Error()
	if errors.As(err, &alert) && uint8(alert) == 70 || // protocol_version
		strings.Contains(text, "protocol version") || strings.Contains(text, "unsupported protocol") {
		return newError(ErrTLSPolicy, ReasonTLSVersion, "the worker does not speak TLS 1.3")
	}
	var recordErr tls.RecordHeaderError
	if errors.As(err, &recordErr) || strings.Contains(text, "tls:") {
		return newError(ErrTLSPolicy, ReasonTLSVersion, "the TLS handshake with the worker failed")
	}
	return nil
}

// preflight performs one handshake under the policy before the bearer is loaded, so a
// wrong worker is refused with a typed error and nothing secret was ever sent.
func (p *trustPolicy) preflight(ctx context.Context, endpoint Endpoint) error {
	dialer := &tls.Dialer{Config: p.config()}
	conn, err := dialer.DialContext(ctx, "tcp", endpoint.address())
	if err != nil {
		if v := p.classifyHandshake(err); v != nil {
			return v
		}
		var netErr net.Error
		sentinel := ErrTransport
		if ctx.Err() != nil || errors.As(err, &netErr) && netErr.Timeout() {
			sentinel = ErrDeadlineExceeded
		}
		return &Error{kind: sentinel.(*kind), Reason: ReasonUnavailable, cause: err,
			Message: "cannot reach the worker at " + endpoint.String()}
	}
	_ = conn.Close()
	return nil
}
