//! Arbitrary capture lines into the capture readers and the one replay: nothing panics, the
//! in-place reader reads a nested line as the line view reads it alone, and a replay's events
//! come in time order with at most one kill per run.

#[path = "../../core/tests/common/mod.rs"]
mod common;

use common::jsonish;
use proptest::prelude::*;
use watchdog_core::{classify, LineView};
use watchdog_host::capture::{Entry, EntryView, RecordView};
use watchdog_host::replay::Replay;

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let _ = Entry::parse(&bytes);
        let _ = EntryView::parse(&bytes);
    }

    #[test]
    fn arbitrary_capture_lines_never_panic(s in jsonish()) {
        let line = format!("{{\"t_ms\":1,\"line\":{s}}}");
        let _ = Entry::parse(line.as_bytes());
        // The in-place reader reads the nested line exactly as the line view reads it alone.
        let view = EntryView::parse(line.as_bytes());
        if let Ok(Some(EntryView { record: RecordView::Line(v), .. })) = &view {
            let alone = LineView::parse(s.as_bytes()).expect("the nested line is an object");
            prop_assert_eq!(classify(v), classify(&alone), "input {:?}", s);
        }
    }
}

proptest! {
    // Each case builds a registry per recorded run: fewer cases keep the suite quick.
    #![proptest_config(ProptestConfig::with_cases(200))]

    /// Arbitrary capture lines (and times) through the one replay: no panic, events of a run
    /// in time order, at most one kill per run.
    #[test]
    fn arbitrary_captures_replay_without_panic(
        lines in proptest::collection::vec((0u64..4000, 0usize..6, jsonish()), 0..40),
    ) {
        let limits = watchdog_core::Limits::default()
            .with_idle(std::time::Duration::from_millis(700))
            .and_then(|l| l.with_startup(std::time::Duration::from_millis(900)))
            .unwrap();
        let mut r = Replay::new(limits, std::time::Instant::now());
        let mut events = Vec::new();
        for (i, (t, kind, body)) in lines.iter().enumerate() {
            let key = ["line", "raw", "stdin", "exit", "boundary", "stderr"][*kind];
            let text = format!("{{\"t_ms\":{t},\"{key}\":{body}}}");
            if let Ok(Some(e)) = EntryView::parse(text.as_bytes()) {
                let _ = r.feed(i as u64 + 1, &e);
            }
            events.extend(std::iter::from_fn(|| r.poll_event()));
        }
        let _ = r.finish();
        events.extend(std::iter::from_fn(|| r.poll_event()));
        for w in events.windows(2) {
            if w[0].run == w[1].run {
                prop_assert!(w[0].t_ms <= w[1].t_ms, "{:?}", events);
            }
        }
        let runs = events.last().map_or(0, |e| e.run + 1);
        for run in 0..runs {
            let kills = events
                .iter()
                .filter(|e| e.run == run && matches!(e.event, watchdog_core::Event::Killed(_)))
                .count();
            prop_assert!(kills <= 1);
        }
    }
}
