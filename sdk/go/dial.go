package colossus

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	"google.golang.org/grpc"
	grpcbackoff "google.golang.org/grpc/backoff"
	"google.golang.org/grpc/connectivity"
)

// reconnectBackoff paces grpc-go's own reconnects of a broken channel at the pace of the
// first retry delays (grpc-go waits a second by default).
var reconnectBackoff = grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

// transientFailureWait bounds awaitFreshAttempt: reconnectBackoff's longest delay with
// its jitter, and some room.
const transientFailureWait = 2 * time.Second

// awaitFreshAttempt waits while conn is in TRANSIENT_FAILURE, until its own reconnect
// starts, or gone closes (a sidecar worker exited: its replacement is another channel).
// grpc-go fails a call started in that state at once with the last connection's error,
// without trying a new connection, so a retry sent then would spend an attempt of the
// budget on nothing (two silently dropped connections could end a watch).
func awaitFreshAttempt(ctx context.Context, conn *grpc.ClientConn, gone <-chan struct{}) {
	ctx, cancel := context.WithTimeout(ctx, transientFailureWait)
	defer cancel()
	if gone != nil {
		go func() {
			select {
			case <-gone:
				cancel()
			case <-ctx.Done():
			}
		}()
	}
	for conn.GetState() == connectivity.TransientFailure {
		if !conn.WaitForStateChange(ctx, connectivity.TransientFailure) {
			return
		}
	}
}

// dialRecorder opens the channel's TCP connections and remembers whether the latest
// one was refused. A refusal means nothing listens on the port (a restarting worker),
// so the failed call never reached a worker: retries then spend time, not attempts.
type dialRecorder struct {
	lastRefused atomic.Bool
}

func (d *dialRecorder) dial(ctx context.Context, address string) (net.Conn, error) {
	var dialer net.Dialer
	conn, err := dialer.DialContext(ctx, "tcp", address)
	d.lastRefused.Store(errors.Is(err, syscall.ECONNREFUSED))
	return conn, err
}

// refused reports whether the latest connection attempt was refused.
func (d *dialRecorder) refused() bool { return d.lastRefused.Load() }
