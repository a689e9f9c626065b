package main

import (
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// longWorker streams one run of n events; it lives in this process, so the heap figure
// counts only what stays live (the server's garbage is collected like the client's).
type longWorker struct {
	pb.UnimplementedSystemServiceServer
	pb.UnimplementedRunServiceServer
	n uint64
}

func (w *longWorker) GetServerInfo(context.Context, *pb.GetServerInfoRequest) (*pb.GetServerInfoResponse, error) {
	return &pb.GetServerInfoResponse{ServerInfo: &pb.ServerInfo{InstanceId: "wkr_bench", ApiPackage: "colossus.api.v1alpha1",
		ApiVersion: "v1alpha1", ApiMajor: 1, DeploymentMode: pb.DeploymentMode_DEPLOYMENT_MODE_SHARED_DAEMON,
		Limits: &pb.Limits{MaxResponseBytes: 4 << 20, MaxRequestBytes: 2 << 20}}}, nil
}

func (w *longWorker) GetRun(context.Context, *pb.GetRunRequest) (*pb.GetRunResponse, error) {
	return &pb.GetRunResponse{Run: &pb.Run{RunId: "run_long", Status: pb.RunStatus_RUN_STATUS_SUCCEEDED, LastSequence: w.n}}, nil
}

func (w *longWorker) WatchRun(req *pb.WatchRunRequest, s pb.RunService_WatchRunServer) error {
	for seq := req.GetAfterSequence() + 1; seq <= w.n; seq++ {
		ev := &pb.RunEvent{RunId: "run_long", Sequence: seq,
			Payload: &pb.RunEvent_OutputDelta{OutputDelta: &pb.OutputDelta{Text: fmt.Sprintf("event %d of a long run", seq)}}}
		if seq == w.n {
			ev.Payload = &pb.RunEvent_Terminated{Terminated: &pb.RunTerminated{Status: pb.RunStatus_RUN_STATUS_SUCCEEDED}}
		}
		if err := s.Send(&pb.WatchRunResponse{Event: ev}); err != nil {
			return err
		}
	}
	return nil
}

func heapGrowth(ctx context.Context, n int) (growthMiB, rate float64, err error) {
	server, dir, pin, err := serveLongRun(n)
	if err != nil {
		return 0, 0, err
	}
	defer server.Stop()
	defer os.RemoveAll(dir)
	return watchLongRun(ctx, n, dir, pin)
}

// serveLongRun serves a run of n events in process, with discovery files in a new folder.
func serveLongRun(n int) (server *grpc.Server, dir, pin string, err error) {
	key, _ := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	tmpl := &x509.Certificate{SerialNumber: big.NewInt(1), Subject: pkix.Name{CommonName: "bench"},
		NotBefore: time.Now().Add(-time.Hour), NotAfter: time.Now().Add(time.Hour),
		BasicConstraintsValid: true, IPAddresses: []net.IP{net.ParseIP("127.0.0.1")}}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return nil, "", "", err
	}
	sum := sha256.Sum256(der)
	pin = hex.EncodeToString(sum[:])
	lis, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, "", "", err
	}
	server = grpc.NewServer(grpc.Creds(credentials.NewTLS(&tls.Config{MinVersion: tls.VersionTLS13,
		Certificates: []tls.Certificate{{Certificate: [][]byte{der}, PrivateKey: key}}})))
	lw := &longWorker{n: uint64(n)}
	pb.RegisterSystemServiceServer(server, lw)
	pb.RegisterRunServiceServer(server, lw)
	go func() { _ = server.Serve(lis) }()
	dir, err = os.MkdirTemp("", "colossus-go-bench-long-")
	if err != nil {
		server.Stop()
		return nil, "", "", err
	}
	desc := fmt.Sprintf(`{"endpoint": "https://%s", "instance_id": "wkr_bench", "pid": 1, "api_version": "v1alpha1", "certificate_sha256": %q}`, lis.Addr(), pin)
	err = os.WriteFile(filepath.Join(dir, "endpoint.json"), []byte(desc), 0o600)
	if err == nil {
		err = os.WriteFile(filepath.Join(dir, "certificate.pem"), pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), 0o600)
	}
	return server, dir, pin, err
}

func watchLongRun(ctx context.Context, n int, dir, pin string) (growthMiB, rate float64, err error) {
	provider, _ := colossus.NewInMemoryCredentialProvider("cb1_benchbenchbenchbenchbenchbenchbenchbench")
	client, err := colossus.Connect(ctx, colossus.DaemonOptions{PublicAPIDir: dir, ExpectedInstanceID: "wkr_bench",
		ExpectedCertificateSHA256: pin, Credentials: provider})
	if err != nil {
		return 0, 0, err
	}
	defer client.Close()
	live := func() uint64 {
		runtime.GC()
		var m runtime.MemStats
		runtime.ReadMemStats(&m)
		return m.HeapAlloc
	}
	var baseline, peak uint64
	count := 0
	start := time.Now()
	for _, err := range client.Runs.Watch(ctx, "run_long") {
		if err != nil {
			return 0, 0, err
		}
		count++
		switch {
		case count == 5000:
			baseline = live()
			peak = baseline
		case count > 5000 && count%5000 == 0:
			peak = max(peak, live())
		}
	}
	elapsed := time.Since(start)
	peak = max(peak, live())
	if count != n {
		return 0, 0, fmt.Errorf("the long watch delivered %d events, want %d", count, n)
	}
	return float64(peak-baseline) / (1 << 20), float64(count) / elapsed.Seconds(), nil
}
