package colossustest

import (
	"context"
	"crypto/rand"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"sync"
	"testing"
	"time"

	"google.golang.org/genproto/googleapis/rpc/errdetails"
	"google.golang.org/grpc"
	"google.golang.org/grpc/codes"
	"google.golang.org/grpc/credentials"
	"google.golang.org/grpc/metadata"
	"google.golang.org/grpc/status"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/protoadapt"
	"google.golang.org/protobuf/types/known/durationpb"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// InstanceID is the instance ID the fake worker reports.
const InstanceID = "wkr_fake"

const domain = "colossus.api.v1alpha1"

type script struct {
	texts  []string
	status colossus.RunStatus
}

// FakeWorker is a scripted stand-in for a Colossus worker, for an application's unit
// tests. Start it with [Start]; connect with [FakeWorker.DaemonOptions].
type FakeWorker struct {
	// UnimplementedSystemServiceServer is what grpc-go's generated server asks for: a
	// system RPC newer than the fake answers UNIMPLEMENTED.
	pb.UnimplementedSystemServiceServer
	// UnimplementedRunServiceServer is the same for the run service; the fake serves
	// every run RPC of v1alpha1.
	pb.UnimplementedRunServiceServer

	// Capabilities are the optional features it advertises.
	Capabilities []string

	leaf   leaf
	bearer string
	server *grpc.Server
	port   int
	dir    string

	mu      sync.Mutex
	calls   []string
	faults  []Fault
	scripts []script
	runs    map[string]*pb.Run
	order   []string
	events  map[string][]*pb.RunEvent
	byKey   map[string]string
}

// Start starts a fake worker on 127.0.0.1 with the capabilities plans.continue and
// research, writes its discovery files into a folder of tb's, and stops it when the test
// ends. It fails the test if it cannot start.
func Start(tb testing.TB) *FakeWorker {
	tb.Helper()
	l, err := newLeaf()
	if err != nil {
		tb.Fatalf("colossustest: %v", err)
	}
	secret := make([]byte, 32)
	if _, err := rand.Read(secret); err != nil {
		tb.Fatalf("colossustest: %v", err)
	}
	w := &FakeWorker{
		Capabilities: []string{"plans.continue", "research"},
		leaf:         l,
		bearer:       "fake-" + base64.RawURLEncoding.EncodeToString(secret),
		runs:         map[string]*pb.Run{},
		events:       map[string][]*pb.RunEvent{},
		byKey:        map[string]string{},
	}
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		tb.Fatalf("colossustest: %v", err)
	}
	w.port = lis.Addr().(*net.TCPAddr).Port
	cfg := &tls.Config{MinVersion: tls.VersionTLS13, Certificates: []tls.Certificate{l.tls}}
	w.server = grpc.NewServer(grpc.Creds(credentials.NewTLS(cfg)))
	pb.RegisterSystemServiceServer(w.server, w)
	pb.RegisterRunServiceServer(w.server, w)
	go func() { _ = w.server.Serve(lis) }()
	tb.Cleanup(w.server.Stop)
	if err := w.writeDiscovery(filepath.Join(tb.TempDir(), "public-api")); err != nil {
		tb.Fatalf("colossustest: %v", err)
	}
	return w
}

func (w *FakeWorker) writeDiscovery(dir string) error {
	if err := os.Mkdir(dir, 0o700); err != nil {
		return err
	}
	desc, err := json.Marshal(map[string]any{
		"endpoint": fmt.Sprintf("https://127.0.0.1:%d", w.port), "instance_id": InstanceID,
		"pid": os.Getpid(), "api_version": "v1alpha1", "certificate_sha256": w.leaf.pin,
	})
	if err != nil {
		return err
	}
	if err := os.WriteFile(filepath.Join(dir, "endpoint.json"), desc, 0o600); err != nil {
		return err
	}
	w.dir = dir
	return os.WriteFile(filepath.Join(dir, "certificate.pem"), w.leaf.pem, 0o600)
}

