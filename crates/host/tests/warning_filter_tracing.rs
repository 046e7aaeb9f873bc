//! The `tracing` layer of the warning filter and its process-wide install (feature `tracing`).
//!
//! Mapping of the reference's 13 `check-sdk-warning-filter.ts` checks (Node `emitWarning`
//! → a `tracing` event with a `code` field; Node's stderr printer → the inner subscriber,
//! here a recording layer; "both emitWarning signatures" → `code` given as a string and as a
//! Display/Debug value). Deliberate difference: the first event of a listed code reaches the
//! subscriber (shown once) and `on_first` also runs; the reference swallows even the first.
//! The install test owns the process-wide state, so checks 1 and 4–8 share one test function.
#![cfg(feature = "tracing")]

use std::sync::{Arc, Mutex};

use tracing::field::{Field, Visit};
use tracing::{Event, Subscriber};
use tracing_subscriber::layer::{Context, Layer, SubscriberExt};
use watchdog_host::warning_filter::{install, WarningFilter, WarningLayer, SHADOWED_CODE};

/// What reached the subscriber: (code, message) per event.
type Log = Arc<Mutex<Vec<(String, String)>>>;

#[derive(Clone, Default)]
struct Recorder(Log);

#[derive(Default)]
struct Fields(String, String);

impl Visit for Fields {
    fn record_str(&mut self, f: &Field, v: &str) {
        if f.name() == "code" {
            self.0 = v.to_owned();
        }
    }
    fn record_debug(&mut self, f: &Field, v: &dyn std::fmt::Debug) {
        match f.name() {
            "code" => self.0 = format!("{v:?}"),
            "message" => self.1 = format!("{v:?}"),
            _ => {}
        }
    }
}

impl<S: Subscriber> Layer<S> for Recorder {
    fn on_event(&self, event: &Event<'_>, _: Context<'_, S>) {
        let mut f = Fields::default();
        event.record(&mut f);
        self.0.lock().unwrap().push((f.0, f.1));
    }
}

fn notes() -> (Log, impl FnMut(&str, &str) + Send + 'static) {
    let seen: Log = Arc::default();
    let s = seen.clone();
    (seen, move |c: &str, m: &str| {
        s.lock().unwrap().push((c.to_owned(), m.to_owned()))
    })
}

fn messages(log: &Log) -> Vec<String> {
    log.lock().unwrap().iter().map(|(_, m)| m.clone()).collect()
}

#[test]
fn ref_02_03_12_first_shadowed_event_shows_repeats_dropped_other_codes_untouched() {
    let (notes, cb) = notes();
    let rec = Recorder::default();
    let layer = WarningLayer::new(WarningFilter::default().on_first(cb));
    let sub = tracing_subscriber::registry()
        .with(rec.clone())
        .with(layer.clone());
    tracing::subscriber::with_default(sub, || {
        tracing::warn!(code = SHADOWED_CODE, "shadowed 1");
        tracing::warn!(code = %SHADOWED_CODE, "shadowed 2"); // the other "signature"
        tracing::warn!(code = ?SHADOWED_CODE, "shadowed 3");
        tracing::warn!(code = "DEP0040", "punycode is deprecated");
        tracing::warn!(code = "DEP0040", "punycode is deprecated");
        tracing::info!("no code at all");
    });
    assert_eq!(
        messages(&rec.0),
        [
            "shadowed 1",
            "punycode is deprecated",
            "punycode is deprecated",
            "no code at all"
        ],
        "ref 12: every repeat dropped; ref 3: other codes reach the subscriber unchanged"
    );
    assert_eq!(
        *notes.lock().unwrap(),
        [(SHADOWED_CODE.to_owned(), "shadowed 1".to_owned())],
        "ref 2: exactly one on_first note"
    );
    assert_eq!(layer.suppressed(SHADOWED_CODE), 2);
    assert_eq!(
        layer.summary().to_string(),
        "CLAUDE_SDK_CAN_USE_TOOL_SHADOWED: 2 repeats suppressed"
    );
}

