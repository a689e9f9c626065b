package colossus

import (
	"strconv"
	"time"
)

// Replay window bounds: a watch remembers at most this many delivered events, and at
// most this many bytes of them (encoded size), to tell an exact replay from an altered
// one. The byte bound holds two responses of the largest size a client accepts
// (DefaultMaxResponseBytes); the newest event is always kept, however large.
const (
	replayWindowEvents = 1024
	replayWindowBytes  = 8 << 20
)

// watchVerdict is what the driver does with one received event.
type watchVerdict int

const (
	verdictDeliver watchVerdict = iota
	verdictDrop
)

// windowEntry is one remembered event.
type windowEntry[C any] struct {
	content C
	size    int
}

// watchCore holds the watch rules (S1) with no I/O: dedup by content, gap detection,
// order checks, clean-close reconciliation and the reconnect budget. The driver feeds it
// what the stream did and does what it answers. Memory is bounded by the window limits.
type watchCore[C any] struct {
	runID    string
	last     uint64
	terminal bool
	equal    func(a, b C) bool

	// window holds the delivered events last-count+1 .. last in a ring.
	window   []windowEntry[C]
	head     int // index of the oldest entry
	count    int
	bytes    int
	maxBytes int

	budget     *backoff
	reconnects int // since the last delivered event
	progressed bool
}

func newWatchCore[C any](runID string, after uint64, policy RetryPolicy, equal func(a, b C) bool, now func() time.Time) *watchCore[C] {
	return &watchCore[C]{
		runID:    runID,
		last:     after,
		equal:    equal,
		window:   make([]windowEntry[C], replayWindowEvents),
		maxBytes: replayWindowBytes,
		budget:   newBackoff(policy, now),
	}
}

// lastSequence is the cursor of the last delivered event.
func (c *watchCore[C]) lastSequence() uint64 { return c.last }

// finished reports whether the terminal event was delivered.
func (c *watchCore[C]) finished() bool { return c.terminal }

func (c *watchCore[C]) remember(content C, size int) {
	if c.count == len(c.window) {
		c.evict()
	}
	for c.count > 0 && c.bytes+size > c.maxBytes {
		c.evict()
	}
	c.window[(c.head+c.count)%len(c.window)] = windowEntry[C]{content: content, size: size}
	c.count++
	c.bytes += size
}

func (c *watchCore[C]) evict() {
	var zero windowEntry[C]
	c.bytes -= c.window[c.head].size
	c.window[c.head] = zero
	c.head = (c.head + 1) % len(c.window)
	c.count--
}

// lookup returns the remembered content of an already delivered sequence.
func (c *watchCore[C]) lookup(seq uint64) (C, bool) {
	var zero C
	if c.count == 0 || seq > c.last || c.last-seq >= uint64(c.count) {
		return zero, false
	}
	offset := c.count - 1 - int(c.last-seq)
	return c.window[(c.head+offset)%len(c.window)].content, true
}

// onEvent classifies one received event.
func (c *watchCore[C]) onEvent(runID string, seq uint64, content C, size int, terminal bool) (watchVerdict, error) {
	if runID != c.runID {
		return 0, newError(ErrProtocolViolation, ReasonWatchWrongRun, "the watch delivered an event of another run")
	}
	if seq <= c.last {
		seen, ok := c.lookup(seq)
		if !ok {
			return 0, newError(ErrProtocolViolation, ReasonWatchReplayUnverified,
				"the watch re-sent sequence %d, which cannot be verified (cursor %d)", seq, c.last)
		}
		if !c.equal(seen, content) {
			return 0, newError(ErrProtocolViolation, ReasonWatchReplayAltered,
				"the watch replayed sequence %d with different content", seq)
		}
		return verdictDrop, nil
	}
	if c.terminal {
		return 0, newError(ErrProtocolViolation, ReasonWatchAfterTerminal, "the watch sent an event after the terminal event")
	}
	if seq != c.last+1 {
		e := newError(ErrWatchGap, ReasonWatchGap, "the watch skipped from sequence %d to %d", c.last, seq)
		e.Metadata = map[string]string{"expected": strconv.FormatUint(c.last+1, 10), "received": strconv.FormatUint(seq, 10)}
		return 0, &WatchGapError{Err: e, Expected: c.last + 1, Received: seq}
	}
	c.remember(content, size)
	c.last = seq
	c.terminal = terminal
	c.progressed = true
	return verdictDeliver, nil
}

// resumePlan says when and from where to reconnect.
type resumePlan struct {
	delay   time.Duration
	attempt int
	after   uint64
}

// onRetryableFailure returns the next reconnect, or ok=false when the budget is spent.
// Progress since the previous failure starts a fresh budget; a failure that never
// reached the worker (reachedWorker=false) spends time but no attempt.
func (c *watchCore[C]) onRetryableFailure(reachedWorker bool) (resumePlan, bool) {
	if c.progressed {
		c.progressed = false
		c.budget.reset()
		c.reconnects = 0
	}
	delay, _, ok := c.budget.next(reachedWorker)
	if !ok {
		return resumePlan{attempt: c.reconnects, after: c.last}, false
	}
	c.reconnects++
	return resumePlan{delay: delay, attempt: c.reconnects, after: c.last}, true
}

// onCleanClose reconciles a stream that ended with OK against GetRun: complete only when
// the same run is terminal exactly at the delivered cursor; resume when it is still
// running and consistent; fail otherwise.
func (c *watchCore[C]) onCleanClose(run Run) (complete bool, err error) {
	if run.RunID != c.runID {
		return false, newError(ErrProtocolViolation, ReasonWatchReconcileMismatch, "GetRun returned another run while reconciling a watch")
	}
	if run.Status.IsTerminal() {
		if run.LastSequence == c.last {
			return true, nil
		}
		e := newError(ErrProtocolViolation, ReasonWatchReconcileMismatch,
			"the watch closed at sequence %d but the run ended at %d", c.last, run.LastSequence)
		e.Metadata = map[string]string{"delivered": strconv.FormatUint(c.last, 10), "run": strconv.FormatUint(run.LastSequence, 10)}
		return false, e
	}
	if run.LastSequence < c.last || c.terminal {
		return false, newError(ErrProtocolViolation, ReasonWatchReconcileMismatch, "the run's state contradicts the events the watch delivered")
	}
	return false, nil
}
