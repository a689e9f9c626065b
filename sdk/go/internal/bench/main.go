// Command bench prints the Go SDK's figures as ratios measured in one run:
//
//   - watch_ratio: SDK events/s over a raw grpc-go stub with the same dial options (pinned
//     TLS 1.3, bearer credentials, no retries, same receive cap) reading the same stored
//     4,099-event run from the reference worker, each timed until its last event; median
//     of per-round ratios, rounds alternating which side goes first (target >= 0.95);
//     watch_complete_ratio also counts the SDK's GetRun reconciliation of the clean close;
//   - connect_ratio: Connect (discovery checks, pre-flight handshake, channel, verified
//     GetServerInfo) over a raw dial plus one GetServerInfo (target <= 1.5);
//   - allocs_per_event, alloc_bytes_per_event: heap allocations and bytes per delivered
//     event, SDK minus raw; gc_per_watch: collections during each side's watch (on two
//     cores a collection takes CPU from the worker, and each watch allocates close to the
//     4 MiB heap minimum, so a few more bytes can mean one more collection);
//   - heap_growth_mib: live heap growth over a 100,000-event watch served by an
//     in-process fake worker (the reference worker caps a run at 4,099 events), from the
//     5,000th event to the peak (target < 5 MiB).
//
// With -cpuprofile FILE the paired watch rounds are profiled, the goroutine that consumes
// each side's watch labelled side=sdk or side=raw, so `go tool pprof -top -tagfocus
// side=sdk FILE` against -tagfocus side=raw shows what the SDK adds per event (gRPC's
// reader and writer goroutines and the garbage collector carry no label).
//
// Usage: go run ./internal/bench [-rounds N] [-events N] [-cpuprofile FILE]
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"slices"
	"strings"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

func main() {
	rounds := flag.Int("rounds", 21, "paired rounds per figure")
	events := flag.Int("events", 100_000, "events of the long watch (heap growth)")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile of the paired watch rounds to this file")
	flag.Parse()
	exe := os.Getenv("COLOSSUS_REFERENCE_WORKER")
	if exe == "" {
		log.Fatal("set COLOSSUS_REFERENCE_WORKER to the reference worker executable")
	}
	root, err := os.MkdirTemp("", "colossus-go-bench-")
	if err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(root)
	w, err := startWorker(exe, filepath.Join(root, "public-api"))
	if err != nil {
		log.Fatal(err)
	}
	defer w.stop()

	ctx := context.Background()
	opts := w.options()
	client, err := colossus.Connect(ctx, opts)
	if err != nil {
		log.Fatal(err)
	}
	runID, total := makeLongRun(ctx, client)
	raw, err := dialRaw(ctx, w)
	if err != nil {
		log.Fatal(err)
	}

	// Watch: one untimed warm-up each, then alternating paired rounds.
	sdkWatch(ctx, client, runID)
	raw.watch(ctx, runID)
	var watchRatios, completeRatios, sdkRates, rawRates, allocDiffs, byteDiffs, sdkGCs, rawGCs []float64
	stopProfile := startProfile(*cpuprofile)
	for i := range *rounds {
		var s, r roundResult
		if i%2 == 0 {
			s, r = sdkWatch(ctx, client, runID), raw.watch(ctx, runID)
		} else {
			r, s = raw.watch(ctx, runID), sdkWatch(ctx, client, runID)
		}
		if s.events != total || r.events != total {
			log.Fatalf("round %d: SDK saw %d events, raw %d, want %d", i, s.events, r.events, total)
		}
		sdkRates = append(sdkRates, s.rate())
		rawRates = append(rawRates, r.rate())
		watchRatios = append(watchRatios, s.rate()/r.rate())
		completeRatios = append(completeRatios, s.completeRate()/r.completeRate())
		allocDiffs = append(allocDiffs, (float64(s.mallocs)-float64(r.mallocs))/float64(total))
		byteDiffs = append(byteDiffs, (float64(s.bytes)-float64(r.bytes))/float64(total))
		sdkGCs, rawGCs = append(sdkGCs, float64(s.gcs)), append(rawGCs, float64(r.gcs))
	}
	stopProfile()

	// Connect: a full SDK connect against a raw dial plus one GetServerInfo.
	var connectRatios, sdkConnect, rawConnect []float64
	for i := range *rounds {
		measureSDK := func() float64 {
			start := time.Now()
			c, err := colossus.Connect(ctx, opts)
			if err != nil {
				log.Fatal(err)
			}
			d := time.Since(start).Seconds()
			c.Close()
			return d
		}
		measureRaw := func() float64 {
			d, err := rawConnectOnce(ctx, w)
			if err != nil {
				log.Fatal(err)
			}
			return d
		}
		var s, r float64
		if i%2 == 0 {
			s, r = measureSDK(), measureRaw()
		} else {
			r, s = measureRaw(), measureSDK()
		}
		sdkConnect, rawConnect = append(sdkConnect, s), append(rawConnect, r)
		connectRatios = append(connectRatios, s/r)
	}
	client.Close()
	raw.conn.Close()

	growth, longRate, err := heapGrowth(ctx, *events)
	if err != nil {
		log.Fatal(err)
	}

	fmt.Printf("run of %d events, %d paired rounds\n", total, *rounds)
	fmt.Printf("watch_sdk_events_per_s   %s\n", spread(sdkRates, "%.0f"))
	fmt.Printf("watch_raw_events_per_s   %s\n", spread(rawRates, "%.0f"))
	fmt.Printf("watch_ratio              %s  (target >= 0.95: %s)\n", spread(watchRatios, "%.3f"), verdict(median(watchRatios) >= 0.95))
	fmt.Printf("watch_complete_ratio     %s  (SDK including its GetRun reconciliation)\n", spread(completeRatios, "%.3f"))
	fmt.Printf("connect_sdk_ms           %s\n", spread(scale(sdkConnect, 1000), "%.1f"))
	fmt.Printf("connect_raw_ms           %s\n", spread(scale(rawConnect, 1000), "%.1f"))
	fmt.Printf("connect_ratio            %s  (target <= 1.5: %s)\n", spread(connectRatios, "%.2f"), verdict(median(connectRatios) <= 1.5))
	fmt.Printf("allocs_per_event         %s  (SDK minus raw)\n", spread(allocDiffs, "%.1f"))
	fmt.Printf("alloc_bytes_per_event    %s  (SDK minus raw)\n", spread(byteDiffs, "%.0f"))
	fmt.Printf("gc_per_watch             SDK %s, raw %s\n", spread(sdkGCs, "%.0f"), spread(rawGCs, "%.0f"))
	fmt.Printf("heap_growth_mib          %.2f over %d events at %.0f events/s  (target < 5 MiB: %s)\n",
		growth, *events, longRate, verdict(growth < 5))
}

