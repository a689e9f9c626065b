package colossus

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// An in-process worker on loopback TLS with a throw-away P-256 leaf, whose handlers each
// test scripts. It records every bearer it receives.

const testBearer = "cb1_TESTtestTESTtestTESTtestTESTtestTESTtes"

type testCert struct {
	tls tls.Certificate
	der []byte
	pem []byte
	pin string
}

func newCert(t testing.TB, isCA bool) testCert {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		SerialNumber:          big.NewInt(time.Now().UnixNano()),
		Subject:               pkix.Name{CommonName: "colossus-test"},
		NotBefore:             time.Now().Add(-time.Hour),
		NotAfter:              time.Now().Add(time.Hour),
		BasicConstraintsValid: true,
		IsCA:                  isCA,
		IPAddresses:           []net.IP{net.ParseIP("127.0.0.1")},
		KeyUsage:              x509.KeyUsageDigitalSignature | x509.KeyUsageCertSign,
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		t.Fatal(err)
	}
	return testCert{
		tls: tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key},
		der: der,
		pem: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		pin: sha256Hex(der),
	}
}

type fakeWorker struct {
	pb.UnimplementedSystemServiceServer
	pb.UnimplementedRunServiceServer
	pb.UnimplementedArtifactServiceServer

	cert     testCert
	info     *pb.ServerInfo
	server   *grpc.Server
	addr     string
	dir      string
	requests atomic.Int64

	mu           sync.Mutex
	bearers      []string
	contentTypes []string
	watchCalls   int
	watchFn      func(call int, req *pb.WatchRunRequest, stream pb.RunService_WatchRunServer) error
	getRunFn     func(req *pb.GetRunRequest) (*pb.GetRunResponse, error)
	createFn     func(req *pb.CreateRunRequest) (*pb.CreateRunResponse, error)
	listFn       func(req *pb.ListRunsRequest) (*pb.ListRunsResponse, error)
	createCalls  int
}

func defaultInfo() *pb.ServerInfo {
	return &pb.ServerInfo{
		InstanceId: "wkr_test", ApiPackage: apiPackage, ApiVersion: apiVersion, ApiMajor: apiMajor,
		DeploymentMode: pb.DeploymentMode_DEPLOYMENT_MODE_SHARED_DAEMON,
		Limits: &pb.Limits{MaxRequestBytes: 2 << 20, MaxResponseBytes: 4 << 20, MaxInputParts: 128,
			MaxInputBytes: 1 << 20, MaxTurns: 100, MaxListStatusFilters: 9, MaxArtifactBytes: 1 << 20},
	}
}

// startFakeWorker serves on a fresh port (or on addr, to come back after a stop).
func startFakeWorker(t *testing.T, cert testCert, cfg *tls.Config, addr string) *fakeWorker {
	t.Helper()
	w := &fakeWorker{cert: cert, info: defaultInfo()}
	w.serve(t, cfg, addr)
	return w
}

func genuineTLS(cert testCert) *tls.Config {
	return &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{cert.tls}}
}

func (w *fakeWorker) serve(t *testing.T, cfg *tls.Config, addr string) {
	t.Helper()
	if addr == "" {
		addr = "127.0.0.1:0"
	}
	var lis net.Listener
	var err error
	for range 50 { // the old listener's port may take a moment to be released
		if lis, err = net.Listen("tcp", addr); err == nil {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if err != nil {
		t.Fatal(err)
	}
	w.serveOn(t, cfg, lis)
}

// serveOn serves on lis, which a test may wrap to misbehave at the TCP level.
func (w *fakeWorker) serveOn(t *testing.T, cfg *tls.Config, lis net.Listener) {
	t.Helper()
	w.addr = lis.Addr().String()
	w.server = grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)),
		grpc.UnaryInterceptor(func(ctx context.Context, req any, _ *grpc.UnaryServerInfo, h grpc.UnaryHandler) (any, error) {
			w.record(ctx)
			return h(ctx, req)
		}),
		grpc.StreamInterceptor(func(srv any, ss grpc.ServerStream, _ *grpc.StreamServerInfo, h grpc.StreamHandler) error {
			w.record(ss.Context())
			return h(srv, ss)
		}))
	pb.RegisterSystemServiceServer(w.server, w)
	pb.RegisterRunServiceServer(w.server, w)
	pb.RegisterArtifactServiceServer(w.server, w)
	go func() { _ = w.server.Serve(lis) }()
	t.Cleanup(w.server.Stop)
}

func (w *fakeWorker) record(ctx context.Context) {
	w.requests.Add(1)
	md, _ := metadata.FromIncomingContext(ctx)
	w.mu.Lock()
	w.bearers = append(w.bearers, md.Get("authorization")...)
	w.contentTypes = append(w.contentTypes, md.Get("content-type")...)
	w.mu.Unlock()
}

func (w *fakeWorker) port() int {
	_, p, _ := net.SplitHostPort(w.addr)
	var n int
	fmt.Sscan(p, &n)
	return n
}