// DaemonOptions are options that connect to this worker, with fast retries (4 attempts,
// 10-50 ms apart) and 10 s timeouts; change any field before connecting.
func (w *FakeWorker) DaemonOptions() colossus.DaemonOptions {
	creds, err := colossus.NewInMemoryCredentialProvider(w.bearer)
	if err != nil {
		panic(err) // the fake's own bearer always has the right shape
	}
	return colossus.DaemonOptions{
		ClientOptions: colossus.ClientOptions{
			Timeout:        10 * time.Second,
			ConnectTimeout: 10 * time.Second,
			Retry:          colossus.RetryPolicy{MaxAttempts: 4, InitialBackoff: 10 * time.Millisecond, MaxBackoff: 50 * time.Millisecond, Multiplier: 2, MaxElapsed: 10 * time.Second},
		},
		PublicAPIDir:              w.dir,
		ExpectedInstanceID:        InstanceID,
		ExpectedCertificateSHA256: w.leaf.pin,
		Credentials:               creds,
	}
}

// Script queues what the next created run produces: the output texts, then a terminal
// event with status. It panics if status is not terminal.
func (w *FakeWorker) Script(status colossus.RunStatus, outputs ...string) {
	mustBeTerminal(status)
	w.mu.Lock()
	defer w.mu.Unlock()
	w.scripts = append(w.scripts, script{texts: slices.Clone(outputs), status: status})
}

// AddRun stores an already finished run, as if created earlier (for listing tests), and
// returns its ID. It panics if status is not terminal.
func (w *FakeWorker) AddRun(status colossus.RunStatus, outputs ...string) string {
	mustBeTerminal(status)
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.store(outputs, status, "")
}

// Inject arms faults; each is used once, by the next call it applies to, in the order
// given per method.
func (w *FakeWorker) Inject(faults ...Fault) {
	w.mu.Lock()
	defer w.mu.Unlock()
	w.faults = append(w.faults, faults...)
}

// Calls returns the RPC method names received so far, in order.
func (w *FakeWorker) Calls() []string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.calls)
}

func mustBeTerminal(s colossus.RunStatus) {
	if !s.IsTerminal() {
		panic(fmt.Sprintf("colossustest: a scripted run must end in a terminal status, not %s", s))
	}
}

// failure is a status with the contract's ErrorInfo (and a RetryInfo when delay > 0).
func failure(code codes.Code, reason string, delay time.Duration) error {
	st := status.New(code, reason)
	if reason == "" {
		return st.Err()
	}
	details := []protoadapt.MessageV1{protoadapt.MessageV1Of(&errdetails.ErrorInfo{Domain: domain, Reason: reason})}
	if delay > 0 {
		details = append(details, protoadapt.MessageV1Of(&errdetails.RetryInfo{RetryDelay: durationpb.New(delay)}))
	}
	if with, err := st.WithDetails(details...); err == nil {
		st = with
	}
	return st.Err()
}

// enter records the call, checks the bearer, and returns the fault meant for it.
func (w *FakeWorker) enter(ctx context.Context, method string) (*Fault, error) {
	md, _ := metadata.FromIncomingContext(ctx)
	w.mu.Lock()
	w.calls = append(w.calls, method)
	var fault *Fault
	if i := slices.IndexFunc(w.faults, func(f Fault) bool { return f.Method == method }); i >= 0 {
		f := w.faults[i]
		fault = &f
		w.faults = slices.Delete(w.faults, i, i+1)
	}
	w.mu.Unlock()
	if !slices.Equal(md.Get("authorization"), []string{"Bearer " + w.bearer}) {
		return nil, failure(codes.Unauthenticated, "CREDENTIAL_INVALID", 0)
	}
	if fault != nil && (fault.Kind == "fail" || fault.Kind == "rate_limit") {
		return nil, failure(fault.Code, fault.Reason, fault.RetryDelay)
	}
	return fault, nil
}

