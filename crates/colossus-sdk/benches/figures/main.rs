//! The Rust SDK's figures, as ratios measured in one run (`./noxw -s bench_rust_sdk`), printed
//! with the Go bench's labels (sdk/go/internal/bench) so the SDKs' figures line up:
//!
//! - `watch_ratio`: SDK events/s over a raw tonic client of the same generated stubs on a
//!   channel the SDK's own way (same endpoint settings, the SDK's pinned TLS 1.3 connector,
//!   bearer header, the same 4 MiB receive cap, no retries), reading the same stored
//!   4,099-event run from the reference worker, each timed until its last event; median of
//!   per-round ratios, rounds alternating which side goes first (target >= 0.95);
//! - `watch_complete_ratio`: the same, each timed until its watch ended: the SDK's includes
//!   the closing GetRun that proves the run complete, the raw one ends at the trailers
//!   (target >= 0.93);
//! - `cpu_sdk_us_per_event`, `cpu_raw_us_per_event`: this process's CPU time per event in
//!   the same rounds (every thread; the worker is another process): each side's own cost,
//!   which the machine's other load hardly moves, unlike the rates;
//! - `connect_ratio`: `Client::connect` (discovery checks, handshake, verified
//!   GetServerInfo) over reading endpoint.json, a raw channel and one GetServerInfo
//!   (target <= 1.5);
//! - `allocs_per_event`: heap allocations per delivered event, SDK minus raw, counted in
//!   rounds of their own (the timed rounds count nothing);
//! - `heap_growth_mib`: growth of the live heap (a counting global allocator) over a
//!   100,000-event watch, from the 5,000th event to the peak (target < 5 MiB, as in the other SDKs). The
//!   reference worker caps a run at 4,099 events, so this run is served by a fake worker
//!   in a child process (this program again): the figure counts only the client.
//!   `heap_growth_raw_mib` is the raw client's over the same run: HTTP/2 buffering
//!   (hyper's 2 MiB stream window fills when the server sends faster than the client
//!   reads) is in both. `heap_retained_mib` is the growth still live at the last event,
//!   when nothing is buffered any more: what a watch keeps per event (zero or less).
//!
//! Usage: `cargo bench -p colossus-sdk --features bench --bench figures -- [--rounds N]
//! [--events N]`, with `COLOSSUS_REFERENCE_WORKER` naming the reference worker.
//!
//! The files follow the Go bench's (sdk/go/internal/bench): main.rs measures, raw.rs is the
//! raw client, worker.rs the reference worker, heap.rs the counting allocator and the heap
//! figure, fake_worker.rs the long run's server, rounds.rs one timed watch and the paired
//! rounds, report.rs prints.

mod fake_worker;
mod heap;
mod raw;
mod report;
mod rounds;
mod worker;

use std::path::Path;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use colossus_sdk::Client;
use colossus_sdk::model::{CreateRunRequest, EventPayload};
use colossus_sdk::placement::DaemonOptions;

use fake_worker::{LONG_RUN_ENV, LongRunServer, serve_long_run};
use heap::{Side, heap_growth};
use raw::{Raw, raw_connect_once};
use report::Figures;
use rounds::{allocations, paired, sdk_watch};
use worker::DevWorker;

type AnyResult<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

struct Args {
    rounds: usize,
    events: u64,
}

fn parse_args() -> AnyResult<Args> {
    let mut args = Args {
        rounds: 21,
        events: 100_000,
    };
    let mut it = std::env::args().skip(1);
    while let Some(arg) = it.next() {
        let (name, inline) = match arg.split_once('=') {
            Some((n, v)) => (n.to_owned(), Some(v.to_owned())),
            None => (arg.clone(), None),
        };
        let mut value = || {
            inline
                .clone()
                .or_else(|| it.next())
                .ok_or_else(|| format!("{name} needs a value"))
        };
        match name.as_str() {
            // cargo bench passes --bench to every bench target.
            "--bench" => {}
            "--rounds" => args.rounds = value()?.parse()?,
            "--events" => args.events = value()?.parse()?,
            _ => {
                return Err(
                    format!("unknown argument {arg}; usage: [--rounds N] [--events N]").into(),
                );
            }
        }
    }
    if args.rounds == 0 || args.events < 10_000 {
        return Err("--rounds must be at least 1 and --events at least 10000".into());
    }
    Ok(args)
}

fn main() -> AnyResult<()> {
    if let Ok(n) = std::env::var(LONG_RUN_ENV) {
        return serve_long_run(n.parse()?);
    }
    let args = parse_args()?;
    let exe = std::env::var_os("COLOSSUS_REFERENCE_WORKER")
        .ok_or("set COLOSSUS_REFERENCE_WORKER to the reference worker executable")?;
    let worker = DevWorker::start(Path::new(&exe))?;
    let runtime = tokio::runtime::Runtime::new()?;
    let result = runtime.block_on(figures(&worker, &args));
    drop(runtime);
    drop(worker);
    result
}

