package colossus

import (
	"context"
	"errors"
	"net"
	"sync/atomic"
	"syscall"
	"time"

	grpcbackoff "google.golang.org/grpc/backoff"
)

// reconnectBackoff paces grpc-go's own reconnects of a broken channel, so that a read or
// watch retry after a restart finds a fresh connection attempt rather than the cached
// failure of the last one.
var reconnectBackoff = grpcbackoff.Config{BaseDelay: 100 * time.Millisecond, Multiplier: 1.6, Jitter: 0.2, MaxDelay: time.Second}

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