// GetServerInfo answers like a shared daemon with the worker's default limits.
func (w *FakeWorker) GetServerInfo(ctx context.Context, _ *pb.GetServerInfoRequest) (*pb.GetServerInfoResponse, error) {
	if _, err := w.enter(ctx, "GetServerInfo"); err != nil {
		return nil, err
	}
	return &pb.GetServerInfoResponse{ServerInfo: &pb.ServerInfo{
		InstanceId: InstanceID, ApiPackage: domain, ApiVersion: "v1alpha1", ApiMajor: 1,
		DeploymentMode: pb.DeploymentMode_DEPLOYMENT_MODE_SHARED_DAEMON,
		Capabilities:   slices.Clone(w.Capabilities),
		Limits: &pb.Limits{
			MaxRequestBytes: 2 << 20, MaxResponseBytes: 4 << 20, MaxInputParts: 128, MaxInputBytes: 1 << 20,
			MaxTurns: 100, DefaultMaxTurns: 20, MaxListPageSize: 3, MaxListStatusFilters: 9,
			CreateRate:               &pb.TokenBucket{RefillPerSecond: 4, Burst: 16},
			CreateRatePerApplication: &pb.TokenBucket{RefillPerSecond: 1, Burst: 4},
		},
		ServerVersion: "colossustest.FakeWorker",
	}}, nil
}

// CreateRun creates the next scripted run, or replays the one of the same key.
func (w *FakeWorker) CreateRun(ctx context.Context, req *pb.CreateRunRequest) (*pb.CreateRunResponse, error) {
	fault, err := w.enter(ctx, "CreateRun")
	if err != nil {
		return nil, err
	}
	w.mu.Lock()
	resp := &pb.CreateRunResponse{}
	if id, ok := w.byKey[req.GetIdempotencyKey()]; ok {
		resp.Run, resp.Replayed = w.runs[id], true
	} else {
		next := script{status: colossus.RunStatusSucceeded}
		if len(w.scripts) > 0 {
			next, w.scripts = w.scripts[0], w.scripts[1:]
		}
		resp.Run = w.runs[w.store(next.texts, next.status, req.GetIdempotencyKey())]
	}
	w.mu.Unlock()
	if fault != nil && fault.Kind == "after_commit" {
		return nil, status.Error(codes.Unavailable, "connection lost after commit")
	}
	return resp, nil
}

func (w *FakeWorker) run(id string) (*pb.Run, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	run, ok := w.runs[id]
	if !ok {
		return nil, failure(codes.NotFound, "RUN_NOT_FOUND", 0)
	}
	return run, nil
}

// GetRun returns a run as stored (or not started yet, under [NotStarted]).
func (w *FakeWorker) GetRun(ctx context.Context, req *pb.GetRunRequest) (*pb.GetRunResponse, error) {
	fault, err := w.enter(ctx, "GetRun")
	if err != nil {
		return nil, err
	}
	run, err := w.run(req.GetRunId())
	if err != nil {
		return nil, err
	}
	if fault != nil && fault.Kind == "not_started" {
		early := proto.Clone(run).(*pb.Run)
		early.Status, early.LastSequence, early.Result = pb.RunStatus_RUN_STATUS_QUEUED, 0, nil
		run = early
	}
	return &pb.GetRunResponse{Run: run}, nil
}

