package colossus

import (
	"context"
	"errors"
	"io"
	"iter"
	"slices"
	"sync/atomic"
	"time"

	"google.golang.org/protobuf/proto"

	pb "github.com/obscuritylabs/colossus-sdks/sdk/go/gen/colossus/api/v1alpha1"
)

// ReconnectInfo is passed to the [WithOnReconnect] callback before each reconnect.
type ReconnectInfo struct {
	// RunID is the watched run.
	RunID string
	// Attempt is 1 for the first reconnect since the last delivered event.
	Attempt int
	// Delay is how long the watch waits before reconnecting.
	Delay time.Duration
	// AfterSequence is the cursor the new stream starts after.
	AfterSequence uint64
	// Cause is the retryable failure, or nil after a clean close of a running run.
	Cause error
}

// WatchProgress exposes a watch's cursor; pass it with [WithProgress]. It is safe to
// read from any goroutine, during and after the watch.
type WatchProgress struct {
	last       atomic.Uint64
	reconnects atomic.Int64
	completed  atomic.Bool
	final      atomic.Pointer[Run]
}

// LastSequence is the sequence of the last delivered event: store it, and a later
// watch can resume with [WithAfterSequence].
func (p *WatchProgress) LastSequence() uint64 { return p.last.Load() }

// Reconnects is how many times the watch reconnected.
func (p *WatchProgress) Reconnects() int { return int(p.reconnects.Load()) }

// Completed reports whether the watch proved it saw the whole run.
func (p *WatchProgress) Completed() bool { return p.completed.Load() }

// FinalRun is the ended run as GetRun confirmed it when the watch completed; nil before,
// or when the watch failed or was stopped early.
func (p *WatchProgress) FinalRun() *Run { return p.final.Load() }

// Watch is one run's watch as a value: its events ([Watch.Events], the same stream as
// [Runs.Watch]) and its cursor, read directly as in the other SDKs (Python's
// watch.last_sequence, TypeScript's watch.lastSequence, Rust's watch.last_sequence()).
// Open it with [Runs.OpenWatch]; it is safe to read from any goroutine.
type Watch struct {
	progress WatchProgress
	events   iter.Seq2[RunEvent, error]
}

// OpenWatch is [Runs.Watch] with the watch kept as a value, so its cursor is read
// directly: range over [Watch.Events], then store [Watch.LastSequence] and resume later
// with [WithAfterSequence]. It takes the options of [Runs.Watch]; [WithProgress] is not
// needed (the Watch is its own progress) and is replaced if given. Nothing is sent until
// Events is ranged over.
func (r *Runs) OpenWatch(ctx context.Context, runID string, opts ...CallOption) *Watch {
	w := &Watch{}
	w.progress.last.Store(collect(opts).afterSequence)
	w.events = r.Watch(ctx, runID, append(slices.Clone(opts), WithProgress(&w.progress))...)
	return w
}

// Events streams the run's events under the rules of [Runs.Watch].
func (w *Watch) Events() iter.Seq2[RunEvent, error] { return w.events }

// LastSequence is the sequence of the last delivered event (before the first, the
// [WithAfterSequence] cursor): store it, and a later watch resumes with WithAfterSequence.
func (w *Watch) LastSequence() uint64 { return w.progress.LastSequence() }

// Reconnects is how many times the watch reconnected.
func (w *Watch) Reconnects() int { return w.progress.Reconnects() }

// Completed reports whether the watch proved it saw the whole run.
func (w *Watch) Completed() bool { return w.progress.Completed() }

// FinalRun is the ended run as GetRun confirmed it when the watch completed; nil before,
// or when the watch failed or was stopped early.
func (w *Watch) FinalRun() *Run { return w.progress.FinalRun() }

func eventsEqual(a, b *pb.RunEvent) bool { return proto.Equal(a, b) }

// eventOverhead approximates the memory a decoded event holds beyond its variable fields.
const eventOverhead = 160

// retainedSize is what keeping an event in the replay window costs, for its byte bound.
// Output deltas, nearly every event of a long run, are sized without walking the message.
func retainedSize(ev *pb.RunEvent) int {
	if d, ok := ev.GetPayload().(*pb.RunEvent_OutputDelta); ok {
		return eventOverhead + len(ev.GetRunId()) + len(d.OutputDelta.GetText())
	}
	return eventOverhead + proto.Size(ev)
}

// Watch streams a run's events in order, each exactly once (scope runs:read), and ends
// only when it has proved it saw the whole run:
//
//   - an event repeated with the same content is dropped; one repeated with different
//     content fails with [ErrProtocolViolation]; a skipped sequence fails with a
//     [*WatchGapError] (errors.Is(err, ErrWatchGap));
//   - after UNAVAILABLE it reconnects from the last delivered sequence under the
//     client's Retry policy, or [WithRetry]'s (jittered backoff, attempt and elapsed-time budget);
//     any other failure ends the watch at once;
//   - a clean close is accepted as the end only when GetRun shows the same run terminal
//     at exactly the delivered cursor; a still-running run is resumed.
//
// An error is yielded at most once, as the last element. Leaving the loop or cancelling
// ctx closes the stream at once; it never cancels the run.
func (r *Runs) Watch(ctx context.Context, runID string, opts ...CallOption) iter.Seq2[RunEvent, error] {
	cfg, optErr := collectFor("Runs.Watch", opts, "WithRetry", "WithAfterSequence", "WithIdleTimeout", "WithOnReconnect", "WithProgress")
	return func(yield func(RunEvent, error) bool) {
		if optErr != nil {
			yield(RunEvent{}, optErr)
			return
		}
		if err := checkID(runID, "run_id"); err != nil {
			yield(RunEvent{}, err)
			return
		}
		if err := newWatchDriver(r, runID, cfg).run(ctx, yield); err != nil {
			yield(RunEvent{}, err)
		}
	}
}

