package colossus

import (
	"bytes"
	"context"
	"crypto/tls"
	"errors"
	"fmt"
	"log/slog"
	"runtime"
	"strings"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

func collectWatch(t *testing.T, c *Client, opts ...CallOption) ([]RunEvent, error) {
	t.Helper()
	var events []RunEvent
	for ev, err := range c.Runs.Watch(context.Background(), "run_1", opts...) {
		if err != nil {
			return events, err
		}
		events = append(events, ev)
	}
	return events, nil
}

func sequences(events []RunEvent) []uint64 {
	out := make([]uint64, len(events))
	for i, e := range events {
		out[i] = e.Sequence
	}
	return out
}

func TestConnectSendsTheBearerOnlyAfterTrustAndChecksServerInfo(t *testing.T) {
	w := startFakeWorker(t, newCert(t, false), genuineTLS(newCert(t, false)), "")
	_ = w
	// The worker above presents a different leaf than the one in its discovery files.
	provider := &countingProvider{bearer: testBearer}
	opts := w.options(t, provider)
	_, err := Connect(context.Background(), opts)
	if !errors.Is(err, ErrPinMismatch) || !errors.Is(err, ErrTrust) {
		t.Fatalf("err %v, want a pin mismatch", err)
	}
	if provider.calls.Load() != 0 || len(w.bearers) != 0 || w.requests.Load() != 0 {
		t.Fatalf("provider asked %d times, %d bearers and %d requests reached the worker", provider.calls.Load(), len(w.bearers), w.requests.Load())
	}
}

func TestConnectRefusesAnIncompatibleServer(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.info.DeploymentMode = pb.DeploymentMode_DEPLOYMENT_MODE_SIDECAR
	_, err := Connect(context.Background(), w.options(t, nil))
	if !errors.Is(err, ErrIncompatibleServer) {
		t.Fatalf("err %v", err)
	}
	if e, _ := asError(err); e.Metadata["fields"] != "deployment_mode" {
		t.Fatalf("metadata %v", e.Metadata)
	}
}

func TestConnectRefusesTLS12AndChainsBeforeTheBearer(t *testing.T) {
	cert := newCert(t, false)
	for name, cfg := range map[string]*tls.Config{
		"tls12": {MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert.tls}},
		"chain": {MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{{
			Certificate: [][]byte{cert.der, newCert(t, true).der}, PrivateKey: cert.tls.PrivateKey}}},
	} {
		t.Run(name, func(t *testing.T) {
			w := startFakeWorker(t, cert, cfg, "")
			provider := &countingProvider{bearer: testBearer}
			_, err := Connect(context.Background(), w.options(t, provider))
			if !errors.Is(err, ErrTLSPolicy) {
				t.Fatalf("err %v, want ErrTLSPolicy", err)
			}
			if provider.calls.Load() != 0 || w.requests.Load() != 0 {
				t.Fatal("the bearer was loaded or a request was sent")
			}
		})
	}
}

// The first connection is genuine; the reconnect meets a listener that breaks the policy.
// grpc-go's reconnect runs through the same TLS config, so it fails closed, typed, and the
// impostor never sees a request (so never a bearer).
func TestReconnectToAnImpostorListenerFailsClosed(t *testing.T) {
	cert := newCert(t, false)
	for name, cfg := range map[string]*tls.Config{
		"tls12":        {MaxVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert.tls}},
		"chain":        {MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{{Certificate: [][]byte{cert.der, newCert(t, true).der}, PrivateKey: cert.tls.PrivateKey}}},
		"foreign-leaf": genuineTLS(newCert(t, false)),
	} {
		t.Run(name, func(t *testing.T) {
			w := startFakeWorker(t, cert, genuineTLS(cert), "")
			w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
				return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1"}}, nil
			}
			c := connectFake(t, w)
			if _, err := c.Runs.Get(context.Background(), "run_1"); err != nil {
				t.Fatalf("genuine call: %v", err)
			}
			w.server.Stop()
			impostor := startFakeWorker(t, cert, cfg, w.addr)
			_, err := c.Runs.Get(context.Background(), "run_1")
			if !errors.Is(err, ErrTrust) {
				t.Fatalf("reconnect to %s: err %v, want a trust error", name, err)
			}
			if impostor.requests.Load() != 0 || len(impostor.bearers) != 0 {
				t.Fatal("the impostor received a request")
			}
		})
	}
}