#[test]
fn ref_09_10_13_custom_codes_once_per_code_in_order_and_the_default_code_passes() {
    let (notes, cb) = notes();
    let rec = Recorder::default();
    let layer = WarningLayer::new(WarningFilter::with_codes(["PC_A", "PC_B"]).on_first(cb));
    let sub = tracing_subscriber::registry().with(rec.clone()).with(layer);
    tracing::subscriber::with_default(sub, || {
        for code in ["PC_A", "PC_B", "PC_A", "PC_B"] {
            tracing::warn!(code, "w");
        }
        tracing::warn!(code = SHADOWED_CODE, "default code");
        tracing::warn!(code = SHADOWED_CODE, "default code");
    });
    let codes: Vec<String> = notes
        .lock()
        .unwrap()
        .iter()
        .map(|(c, _)| c.clone())
        .collect();
    assert_eq!(codes, ["PC_A", "PC_B"], "ref 10");
    assert_eq!(
        messages(&rec.0),
        ["w", "w", "default code", "default code"],
        "ref 13: the default code is not listed, so it is never dropped"
    );
}

#[test]
fn ref_11_a_panicking_on_first_does_not_propagate_out_of_the_event() {
    let rec = Recorder::default();
    let layer = WarningLayer::new(WarningFilter::default().on_first(|_, _| panic!("bug")));
    let sub = tracing_subscriber::registry().with(rec.clone()).with(layer);
    tracing::subscriber::with_default(sub, || {
        tracing::warn!(code = SHADOWED_CODE, "a");
        tracing::warn!(code = SHADOWED_CODE, "b");
    });
    assert_eq!(messages(&rec.0), ["a"]);
}

#[test]
fn an_event_raised_inside_on_first_does_not_deadlock() {
    let rec = Recorder::default();
    let layer = WarningLayer::new(
        WarningFilter::default().on_first(|code, _| tracing::warn!(code, "expected, shown once")),
    );
    let sub = tracing_subscriber::registry().with(rec.clone()).with(layer);
    tracing::subscriber::with_default(sub, || {
        tracing::warn!(code = SHADOWED_CODE, "original");
    });
    // tracing itself drops an event raised while its dispatcher is busy on this thread;
    // what matters is that the call returns.
    assert_eq!(messages(&rec.0), ["original"]);
}

#[test]
fn ref_01_04_to_08_installing_twice_is_a_no_op_that_reports_false() {
    let rec1 = Recorder::default();
    let (notes1, cb1) = notes();
    let first = install(
        tracing_subscriber::registry().with(rec1.clone()),
        WarningFilter::default().on_first(cb1),
    );
    assert!(first, "ref 5: the first install returns true");

    let rec2 = Recorder::default();
    let (notes2, cb2) = notes();
    let second = install(
        tracing_subscriber::registry().with(rec2.clone()),
        WarningFilter::with_codes(["OTHER"]).on_first(cb2),
    );
    assert!(!second, "ref 6: the second install returns false");

    // ref 1: emitting through the installed filter runs to completion.
    tracing::warn!(code = SHADOWED_CODE, "shadowed");
    tracing::warn!(code = SHADOWED_CODE, "shadowed again");
    tracing::warn!(code = "OTHER", "other warning");

    assert_eq!(
        messages(&rec1.0),
        ["shadowed", "other warning"],
        "ref 4: wrapped once: the other warning prints exactly once; ref 8: the first \
         install's filter is the one in place"
    );
    assert!(
        rec2.0.lock().unwrap().is_empty(),
        "the second subscriber is never used"
    );
    assert_eq!(notes1.lock().unwrap().len(), 1);
    assert!(
        notes2.lock().unwrap().is_empty(),
        "ref 7: the second install's callback never runs"
    );
}

#[test]
fn the_layer_filters_wherever_it_sits_in_the_stack() {
    let rec = Recorder::default();
    let layer = WarningLayer::new(WarningFilter::default());
    // The recording layer outside the filter this time.
    let sub = tracing_subscriber::registry()
        .with(layer.clone())
        .with(rec.clone());
    tracing::subscriber::with_default(sub, || {
        for i in 0..3 {
            tracing::warn!(code = SHADOWED_CODE, "n{i}");
        }
    });
    assert_eq!(messages(&rec.0), ["n0"]);
    assert_eq!(layer.summary().total(), 2);
}