type watchDriver struct {
	runs     *Runs
	cfg      *callConfig
	core     *watchCore[*pb.RunEvent]
	progress *WatchProgress
	// resumeAfter is where the next stream starts: the caller's cursor, then each of the
	// core's resume plans (as Rust's resume_after); the driver keeps no other cursor.
	resumeAfter uint64
}

func newWatchDriver(r *Runs, runID string, cfg *callConfig) *watchDriver {
	w := &watchDriver{runs: r, cfg: cfg, progress: cfg.progress, resumeAfter: cfg.afterSequence}
	if w.progress == nil {
		w.progress = &WatchProgress{}
	}
	w.progress.last.Store(cfg.afterSequence)
	w.core = newWatchCore(runID, cfg.afterSequence, r.c.opts.retryFor(cfg), eventsEqual, nil)
	return w
}

// errStopped means the consumer left the loop: nothing more is yielded.
var errStopped = errors.New("stopped")

func (w *watchDriver) run(ctx context.Context, yield func(RunEvent, error) bool) error {
	c := w.runs.c
	for {
		s, err := c.session(ctx)
		if err != nil {
			return err
		}
		closedCleanly, err := w.stream(ctx, s, yield)
		if errors.Is(err, errStopped) {
			return nil
		}
		var cause error
		reachedWorker := true
		if err != nil {
			e, ok := asError(err)
			if !ok || !e.retryableRead() || ctx.Err() != nil {
				return err
			}
			cause = err
			reachedWorker = e.Reason != ReasonUnreachable
		} else if closedCleanly {
			run, err := w.runs.Get(ctx, w.core.runID)
			if err != nil {
				return err
			}
			complete, err := w.core.onCleanClose(*run)
			if err != nil {
				return err
			}
			if complete {
				w.progress.final.Store(run)
				w.progress.completed.Store(true)
				return nil
			}
		}
		plan, ok := w.core.onRetryableFailure(reachedWorker)
		if !ok {
			if cause != nil {
				return cause
			}
			return newError(ErrTransport, ReasonWatchReconnectsSpent, "the watch kept closing before the run ended")
		}
		w.resumeAfter = plan.after
		info := ReconnectInfo{RunID: w.core.runID, Attempt: plan.attempt, Delay: plan.delay, AfterSequence: plan.after, Cause: cause}
		c.log.Info("watch reconnecting", "run_id", info.RunID, "after_sequence", info.AfterSequence, "attempt", info.Attempt, "delay", info.Delay)
		w.progress.reconnects.Add(1)
		if w.cfg.onReconnect != nil {
			w.cfg.onReconnect(info)
		}
		if err := s.pauseBeforeRetry(ctx, plan.delay); err != nil {
			return mapRPCError(ctx, err, readCall, "")
		}
	}
}

// stream runs one WatchRun stream. It returns (true, nil) on a clean close, an error on
// failure, or errStopped when the consumer stopped.
func (w *watchDriver) stream(ctx context.Context, s *session, yield func(RunEvent, error) bool) (bool, error) {
	streamCtx, cancel := context.WithCancel(ctx)
	defer cancel()
	var idle *time.Timer
	var idleFired atomic.Bool
	if d := w.cfg.idleTimeout; d > 0 {
		idle = time.AfterFunc(d, func() { idleFired.Store(true); cancel() })
		defer idle.Stop()
	}
	failed := func(err error) error {
		if idleFired.Load() {
			return newError(ErrWatchIdleTimeout, ReasonWatchIdleTimeout, "no event for %s", w.cfg.idleTimeout)
		}
		return s.mapError(ctx, err, readCall, "")
	}
	req := &pb.WatchRunRequest{RunId: w.core.runID, AfterSequence: w.resumeAfter}
	stream, err := s.runs.WatchRun(streamCtx, req, s.callOpts...)
	if err != nil {
		return false, failed(err)
	}
	// One response message serves the whole stream: each event it decodes is a new
	// RunEvent (decoding resets the message first), so only the wrapper is reused, which
	// saves an allocation per event.
	resp := new(pb.WatchRunResponse)
	for {
		err := stream.RecvMsg(resp)
		if err == io.EOF {
			return true, nil
		}
		if err != nil {
			return false, failed(err)
		}
		if idle != nil {
			idle.Reset(w.cfg.idleTimeout)
		}
		ev := resp.GetEvent()
		if ev == nil {
			return false, newError(ErrProtocolViolation, ReasonResponseMalformed, "the watch sent a message without an event")
		}
		_, terminal := ev.GetPayload().(*pb.RunEvent_Terminated)
		verdict, err := w.core.onEvent(ev.GetRunId(), ev.GetSequence(), ev, retainedSize(ev), terminal)
		if err != nil {
			return false, err
		}
		if verdict != verdictDeliver {
			continue
		}
		w.progress.last.Store(ev.GetSequence())
		if !yield(toEvent(ev), nil) {
			return false, errStopped
		}
	}
}