func TestWatchDropsDuplicatesAndResumesAfterUnavailable(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	cursors := w.scriptWatches(
		unavailableAfter(outputEvent(1, "a"), outputEvent(2, "b"), outputEvent(2, "b"), outputEvent(1, "a")),
		sending(outputEvent(2, "b"), terminalEvent(3)))
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: 3}}, nil
	}
	c := connectFake(t, w)
	var hooks []ReconnectInfo
	var progress WatchProgress
	events, err := collectWatch(t, c, WithOnReconnect(func(i ReconnectInfo) { hooks = append(hooks, i) }), WithProgress(&progress))
	if err != nil {
		t.Fatal(err)
	}
	if got := fmt.Sprint(sequences(events)); got != "[1 2 3]" {
		t.Fatalf("sequences %s", got)
	}
	if cursors() != "[0 2]" || len(hooks) != 1 || hooks[0].AfterSequence != 2 || hooks[0].Attempt != 1 {
		t.Fatalf("cursors %s hooks %+v", cursors(), hooks)
	}
	if progress.LastSequence() != 3 || !progress.Completed() || progress.Reconnects() != 1 {
		t.Fatalf("progress %d %v %d", progress.LastSequence(), progress.Completed(), progress.Reconnects())
	}
	if _, ok := events[2].Payload.(*RunTerminated); !ok {
		t.Fatalf("last payload %T", events[2].Payload)
	}
}

// The reopened stream starts from the cursor of the core's resume plan, never from another
// copy: here the core moves past the plan (it is fed event 3 before the reconnect), and only
// a driver that follows the plan asks the worker for cursor 2.
func TestWatchReopensFromTheResumePlansCursor(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	cursors := w.scriptWatches(unavailableAfter(outputEvent(1, "a"), outputEvent(2, "b")), sending(outputEvent(3, "c"), terminalEvent(4)))
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: 4}}, nil
	}
	c := connectFake(t, w)
	cfg := collect(nil)
	d := newWatchDriver(c.Runs, "run_1", cfg)
	cfg.onReconnect = func(info ReconnectInfo) {
		ev := outputEvent(3, "c").GetEvent()
		if _, err := d.core.onEvent("run_1", 3, ev, retainedSize(ev), false); err != nil || info.AfterSequence != 2 {
			t.Errorf("plan %+v, feeding the core: %v", info, err)
		}
	}
	var delivered []uint64
	err := d.run(context.Background(), func(ev RunEvent, _ error) bool {
		delivered = append(delivered, ev.Sequence)
		return true
	})
	if err != nil {
		t.Fatal(err)
	}
	if cursors() != "[0 2]" || fmt.Sprint(delivered) != "[1 2 4]" {
		t.Fatalf("cursors %s (want [0 2]), delivered %v", cursors(), delivered)
	}
}

func TestWatchFailsOnGapAlteredReplayAndNonRetryableCodes(t *testing.T) {
	cert := newCert(t, false)
	cases := map[string]struct {
		script func(call int, s pb.RunService_WatchRunServer) error
		want   error
		calls  int
	}{
		"gap": {func(int, pb.RunService_WatchRunServer) error { return nil }, ErrWatchGap, 1},
		"altered": {func(_ int, s pb.RunService_WatchRunServer) error {
			return sendAll(s, outputEvent(1, "a"), outputEvent(1, "changed"))
		}, ErrProtocolViolation, 1},
		"permission": {func(int, pb.RunService_WatchRunServer) error {
			return status.Error(codes.PermissionDenied, "no")
		}, ErrPermissionDenied, 1},
		"budget": {func(int, pb.RunService_WatchRunServer) error {
			return status.Error(codes.Unavailable, "down")
		}, ErrTransport, 4},
	}
	cases["gap"] = struct {
		script func(call int, s pb.RunService_WatchRunServer) error
		want   error
		calls  int
	}{func(_ int, s pb.RunService_WatchRunServer) error {
		return sendAll(s, outputEvent(1, "a"), outputEvent(3, "c"))
	}, ErrWatchGap, 1}
	for name, tc := range cases {
		t.Run(name, func(t *testing.T) {
			w := startFakeWorker(t, cert, genuineTLS(cert), "")
			w.watchFn = func(call int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error { return tc.script(call, s) }
			c := connectFake(t, w)
			_, err := collectWatch(t, c)
			if !errors.Is(err, tc.want) {
				t.Fatalf("err %v, want %v", err, tc.want)
			}
			if w.watchCalls != tc.calls {
				t.Fatalf("%d WatchRun calls, want %d", w.watchCalls, tc.calls)
			}
		})
	}
}

func TestWatchReconcilesACleanCloseWithGetRun(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.watchFn = func(call int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		if call == 1 {
			return sendAll(s, outputEvent(1, "a")) // closes cleanly before the end
		}
		return sendAll(s, terminalEvent(2))
	}
	getRuns := 0
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		getRuns++
		if getRuns == 1 {
			return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_RUNNING, LastSequence: 1}}, nil
		}
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: 2}}, nil
	}
	c := connectFake(t, w)
	events, err := collectWatch(t, c)
	if err != nil || fmt.Sprint(sequences(events)) != "[1 2]" {
		t.Fatalf("events %v err %v", sequences(events), err)
	}
	// A clean close after which GetRun shows the run ended further on is a violation.
	w2 := startFakeWorker(t, cert, genuineTLS(cert), "")
	w2.watchFn = func(int, *pb.WatchRunRequest, pb.RunService_WatchRunServer) error { return nil }
	w2.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: 4}}, nil
	}
	if _, err := collectWatch(t, connectFake(t, w2)); !errors.Is(err, ErrProtocolViolation) {
		t.Fatalf("err %v", err)
	}
}

