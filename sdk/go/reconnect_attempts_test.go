package colossus

import (
	"context"
	"net"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
	"google.golang.org/grpc/credentials/insecure"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// droppingListener resets the next `drops` connections it accepts before the TLS
// handshake, as a restarting worker's front may, and can cut every live connection. The
// SDK follows each silent drop with a version probe, which is dropped too: two drops are
// one failed attempt.
type droppingListener struct {
	net.Listener
	drops atomic.Int32

	mu   sync.Mutex
	live []net.Conn
}

func (l *droppingListener) Accept() (net.Conn, error) {
	for {
		conn, err := l.Listener.Accept()
		if err != nil {
			return nil, err
		}
		if l.drops.Add(-1) >= 0 {
			_ = conn.(*net.TCPConn).SetLinger(0) // close with RST
			_ = conn.Close()
			continue
		}
		l.drops.Store(0)
		l.mu.Lock()
		l.live = append(l.live, conn)
		l.mu.Unlock()
		return conn, nil
	}
}

// cutAll closes every accepted connection: the client's channel breaks.
func (l *droppingListener) cutAll() {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, c := range l.live {
		_ = c.Close()
	}
	l.live = nil
}

func startDroppingWorker(t *testing.T) (*fakeWorker, *droppingListener) {
	t.Helper()
	cert := newCert(t, false)
	inner, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	lis := &droppingListener{Listener: inner}
	w := &fakeWorker{cert: cert, info: defaultInfo()}
	w.serveOn(t, genuineTLS(cert), lis)
	w.getRunFn = func(req *pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: req.GetRunId(), Status: pb.RunStatus_RUN_STATUS_RUNNING}}, nil
	}
	return w, lis
}

// connectWithRetry connects to w with a retry policy of fast, fixed delays (1 ms), far
// shorter than grpc-go's wait between reconnects.
func connectWithRetry(t *testing.T, w *fakeWorker, attempts int) *Client {
	t.Helper()
	opts := w.options(t, nil)
	opts.Retry = RetryPolicy{MaxAttempts: attempts, InitialBackoff: time.Millisecond, MaxBackoff: time.Millisecond, Multiplier: 1}
	c, err := Connect(context.Background(), opts)
	if err != nil {
		t.Fatalf("connect: %v", err)
	}
	t.Cleanup(func() { _ = c.Close() })
	return c
}

// Each retry must be a new connection attempt. grpc-go fails a call made while the
// channel waits to reconnect with the previous attempt's error at once; retried then, a
// read would spend its attempts on that one failure.
func TestReadRetriesAreFreshConnectionAttempts(t *testing.T) {
	w, lis := startDroppingWorker(t)
	c := connectWithRetry(t, w, 3)

	lis.drops.Store(4) // two failed attempts, each with its probe; the third succeeds
	lis.cutAll()
	run, err := c.Runs.Get(context.Background(), "run_1")
	if err != nil {
		t.Fatalf("two failed connection attempts spent a budget of three: %v", err)
	}
	if run.RunID != "run_1" {
		t.Fatalf("run %q", run.RunID)
	}
	if left := lis.drops.Load(); left > 0 {
		t.Fatalf("%d drops were never met: the test did not exercise the retries", left)
	}
}

// The same holds for a watch's reconnects.
func TestWatchReconnectsAreFreshConnectionAttempts(t *testing.T) {
	w, lis := startDroppingWorker(t)
	w.watchFn = func(call int, req *pb.WatchRunRequest, stream pb.RunService_WatchRunServer) error {
		if call == 1 {
			if err := sendAll(stream, outputEvent(1, "one")); err != nil {
				return err
			}
			<-stream.Context().Done() // the consumer cuts the connection
			return stream.Context().Err()
		}
		return sendAll(stream, terminalEvent(req.GetAfterSequence()+1))
	}
	w.getRunFn = func(req *pb.GetRunRequest) (*pb.GetRunResponse, error) {
		return &pb.GetRunResponse{Run: &pb.Run{RunId: req.GetRunId(), Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: 2}}, nil
	}
	// The cut and two dropped reconnects are three failed attempts; the fourth succeeds.
	c := connectWithRetry(t, w, 4)

	var seqs []uint64
	for ev, err := range c.Runs.Watch(context.Background(), "run_1") {
		if err != nil {
			t.Fatalf("two failed reconnects ended the watch after %v: %v", seqs, err)
		}
		seqs = append(seqs, ev.Sequence)
		if ev.Sequence == 1 {
			lis.drops.Store(4)
			lis.cutAll()
		}
	}
	if len(seqs) != 2 || seqs[0] != 1 || seqs[1] != 2 {
		t.Fatalf("sequences %v, want [1 2]", seqs)
	}
	if left := lis.drops.Load(); left > 0 {
		t.Fatalf("%d drops were never met: the test did not exercise the reconnects", left)
	}
}

// A sidecar's wait for a fresh attempt ends when its worker exits: the replacement
// worker gets another channel, so waiting out this one's reconnect delay is pointless.
func TestAwaitFreshAttemptEndsWhenTheWorkerIsGone(t *testing.T) {
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	address := lis.Addr().String()
	_ = lis.Close() // nothing listens: every connection is refused
	conn, err := grpc.NewClient("passthrough:///"+address,
		grpc.WithTransportCredentials(insecure.NewCredentials()),
		grpc.WithConnectParams(grpc.ConnectParams{Backoff: grpcbackoff.Config{BaseDelay: time.Minute, Multiplier: 1, MaxDelay: time.Minute}}))
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = conn.Close() }()
	conn.Connect()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for conn.GetState() != connectivity.TransientFailure {
		if !conn.WaitForStateChange(ctx, conn.GetState()) {
			t.Fatal("the channel never reached TRANSIENT_FAILURE")
		}
	}

	waited := make(chan struct{})
	gone := make(chan struct{})
	go func() { awaitFreshAttempt(context.Background(), conn, gone); close(waited) }()
	select {
	case <-waited:
		t.Fatal("the wait ended while the channel was still waiting to reconnect")
	case <-time.After(200 * time.Millisecond):
	}
	close(gone)
	select {
	case <-waited:
	case <-time.After(time.Second):
		t.Fatal("the wait went on after the worker was gone")
	}
}
