package colossus

import (
	"context"
	"errors"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"golang.org/x/sys/unix"
)

var defaultSidecarScopes = []string{"runs:execute", "runs:read", "runs:control", "prompts:respond"}

// StartSidecar starts a private worker with no shell, hands it its grant through an
// inherited pipe, validates every member of its reply (endpoint, pin, certificate,
// instance ID, one-use bearer), then connects exactly like a daemon connection and
// requires GetServerInfo to say SIDECAR. The bearer never leaves process memory.
//
// An unexpected exit is restarted by the next call that needs the worker, at most
// MaxRestarts times with backoff; a call in flight when it died is never replayed.
// Close ends the worker's whole process group.
func StartSidecar(ctx context.Context, o SidecarOptions) (*Client, error) {
	if err := o.validate(); err != nil {
		return nil, err
	}
	sup, err := newSidecarSupervisor(o)
	if err != nil {
		return nil, err
	}
	s, err := sup.start(ctx)
	// A worker that died while we connected to it is replaced like one that dies later,
	// within the same budget. A failed spawn or bootstrap (ErrSidecar) is not an exit.
	for err != nil && ctx.Err() == nil && !errors.Is(err, ErrSidecar) && sup.diedWhileConnecting() {
		s, err = sup.restart(ctx, nil)
	}
	if err != nil {
		sup.close()
		return nil, err
	}
	return newClient(o.ClientOptions, s, sup), nil
}

func (o SidecarOptions) validate() error {
	if o.Executable == "" {
		return invalidField("Executable", "Executable is required")
	}
	if !isOpaqueID(o.ApplicationID) {
		return invalidField("ApplicationID", "ApplicationID must be 1-64 characters of [A-Za-z0-9_-]")
	}
	if o.MaxRestarts < -1 || o.MaxRestarts > 3 {
		return invalidField("MaxRestarts", "MaxRestarts must be between 0 and 3 (-1 disables restarts)")
	}
	if err := o.RestartBackoff.validate("RestartBackoff"); err != nil {
		return err
	}
	return o.ClientOptions.validate()
}

// restartBackoff is RestartBackoff with its zero fields taken from DefaultRestartBackoff.
func (o SidecarOptions) restartBackoff() RetryPolicy {
	return o.RestartBackoff.withDefaults(DefaultRestartBackoff)
}

func (o SidecarOptions) maxRestarts() int {
	switch {
	case o.MaxRestarts < 0:
		return 0
	case o.MaxRestarts == 0:
		return 3
	}
	return o.MaxRestarts
}

func orDefault(d, fallback time.Duration) time.Duration {
	if d <= 0 {
		return fallback
	}
	return d
}

// sidecarProcess is one spawned worker.
type sidecarProcess struct {
	cmd       *exec.Cmd
	keepalive *os.File // our end of the request pipe: closing it asks the worker to stop
	reply     *bootstrapReply
	exited    chan struct{}
	closing   bool
	mu        sync.Mutex
	reaped    bool
}

// DefaultRestartBackoff spaces the restarts of a sidecar that exited unexpectedly when
// SidecarOptions.RestartBackoff is the zero value: full-jitter delays from 0.5 s doubling
// up to 5 s (MaxRestarts, not this policy, bounds how many restarts happen).
var DefaultRestartBackoff = RetryPolicy{MaxAttempts: 4, InitialBackoff: 500 * time.Millisecond,
	MaxBackoff: 5 * time.Second, Multiplier: 2, MaxElapsed: 30 * time.Second}

// sidecarSupervisor owns the worker across restarts.
type sidecarSupervisor struct {
	opts     SidecarOptions
	log      *slog.Logger
	stateDir string
	ownedDir string
	restarts int
	process  *sidecarProcess
	backoff  *backoff
}

func newSidecarSupervisor(o SidecarOptions) (*sidecarSupervisor, error) {
	sup := &sidecarSupervisor{opts: o, log: o.logger(),
		backoff: newBackoff(o.restartBackoff(), nil)}
	if o.StateDir == "" {
		dir, err := os.MkdirTemp("", "colossus-sidecar-")
		if err != nil {
			return nil, newError(ErrSidecar, ReasonStateDirInvalid, "cannot create a private state directory")
		}
		sup.stateDir, sup.ownedDir = dir, dir
	} else {
		if !filepath.IsAbs(o.StateDir) {
			return nil, invalidField("StateDir", "StateDir must be an absolute path")
		}
		sup.stateDir = o.StateDir
	}
	if err := checkPrivateDir(sup.stateDir, ErrSidecar, "the sidecar state directory"); err != nil {
		return nil, err
	}
	return sup, nil
}