func TestLeavingAWatchLoopEndsTheStreamAndLeaksNoGoroutine(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	serverSawCancel := make(chan struct{})
	w.watchFn = func(_ int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		_ = sendAll(s, outputEvent(1, "a"), outputEvent(2, "b"))
		<-s.Context().Done()
		close(serverSawCancel)
		return nil
	}
	c := connectFake(t, w)
	before := runtime.NumGoroutine()
	for ev, err := range c.Runs.Watch(context.Background(), "run_1") {
		if err != nil || ev.Sequence != 1 {
			t.Fatalf("%v %v", ev, err)
		}
		break
	}
	select {
	case <-serverSawCancel:
	case <-time.After(10 * time.Second):
		t.Fatal("the stream stayed open after the loop ended")
	}
	// Goroutines of the stream wind down; poll rather than time anything.
	for range 200 {
		if runtime.NumGoroutine() <= before {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatalf("goroutines: %d before, %d after", before, runtime.NumGoroutine())
}

func TestCancellingTheContextEndsAWatch(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.watchFn = func(_ int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		_ = sendAll(s, outputEvent(1, "a"))
		<-s.Context().Done()
		return nil
	}
	c := connectFake(t, w)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var last error
	for ev, err := range c.Runs.Watch(ctx, "run_1") {
		if err != nil {
			last = err
			break
		}
		if ev.Sequence == 1 {
			cancel()
		}
	}
	if !errors.Is(last, ErrTransport) {
		t.Fatalf("err %v, want a transport error after cancellation", last)
	}
}

func TestWatchIdleTimeout(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.watchFn = func(_ int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		<-s.Context().Done()
		return nil
	}
	_, err := collectWatch(t, connectFake(t, w), WithIdleTimeout(50*time.Millisecond))
	if !errors.Is(err, ErrWatchIdleTimeout) || !errors.Is(err, ErrTransport) {
		t.Fatalf("err %v", err)
	}
}

func TestCreateIsNeverRetriedAndExposesItsKey(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.createFn = func(*pb.CreateRunRequest) (*pb.CreateRunResponse, error) {
		return nil, status.Error(codes.Unavailable, "lost")
	}
	c := connectFake(t, w)
	_, err := c.Runs.Create(context.Background(), Text("hi"))
	var e *Error
	if !errors.Is(err, ErrOutcomeUnknown) || !errors.As(err, &e) || !strings.HasPrefix(e.IdempotencyKey, "go-") {
		t.Fatalf("err %v", err)
	}
	if w.createCalls != 1 {
		t.Fatalf("%d CreateRun calls", w.createCalls)
	}
	// Retrying with the exposed key sends exactly that key.
	var sent string
	w.createFn = func(r *pb.CreateRunRequest) (*pb.CreateRunResponse, error) {
		sent = r.GetIdempotencyKey()
		return &pb.CreateRunResponse{Run: &pb.Run{RunId: "run_1"}, Replayed: true}, nil
	}
	res, err := c.Runs.Create(context.Background(), Text("hi"), WithIdempotencyKey(e.IdempotencyKey))
	if err != nil || sent != e.IdempotencyKey || !res.Replayed || res.IdempotencyKey != sent {
		t.Fatalf("retry: %v %q %+v", err, sent, res)
	}
}

func TestErrorInfoReasonsMapToTypedErrors(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.createFn = func(*pb.CreateRunRequest) (*pb.CreateRunResponse, error) {
		st, _ := status.New(codes.AlreadyExists, "key reused").WithDetails(&errdetails.ErrorInfo{
			Reason: "ERROR_REASON_IDEMPOTENCY_CONFLICT", Domain: errorDomain, Metadata: map[string]string{"field": "idempotency_key"}})
		return nil, st.Err()
	}
	c := connectFake(t, w)
	_, err := c.Runs.Create(context.Background(), Text("hi"), WithIdempotencyKey("k-1"))
	var e *Error
	if !errors.Is(err, ErrIdempotencyConflict) || !errors.As(err, &e) {
		t.Fatalf("err %v", err)
	}
	if e.Code != codes.AlreadyExists || e.Reason != ReasonIdempotencyConflict || e.Metadata["field"] != "idempotency_key" || e.IdempotencyKey != "k-1" {
		t.Fatalf("error fields %+v", e)
	}
}

func TestLocalRefusalsSendNothing(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.info.Limits.MaxRequestBytes = 1024
	c := connectFake(t, w)
	sent := w.requests.Load()
	checks := []struct {
		name string
		err  error
		want error
	}{}
	_, err := c.Runs.Create(context.Background(), Text(strings.Repeat("x", 2048)))
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"over the request cap", err, ErrResourceExhausted})
	_, err = c.Runs.Create(context.Background(), []InputPart{ArtifactPart{ArtifactID: "art_1"}})
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"artifact without capability", err, ErrCapabilityMissing})
	_, err = c.Runs.Create(context.Background(), Text("x"), WithPlanAction(PlanAction{SourceRunID: "run_1", Kind: PlanActionRevise}))
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"plan action without capability", err, ErrCapabilityMissing})
	_, err = c.Runs.Create(context.Background(), Text("x"), WithIdempotencyKey("bad key"))
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"malformed key", err, ErrInvalidArgument})
	_, err = c.Runs.Create(context.Background(), Text("x"), WithMaxTurns(101))
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"max turns", err, ErrInvalidArgument})
	_, err = c.Runs.Get(context.Background(), "../etc")
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"malformed run id", err, ErrInvalidArgument})
	_, err = c.Artifacts.Upload(context.Background(), []byte("x"), "text/plain")
	checks = append(checks, struct {
		name string
		err  error
		want error
	}{"upload without capability", err, ErrCapabilityMissing})
	for _, ch := range checks {
		if !errors.Is(ch.err, ch.want) {
			t.Errorf("%s: err %v, want %v", ch.name, ch.err, ch.want)
		}
		if e, ok := asError(ch.err); !ok || e.Code != codes.OK {
			t.Errorf("%s: not a local refusal: %v", ch.name, ch.err)
		}
	}
	if w.requests.Load() != sent {
		t.Fatalf("%d requests reached the worker", w.requests.Load()-sent)
	}
}

