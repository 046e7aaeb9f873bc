//! Arbitrary bytes into every input path of the core: nothing panics, and the line view accepts
//! exactly the JSON objects serde_json accepts (so "unparseable" means what it says).

use proptest::prelude::*;
use watchdog_core::capture::{Entry, EntryView, RecordView};
use watchdog_core::replay::Replay;
use watchdog_core::{classify, classify_line, LineKind, LineView, Signal};

/// Strings over a JSON-ish alphabet, so many cases are near-valid JSON.
fn jsonish() -> impl Strategy<Value = String> {
    proptest::collection::vec(
        prop_oneof![
            Just("{".to_string()),
            Just("}".to_string()),
            Just("[".to_string()),
            Just("]".to_string()),
            Just(":".to_string()),
            Just(",".to_string()),
            Just("\"".to_string()),
            Just("\"type\"".to_string()),
            Just("\"assistant\"".to_string()),
            Just("\"stream_event\"".to_string()),
            Just("\"event\"".to_string()),
            Just("\"ping\"".to_string()),
            Just("\\".to_string()),
            Just("\\n".to_string()),
            Just("null".to_string()),
            Just("true".to_string()),
            Just(" ".to_string()),
            Just("-".to_string()),
            Just(".".to_string()),
            Just("e".to_string()),
            "[0-9]{1,3}",
            "[a-z]{1,4}",
        ],
        0..40,
    )
    .prop_map(|parts| parts.concat())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let class = classify_line(&bytes);
        if LineView::parse(&bytes).is_err() {
            prop_assert_eq!(class.kind, LineKind::Unparseable);
            prop_assert_eq!(class.signal, Signal::KeepAlive);
        }
        let _ = Entry::parse(&bytes);
        let _ = LineView::parse_validated(&bytes).map(|v| classify(&v));
    }

    #[test]
    fn the_view_accepts_exactly_the_objects_serde_json_accepts(s in jsonish()) {
        // serde_json rejects unpaired surrogate escapes when it builds strings; the view does not
        // build strings it does not read, so those inputs are out of this comparison.
        prop_assume!(!s.contains("\\u"));
        let ours = LineView::parse(s.as_bytes());
        let theirs = serde_json::from_str::<serde_json::Map<String, serde_json::Value>>(&s);
        let out_of_range = matches!(&theirs, Err(e) if e.to_string().contains("number out of range"));
        prop_assume!(!out_of_range);
        prop_assert_eq!(ours.is_ok(), theirs.is_ok(), "input {:?}", s);
        if let (Ok(view), Ok(map)) = (ours, theirs) {
            let ty = map.get("type").and_then(|t| t.as_str()).map(str::to_owned);
            prop_assert_eq!(view.kind().map(|k| k.into_owned()), ty);
            let value = serde_json::Value::Object(map);
            let from_value = LineView::from_value(&value).unwrap();
            prop_assert_eq!(classify(&view), classify(&from_value));
            // A validated line skimmed again reads the same.
            let skimmed = LineView::parse_validated(s.as_bytes()).expect("validated object");
            prop_assert_eq!(classify(&view), classify(&skimmed), "input {:?}", s);
        } else {
            // Anything else: no panic, whatever it reads.
            let _ = LineView::parse_validated(s.as_bytes()).map(|v| classify(&v));
        }
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

/// Fuzz finding (line_view, 43 bytes): a number beyond f64's range is grammatical JSON. serde_json
/// refuses it; the view accepts the line and classifies it by its type, as it must for any
/// well-formed line whose odd fields it never reads.
#[test]
fn a_number_beyond_f64_range_does_not_make_a_line_unparseable() {
    let line = b"{\"type\":\"assistant\",\"n\":7777777777777777777777e7777777777777777}";
    assert_eq!(classify_line(line).kind, LineKind::Assistant);
    let crash = b"{\"t.ype\":\n\n\n7777777777777777777777e77777777777777777777}";
    assert_eq!(classify_line(crash).kind, LineKind::Unknown);
    // retry_delay_ms that overflows reads as absent, not as infinity.
    let retry = b"{\"type\":\"system\",\"subtype\":\"api_retry\",\"retry_delay_ms\":1e999}";
    assert_eq!(LineView::parse(retry).unwrap().retry_delay_ms(), None);
}

/// Fuzz finding (line_view, 53 bytes): a key spelled like serde_json's private raw-value marker
/// is an ordinary key. serde_json (with its `raw_value` feature) refuses the object; the view
/// accepts the line and reads its fields. The oracle now checks the grammar only.
#[test]
fn a_key_named_like_serde_jsons_raw_value_marker_is_an_ordinary_key() {
    let crash = b"{\"typ3?igs\":{\"$serde_json::private::RawValue\":\"_},\"}}";
    assert_eq!(classify_line(crash).kind, LineKind::Unknown);
    let line =
        br#"{"type":"stream_event","event":{"$serde_json::private::RawValue":"x","type":"ping"}}"#;
    let view = LineView::parse(line).unwrap();
    assert_eq!(view.event_type().as_deref(), Some("ping"));
    assert_eq!(classify_line(line).kind, LineKind::Ping);
}

#[test]
fn a_huge_line_and_deep_nesting_are_handled_without_panic() {
    let big = format!(
        r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"{}"}}]}}}}"#,
        "x".repeat(20 << 20)
    );
    let c = classify_line(big.as_bytes());
    assert_eq!(c.kind, LineKind::Assistant);
    let deep = format!(r#"{{"type":"user","x":{}}}"#, "[".repeat(1_000_000));
    assert_eq!(classify_line(deep.as_bytes()).kind, LineKind::Unparseable);
}