func (sup *sidecarSupervisor) start(ctx context.Context) (*session, error) {
	p, err := spawnSidecar(ctx, sup.opts, sup.stateDir, sup.log)
	if err != nil {
		return nil, err
	}
	sup.process = p
	t := target{endpoint: p.reply.endpoint, expectedInstanceID: p.reply.instanceID,
		expectedPin: p.reply.certificate.sha256, expectedMode: DeploymentModeSidecar}
	bearer := p.reply.bearer
	// The worker's exit ends the connect at once: a child that inherited its listening
	// socket can keep accepting connections nobody answers, and the connect would wait
	// for its whole timeout instead of replacing the worker.
	connectCtx, cancel := context.WithCancel(ctx)
	go func() {
		select {
		case <-p.exited:
			cancel()
		case <-connectCtx.Done():
		}
	}()
	s, err := openSession(connectCtx, t, func(context.Context) (*secret, error) { return bearer, nil }, sup.opts.ClientOptions, sup.log)
	cancel()
	if err != nil {
		if ctx.Err() == nil && sup.needsRestart() {
			return nil, newError(ErrTransport, ReasonUnavailable, "the sidecar worker exited while the SDK connected to it")
		}
		return nil, err
	}
	s.gone = p.exited
	return s, nil
}

func (sup *sidecarSupervisor) needsRestart() bool {
	p := sup.process
	if p == nil {
		return true
	}
	select {
	case <-p.exited:
		return true
	default:
		return false
	}
}

// exitNoticeGrace bounds the wait for a worker's exit to be reaped after a connect failed.
const exitNoticeGrace = time.Second

// diedWhileConnecting reports whether the worker exited, after a connect to it failed. A
// dying worker can refuse the connection just before its exit is noticed, so this waits up
// to exitNoticeGrace for it.
func (sup *sidecarSupervisor) diedWhileConnecting() bool {
	return sup.process != nil && sup.process.exitedWithin(exitNoticeGrace)
}

// restart replaces a worker that exited unexpectedly (bounded, with backoff).
func (sup *sidecarSupervisor) restart(ctx context.Context, old *session) (*session, error) {
	if old != nil {
		_ = old.conn.Close()
	}
	if sup.process != nil {
		sup.process.stop(0, sup.log)
	}
	if sup.restarts >= sup.opts.maxRestarts() {
		return nil, newError(ErrSidecar, ReasonSidecarRestartsSpent,
			"the sidecar exited unexpectedly and %d restarts were used", sup.restarts)
	}
	sup.restarts++
	delay, _, ok := sup.backoff.next(true)
	if !ok {
		delay = sup.opts.restartBackoff().MaxBackoff
	}
	sup.log.Warn("restarting sidecar worker", "restart", sup.restarts, "delay", delay)
	if err := sleep(ctx, delay); err != nil {
		return nil, mapRPCError(ctx, err, readCall, "")
	}
	return sup.start(ctx)
}

func (sup *sidecarSupervisor) close() {
	if sup.process != nil {
		sup.process.stop(orDefault(sup.opts.ShutdownGrace, 5*time.Second), sup.log)
	}
	if sup.ownedDir != "" {
		_ = os.RemoveAll(sup.ownedDir)
		sup.ownedDir = ""
	}
}

func spawnSidecar(ctx context.Context, o SidecarOptions, stateDir string, log *slog.Logger) (*sidecarProcess, error) {
	path, err := exec.LookPath(o.Executable)
	if err != nil {
		return nil, programNotFound(o.Executable, err)
	}
	scopes, roles, tools := o.Scopes, o.Roles, o.Tools
	if scopes == nil {
		scopes = defaultSidecarScopes
	}
	if roles == nil {
		roles = []string{"default"}
	}
	if tools == nil {
		tools = []string{}
	}
	request, err := encodeFrame(bootstrapRequest{Version: bootstrapVersion, StateDir: stateDir,
		ApplicationID: o.ApplicationID, Grant: bootstrapGrant{Scopes: scopes, Roles: roles, Tools: tools}})
	if err != nil {
		return nil, err
	}
	inRead, inWrite, err := os.Pipe()
	if err != nil {
		return nil, newError(ErrSidecar, ReasonBootstrapIO, "cannot create the bootstrap pipe")
	}
	outRead, outWrite, err := os.Pipe()
	if err != nil {
		inRead.Close()
		inWrite.Close()
		return nil, newError(ErrSidecar, ReasonBootstrapIO, "cannot create the bootstrap pipe")
	}
	args := append(append([]string{}, o.ExtraArgs...), "--sidecar", "--bootstrap-in-fd", "3", "--bootstrap-out-fd", "4")
	// exec.Cmd never uses a shell; ExtraFiles become descriptors 3 and 4 in the child.
	cmd := exec.Command(path, args...)
	cmd.ExtraFiles = []*os.File{inRead, outWrite}
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	if o.InheritStderr {
		cmd.Stderr = os.Stderr
	}
	startErr := cmd.Start()
	// The child's ends must close here, or we would never see end-of-file.
	inRead.Close()
	outWrite.Close()
	if startErr != nil {
		inWrite.Close()
		outRead.Close()
		return nil, newError(ErrSidecar, ReasonSidecarSpawnFailed, "cannot start the worker").withMeta("program", o.Executable)
	}
	p := &sidecarProcess{cmd: cmd, keepalive: inWrite, exited: make(chan struct{})}
	go p.watchExit(log)
	log.Info("started sidecar worker", "pid", cmd.Process.Pid)
	reply, err := p.bootstrap(ctx, request, outRead, orDefault(o.StartupTimeout, 30*time.Second))
	outRead.Close()
	if err != nil {
		p.stop(0, log)
		return nil, err
	}
	p.reply = reply
	return p, nil
}

