//! One timed watch of a run to its end, by the SDK (the raw client's is raw.rs), and the
//! alternating paired rounds every ratio is the median of.

use std::hint::black_box;
use std::time::{Duration, Instant};

use futures_util::StreamExt;

use colossus_sdk::Client;

use crate::AnyResult;
use crate::heap::{start_counting, stop_counting};

pub(crate) struct RoundResult {
    pub(crate) events: u64,
    /// Until the watch ended (the SDK's includes its closing GetRun).
    pub(crate) elapsed: Duration,
    /// Until the last event was in hand.
    pub(crate) to_last: Duration,
    /// CPU time of this process (every thread; the worker is another process) until the
    /// watch ended: unlike the rates, hardly moved by what else the machine runs.
    pub(crate) cpu: Duration,
}

/// The CPU time this process has used so far.
pub(crate) fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

impl RoundResult {
    pub(crate) fn rate(&self) -> f64 {
        self.events as f64 / self.to_last.as_secs_f64()
    }

    pub(crate) fn complete_rate(&self) -> f64 {
        self.events as f64 / self.elapsed.as_secs_f64()
    }

    pub(crate) fn cpu_us_per_event(&self) -> f64 {
        self.cpu.as_secs_f64() * 1e6 / self.events as f64
    }
}

/// Called with the count of events delivered so far, after each one.
pub(crate) type Probe<'a> = &'a mut (dyn FnMut(u64) + Send);

/// The SDK's watch of `run_id` to its end (every check, the closing GetRun included).
pub(crate) async fn sdk_watch(
    client: &Client,
    run_id: &str,
    probe: Probe<'_>,
) -> AnyResult<RoundResult> {
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

/// Alternating paired rounds: the SDK first in even rounds, the other side in odd ones.
pub(crate) async fn paired<T, S, R>(rounds: usize, mut sdk: S, mut raw: R) -> AnyResult<Vec<(T, T)>>
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
pub(crate) async fn allocations<T>(f: impl Future<Output = AnyResult<T>>) -> AnyResult<u64> {
    start_counting();
    let result = f.await;
    let (allocs, _, _) = stop_counting();
    result.map(|_| allocs)
}