func TestListFollowsTokensThroughEmptyPages(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	pages := map[string]*pb.ListRunsResponse{
		"":  {Runs: []*pb.Run{{RunId: "run_3"}}, NextPageToken: "a"},
		"a": {NextPageToken: "b"},
		"b": {Runs: []*pb.Run{{RunId: "run_1"}}},
	}
	w.listFn = func(r *pb.ListRunsRequest) (*pb.ListRunsResponse, error) { return pages[r.GetPageToken()], nil }
	c := connectFake(t, w)
	var ids []string
	for run, err := range c.Runs.List(context.Background()) {
		if err != nil {
			t.Fatal(err)
		}
		ids = append(ids, run.RunID)
	}
	if fmt.Sprint(ids) != "[run_3 run_1]" {
		t.Fatalf("ids %v", ids)
	}
	page, err := c.Runs.ListPage(context.Background(), WithPageToken("a"))
	if err != nil || page.NextPageToken != "b" || len(page.Runs) != 0 {
		t.Fatalf("resume: %+v %v", page, err)
	}
	pages["a"] = &pb.ListRunsResponse{NextPageToken: "a"}
	var last error
	for _, err := range c.Runs.List(context.Background()) {
		last = err
	}
	if !errors.Is(last, ErrProtocolViolation) {
		t.Fatalf("a repeated empty page must fail: %v", last)
	}
}