// writeDiscovery writes owner-only discovery files naming this worker.
func (w *fakeWorker) writeDiscovery(t *testing.T) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "public-api")
	if err := os.Mkdir(dir, 0o700); err != nil {
		t.Fatal(err)
	}
	desc := fmt.Sprintf(`{"endpoint": "https://127.0.0.1:%d", "instance_id": "wkr_test", "pid": 42, "api_version": "v1alpha1", "certificate_sha256": %q}`, w.port(), w.cert.pin)
	if err := os.WriteFile(filepath.Join(dir, endpointFile), []byte(desc), 0o600); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, certificateFile), w.cert.pem, 0o600); err != nil {
		t.Fatal(err)
	}
	w.dir = dir
	return dir
}

type countingProvider struct {
	bearer string
	calls  atomic.Int64
}

func (p *countingProvider) Bearer(context.Context) (string, error) {
	p.calls.Add(1)
	return p.bearer, nil
}

func (w *fakeWorker) options(t *testing.T, provider CredentialProvider) DaemonOptions {
	if provider == nil {
		var err error
		provider, err = NewInMemoryCredentialProvider(testBearer)
		if err != nil {
			t.Fatal(err)
		}
	}
	return DaemonOptions{
		ClientOptions:             ClientOptions{Timeout: 10 * time.Second, Retry: RetryPolicy{MaxAttempts: 4, InitialBackoff: time.Millisecond, MaxBackoff: 5 * time.Millisecond, Multiplier: 2}},
		PublicAPIDir:              w.writeDiscovery(t),
		ExpectedInstanceID:        "wkr_test",
		ExpectedCertificateSHA256: w.cert.pin,
		Credentials:               provider,
	}
}

func connectFake(t *testing.T, w *fakeWorker) *Client {
	t.Helper()
	c, err := Connect(context.Background(), w.options(t, nil))
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

func (w *fakeWorker) GetServerInfo(context.Context, *pb.GetServerInfoRequest) (*pb.GetServerInfoResponse, error) {
	return &pb.GetServerInfoResponse{ServerInfo: w.info}, nil
}

func (w *fakeWorker) WatchRun(req *pb.WatchRunRequest, stream pb.RunService_WatchRunServer) error {
	w.mu.Lock()
	w.watchCalls++
	call, fn := w.watchCalls, w.watchFn
	w.mu.Unlock()
	if fn == nil {
		return status.Error(codes.Unimplemented, "no watch script")
	}
	return fn(call, req, stream)
}

// scriptWatches answers the n-th WatchRun call with streams[n-1] (UNIMPLEMENTED after the
// last) and returns a reader of the cursors the calls asked for, in order.
func (w *fakeWorker) scriptWatches(streams ...func(pb.RunService_WatchRunServer) error) (cursors func() string) {
	var seen []uint64
	w.watchFn = func(call int, req *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		w.mu.Lock()
		seen = append(seen, req.GetAfterSequence())
		w.mu.Unlock()
		if call > len(streams) {
			return status.Error(codes.Unimplemented, "no script for this watch")
		}
		return streams[call-1](s)
	}
	return func() string {
		w.mu.Lock()
		defer w.mu.Unlock()
		return fmt.Sprint(seen)
	}
}

// unavailableAfter sends msgs, then fails the stream with UNAVAILABLE (a restarting worker).
func unavailableAfter(msgs ...*pb.WatchRunResponse) func(pb.RunService_WatchRunServer) error {
	return func(s pb.RunService_WatchRunServer) error {
		_ = sendAll(s, msgs...)
		return status.Error(codes.Unavailable, "restarting")
	}
}

// sending sends msgs and ends the stream cleanly.
func sending(msgs ...*pb.WatchRunResponse) func(pb.RunService_WatchRunServer) error {
	return func(s pb.RunService_WatchRunServer) error { return sendAll(s, msgs...) }
}

func (w *fakeWorker) GetRun(_ context.Context, req *pb.GetRunRequest) (*pb.GetRunResponse, error) {
	if w.getRunFn == nil {
		return nil, status.Error(codes.NotFound, "no run")
	}
	return w.getRunFn(req)
}

func (w *fakeWorker) CreateRun(_ context.Context, req *pb.CreateRunRequest) (*pb.CreateRunResponse, error) {
	w.mu.Lock()
	w.createCalls++
	w.mu.Unlock()
	if w.createFn == nil {
		return &pb.CreateRunResponse{Run: &pb.Run{RunId: "run_1", IdempotencyKey: req.GetIdempotencyKey(), Status: pb.RunStatus_RUN_STATUS_QUEUED}}, nil
	}
	return w.createFn(req)
}

func (w *fakeWorker) ListRuns(_ context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	return w.listFn(req)
}

// Event builders.

func outputEvent(seq uint64, text string) *pb.WatchRunResponse {
	return &pb.WatchRunResponse{Event: &pb.RunEvent{RunId: "run_1", Sequence: seq,
		Payload: &pb.RunEvent_OutputDelta{OutputDelta: &pb.OutputDelta{Text: text}}}}
}

func terminalEvent(seq uint64) *pb.WatchRunResponse {
	return &pb.WatchRunResponse{Event: &pb.RunEvent{RunId: "run_1", Sequence: seq,
		Payload: &pb.RunEvent_Terminated{Terminated: &pb.RunTerminated{Status: pb.RunStatus_RUN_STATUS_SUCCEEDED}}}}
}

func sendAll(stream pb.RunService_WatchRunServer, msgs ...*pb.WatchRunResponse) error {
	for _, m := range msgs {
		if err := stream.Send(m); err != nil {
			return err
		}
	}
	return nil
}
