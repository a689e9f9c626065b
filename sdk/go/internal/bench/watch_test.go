package main

import (
	"context"
	"os"
	"testing"
	"time"

	colossus "github.com/obscuritylabs/colossus-sdks/sdk/go"
)

// BenchmarkWatch is the focused profile of the watch: each iteration reads one run of
// 4,099 events from an in-process worker with the SDK and with a raw stub, alternating
// which goes first, so the client's own work per event is the whole difference. With
//
//	go test ./internal/bench -run '^$' -bench Watch -benchtime 1000x -cpuprofile cpu.out
//	go tool pprof -top -tagfocus side=sdk cpu.out   (and side=raw)
//
// the two sides' consuming goroutines compare frame by frame.
func BenchmarkWatch(b *testing.B) {
	const events = 4099
	server, dir, pin, err := serveLongRun(events)
	if err != nil {
		b.Fatal(err)
	}
	defer server.Stop()
	defer os.RemoveAll(dir)
	ctx := context.Background()
	w := &worker{dir: dir, instanceID: "wkr_bench", pin: pin, bearer: "cb1_benchbenchbenchbenchbenchbenchbenchbench"}
	client, err := colossus.Connect(ctx, w.options())
	if err != nil {
		b.Fatal(err)
	}
	defer client.Close()
	raw, err := dialRaw(ctx, w)
	if err != nil {
		b.Fatal(err)
	}
	defer raw.conn.Close()
	var sdkTime, rawTime time.Duration
	var sdkAllocs, rawAllocs uint64
	rounds := 0
	for b.Loop() {
		var s, r roundResult
		if rounds%2 == 0 {
			s, r = sdkWatch(ctx, client, "run_long"), raw.watch(ctx, "run_long")
		} else {
			r, s = raw.watch(ctx, "run_long"), sdkWatch(ctx, client, "run_long")
		}
		if s.events != events || r.events != events {
			b.Fatalf("SDK saw %d events, raw %d, want %d", s.events, r.events, events)
		}
		rounds++
		sdkTime, rawTime = sdkTime+s.toLast, rawTime+r.toLast
		sdkAllocs, rawAllocs = sdkAllocs+s.mallocs, rawAllocs+r.mallocs
	}
	n := float64(rounds * events)
	b.ReportMetric(float64(sdkTime.Nanoseconds())/n, "sdk-ns/event")
	b.ReportMetric(float64(rawTime.Nanoseconds())/n, "raw-ns/event")
	b.ReportMetric(float64(sdkAllocs)/n, "sdk-allocs/event")
	b.ReportMetric(float64(rawAllocs)/n, "raw-allocs/event")
}
