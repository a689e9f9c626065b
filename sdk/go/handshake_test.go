package colossus

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
)

// A handshake the server ends without a TLS byte is a policy refusal only when a probe
// shows the listener speaks an older TLS; a listener that just closes is a transport
// failure, retried under the normal budget. The same two situations are tested in the
// TypeScript SDK (test/handshake.test.ts).

// frontListener accepts on its own port. Each connection is handled by handle; the count
// of accepted connections is kept.
func frontListener(t *testing.T, handle func(n int64, c net.Conn)) (port int, accepted *atomic.Int64) {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	accepted = &atomic.Int64{}
	go func() {
		for {
			c, err := lis.Accept()
			if err != nil {
				return
			}
			go handle(accepted.Add(1), c)
		}
	}()
	return lis.Addr().(*net.TCPAddr).Port, accepted
}

// closeSilently reads whatever the client sent first, then closes without a byte.
func closeSilently(c net.Conn) {
	buf := make([]byte, 4096)
	_, _ = c.Read(buf)
	_ = c.Close()
}

// pipeTo forwards the connection to target unchanged.
func pipeTo(target string, c net.Conn) {
	defer func() { _ = c.Close() }()
	up, err := net.Dial("tcp", target)
	if err != nil {
		return
	}
	defer func() { _ = up.Close() }()
	go func() { _, _ = io.Copy(up, c) }()
	_, _ = io.Copy(c, up)
}

// alertDroppingConn imitates a TLS server (Python's asyncio) that closes instead of
// sending the alert it owes: the first alert record it would write closes the connection.
type alertDroppingConn struct{ net.Conn }

func (c alertDroppingConn) Write(p []byte) (int, error) {
	if len(p) > 0 && p[0] == 21 {
		_ = c.Conn.Close()
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// pointDiscoveryAt rewrites the descriptor of o to name port instead.
func pointDiscoveryAt(t *testing.T, o DaemonOptions, port int) {
	t.Helper()
	path := filepath.Join(o.PublicAPIDir, endpointFile)
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var desc strings.Builder
	start := strings.Index(string(data), "https://127.0.0.1:") + len("https://127.0.0.1:")
	end := start + strings.Index(string(data[start:]), `"`)
	desc.WriteString(string(data[:start]) + strconv.Itoa(port) + string(data[end:]))
	if err := os.WriteFile(path, []byte(desc.String()), 0o600); err != nil {
		t.Fatal(err)
	}
}

func TestAHandshakeClosedOnceWithoutAWordIsRetried(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	port, accepted := frontListener(t, func(n int64, c net.Conn) {
		if n == 1 {
			closeSilently(c) // a worker that died mid-handshake
			return
		}
		pipeTo(w.addr, c) // ... and is back (the probe, the retry)
	})
	provider := &countingProvider{bearer: testBearer}
	o := w.options(t, provider)
	o.Retry = DefaultRetry
	pointDiscoveryAt(t, o, port)
	c, err := Connect(context.Background(), o)
	if err != nil {
		t.Fatalf("a handshake closed once was not retried: %v", err)
	}
	defer func() { _ = c.Close() }()
	if accepted.Load() < 3 || provider.calls.Load() != 1 {
		t.Fatalf("%d connections, %d bearer loads; want the failed one, a probe and a retry, and one load", accepted.Load(), provider.calls.Load())
	}
}

func TestAListenerThatAlwaysClosesIsATransportFailure(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	port, accepted := frontListener(t, func(_ int64, c net.Conn) { closeSilently(c) })
	provider := &countingProvider{bearer: testBearer}
	o := w.options(t, provider)
	o.Retry = RetryPolicy{MaxAttempts: 3, Multiplier: 1}
	pointDiscoveryAt(t, o, port)
	_, err := Connect(context.Background(), o)
	if !errors.Is(err, ErrTransport) || errors.Is(err, ErrTrust) {
		t.Fatalf("err %v, want a transport failure (not a trust error)", err)
	}
	if e, _ := asError(err); e == nil || !e.Retryable() {
		t.Fatalf("err %v is not retryable", err)
	}
	if provider.calls.Load() != 0 || accepted.Load() < 2 {
		t.Fatalf("%d bearer loads, %d connections", provider.calls.Load(), accepted.Load())
	}
}

func TestATLS12ListenerThatDropsItsAlertIsAPolicyRefusal(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	tls12 := &tls.Config{MinVersion: tls.VersionTLS12, MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert.tls}}
	var applicationBytes atomic.Int64
	port, _ := frontListener(t, func(_ int64, c net.Conn) {
		server := tls.Server(alertDroppingConn{c}, tls12)
		defer func() { _ = server.Close() }()
		if server.Handshake() == nil {
			n, _ := io.Copy(io.Discard, server)
			applicationBytes.Add(n)
		}
	})
	provider := &countingProvider{bearer: testBearer}
	o := w.options(t, provider)
	pointDiscoveryAt(t, o, port)
	_, err := Connect(context.Background(), o)
	e, _ := asError(err)
	if !errors.Is(err, ErrTLSPolicy) || e == nil || e.Reason != ReasonTLSVersion {
		t.Fatalf("err %v, want ErrTLSPolicy with reason %s", err, ReasonTLSVersion)
	}
	if provider.calls.Load() != 0 || applicationBytes.Load() != 0 {
		t.Fatal("the bearer was loaded or application data reached the TLS 1.2 listener")
	}
}

// The pinned leaf over TLS 1.3, but no HTTP/2 agreed through ALPN: refused in the
// handshake as TLS_HANDSHAKE, before the bearer is asked for and before any request
// (docs/requirements.md C4; the case pin-checks.c4.no-h2-alpn).
func TestAListenerThatAgreesToNoH2IsRefusedBeforeTheBearer(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	noALPN := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert.tls}} // no NextProtos
	var applicationBytes atomic.Int64
	port, _ := frontListener(t, func(_ int64, c net.Conn) {
		server := tls.Server(c, noALPN)
		defer func() { _ = server.Close() }()
		if server.Handshake() == nil {
			n, _ := io.Copy(io.Discard, server)
			applicationBytes.Add(n)
		}
	})
	provider := &countingProvider{bearer: testBearer}
	o := w.options(t, provider)
	pointDiscoveryAt(t, o, port)
	_, err := Connect(context.Background(), o)
	e, _ := asError(err)
	if !errors.Is(err, ErrTLSPolicy) || e == nil || e.Reason != ReasonTLSHandshake {
		t.Fatalf("err %v, want ErrTLSPolicy with reason %s", err, ReasonTLSHandshake)
	}
	if provider.calls.Load() != 0 || applicationBytes.Load() != 0 {
		t.Fatal("the bearer was loaded or application data reached the listener without h2")
	}
}
