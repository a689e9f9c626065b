//! Tests only: a `tracing` subscriber that writes every event and span of every target
//! and level (the SDK's and its dependencies') as text, so a test can read what an
//! application's log would hold.

use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, Once};

use tracing::field::{Field, Visit};
use tracing::span::{Attributes, Id, Record};
use tracing::subscriber::Interest;
use tracing::{Event, Metadata, Subscriber};

/// The captured text, one line per event or span.
#[derive(Clone, Default)]
pub(crate) struct Captured(Arc<Mutex<String>>);

impl Captured {
    pub(crate) fn text(&self) -> String {
        self.0.lock().unwrap().clone()
    }

    fn push(&self, line: String) {
        let mut text = self.0.lock().unwrap();
        text.push_str(&line);
        text.push('\n');
    }
}

struct Line(String);

impl Visit for Line {
    fn record_debug(&mut self, field: &Field, value: &dyn std::fmt::Debug) {
        let _ = write!(self.0, " {}={value:?}", field.name());
    }
}

struct Capture {
    out: Captured,
    next_id: AtomicU64,
}

impl Subscriber for Capture {
    fn enabled(&self, _: &Metadata<'_>) -> bool {
        true
    }

    fn new_span(&self, span: &Attributes<'_>) -> Id {
        let mut line = Line(format!(
            "span {} {}",
            span.metadata().target(),
            span.metadata().name()
        ));
        span.record(&mut line);
        self.out.push(line.0);
        Id::from_u64(self.next_id.fetch_add(1, Ordering::Relaxed) + 1)
    }

    fn record(&self, _: &Id, values: &Record<'_>) {
        let mut line = Line("record".into());
        values.record(&mut line);
        self.out.push(line.0);
    }

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, event: &Event<'_>) {
        let meta = event.metadata();
        let mut line = Line(format!("{} {}", meta.level(), meta.target()));
        event.record(&mut line);
        self.out.push(line.0);
    }

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}

/// Captures everything logged on this thread until the guard is dropped (use a
/// current-thread runtime, so every task of the test runs here).
pub(crate) fn capture() -> (Captured, tracing::dispatcher::DefaultGuard) {
    static QUIET: Once = Once::new();
    QUIET.call_once(|| {
        let _ = tracing::dispatcher::set_global_default(tracing::Dispatch::new(Quiet));
    });
    let out = Captured::default();
    let guard = tracing::dispatcher::set_default(&tracing::Dispatch::new(Capture {
        out: out.clone(),
        next_id: AtomicU64::new(0),
    }));
    (out, guard)
}

/// The global default while tests capture: it records nothing, but tells every callsite
/// to ask again each time. Without it a callsite another test's thread registers while a
/// capture is being set up can cache "never" (tracing computes a new callsite's interest
/// from the dispatchers it saw when registration began), and the capture misses it.
struct Quiet;

impl Subscriber for Quiet {
    fn register_callsite(&self, _: &'static Metadata<'static>) -> Interest {
        Interest::sometimes()
    }

    fn enabled(&self, _: &Metadata<'_>) -> bool {
        false
    }

    fn new_span(&self, _: &Attributes<'_>) -> Id {
        Id::from_u64(1)
    }

    fn record(&self, _: &Id, _: &Record<'_>) {}

    fn record_follows_from(&self, _: &Id, _: &Id) {}

    fn event(&self, _: &Event<'_>) {}

    fn enter(&self, _: &Id) {}

    fn exit(&self, _: &Id) {}
}
