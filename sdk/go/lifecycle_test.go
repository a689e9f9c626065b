package colossus

import (
	"context"
	"errors"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"testing"
	"time"

	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/status"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// Cancellation, deadlines and Close as a Go caller expects them: a cancelled call says so
// through errors.Is(err, context.Canceled) as well as through the SDK's own sentinels,
// and nothing keeps running once the client is closed.

// blockingWorker answers GetRun and ListRuns only when the test ends, and reports each
// call's arrival, so a test can cancel a call it knows is in flight.
func blockingWorker(t *testing.T) (*fakeWorker, <-chan struct{}) {
	t.Helper()
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	arrived := make(chan struct{}, 16)
	release := make(chan struct{})
	t.Cleanup(func() { close(release) }) // runs before the server stops (cleanups are LIFO)
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		arrived <- struct{}{}
		<-release
		return nil, status.Error(codes.NotFound, "no run")
	}
	w.listFn = func(*pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
		arrived <- struct{}{}
		<-release
		return &pb.ListRunsResponse{}, nil
	}
	return w, arrived
}

// cancelOnArrival cancels ctx once the worker holds the call.
func cancelOnArrival(arrived <-chan struct{}) (context.Context, context.CancelFunc) {
	ctx, cancel := context.WithCancel(context.Background())
	go func() {
		select {
		case <-arrived:
			cancel()
		case <-ctx.Done():
		}
	}()
	return ctx, cancel
}

func TestACancelledCallMatchesContextCanceledAndTheTransportSentinel(t *testing.T) {
	w, arrived := blockingWorker(t)
	c := connectFake(t, w)

	ctx, cancel := cancelOnArrival(arrived)
	defer cancel()
	_, err := c.Runs.Get(ctx, "run_1")
	if !errors.Is(err, ErrTransport) || !errors.Is(err, context.Canceled) {
		t.Fatalf("Get: %v; want ErrTransport and context.Canceled", err)
	}

	ctx, cancel = cancelOnArrival(arrived)
	defer cancel()
	var listErr error
	for _, err := range c.Runs.List(ctx) {
		listErr = err
	}
	if !errors.Is(listErr, ErrTransport) || !errors.Is(listErr, context.Canceled) {
		t.Fatalf("List: %v; want ErrTransport and context.Canceled", listErr)
	}

	already, cancelNow := context.WithCancel(context.Background())
	cancelNow()
	if _, err := c.Runs.Get(already, "run_1"); !errors.Is(err, context.Canceled) {
		t.Fatalf("Get on a cancelled context: %v; want context.Canceled", err)
	}
}

func TestAnExpiredDeadlineMatchesContextDeadlineExceeded(t *testing.T) {
	w, _ := blockingWorker(t)
	c := connectFake(t, w)
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Millisecond)
	defer cancel()
	_, err := c.Runs.Get(ctx, "run_1")
	if !errors.Is(err, ErrDeadlineExceeded) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Get: %v; want ErrDeadlineExceeded and context.DeadlineExceeded", err)
	}
}

func TestACancelledWatchMatchesContextCanceled(t *testing.T) {
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
	if !errors.Is(last, context.Canceled) {
		t.Fatalf("err %v; want context.Canceled", last)
	}
}

// silentListener accepts TCP connections and never says a byte.
func silentListener(t *testing.T) net.Listener {
	t.Helper()
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = lis.Close() })
	go func() {
		var held []net.Conn
		defer func() {
			for _, c := range held {
				_ = c.Close()
			}
		}()
		for {
			conn, err := lis.Accept()
			if err != nil {
				return
			}
			held = append(held, conn)
		}
	}()
	return lis
}

func TestConnectGivesUpWhenItsContextEnds(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	opts := w.options(t, nil)
	w.server.Stop()
	// The discovery files name an address where something accepts and never answers.
	w.addr = silentListener(t).Addr().String()
	opts.PublicAPIDir = w.writeDiscovery(t)
	opts.ConnectTimeout = time.Hour
	ctx, cancel := context.WithTimeout(context.Background(), 200*time.Millisecond)
	defer cancel()
	c, err := Connect(ctx, opts)
	if err == nil {
		_ = c.Close()
		t.Fatal("Connect succeeded against a listener that never answered")
	}
	if !errors.Is(err, ErrColossus) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("Connect: %v; want an SDK error matching context.DeadlineExceeded", err)
	}
}

