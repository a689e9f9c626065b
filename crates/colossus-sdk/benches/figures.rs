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

use std::alloc::{GlobalAlloc, Layout, System};
use std::convert::Infallible;
use std::hint::black_box;
use std::io::{BufRead, BufReader, Write};
use std::net::SocketAddr;
use std::os::unix::fs::{DirBuilderExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering::Relaxed};
use std::time::{Duration, Instant};

use futures_util::StreamExt;
use tonic::metadata::MetadataValue;
use tonic::transport::Channel;
use tonic::{Request, Response, Status};

use colossus_sdk::__bench::{pb, raw_channel};
use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::model::{CreateRunRequest, EventPayload};
use colossus_sdk::placement::DaemonOptions;
use colossus_sdk::{Bearer, Client};

type AnyResult<T> = std::result::Result<T, Box<dyn std::error::Error + Send + Sync>>;

const RECEIVE_CAP: usize = 4 << 20;
const CONNECT_TIMEOUT: Duration = Duration::from_secs(10);
/// Set in the child that serves the long run: the number of events to serve.
const LONG_RUN_ENV: &str = "COLOSSUS_BENCH_LONG_RUN_EVENTS";
const LONG_RUN_ID: &str = "run_long";
const LONG_RUN_INSTANCE: &str = "wkr_bench";
const LONG_RUN_BEARER: &str = "cb1_benchbenchbenchbenchbenchbenchbenchbench";

// ---------------------------------------------------------------------------------------
// The counting allocator. While `COUNTING` is on it counts allocations and the net change
// of live bytes (bytes allocated minus bytes freed since it was turned on: exactly the
// growth of the live heap over that time) and their high-water mark. While it is off, as
// in every timed round, it costs one read of a flag nobody writes.

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static LIVE: AtomicIsize = AtomicIsize::new(0);
static PEAK: AtomicIsize = AtomicIsize::new(0);
static ALLOCS: AtomicU64 = AtomicU64::new(0);

fn grew(size: usize) {
    if COUNTING.load(Relaxed) {
        ALLOCS.fetch_add(1, Relaxed);
        let size = size as isize;
        PEAK.fetch_max(LIVE.fetch_add(size, Relaxed) + size, Relaxed);
    }
}

fn shrank(size: usize) {
    if COUNTING.load(Relaxed) {
        LIVE.fetch_sub(size as isize, Relaxed);
    }
}

/// Counts from zero until [`stop_counting`].
fn start_counting() {
    ALLOCS.store(0, Relaxed);
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
}

/// Stops counting: (allocations, live bytes now, their peak), both relative to the start.
fn stop_counting() -> (u64, isize, isize) {
    COUNTING.store(false, Relaxed);
    let live = LIVE.load(Relaxed);
    (ALLOCS.load(Relaxed), live, PEAK.load(Relaxed).max(live))
}

