//! Live heap growth over a long watch: a counting global allocator, and the watch of the
//! fake worker's long run (fake_worker.rs) that it measures, by the SDK and by the raw
//! client.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicU64, Ordering::Relaxed};

use colossus_sdk::credentials::InMemoryCredentialProvider;
use colossus_sdk::placement::DaemonOptions;
use colossus_sdk::{Bearer, Client};

use crate::AnyResult;
use crate::fake_worker::{LONG_RUN_BEARER, LONG_RUN_ID, LONG_RUN_INSTANCE, LongRunServer};
use crate::raw::Raw;
use crate::rounds::sdk_watch;

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
pub(crate) fn start_counting() {
    ALLOCS.store(0, Relaxed);
    LIVE.store(0, Relaxed);
    PEAK.store(0, Relaxed);
    COUNTING.store(true, Relaxed);
}

/// Stops counting: (allocations, live bytes now, their peak), both relative to the start.
pub(crate) fn stop_counting() -> (u64, isize, isize) {
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

#[derive(Clone, Copy)]
pub(crate) enum Side {
    Sdk,
    Raw,
}

/// What the long watch did to the live heap after its 5,000th event.
pub(crate) struct HeapGrowth {
    /// The peak growth, MiB.
    pub(crate) peak: f64,
    /// The growth still live when the last event was in hand, MiB: what stays per event.
    pub(crate) retained: f64,
    /// The watch's events/s.
    pub(crate) rate: f64,
    /// The client's CPU time per event, µs.
    pub(crate) cpu: f64,
}

const MIB: f64 = (1 << 20) as f64;

pub(crate) async fn heap_growth(
    server: &LongRunServer,
    events: u64,
    side: Side,
) -> AnyResult<HeapGrowth> {
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