async fn sdk_connect_once(options: &DaemonOptions) -> AnyResult<Duration> {
    let start = Instant::now();
    let client = Client::connect(options.clone()).await?;
    let elapsed = start.elapsed();
    client.close();
    Ok(elapsed)
}

/// A stored run of 4,099 events: 4,093 outputs, a prompt, and the cancel's three.
async fn make_long_run(client: &Client) -> AnyResult<(String, u64)> {
    let mut script = String::from("colossus-script v1\n");
    for i in 0..4093 {
        script.push_str(&format!("say event {i}\n"));
    }
    script.push_str("ask Continue? | yes | no\n");
    let created = client.runs().create(CreateRunRequest::text(script)).await?;
    let run_id = created.run.run_id;
    let mut watch = client.runs().watch(&run_id);
    let (mut n, mut cancelled) = (0, false);
    while let Some(event) = watch.next().await {
        let event = event?;
        n += 1;
        if matches!(event.payload, EventPayload::InteractionRequested(_)) && !cancelled {
            cancelled = true;
            client.runs().cancel(&run_id).await?;
        }
    }
    Ok((run_id, n))
}

async fn figures(worker: &DevWorker, args: &Args) -> AnyResult<()> {
    let options = worker.options()?;
    let client = Client::connect(options.clone()).await?;
    let (run_id, total) = make_long_run(&client).await?;
    let raw = Raw::dial(&worker.dir.0, &worker.pin, &worker.bearer).await?;
    let none = &mut |_| {};

    // Watch: one untimed warm-up each, then alternating paired rounds.
    sdk_watch(&client, &run_id, none).await?;
    raw.watch(&run_id, none).await?;
    let watches = paired(
        args.rounds,
        async || sdk_watch(&client, &run_id, &mut |_| {}).await,
        async || raw.watch(&run_id, &mut |_| {}).await,
    )
    .await?;
    for (i, (s, r)) in watches.iter().enumerate() {
        if s.events != total || r.events != total {
            return Err(format!(
                "round {i}: SDK saw {} events, raw {}, want {total}",
                s.events, r.events
            )
            .into());
        }
    }
    let sdk_rates: Vec<f64> = watches.iter().map(|(s, _)| s.rate()).collect();
    let raw_rates: Vec<f64> = watches.iter().map(|(_, r)| r.rate()).collect();
    let watch_ratios: Vec<f64> = watches.iter().map(|(s, r)| s.rate() / r.rate()).collect();
    let complete_ratios: Vec<f64> = watches
        .iter()
        .map(|(s, r)| s.complete_rate() / r.complete_rate())
        .collect();
    let sdk_cpu: Vec<f64> = watches.iter().map(|(s, _)| s.cpu_us_per_event()).collect();
    let raw_cpu: Vec<f64> = watches.iter().map(|(_, r)| r.cpu_us_per_event()).collect();

    // Allocations per event, counted in rounds of their own (counting is not free).
    let counted = paired(
        args.rounds.min(5),
        async || allocations(sdk_watch(&client, &run_id, &mut |_| {})).await,
        async || allocations(raw.watch(&run_id, &mut |_| {})).await,
    )
    .await?;
    let alloc_diffs: Vec<f64> = counted
        .iter()
        .map(|&(s, r)| (s as f64 - r as f64) / total as f64)
        .collect();

    // Connect: a full SDK connect against a raw channel plus one GetServerInfo.
    sdk_connect_once(&options).await?;
    raw_connect_once(worker).await?;
    let connects = paired(
        args.rounds,
        async || sdk_connect_once(&options).await,
        async || raw_connect_once(worker).await,
    )
    .await?;
    let ms = |d: &Duration| d.as_secs_f64() * 1000.0;
    let sdk_connect: Vec<f64> = connects.iter().map(|(s, _)| ms(s)).collect();
    let raw_connect: Vec<f64> = connects.iter().map(|(_, r)| ms(r)).collect();
    let connect_ratios: Vec<f64> = connects
        .iter()
        .map(|(s, r)| s.as_secs_f64() / r.as_secs_f64())
        .collect();
    client.close();
    drop(raw);

    let long = LongRunServer::start(args.events)?;
    let sdk_long = heap_growth(&long, args.events, Side::Sdk).await;
    let raw_long = heap_growth(&long, args.events, Side::Raw).await;
    drop(long);
    let (sdk_long, raw_long) = (sdk_long?, raw_long?);
    report::print(&Figures {
        total,
        rounds: args.rounds,
        events: args.events,
        sdk_rates,
        raw_rates,
        watch_ratios,
        complete_ratios,
        sdk_cpu,
        raw_cpu,
        sdk_connect,
        raw_connect,
        connect_ratios,
        alloc_diffs,
        sdk_long,
        raw_long,
    });
    Ok(())
}