func TestNoBearerInFormattingLogsOrErrors(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.createFn = func(*pb.CreateRunRequest) (*pb.CreateRunResponse, error) {
		return nil, status.Error(codes.Unavailable, "lost")
	}
	var logs bytes.Buffer
	opts := w.options(t, nil)
	opts.Logger = slog.New(slog.NewJSONHandler(&logs, &slog.HandlerOptions{Level: slog.LevelDebug}))
	c, err := Connect(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	_, createErr := c.Runs.Create(context.Background(), Text("hi"))
	provider, _ := NewInMemoryCredentialProvider(testBearer)
	secretValue, _ := newSecret(testBearer)
	var out strings.Builder
	for _, v := range []any{c, opts, &opts, provider, *provider, secretValue, *secretValue, struct{ s *secret }{secretValue},
		createErr, c.Runs, &bearerCredentials{s: secretValue}, bearerCredentials{s: secretValue}} {
		for _, verb := range []string{"%v", "%+v", "%#v", "%s", "%q"} {
			fmt.Fprintf(&out, verb+"\n", v)
		}
	}
	slog.New(slog.NewTextHandler(&out, nil)).Info("values", "client", c, "options", opts, "provider", provider, "error", createErr)
	_ = c.Close()
	for name, text := range map[string]string{"formatting": out.String(), "logs": logs.String()} {
		if strings.Contains(text, testBearer) || strings.Contains(text, testBearer[4:20]) {
			t.Fatalf("the bearer appears in %s", name)
		}
	}
	if !strings.Contains(logs.String(), "connected") {
		t.Fatal("the logger received no records")
	}
	if len(w.bearers) == 0 || w.bearers[0] != "Bearer "+testBearer {
		t.Fatal("the worker did not receive the bearer as authorization metadata")
	}
}

func TestClosedClientRefusesCalls(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	c := connectFake(t, w)
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Runs.Get(context.Background(), "run_1"); !errors.Is(err, ErrClientClosed) {
		t.Fatalf("err %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatal("Close is not idempotent")
	}
}

func TestDaemonOptionsAreValidatedBeforeAnyIO(t *testing.T) {
	provider := &countingProvider{bearer: testBearer}
	good := DaemonOptions{PublicAPIDir: "/nonexistent", ExpectedInstanceID: "wkr_1",
		ExpectedCertificateSHA256: strings.Repeat("a", 64), Credentials: provider}
	cases := map[string]func(o *DaemonOptions){
		"upper-case pin":   func(o *DaemonOptions) { o.ExpectedCertificateSHA256 = strings.Repeat("A", 64) },
		"short pin":        func(o *DaemonOptions) { o.ExpectedCertificateSHA256 = "abc" },
		"instance id":      func(o *DaemonOptions) { o.ExpectedInstanceID = "wkr 1" },
		"no credentials":   func(o *DaemonOptions) { o.Credentials = nil },
		"deployment mode":  func(o *DaemonOptions) { o.ExpectedDeploymentMode = "EMBEDDED" },
		"negative retries": func(o *DaemonOptions) { o.Retry = RetryPolicy{MaxAttempts: -1, Multiplier: 2} },
	}
	for name, mutate := range cases {
		o := good
		mutate(&o)
		_, err := Connect(context.Background(), o)
		var e *Error
		if !errors.Is(err, ErrInvalidArgument) || !errors.As(err, &e) || e.Metadata["field"] == "" {
			t.Errorf("%s: %v", name, err)
		}
	}
	if provider.calls.Load() != 0 {
		t.Fatal("the provider was asked for a bearer")
	}
}

func TestOpenWatchReadsItsCursorDirectly(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.watchFn = func(call int, req *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		return sendAll(s, outputEvent(3, "c"), terminalEvent(4))
	}
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: 4}}, nil
	}
	c := connectFake(t, w)
	watch := c.Runs.OpenWatch(context.Background(), "run_1", WithAfterSequence(2))
	if watch.LastSequence() != 2 || watch.Completed() || watch.FinalRun() != nil {
		t.Fatalf("before: %d %v %v", watch.LastSequence(), watch.Completed(), watch.FinalRun())
	}
	var seen []uint64
	for ev, err := range watch.Events() {
		if err != nil {
			t.Fatal(err)
		}
		seen = append(seen, ev.Sequence)
		if watch.LastSequence() != ev.Sequence {
			t.Fatalf("cursor %d while delivering %d", watch.LastSequence(), ev.Sequence)
		}
	}
	if fmt.Sprint(seen) != "[3 4]" || watch.LastSequence() != 4 || !watch.Completed() || watch.FinalRun() == nil || watch.Reconnects() != 0 {
		t.Fatalf("after: %v %d %v %v", seen, watch.LastSequence(), watch.Completed(), watch.FinalRun())
	}
}