// ListRuns lists newest first, three a page.
func (w *FakeWorker) ListRuns(ctx context.Context, req *pb.ListRunsRequest) (*pb.ListRunsResponse, error) {
	if _, err := w.enter(ctx, "ListRuns"); err != nil {
		return nil, err
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	var all []*pb.Run
	for i := len(w.order) - 1; i >= 0; i-- {
		run := w.runs[w.order[i]]
		if len(req.GetStatuses()) == 0 || slices.Contains(req.GetStatuses(), run.GetStatus()) {
			all = append(all, run)
		}
	}
	start, _ := strconv.Atoi(req.GetPageToken())
	size := int(req.GetPageSize())
	if size == 0 || size > 3 {
		size = 3
	}
	start = min(max(start, 0), len(all))
	end := min(start+size, len(all))
	resp := &pb.ListRunsResponse{Runs: all[start:end]}
	if end < len(all) {
		resp.NextPageToken = strconv.Itoa(end)
	}
	return resp, nil
}

// WatchRun streams a run's events after the cursor, applying any watch fault.
func (w *FakeWorker) WatchRun(req *pb.WatchRunRequest, stream pb.RunService_WatchRunServer) error {
	fault, err := w.enter(stream.Context(), "WatchRun")
	if err != nil {
		return err
	}
	w.mu.Lock()
	events, ok := w.events[req.GetRunId()]
	w.mu.Unlock()
	if !ok {
		return failure(codes.NotFound, "RUN_NOT_FOUND", 0)
	}
	var pending []*pb.RunEvent
	for _, ev := range events {
		if ev.GetSequence() > req.GetAfterSequence() {
			pending = append(pending, ev)
		}
	}
	for i, ev := range pending {
		if fault != nil && i == fault.AfterEvents {
			switch {
			case fault.Kind == "drop":
				return status.Error(codes.Unavailable, "connection dropped")
			case fault.Kind == "gap":
				continue
			case fault.Kind == "replay" && i > 0:
				if err := stream.Send(&pb.WatchRunResponse{Event: pending[0]}); err != nil {
					return err
				}
			}
		}
		if err := stream.Send(&pb.WatchRunResponse{Event: ev}); err != nil {
			return err
		}
	}
	return nil
}

// CancelRun returns the run: scripted runs have already ended.
func (w *FakeWorker) CancelRun(ctx context.Context, req *pb.CancelRunRequest) (*pb.CancelRunResponse, error) {
	if _, err := w.enter(ctx, "CancelRun"); err != nil {
		return nil, err
	}
	run, err := w.run(req.GetRunId())
	if err != nil {
		return nil, err
	}
	return &pb.CancelRunResponse{Run: run}, nil
}

// RespondInteraction always answers NOT_FOUND: scripted runs never wait for an answer.
func (w *FakeWorker) RespondInteraction(ctx context.Context, _ *pb.RespondInteractionRequest) (*pb.RespondInteractionResponse, error) {
	if _, err := w.enter(ctx, "RespondInteraction"); err != nil {
		return nil, err
	}
	return nil, failure(codes.NotFound, "INTERACTION_NOT_FOUND", 0)
}

// store records an ended run and its events; the caller holds w.mu.
func (w *FakeWorker) store(texts []string, st colossus.RunStatus, key string) string {
	id := fmt.Sprintf("run_%d", len(w.runs)+1)
	pbStatus := pb.RunStatus(pb.RunStatus_value["RUN_STATUS_"+string(st)])
	output := ""
	var events []*pb.RunEvent
	for i, text := range texts {
		output += text
		events = append(events, &pb.RunEvent{RunId: id, Sequence: uint64(i + 1),
			Payload: &pb.RunEvent_OutputDelta{OutputDelta: &pb.OutputDelta{Text: text}}})
	}
	events = append(events, &pb.RunEvent{RunId: id, Sequence: uint64(len(texts) + 1),
		Payload: &pb.RunEvent_Terminated{Terminated: &pb.RunTerminated{Status: pbStatus, Result: &pb.RunResult{OutputText: output}}}})
	w.runs[id] = &pb.Run{
		RunId: id, SessionId: fmt.Sprintf("ses_%d", len(w.runs)+1), Mode: pb.RunMode_RUN_MODE_EXECUTE,
		Role: "default", Status: pbStatus, LastSequence: uint64(len(events)), IdempotencyKey: key,
		MaxTurns: 20, Result: &pb.RunResult{OutputText: output},
	}
	w.order = append(w.order, id)
	w.events[id] = events
	if key != "" {
		w.byKey[key] = id
	}
	return id
}
