package main

import (
	"context"
	"crypto/sha256"
	"crypto/tls"
	"encoding/hex"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"time"

	"google.golang.org/grpc"
	"google.golang.org/grpc/credentials"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// raw is the baseline: a generated grpc-go stub on a channel with the SDK's dial options
// (TLS 1.3 only with the same pin check, bearer per-RPC credentials, no retries, the same
// receive cap), and none of the SDK's work around it.
type raw struct {
	conn *grpc.ClientConn
	runs pb.RunServiceClient
}

type bearerCreds string

func (b bearerCreds) GetRequestMetadata(context.Context, ...string) (map[string]string, error) {
	return map[string]string{"authorization": "Bearer " + string(b)}, nil
}
func (bearerCreds) RequireTransportSecurity() bool { return true }

func rawDialOptions(w *worker) ([]grpc.DialOption, string, error) {
	data, err := os.ReadFile(filepath.Join(w.dir, "endpoint.json"))
	if err != nil {
		return nil, "", err
	}
	var d struct {
		Endpoint string `json:"endpoint"`
	}
	if err := json.Unmarshal(data, &d); err != nil {
		return nil, "", err
	}
	cfg := &tls.Config{
		MinVersion: tls.VersionTLS13, MaxVersion: tls.VersionTLS13, InsecureSkipVerify: true, NextProtos: []string{"h2"},
		VerifyConnection: func(cs tls.ConnectionState) error {
			sum := sha256.Sum256(cs.PeerCertificates[0].Raw)
			if len(cs.PeerCertificates) != 1 || hex.EncodeToString(sum[:]) != w.pin {
				return errors.New("pin mismatch")
			}
			return nil
		},
	}
	return []grpc.DialOption{
		grpc.WithTransportCredentials(credentials.NewTLS(cfg)),
		grpc.WithPerRPCCredentials(bearerCreds(w.bearer)),
		grpc.WithDisableRetry(),
		grpc.WithDefaultCallOptions(grpc.MaxCallRecvMsgSize(4 << 20)),
	}, "passthrough:///" + strings.TrimPrefix(d.Endpoint, "https://"), nil
}

func dialRaw(ctx context.Context, w *worker) (*raw, error) {
	opts, target, err := rawDialOptions(w)
	if err != nil {
		return nil, err
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return nil, err
	}
	return &raw{conn: conn, runs: pb.NewRunServiceClient(conn)}, nil
}

func (r *raw) watch(ctx context.Context, runID string) roundResult {
	return measure(labelled("raw", func() (int, time.Time) {
		stream, err := r.runs.WatchRun(ctx, &pb.WatchRunRequest{RunId: runID})
		if err != nil {
			panic(err)
		}
		n := 0
		var last time.Time
		for {
			_, err := stream.Recv()
			if err == io.EOF {
				return n, last
			}
			if err != nil {
				panic(err)
			}
			n++
			last = time.Now()
		}
	}))
}

// rawConnectOnce is a new channel plus one GetServerInfo, waiting for readiness.
func rawConnectOnce(ctx context.Context, w *worker) (float64, error) {
	start := time.Now()
	opts, target, err := rawDialOptions(w)
	if err != nil {
		return 0, err
	}
	conn, err := grpc.NewClient(target, opts...)
	if err != nil {
		return 0, err
	}
	defer conn.Close()
	if _, err := pb.NewSystemServiceClient(conn).GetServerInfo(ctx, &pb.GetServerInfoRequest{}, grpc.WaitForReady(true)); err != nil {
		return 0, err
	}
	return time.Since(start).Seconds(), nil
}
