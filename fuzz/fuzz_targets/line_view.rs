//! The line view + classifier on arbitrary bytes: never panics, and accepts exactly the JSON
//! objects that serde_json's grammar check (`IgnoredAny`) accepts.
#![no_main]
use libfuzzer_sys::fuzz_target;
use watchdog_core::facts::{ClaudeSessionId, ResultFacts};
use watchdog_core::{classify, classify_line, Dialect, LineKind, LineView, Signal};

fuzz_target!(|data: &[u8]| {
    let class = classify_line(data);
    let ours = LineView::parse(data);
    if ours.is_err() {
        assert_eq!(class.kind, LineKind::Unparseable);
    }
    if let Ok(view) = &ours {
        // Every accessor is total.
        let _ = (
            view.kind(),
            view.subtype(),
            view.session_id(),
            view.event_type(),
        );
        let _ = (view.stop_reason(), view.is_error(), view.terminal_reason());
        let _ = (
            view.rate_limit_info().map(|f| f.to_value()),
            view.retry_delay_ms(),
        );
        let _ = (view.request_id(), view.request_subtype(), view.state());
        let _ = view.tool_uses().count() + view.tool_results().count();
        assert_eq!(classify(view), class);
        // Every dialect reads every line, totally: Claude Code's is the classifier's.
        assert_eq!(Dialect::Claude.classify(view), class);
        let decisive = Dialect::of_line(view);
        for d in Dialect::ALL {
            let c = d.classify(view);
            let _ = ClaudeSessionId::of_dialect_line(view, c.kind);
            if c.signal == Signal::Settle {
                let _ = ResultFacts::of_end(view, c.kind).is_error_result();
            }
            // A line decisively of one dialect is one that dialect knows.
            if decisive == Some(d) {
                assert_ne!(c.kind, LineKind::Unknown);
            }
        }
    }
    // The oracle: serde_json's validating skip (`IgnoredAny`) over a line that starts with `{`.
    // It checks the grammar without decoding, so numbers beyond f64's range, unpaired
    // surrogate escapes and serde_json's own magic keys (`$serde_json::private::RawValue`)
    // are judged as the grammar judges them, as the view does.
    // Skipped strings are not checked for UTF-8 there, so the text is checked first.
    let first = data.iter().find(|b| !b.is_ascii_whitespace());
    let theirs = first == Some(&b'{')
        && std::str::from_utf8(data)
            .is_ok_and(|text| serde_json::from_str::<serde::de::IgnoredAny>(text).is_ok());
    assert_eq!(ours.is_ok(), theirs, "view and serde_json disagree");
});
