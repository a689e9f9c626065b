package colossus

import (
	"context"
	"log/slog"
	"sync"
	"sync/atomic"
)

// Client is a verified connection to one worker. It is safe for concurrent use. Close it
// when done; a sidecar client also stops its worker.
type Client struct {
	// Runs creates, reads, lists, watches, cancels and answers runs.
	Runs *Runs
	// Artifacts uploads and downloads artifacts (needs the artifacts capability).
	Artifacts *Artifacts

	opts    ClientOptions
	log     *slog.Logger
	mu      sync.Mutex
	current *session
	sidecar *sidecarSupervisor
	closed  atomic.Bool
	// root is the client a WithOptions client derives from: it owns the connection.
	root *Client
}

func newClient(o ClientOptions, s *session, sc *sidecarSupervisor) *Client {
	c := &Client{opts: o, log: o.logger(), current: s, sidecar: sc}
	c.Runs = &Runs{c: c}
	c.Artifacts = &Artifacts{c: c}
	return c
}

// Connect checks a daemon's discovery files against the provisioned identity, makes a
// pinned TLS 1.3 pre-flight handshake, only then asks the credential provider for the
// bearer, and verifies GetServerInfo before returning. Nothing is sent to a worker that
// fails a check, and the bearer is sent to none.
func Connect(ctx context.Context, o DaemonOptions) (*Client, error) {
	if !isOpaqueID(o.ExpectedInstanceID) {
		return nil, invalidField("ExpectedInstanceID", "ExpectedInstanceID must be 1-64 characters of [A-Za-z0-9_-]")
	}
	if !isPin(o.ExpectedCertificateSHA256) {
		return nil, invalidField("ExpectedCertificateSHA256", "ExpectedCertificateSHA256 must be 64 lower-case hex characters")
	}
	if o.Credentials == nil {
		return nil, invalidField("Credentials", "Credentials is required")
	}
	if err := o.validate(); err != nil {
		return nil, err
	}
	mode := o.ExpectedDeploymentMode
	switch mode {
	case "":
		mode = DeploymentModeSharedDaemon
	case DeploymentModeSharedDaemon, DeploymentModeSidecar:
	default:
		return nil, invalidField("ExpectedDeploymentMode", "ExpectedDeploymentMode must be SHARED_DAEMON or SIDECAR, not %q", mode)
	}
	found, err := discover(o.PublicAPIDir, o.ExpectedInstanceID, o.ExpectedCertificateSHA256)
	if err != nil {
		return nil, err
	}
	t := target{endpoint: found.descriptor.Endpoint, expectedInstanceID: o.ExpectedInstanceID,
		expectedPin: o.ExpectedCertificateSHA256, expectedMode: mode}
	creds := func(ctx context.Context) (*secret, error) { return loadSecret(ctx, o.Credentials) }
	s, err := openSession(ctx, t, creds, o.ClientOptions, o.logger())
	if err != nil {
		return nil, err
	}
	return newClient(o.ClientOptions, s, nil), nil
}

// ServerInfo returns the verified GetServerInfo answer: identity, capabilities, limits.
func (c *Client) ServerInfo() ServerInfo {
	if c.root != nil {
		return c.root.ServerInfo()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current.info
}

// session returns the live session, restarting an exited sidecar first (at most
// MaxRestarts times). A call in flight when a worker died is never replayed.
func (c *Client) session(ctx context.Context) (*session, error) {
	if c.root != nil {
		return c.root.session(ctx)
	}
	if c.closed.Load() {
		return nil, newError(ErrClientClosed, ReasonClientClosed, "the client is closed")
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.sidecar != nil && c.sidecar.needsRestart() {
		s, err := c.sidecar.restart(ctx, c.current)
		if err != nil {
			return nil, err
		}
		c.current = s
	}
	return c.current, nil
}

// currentSession is the session calls use now, without restarting a sidecar.
func (c *Client) currentSession() *session {
	if c.root != nil {
		return c.root.currentSession()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.current
}

// Close closes the channel and, for a sidecar, ends the worker's process group. It is
// idempotent. Watches in progress end with an error. Closing a client made by
// [Client.WithOptions] closes the client it came from, and so every client sharing it.
func (c *Client) Close() error {
	if c.root != nil {
		return c.root.Close()
	}
	if c.closed.Swap(true) {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.current != nil {
		// Closing fails only for a channel that is already closed, which is the goal.
		_ = c.current.conn.Close()
	}
	if c.sidecar != nil {
		c.sidecar.close()
	}
	return nil
}