type roundResult struct {
	events  int
	elapsed time.Duration
	// toLast is the time until the last event was in hand (the SDK's watch then still
	// reconciles the clean close with GetRun, which elapsed includes).
	toLast  time.Duration
	mallocs uint64
	bytes   uint64
	gcs     uint32
}

func (r roundResult) rate() float64         { return float64(r.events) / r.toLast.Seconds() }
func (r roundResult) completeRate() float64 { return float64(r.events) / r.elapsed.Seconds() }

// measure runs one round; f returns the event count and when the last event arrived.
func measure(f func() (int, time.Time)) roundResult {
	runtime.GC()
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	start := time.Now()
	n, last := f()
	elapsed := time.Since(start)
	runtime.ReadMemStats(&after)
	return roundResult{events: n, elapsed: elapsed, toLast: last.Sub(start), mallocs: after.Mallocs - before.Mallocs,
		bytes: after.TotalAlloc - before.TotalAlloc, gcs: after.NumGC - before.NumGC}
}

// startProfile starts a CPU profile into path (none when empty) and returns its stop.
func startProfile(path string) func() {
	if path == "" {
		return func() {}
	}
	f, err := os.Create(path)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	return func() {
		pprof.StopCPUProfile()
		if err := f.Close(); err != nil {
			log.Fatal(err)
		}
	}
}

// labelled runs f with the profiler label side=name on this goroutine.
func labelled(name string, f func() (int, time.Time)) func() (int, time.Time) {
	return func() (n int, last time.Time) {
		pprof.Do(context.Background(), pprof.Labels("side", name), func(context.Context) { n, last = f() })
		return n, last
	}
}

func sdkWatch(ctx context.Context, c *colossus.Client, runID string) roundResult {
	return measure(labelled("sdk", func() (int, time.Time) {
		n := 0
		var last time.Time
		for _, err := range c.Runs.Watch(ctx, runID) {
			if err != nil {
				log.Fatal(err)
			}
			n++
			last = time.Now()
		}
		return n, last
	}))
}

// makeLongRun creates a stored run of 4,099 events: 4,093 outputs, a prompt, a cancel.
func makeLongRun(ctx context.Context, c *colossus.Client) (string, int) {
	var b strings.Builder
	b.WriteString("colossus-script v1\n")
	for i := range 4093 {
		fmt.Fprintf(&b, "say event %d\n", i)
	}
	b.WriteString("ask Continue? | yes | no\n")
	created, err := c.Runs.Create(ctx, colossus.Text(b.String()))
	if err != nil {
		log.Fatal(err)
	}
	cancelled := false
	n := 0
	for ev, err := range c.Runs.Watch(ctx, created.Run.RunID) {
		if err != nil {
			log.Fatal(err)
		}
		n++
		if _, ok := ev.Payload.(*colossus.InteractionRequested); ok && !cancelled {
			cancelled = true
			if _, err := c.Runs.Cancel(ctx, created.Run.RunID); err != nil {
				log.Fatal(err)
			}
		}
	}
	return created.Run.RunID, n
}

func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	if len(s)%2 == 1 {
		return s[len(s)/2]
	}
	return (s[len(s)/2-1] + s[len(s)/2]) / 2
}

func spread(v []float64, format string) string {
	return fmt.Sprintf("median "+format+" (min "+format+", max "+format+")", median(v), slices.Min(v), slices.Max(v))
}

func scale(v []float64, k float64) []float64 {
	out := make([]float64, len(v))
	for i, x := range v {
		out[i] = x * k
	}
	return out
}

func verdict(ok bool) string {
	if ok {
		return "met"
	}
	return "NOT met"
}
