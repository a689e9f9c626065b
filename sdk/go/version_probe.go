package colossus

import (
	"context"
	"crypto/tls"
	"errors"
	"net"
	"sync/atomic"
	"time"
)

// A handshake that ends without one byte from the server (closed or reset) carries no
// TLS evidence: some TLS servers (Python's asyncio among them) drop the alert they owe a
// client whose versions they refuse, so a TLS 1.2-only listener looks exactly like a
// worker that died mid-handshake. probeTLSVersion asks the listener which version it
// speaks on a second, throwaway connection whose ClientHello offers TLS 1.2 as well as
// 1.3; the probe is cut as soon as the server's certificate arrives, so it never finishes
// a handshake and never carries application data (no bearer).

// countingConn counts the bytes the server sent, to tell "said nothing" from "spoke TLS".
type countingConn struct {
	net.Conn
	read atomic.Int64
}

func (c *countingConn) Read(p []byte) (int, error) {
	n, err := c.Conn.Read(p)
	c.read.Add(int64(n))
	return n, err
}

func (c *countingConn) bytesRead() int64 { return c.read.Load() }

// errProbeAnswered stops the probe's handshake once the server has chosen a version.
var errProbeAnswered = errors.New("colossus: version probe answered")

// probeTLSVersion returns the policy refusal the listener at address shows (a version
// other than TLS 1.3, an alert, bytes that are not TLS), or nil when it speaks TLS 1.3,
// closed or reset the probe too, or said nothing within timeout: then the failed
// handshake was a transport failure, retryable like any other.
func probeTLSVersion(ctx context.Context, address string, timeout time.Duration) *Error {
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	var dialer net.Dialer
	raw, err := dialer.DialContext(ctx, "tcp", address)
	if err != nil {
		return nil
	}
	defer func() { _ = raw.Close() }()
	counted := &countingConn{Conn: raw}
	var version uint16
	probe := tls.Client(counted, &tls.Config{
		MinVersion: tls.VersionTLS12,
		MaxVersion: tls.VersionTLS13,
		// Only the version the server chooses is read; the probe ends before any
		// certificate could matter, and nothing is ever sent over it.
		InsecureSkipVerify: true, //nolint:gosec // the probe is cut before it carries data
		VerifyConnection: func(cs tls.ConnectionState) error {
			version = cs.Version
			return errProbeAnswered
		},
	})
	err = probe.HandshakeContext(ctx)
	switch {
	case version == tls.VersionTLS13:
		return nil
	case version != 0:
		return &Error{kind: ErrTLSPolicy.(*kind), Reason: ReasonTLSVersion, Message: "the worker does not speak TLS 1.3"}
	case counted.bytesRead() == 0:
		return nil
	case isVersionRefusal(err):
		return &Error{kind: ErrTLSPolicy.(*kind), Reason: ReasonTLSVersion, cause: err, Message: "the worker does not speak TLS 1.3"}
	}
	return &Error{kind: ErrTLSPolicy.(*kind), Reason: ReasonTLSHandshake, cause: err, Message: "the worker broke off the TLS handshake"}
}
