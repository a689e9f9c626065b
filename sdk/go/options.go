package colossus

import (
	"context"
	"log/slog"
	"time"
)

// DefaultMaxResponseBytes is the inbound message cap before GetServerInfo answers; it is
// lowered to the worker's advertised response cap when that is smaller (C7).
const DefaultMaxResponseBytes = 4 * 1024 * 1024

// TraceContextFunc returns the W3C traceparent and tracestate of the current span (empty
// strings for none). It is asked on every call.
type TraceContextFunc func(ctx context.Context) (traceparent, tracestate string)

// ClientOptions is the behaviour both placements share. The zero value of every field
// means its documented default.
type ClientOptions struct {
	// Timeout is the default per-call deadline (default 30 s; negative: none). Watches
	// have no overall deadline; see WatchIdleTimeout.
	Timeout time.Duration
	// ConnectTimeout bounds the pre-flight handshake and GetServerInfo (default 10 s).
	ConnectTimeout time.Duration
	// Retry is the policy of reads (GetServerInfo, GetRun, ListRuns, DownloadArtifact)
	// and of watch reconnects. The zero value is [DefaultRetry]; [WithRetry] overrides it
	// for one call.
	Retry RetryPolicy
	// MaxResponseBytes caps inbound messages (default and ceiling: DefaultMaxResponseBytes).
	MaxResponseBytes int
	// TraceContext, when set, supplies traceparent/tracestate for every call.
	TraceContext TraceContextFunc
	// Logger receives connection, reconnect and restart records; nil discards them.
	// No record ever holds a bearer.
	Logger *slog.Logger
}

// DaemonOptions connects to an installed shared worker. The four inputs are independent:
// the discovery folder (a readiness hint only), the expected instance ID and certificate
// SHA-256 from enrolment (from your own trusted configuration, never re-read from the
// folder), and a credential provider for the bearer.
type DaemonOptions struct {
	// ClientOptions are the settings both placements share (timeouts, retry, response cap,
	// tracing and logging).
	ClientOptions
	// PublicAPIDir is the worker's --public-api-dir (owner-only, mode 0700).
	PublicAPIDir string
	// ExpectedInstanceID is the instance ID enrolment printed.
	ExpectedInstanceID string
	// ExpectedCertificateSHA256 is the certificate pin enrolment printed (64 lower-case hex).
	ExpectedCertificateSHA256 string
	// Credentials supplies the bearer; asked only after every trust check passed.
	Credentials CredentialProvider
	// ExpectedDeploymentMode is what GetServerInfo must report (default SharedDaemon).
	ExpectedDeploymentMode DeploymentMode
}

// SidecarOptions starts and supervises a private worker.
type SidecarOptions struct {
	// ClientOptions are the settings both placements share (timeouts, retry, response cap,
	// tracing and logging).
	ClientOptions
	// Executable is the worker program; a bare name is looked up on PATH.
	Executable string
	// ExtraArgs are non-secret arguments placed before the bootstrap flags.
	ExtraArgs []string
	// ApplicationID is the application the one-use bearer is issued to.
	ApplicationID string
	// Scopes are the exact scopes to grant (default runs:execute, runs:read,
	// runs:control, prompts:respond).
	Scopes []string
	// Roles are the logical roles to grant (default "default"); the first is the default.
	Roles []string
	// Tools are the tools to grant (empty denies all).
	Tools []string
	// StateDir is an existing directory owned by this user, mode 0700; empty creates a
	// private temporary one, removed on Close.
	StateDir string
	// StartupTimeout bounds the bootstrap exchange (default 30 s).
	StartupTimeout time.Duration
	// MaxRestarts is how many unexpected exits are restarted over the client's life (0-3;
	// default 3; -1 disables restarts).
	MaxRestarts int
	// RestartBackoff spaces those restarts (the zero value: [DefaultRestartBackoff]).
	RestartBackoff RetryPolicy
	// ShutdownGrace is how long the worker gets to exit after its pipe closes before its
	// process group is sent SIGTERM, then SIGKILL (default 5 s).
	ShutdownGrace time.Duration
	// InheritStderr lets the worker write to this process's stderr.
	InheritStderr bool
}

func (o ClientOptions) timeout() time.Duration {
	switch {
	case o.Timeout == 0:
		return 30 * time.Second
	case o.Timeout < 0:
		return 0
	}
	return o.Timeout
}

func (o ClientOptions) connectTimeout() time.Duration {
	if o.ConnectTimeout <= 0 {
		return 10 * time.Second
	}
	return o.ConnectTimeout
}

func (o ClientOptions) logger() *slog.Logger {
	if o.Logger == nil {
		return slog.New(slog.DiscardHandler)
	}
	return o.Logger
}

func (o ClientOptions) maxResponseBytes() int {
	if o.MaxResponseBytes <= 0 || o.MaxResponseBytes > DefaultMaxResponseBytes {
		return DefaultMaxResponseBytes
	}
	return o.MaxResponseBytes
}

// retry is the client's policy for reads and watch reconnects.
func (o ClientOptions) retry() RetryPolicy { return o.Retry.orDefault() }

// retryFor is the policy of one call: its WithRetry override, else the client's.
func (o ClientOptions) retryFor(cfg *callConfig) RetryPolicy {
	if cfg != nil && cfg.retry != nil {
		return cfg.retry.orDefault()
	}
	return o.retry()
}

func (o ClientOptions) validate() error {
	return o.Retry.validate("Retry")
}
