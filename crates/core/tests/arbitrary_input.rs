//! Arbitrary bytes into every input path of the core: nothing panics, and the line view accepts
//! exactly the JSON objects serde_json accepts (so "unparseable" means what it says).

mod common;

use common::jsonish;
use proptest::prelude::*;
use watchdog_core::{classify, classify_line, LineKind, LineView, Signal};

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..512)) {
        let class = classify_line(&bytes);
        if LineView::parse(&bytes).is_err() {
            prop_assert_eq!(class.kind, LineKind::Unparseable);
            prop_assert_eq!(class.signal, Signal::KeepAlive);
        }
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
    fn a_line_in_an_envelope_reads_as_the_line_alone(s in jsonish()) {
        // The envelope's scan builds the nested line's view exactly as the view reads it alone.
        let entry = format!("{{\"t_ms\":1,\"line\":{s}}}");
        let mut keys = Vec::new();
        let view = LineView::parse_envelope(&entry, "line", |k, _| keys.push(k.to_owned()));
        if let Ok(Some(v)) = &view {
            let alone = LineView::parse(s.as_bytes()).expect("the nested line is an object");
            prop_assert_eq!(classify(v), classify(&alone), "input {:?}", s);
            prop_assert_eq!(keys, ["t_ms", "line"]);
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