func (p *sidecarProcess) bootstrap(ctx context.Context, request []byte, replies *os.File, timeout time.Duration) (*bootstrapReply, error) {
	deadline := time.Now().Add(timeout)
	callerDeadline := false
	if d, ok := ctx.Deadline(); ok && d.Before(deadline) {
		deadline, callerDeadline = d, true
	}
	_ = replies.SetReadDeadline(deadline)
	stop := context.AfterFunc(ctx, func() { _ = replies.SetReadDeadline(time.Now()) })
	defer stop()
	if _, err := p.keepalive.Write(request); err != nil {
		return nil, newError(ErrSidecar, ReasonBootstrapIO, "the worker did not accept the bootstrap request")
	}
	body, err := readFrame(replies)
	if err != nil {
		if e, ok := asError(err); ok {
			return nil, e
		}
		if errors.Is(err, os.ErrDeadlineExceeded) {
			e := newError(ErrSidecar, ReasonBootstrapTimeout, "the sidecar did not answer in time")
			// Cut short by the caller's context: errors.Is(err, context.Canceled) holds (the
			// read deadline can fire a moment before the context's own timer).
			if e.cause = ctx.Err(); e.cause == nil && callerDeadline {
				e.cause = context.DeadlineExceeded
			}
			return nil, e
		}
		return nil, newError(ErrSidecar, ReasonBootstrapEOF, "the sidecar closed the bootstrap pipe early")
	}
	return parseBootstrapReply(body)
}

// watchExit waits for the worker to exit without reaping it, so its process group ID
// cannot be reused before stop has signalled every straggler in it.
// exitedWithin reports whether the worker has exited, waiting up to d to find out.
func (p *sidecarProcess) exitedWithin(d time.Duration) bool {
	t := time.NewTimer(d)
	defer t.Stop()
	select {
	case <-p.exited:
		return true
	case <-t.C:
		return false
	}
}

func (p *sidecarProcess) watchExit(log *slog.Logger) {
	var info unix.Siginfo
	for {
		err := unix.Waitid(unix.P_PID, p.cmd.Process.Pid, &info, unix.WEXITED|unix.WNOWAIT, nil)
		if err != unix.EINTR {
			break
		}
	}
	p.mu.Lock()
	closing := p.closing
	p.mu.Unlock()
	if !closing {
		log.Warn("sidecar worker exited unexpectedly", "pid", p.cmd.Process.Pid)
	}
	close(p.exited)
}

// stop closes the request pipe (the worker shuts down gracefully), waits grace, then
// sends SIGTERM and SIGKILL to the whole process group, and reaps the worker.
func (p *sidecarProcess) stop(grace time.Duration, log *slog.Logger) {
	p.mu.Lock()
	if p.reaped {
		p.mu.Unlock()
		return
	}
	p.closing = true
	p.reaped = true
	p.mu.Unlock()
	_ = p.keepalive.Close()
	pgid := p.cmd.Process.Pid
	if !p.exitedWithin(grace) {
		_ = syscall.Kill(-pgid, syscall.SIGTERM)
		if !p.exitedWithin(2 * time.Second) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			p.exitedWithin(5 * time.Second)
		}
	}
	// Descendants that outlived the leader.
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
	_ = p.cmd.Wait()
	log.Info("sidecar worker stopped", "pid", pgid)
}

// programNotFound is the refusal of a worker program that does not exist, with what to do.
func programNotFound(program string, cause error) *Error {
	e := newError(ErrSidecar, ReasonSidecarProgramNotFound,
		"the sidecar worker program %q was not found: install the worker "+
			"(the reference worker: pip install ./conformance in a checkout of colossus-sdks) or set SidecarOptions.Executable to its absolute path", program)
	e.cause = cause
	return e.withMeta("program", program)
}
