package colossus

import (
	"context"
	"iter"
)

// Wait blocks until the run has ended and returns it, with its status and result (scope
// runs:read), as Temporal's handle.Get. It reads the run; if it has not ended, it watches
// it from its current sequence with every guarantee of [Runs.Watch] (each event once, gaps
// and altered replays fail, reconnects from the last delivered event, a clean close counts
// only once GetRun confirms it) and returns the run that confirming GetRun read.
//
// Options: [WithTimeout] and [WithRetry] apply to the first read, [WithRetry],
// [WithIdleTimeout], [WithOnReconnect] and [WithProgress] to the watch. A run waiting for
// an answer keeps Wait waiting: bound it with ctx or [WithIdleTimeout].
func (r *Runs) Wait(ctx context.Context, runID string, opts ...CallOption) (*Run, error) {
	cfg, err := collectFor("Runs.Wait", opts, "WithTimeout", "WithRetry", "WithIdleTimeout", "WithOnReconnect", "WithProgress")
	if err != nil {
		return nil, err
	}
	var readOpts []CallOption
	if cfg.timeout != nil {
		readOpts = append(readOpts, WithTimeout(*cfg.timeout))
	}
	if cfg.retry != nil {
		readOpts = append(readOpts, WithRetry(*cfg.retry))
	}
	run, err := r.Get(ctx, runID, readOpts...)
	if err != nil {
		return nil, err
	}
	if run.Status.IsTerminal() {
		return run, nil
	}
	progress := cfg.progress
	if progress == nil {
		progress = &WatchProgress{}
	}
	// The watch takes the same options but the read's deadline (WithTimeout).
	watchOpts := []CallOption{WithAfterSequence(run.LastSequence), WithProgress(progress)}
	if cfg.retry != nil {
		watchOpts = append(watchOpts, WithRetry(*cfg.retry))
	}
	if cfg.idleTimeout != 0 {
		watchOpts = append(watchOpts, WithIdleTimeout(cfg.idleTimeout))
	}
	if cfg.onReconnect != nil {
		watchOpts = append(watchOpts, WithOnReconnect(cfg.onReconnect))
	}
	for _, err := range r.Watch(ctx, runID, watchOpts...) {
		if err != nil {
			return nil, err
		}
	}
	if final := progress.FinalRun(); final != nil {
		return final, nil
	}
	// The watch ended without a confirmed run only when it was stopped under us.
	if err := contextEnded(ctx); err != nil {
		return nil, mapRPCError(ctx, err, readCall, "")
	}
	return nil, newError(ErrClientClosed, ReasonClientClosed, "the client was closed while waiting for run %s", runID)
}

// TextStream yields the run's output text as it is released, one piece per output
// delta, in order (scope runs:read): a [Runs.Watch] with the same options, rules and
// errors that skips every other event. It ends after the terminal event; pass
// [WithProgress] to read the ended run from [WatchProgress.FinalRun] afterwards.
func (r *Runs) TextStream(ctx context.Context, runID string, opts ...CallOption) iter.Seq2[string, error] {
	return func(yield func(string, error) bool) {
		for ev, err := range r.Watch(ctx, runID, opts...) {
			if err != nil {
				yield("", err)
				return
			}
			if delta, ok := ev.Payload.(*OutputDelta); ok && !yield(delta.Text, nil) {
				return
			}
		}
	}
}