// settledGoroutines waits for the goroutine count to fall back to at most want.
func settledGoroutines(t *testing.T, want int) {
	t.Helper()
	for range 300 {
		if runtime.NumGoroutine() <= want {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	buf := make([]byte, 1<<16)
	t.Fatalf("goroutines: %d before, %d after Close\n%s", want, runtime.NumGoroutine(), buf[:runtime.Stack(buf, true)])
}

func TestCloseLeavesNoGoroutineBehind(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.getRunFn = func(*pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_1", Status: pb.RunStatus_RUN_STATUS_RUNNING}}, nil
	}
	w.watchFn = func(_ int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		_ = sendAll(s, outputEvent(1, "a"))
		<-s.Context().Done()
		return nil
	}
	before := runtime.NumGoroutine()
	c, err := Connect(context.Background(), w.options(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c.Runs.Get(context.Background(), "run_1"); err != nil {
		t.Fatal(err)
	}
	for _, err := range c.Runs.Watch(context.Background(), "run_1") {
		if err != nil {
			t.Fatal(err)
		}
		break
	}
	if err := c.Close(); err != nil {
		t.Fatal(err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	settledGoroutines(t, before)
}

func TestCloseEndsAWatchInProgress(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	w.watchFn = func(_ int, _ *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
		_ = sendAll(s, outputEvent(1, "a"))
		<-s.Context().Done()
		return nil
	}
	before := runtime.NumGoroutine()
	c, err := Connect(context.Background(), w.options(t, nil))
	if err != nil {
		t.Fatal(err)
	}
	var last error
	for ev, err := range c.Runs.Watch(context.Background(), "run_1") {
		if err != nil {
			last = err
			break
		}
		if ev.Sequence == 1 {
			go func() { _ = c.Close() }()
		}
	}
	if !errors.Is(last, ErrColossus) {
		t.Fatalf("watch ended with %v; want an SDK error once the client closed", last)
	}
	if w.watchCalls != 1 {
		t.Fatalf("the watch reopened %d times after Close", w.watchCalls-1)
	}
	settledGoroutines(t, before)
}

func TestStartSidecarGivesUpWhenItsContextEndsAndEndsTheGroup(t *testing.T) {
	dir := t.TempDir()
	pidFile := filepath.Join(dir, "pid")
	// A worker that starts and never answers the bootstrap request.
	script := filepath.Join(dir, "silent-worker")
	body := "#!/bin/sh\necho $$ > " + pidFile + "\nexec sleep 600\n"
	if err := os.WriteFile(script, []byte(body), 0o700); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 500*time.Millisecond)
	defer cancel()
	c, err := StartSidecar(ctx, SidecarOptions{Executable: script, ApplicationID: "go-sidecar-cancel", StartupTimeout: time.Hour})
	if err == nil {
		_ = c.Close()
		t.Fatal("StartSidecar succeeded against a worker that never answered")
	}
	if !errors.Is(err, ErrSidecar) || !errors.Is(err, context.DeadlineExceeded) {
		t.Fatalf("StartSidecar: %v; want ErrSidecar matching context.DeadlineExceeded", err)
	}
	raw, readErr := os.ReadFile(pidFile)
	if readErr != nil {
		t.Fatalf("the silent worker never started: %v", readErr)
	}
	pid, convErr := strconv.Atoi(strings.TrimSpace(string(raw)))
	if convErr != nil {
		t.Fatal(convErr)
	}
	if groupAlive(pid) {
		t.Fatal("the worker's process group outlived the failed start")
	}
}

func TestAMissingDiscoveryFolderMatchesFsErrNotExist(t *testing.T) {
	cert := newCert(t, false)
	w := startFakeWorker(t, cert, genuineTLS(cert), "")
	opts := w.options(t, nil)
	opts.PublicAPIDir = filepath.Join(t.TempDir(), "not-installed")
	_, err := Connect(context.Background(), opts)
	if !errors.Is(err, ErrDescriptor) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Connect: %v; want ErrDescriptor matching fs.ErrNotExist", err)
	}
	opts = w.options(t, nil)
	if err := os.Remove(filepath.Join(opts.PublicAPIDir, endpointFile)); err != nil {
		t.Fatal(err)
	}
	_, err = Connect(context.Background(), opts)
	if !errors.Is(err, ErrDescriptor) || !errors.Is(err, fs.ErrNotExist) {
		t.Fatalf("Connect without endpoint.json: %v; want ErrDescriptor matching fs.ErrNotExist", err)
	}
}
