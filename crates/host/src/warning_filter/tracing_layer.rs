//! A `tracing_subscriber` layer that lets the first event of a listed `code` through and drops
//! its repeats.

use std::cell::Cell;
use std::fmt;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer};

use super::{Summary, WarningDecision, WarningFilter};

thread_local! {
    /// Set while this thread runs the filter (and so `on_first`): an event raised from inside
    /// the callback passes instead of dead-locking on the filter.
    static IN_FILTER: Cell<bool> = const { Cell::new(false) };
}

/// Drops repeated `tracing` events whose `code` field is a listed code; the first one of each
/// code, and every event without a listed code, passes. Clones share one filter, so keep a
/// clone to read the [`summary`](Self::summary) after handing the layer to a subscriber.
///
/// ```
/// use tracing_subscriber::layer::SubscriberExt;
/// use watchdog_host::warning_filter::{WarningFilter, WarningLayer, SHADOWED_CODE};
/// let layer = WarningLayer::new(WarningFilter::default());
/// let subscriber = tracing_subscriber::registry().with(layer.clone());
/// tracing::subscriber::with_default(subscriber, || {
///     for _ in 0..3 {
///         tracing::warn!(code = SHADOWED_CODE, "canUseTool will not be invoked for: Bash");
///     }
/// });
/// assert_eq!(layer.suppressed(SHADOWED_CODE), 2);
/// ```
#[derive(Clone, Debug)]
pub struct WarningLayer {
    filter: Arc<Mutex<WarningFilter>>,
}

impl WarningLayer {
    /// A layer applying `filter`.
    pub fn new(filter: WarningFilter) -> Self {
        WarningLayer {
            filter: Arc::new(Mutex::new(filter)),
        }
    }

    fn lock(&self) -> MutexGuard<'_, WarningFilter> {
        self.filter.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Repeats of `code` dropped so far.
    pub fn suppressed(&self, code: &str) -> u64 {
        self.lock().suppressed(code)
    }

    /// Dropped counts per code.
    pub fn summary(&self) -> Summary {
        self.lock().summary()
    }

    /// The decision on one event.
    fn decide(&self, event: &Event<'_>) -> WarningDecision {
        if IN_FILTER.with(Cell::get) {
            return WarningDecision::Pass;
        }
        let mut v = Fields::default();
        event.record(&mut v);
        let Some(code) = v.code else {
            return WarningDecision::Pass;
        };
        IN_FILTER.with(|f| f.set(true));
        let decision = self.lock().check_warning(&code, &v.message);
        IN_FILTER.with(|f| f.set(false));
        decision
    }
}

impl<S: Subscriber> Layer<S> for WarningLayer {
    fn event_enabled(&self, event: &Event<'_>, _ctx: Context<'_, S>) -> bool {
        self.decide(event).shows()
    }
}

/// Reads the `code` and `message` fields of an event.
#[derive(Default)]
struct Fields {
    code: Option<String>,
    message: String,
}

impl Visit for Fields {
    fn record_str(&mut self, field: &Field, value: &str) {
        match field.name() {
            "code" => self.code = Some(value.to_owned()),
            "message" => self.message = value.to_owned(),
            _ => {}
        }
    }

    fn record_debug(&mut self, field: &Field, value: &dyn fmt::Debug) {
        match field.name() {
            "code" => {
                // `code = ?s` renders a string with quotes; `code = %s` without.
                let s = format!("{value:?}");
                let s = match s.strip_prefix('"').and_then(|s| s.strip_suffix('"')) {
                    Some(inner) => inner.to_owned(),
                    None => s,
                };
                self.code = Some(s);
            }
            "message" => self.message = format!("{value:?}"),
            _ => {}
        }
    }
}

static INSTALLED: AtomicBool = AtomicBool::new(false);

/// Install `filter` process-wide, in front of `subscriber`, as the global default subscriber.
///
/// Returns `true` when it installed. Any later call changes nothing and returns `false`: its
/// subscriber and filter (and `on_first`) are never used. It also returns `false` when another
/// global default subscriber was already set.
pub fn install<S>(subscriber: S, filter: WarningFilter) -> bool
where
    S: Subscriber + Send + Sync + 'static,
{
    if INSTALLED.swap(true, Ordering::SeqCst) {
        return false;
    }
    let layered = WarningLayer::new(filter).with_subscriber(subscriber);
    tracing::subscriber::set_global_default(layered).is_ok()
}