// SAFETY: every call goes to the system allocator unchanged; only counters are added.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        // SAFETY: the caller upholds `GlobalAlloc::alloc`'s contract, which is System's.
        let p = unsafe { System.alloc(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        // SAFETY: as for `alloc`.
        let p = unsafe { System.alloc_zeroed(layout) };
        if !p.is_null() {
            grew(layout.size());
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        // SAFETY: `ptr` came from this allocator, hence from System, with `layout`.
        unsafe { System.dealloc(ptr, layout) };
        shrank(layout.size());
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        // SAFETY: as for `dealloc`; the caller upholds `realloc`'s contract.
        let p = unsafe { System.realloc(ptr, layout, new_size) };
        if !p.is_null() {
            shrank(layout.size());
            grew(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

// ---------------------------------------------------------------------------------------

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

// ---------------------------------------------------------------------------------------
// The reference worker (`dev`: enrolled with every scope, serving a private folder).

/// A private (0700) folder, removed on drop.
struct PrivateDir(PathBuf);

impl PrivateDir {
    fn new(name: &str) -> AnyResult<PrivateDir> {
        let mut b = [0u8; 8];
        getrandom::fill(&mut b).map_err(|e| e.to_string())?;
        let hex: String = b.iter().map(|x| format!("{x:02x}")).collect();
        let path = std::env::temp_dir().join(format!("colossus-rs-bench-{name}-{hex}"));
        std::fs::DirBuilder::new().mode(0o700).create(&path)?;
        Ok(PrivateDir(path))
    }
}

impl Drop for PrivateDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

struct DevWorker {
    child: Child,
    dir: PrivateDir,
    instance_id: String,
    pin: String,
    bearer: String,
}

impl DevWorker {
    fn start(exe: &Path) -> AnyResult<DevWorker> {
        let dir = PrivateDir::new("worker")?;
        let mut child = Command::new(exe)
            .arg("dev")
            .arg("--public-api-dir")
            .arg(&dir.0)
            .args(["--json", "--log-level", "WARNING"])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        match Self::identity(&mut child, &dir.0) {
            Ok((instance_id, pin, bearer)) => Ok(DevWorker {
                child,
                dir,
                instance_id,
                pin,
                bearer,
            }),
            Err(e) => {
                let _ = child.kill();
                let _ = child.wait();
                Err(e)
            }
        }
    }

    /// The instance ID, pin and bearer `dev` printed, once it serves.
    fn identity(child: &mut Child, dir: &Path) -> AnyResult<(String, String, String)> {
        let mut lines = BufReader::new(child.stdout.take().ok_or("no stdout")?).lines();
        let line = lines.next().ok_or("dev printed nothing")??;
        // Whatever else it prints must not fill the pipe.
        std::thread::spawn(move || for _ in lines {});
        let info: serde_json::Value = serde_json::from_str(&line)?;
        let text = |v: &serde_json::Value| v.as_str().map(str::to_owned);
        let (Some(instance_id), Some(pin), Some(bearer_path)) = (
            text(&info["instance_id"]),
            text(&info["certificate_sha256"]),
            text(&info["bearer"]["path"]),
        ) else {
            return Err(format!("dev printed no identity: {line}").into());
        };
        let bearer = std::fs::read_to_string(bearer_path)?.trim().to_owned();
        for _ in 0..600 {
            if dir.join("endpoint.json").exists() {
                return Ok((instance_id, pin, bearer));
            }
            std::thread::sleep(Duration::from_millis(50));
        }
        Err("the worker did not publish endpoint.json".into())
    }

    fn options(&self) -> AnyResult<DaemonOptions> {
        Ok(DaemonOptions::builder()
            .public_api_dir(&self.dir.0)
            .expected_instance_id(&self.instance_id)
            .expected_certificate_sha256(&self.pin)
            .credentials(InMemoryCredentialProvider::new(Bearer::new(
                self.bearer.clone(),
            )?))
            .build()?)
    }
}

/// Stops the worker (SIGTERM, then SIGKILL after 10 s), on every way out.
impl Drop for DevWorker {
    fn drop(&mut self) {
        let pid = rustix::process::Pid::from_child(&self.child);
        let _ = rustix::process::kill_process(pid, rustix::process::Signal::TERM);
        for _ in 0..100 {
            if matches!(self.child.try_wait(), Ok(Some(_))) {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The address endpoint.json names (the raw side reads it without the SDK's checks).
fn read_endpoint(dir: &Path) -> AnyResult<SocketAddr> {
    let data = std::fs::read(dir.join("endpoint.json"))?;
    let d: serde_json::Value = serde_json::from_slice(&data)?;
    let endpoint = d["endpoint"]
        .as_str()
        .ok_or("endpoint.json has no endpoint")?;
    Ok(endpoint
        .strip_prefix("https://")
        .ok_or("the endpoint is not https")?
        .parse()?)
}

// ---------------------------------------------------------------------------------------
// Rounds.

struct RoundResult {
    events: u64,
    /// Until the watch ended (the SDK's includes its closing GetRun).
    elapsed: Duration,
    /// Until the last event was in hand.
    to_last: Duration,
    /// CPU time of this process (every thread; the worker is another process) until the
    /// watch ended: unlike the rates, hardly moved by what else the machine runs.
    cpu: Duration,
}

/// The CPU time this process has used so far.
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl RoundResult {
    fn rate(&self) -> f64 {
        self.events as f64 / self.to_last.as_secs_f64()
    }

    fn complete_rate(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }

    fn cpu_us_per_event(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.events as f64
    }
}

/// Called with the count of events delivered so far, after each one.
type Probe<'a> = &'a mut (dyn FnMut(u64) + Send);

/// The SDK's watch of `run_id` to its end (every check, the closing GetRun included).
async fn sdk_watch(client: &Client, run_id: &str, probe: Probe<'_>) -> AnyResult<RoundResult> {
    let (start, cpu) = (Instant::now(), process_cpu());
    let mut watch = client.runs().watch(run_id);
    let (mut events, mut last) = (0, start);
    while let Some(event) = watch.next().await {
        black_box(event?);
        events += 1;
        last = Instant::now();
        probe(events);
    }
    let (elapsed, cpu) = (start.elapsed(), process_cpu() - cpu);
    if !watch.is_complete() {
        return Err("the SDK's watch ended incomplete".into());
    }
    Ok(RoundResult {
        events,
        elapsed,
        to_last: last - start,
        cpu,
    })
}

/// The raw side: the generated stubs on a channel through the SDK's connector.
struct Raw {
    runs: pb::RunServiceClient<Channel>,
    bearer: String,
}

fn authorized<T>(message: T, bearer: &str) -> AnyResult<Request<T>> {
    let mut req = Request::new(message);
    let mut value: MetadataValue<_> = format!("Bearer {bearer}").parse()?;
    value.set_sensitive(true);
    req.metadata_mut().insert("authorization", value);
    Ok(req)
}

impl Raw {
    async fn dial(dir: &Path, pin: &str, bearer: &str) -> AnyResult<Raw> {
        let channel = raw_channel(read_endpoint(dir)?, pin, CONNECT_TIMEOUT).await?;
        Ok(Raw {
            runs: pb::RunServiceClient::new(channel).max_decoding_message_size(RECEIVE_CAP),
            bearer: bearer.to_owned(),
        })
    }

    /// WatchRun from the start until the worker ends the stream.
    async fn watch(&self, run_id: &str, probe: Probe<'_>) -> AnyResult<RoundResult> {
        let (start, cpu) = (Instant::now(), process_cpu());
        let req = pb::WatchRunRequest {
            run_id: run_id.to_owned(),
            after_sequence: 0,
        };
        let mut stream = self
            .runs
            .clone()
            .watch_run(authorized(req, &self.bearer)?)
            .await?
            .into_inner();
        let (mut events, mut last) = (0, start);
        while let Some(message) = stream.message().await? {
            black_box(message);
            events += 1;
            last = Instant::now();
            probe(events);
        }
        Ok(RoundResult {
            events,
            elapsed: start.elapsed(),
            to_last: last - start,
            cpu: process_cpu() - cpu,
        })
    }
}

/// A new raw channel plus one GetServerInfo, from reading endpoint.json on.
async fn raw_connect_once(worker: &DevWorker) -> AnyResult<Duration> {
    let start = Instant::now();
    let addr = read_endpoint(&worker.dir.0)?;
    let channel = raw_channel(addr, &worker.pin, CONNECT_TIMEOUT).await?;
    let info = pb::SystemServiceClient::new(channel)
        .max_decoding_message_size(RECEIVE_CAP)
        .get_server_info(authorized(pb::GetServerInfoRequest {}, &worker.bearer)?)
        .await?;
    black_box(info);
    Ok(start.elapsed())
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

/// Alternating paired rounds: the SDK first in even rounds, the other side in odd ones.
async fn paired<T, S, R>(rounds: usize, mut sdk: S, mut raw: R) -> AnyResult<Vec<(T, T)>>
where
    S: AsyncFnMut() -> AnyResult<T>,
    R: AsyncFnMut() -> AnyResult<T>,
{
    let mut out = Vec::with_capacity(rounds);
    for i in 0..rounds {
        out.push(if i % 2 == 0 {
            let s = sdk().await?;
            (s, raw().await?)
        } else {
            let r = raw().await?;
            (sdk().await?, r)
        });
    }
    Ok(out)
}

/// `f`'s result and the allocations made while it ran.
async fn allocations<T>(f: impl Future<Output = AnyResult<T>>) -> AnyResult<u64> {
    start_counting();
    let result = f.await;
    let (allocs, _, _) = stop_counting();
    result.map(|_| allocs)
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

    let watch = median(&watch_ratios);
    let complete = median(&complete_ratios);
    let connect = median(&connect_ratios);
    println!("run of {total} events, {} paired rounds", args.rounds);
    println!("watch_sdk_events_per_s   {}", spread(&sdk_rates, 0));
    println!("watch_raw_events_per_s   {}", spread(&raw_rates, 0));
    println!(
        "watch_ratio              {}  (target >= 0.95: {})",
        spread(&watch_ratios, 3),
        verdict(watch >= 0.95)
    );
    println!(
        "watch_complete_ratio     {}  (SDK including its GetRun reconciliation; target >= 0.93: {})",
        spread(&complete_ratios, 3),
        verdict(complete >= 0.93)
    );
    println!(
        "cpu_sdk_us_per_event     {}  (this process, the closing GetRun included)",
        spread(&sdk_cpu, 2)
    );
    println!("cpu_raw_us_per_event     {}", spread(&raw_cpu, 2));
    println!("connect_sdk_ms           {}", spread(&sdk_connect, 1));
    println!("connect_raw_ms           {}", spread(&raw_connect, 1));
    println!(
        "connect_ratio            {}  (target <= 1.5: {})",
        spread(&connect_ratios, 2),
        verdict(connect <= 1.5)
    );
    println!(
        "allocs_per_event         {}  (SDK minus raw, {} rounds)",
        spread(&alloc_diffs, 1),
        alloc_diffs.len()
    );
    println!(
        "heap_growth_mib          {:.2} over {} events at {:.0} events/s, {:.2} us CPU each  (target < 5 MiB: {})",
        sdk_long.peak,
        args.events,
        sdk_long.rate,
        sdk_long.cpu,
        verdict(sdk_long.peak < 5.0)
    );
    println!(
        "heap_growth_raw_mib      {:.2} over {} events at {:.0} events/s, {:.2} us CPU each  (the raw client, same server)",
        raw_long.peak, args.events, raw_long.rate, raw_long.cpu
    );
    println!(
        "heap_retained_mib        SDK {:.2}, raw {:.2}  (live at the last event minus at the 5,000th)",
        sdk_long.retained, raw_long.retained
    );
    Ok(())
}

fn median(v: &[f64]) -> f64 {
    let mut s = v.to_vec();
    s.sort_by(f64::total_cmp);
    let mid = s.len() / 2;
    if s.len() % 2 == 1 {
        s[mid]
    } else {
        (s[mid - 1] + s[mid]) / 2.0
    }
}

fn spread(v: &[f64], decimals: usize) -> String {
    let min = v.iter().copied().fold(f64::INFINITY, f64::min);
    let max = v.iter().copied().fold(f64::NEG_INFINITY, f64::max);
    format!(
        "median {:.decimals$} (min {min:.decimals$}, max {max:.decimals$})",
        median(v)
    )
}

fn verdict(ok: bool) -> &'static str {
    if ok { "met" } else { "NOT met" }
}

// ---------------------------------------------------------------------------------------
// Live heap growth over a long watch, served by this program in a child process.

/// The child serving the long run; it exits when its stdin closes.
struct LongRunServer {
    child: Child,
    dir: PathBuf,
    pin: String,
}

impl LongRunServer {
    fn start(events: u64) -> AnyResult<LongRunServer> {
        let mut child = Command::new(std::env::current_exe()?)
            .env(LONG_RUN_ENV, events.to_string())
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .spawn()?;
        let mut line = String::new();
        BufReader::new(child.stdout.take().ok_or("no stdout")?).read_line(&mut line)?;
        let info: serde_json::Value = serde_json::from_str(&line)
            .map_err(|e| format!("the long-run server printed {line:?}: {e}"))?;
        let (Some(dir), Some(pin)) = (info["dir"].as_str(), info["pin"].as_str()) else {
            return Err(format!("the long-run server printed {line:?}").into());
        };
        Ok(LongRunServer {
            dir: PathBuf::from(dir),
            pin: pin.to_owned(),
            child,
        })
    }
}

/// Closing its stdin ends the child.
impl Drop for LongRunServer {
    fn drop(&mut self) {
        drop(self.child.stdin.take());
        if self.child.wait().is_err() {
            let _ = self.child.kill();
        }
    }
}

#[derive(Clone, Copy)]
enum Side {
    Sdk,
    Raw,
}

/// What the long watch did to the live heap after its 5,000th event.
struct HeapGrowth {
    /// The peak growth, MiB.
    peak: f64,
    /// The growth still live when the last event was in hand, MiB: what stays per event.
    retained: f64,
    /// The watch's events/s.
    rate: f64,
    /// The client's CPU time per event, µs.
    cpu: f64,
}

const MIB: f64 = (1 << 20) as f64;

async fn heap_growth(server: &LongRunServer, events: u64, side: Side) -> AnyResult<HeapGrowth> {
    let mut retained = 0;
    let mut probe = |n: u64| {
        if n == 5_000 {
            start_counting();
        } else if n == events {
            retained = LIVE.load(Relaxed);
        }
    };
    let watched = match side {
        Side::Sdk => {
            let options = DaemonOptions::builder()
                .public_api_dir(&server.dir)
                .expected_instance_id(LONG_RUN_INSTANCE)
                .expected_certificate_sha256(&server.pin)
                .credentials(InMemoryCredentialProvider::new(Bearer::new(
                    LONG_RUN_BEARER.to_owned(),
                )?))
                .build()?;
            let client = Client::connect(options).await?;
            let watched = sdk_watch(&client, LONG_RUN_ID, &mut probe).await;
            client.close();
            watched
        }
        Side::Raw => {
            let raw = Raw::dial(&server.dir, &server.pin, LONG_RUN_BEARER).await?;
            raw.watch(LONG_RUN_ID, &mut probe).await
        }
    };
    let (_, _, peak) = stop_counting();
    let watched = watched?;
    if watched.events != events {
        return Err(format!(
            "the long watch delivered {} events, want {events}",
            watched.events
        )
        .into());
    }
    Ok(HeapGrowth {
        peak: peak as f64 / MIB,
        retained: retained as f64 / MIB,
        rate: watched.rate(),
        cpu: watched.cpu_us_per_event(),
    })
}

/// The child: serves one run of `n` events (GetServerInfo, GetRun, WatchRun) over TLS 1.3
/// with a throw-away P-256 leaf, its discovery files in a new private folder; prints the
/// folder and pin as one JSON line, then serves until stdin closes.
fn serve_long_run(n: u64) -> AnyResult<()> {
    use rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};
    use sha2::Digest;

    let mut params = rcgen::CertificateParams::new(vec!["127.0.0.1".to_owned()])?;
    params.is_ca = rcgen::IsCa::ExplicitNoCa;
    let key = rcgen::KeyPair::generate_for(&rcgen::PKCS_ECDSA_P256_SHA256)?;
    let cert = params.self_signed(&key)?;
    let pin: String = sha2::Sha256::digest(cert.der())
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect();
    // ring on purpose, as in the SDK (src/transport/provider.rs): deprecated in rustls
    // 0.23.48 for lacking post-quantum key exchange, which loopback TLS does not need.
    #[allow(deprecated)]
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_protocol_versions(&[&rustls::version::TLS13])?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone()],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )?;
    config.alpn_protocols = vec![b"h2".to_vec()];
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));

    let runtime = tokio::runtime::Runtime::new()?;
    let listener = runtime.block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))?;
    let addr = listener.local_addr()?;
    let dir = PrivateDir::new("long-run")?;
    let write = |name: &str, data: &[u8]| -> AnyResult<()> {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(dir.0.join(name))?
            .write_all(data)?;
        Ok(())
    };
    let descriptor = serde_json::json!({
        "endpoint": format!("https://{addr}"),
        "instance_id": LONG_RUN_INSTANCE,
        "pid": std::process::id(),
        "api_version": "v1alpha1",
        "certificate_sha256": pin,
    });
    write("endpoint.json", descriptor.to_string().as_bytes())?;
    write("certificate.pem", cert.pem().as_bytes())?;

    runtime.spawn(async move {
        loop {
            let Ok((tcp, _)) = listener.accept().await else {
                return;
            };
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(tls) = acceptor.accept(tcp).await else {
                    return;
                };
                let service = hyper::service::service_fn(move |req| answer(n, req));
                let _ =
                    hyper::server::conn::http2::Builder::new(hyper_util::rt::TokioExecutor::new())
                        .serve_connection(hyper_util::rt::TokioIo::new(tls), service)
                        .await;
            });
        }
    });
    let ready = serde_json::json!({"dir": dir.0, "pin": pin});
    println!("{ready}");
    std::io::stdout().flush()?;
    // Serve until the parent closes stdin (or exits).
    let _ = std::io::copy(&mut std::io::stdin(), &mut std::io::sink());
    drop(runtime);
    Ok(())
}

fn grpc<T, U>() -> tonic::server::Grpc<tonic_prost::ProstCodec<T, U>>
where
    T: prost::Message + Send + 'static,
    U: prost::Message + Default + Send + 'static,
{
    tonic::server::Grpc::new(tonic_prost::ProstCodec::default())
}

async fn answer(
    n: u64,
    req: http::Request<hyper::body::Incoming>,
) -> std::result::Result<http::Response<tonic::body::Body>, Infallible> {
    let method = req
        .uri()
        .path()
        .rsplit('/')
        .next()
        .unwrap_or_default()
        .to_owned();
    Ok(match method.as_str() {
        "GetServerInfo" => {
            let svc = tower::service_fn(|_: Request<pb::GetServerInfoRequest>| async {
                Ok::<_, Status>(Response::new(pb::GetServerInfoResponse {
                    server_info: Some(pb::ServerInfo {
                        instance_id: LONG_RUN_INSTANCE.into(),
                        api_package: "colossus.api.v1alpha1".into(),
                        api_version: "v1alpha1".into(),
                        api_major: 1,
                        deployment_mode: pb::DeploymentMode::SharedDaemon as i32,
                        limits: Some(pb::Limits {
                            max_response_bytes: 4 << 20,
                            max_request_bytes: 2 << 20,
                            ..Default::default()
                        }),
                        ..Default::default()
                    }),
                }))
            });
            grpc().unary(svc, req).await
        }
        "GetRun" => {
            let svc = tower::service_fn(move |_: Request<pb::GetRunRequest>| async move {
                Ok::<_, Status>(Response::new(pb::GetRunResponse {
                    run: Some(pb::Run {
                        run_id: LONG_RUN_ID.into(),
                        status: pb::RunStatus::Succeeded as i32,
                        last_sequence: n,
                        ..Default::default()
                    }),
                }))
            });
            grpc().unary(svc, req).await
        }
        "WatchRun" => {
            let svc = tower::service_fn(move |r: Request<pb::WatchRunRequest>| async move {
                let after = r.into_inner().after_sequence;
                let events = futures_util::stream::iter(after + 1..=n).map(move |seq| {
                    let payload = if seq == n {
                        pb::Payload::Terminated(pb::RunTerminated {
                            status: pb::RunStatus::Succeeded as i32,
                            result: None,
                        })
                    } else {
                        pb::Payload::OutputDelta(pb::OutputDelta {
                            text: format!("event {seq} of a long run"),
                        })
                    };
                    Ok(pb::WatchRunResponse {
                        event: Some(pb::RunEvent {
                            run_id: LONG_RUN_ID.into(),
                            sequence: seq,
                            event_time: None,
                            payload: Some(payload),
                        }),
                    })
                });
                Ok::<_, Status>(Response::new(events))
            });
            grpc().server_streaming(svc, req).await
        }
        _ => Status::unimplemented(method).into_http(),
    })
}
