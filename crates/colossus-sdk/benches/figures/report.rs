//! The report: each figure as the median of its paired rounds with their spread, and
//! whether it meets its target, under the Go bench's labels.

use crate::heap::HeapGrowth;

/// Every figure of one run of the program.
pub(crate) struct Figures {
    /// Events of the stored run the paired watches read.
    pub(crate) total: u64,
    pub(crate) rounds: usize,
    /// Events of the long watch the heap figures count.
    pub(crate) events: u64,
    pub(crate) sdk_rates: Vec<f64>,
    pub(crate) raw_rates: Vec<f64>,
    pub(crate) watch_ratios: Vec<f64>,
    pub(crate) complete_ratios: Vec<f64>,
    pub(crate) sdk_cpu: Vec<f64>,
    pub(crate) raw_cpu: Vec<f64>,
    pub(crate) sdk_connect: Vec<f64>,
    pub(crate) raw_connect: Vec<f64>,
    pub(crate) connect_ratios: Vec<f64>,
    pub(crate) alloc_diffs: Vec<f64>,
    pub(crate) sdk_long: HeapGrowth,
    pub(crate) raw_long: HeapGrowth,
}

/// Prints the figures, one per line.
pub(crate) fn print(figures: &Figures) {
    let f = figures;
    let watch = median(&f.watch_ratios);
    let complete = median(&f.complete_ratios);
    let connect = median(&f.connect_ratios);
    println!("run of {} events, {} paired rounds", f.total, f.rounds);
    println!("watch_sdk_events_per_s   {}", spread(&f.sdk_rates, 0));
    println!("watch_raw_events_per_s   {}", spread(&f.raw_rates, 0));
    println!(
        "watch_ratio              {}  (target >= 0.95: {})",
        spread(&f.watch_ratios, 3),
        verdict(watch >= 0.95)
    );
    println!(
        "watch_complete_ratio     {}  (SDK including its GetRun reconciliation; target >= 0.93: {})",
        spread(&f.complete_ratios, 3),
        verdict(complete >= 0.93)
    );
    println!(
        "cpu_sdk_us_per_event     {}  (this process, the closing GetRun included)",
        spread(&f.sdk_cpu, 2)
    );
    println!("cpu_raw_us_per_event     {}", spread(&f.raw_cpu, 2));
    println!("connect_sdk_ms           {}", spread(&f.sdk_connect, 1));
    println!("connect_raw_ms           {}", spread(&f.raw_connect, 1));
    println!(
        "connect_ratio            {}  (target <= 1.5: {})",
        spread(&f.connect_ratios, 2),
        verdict(connect <= 1.5)
    );
    println!(
        "allocs_per_event         {}  (SDK minus raw, {} rounds)",
        spread(&f.alloc_diffs, 1),
        f.alloc_diffs.len()
    );
    println!(
        "heap_growth_mib          {:.2} over {} events at {:.0} events/s, {:.2} us CPU each  (target < 5 MiB: {})",
        f.sdk_long.peak,
        f.events,
        f.sdk_long.rate,
        f.sdk_long.cpu,
        verdict(f.sdk_long.peak < 5.0)
    );
    println!(
        "heap_growth_raw_mib      {:.2} over {} events at {:.0} events/s, {:.2} us CPU each  (the raw client, same server)",
        f.raw_long.peak, f.events, f.raw_long.rate, f.raw_long.cpu
    );
    println!(
        "heap_retained_mib        SDK {:.2}, raw {:.2}  (live at the last event minus at the 5,000th)",
        f.sdk_long.retained, f.raw_long.retained
    );
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
