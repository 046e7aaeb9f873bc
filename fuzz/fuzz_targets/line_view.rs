//! The line view + classifier on arbitrary bytes: never panics, and accepts exactly the JSON
//! objects serde_json accepts (unpaired surrogate escapes and numbers beyond f64's range aside:
//! both are grammatical JSON that serde_json refuses to decode and the view never decodes).
#![no_main]
use libfuzzer_sys::fuzz_target;
use watchdog_core::{classify, classify_line, LineKind, LineView};

fuzz_target!(|data: &[u8]| {
    let class = classify_line(data);
    let ours = LineView::parse(data);
    if ours.is_err() {
        assert_eq!(class.kind, LineKind::Unparseable);
    }
    if let Ok(view) = &ours {
        // Every accessor is total.
        let _ = (view.kind(), view.subtype(), view.session_id(), view.event_type());
        let _ = (view.stop_reason(), view.is_error(), view.terminal_reason());
        let _ = (view.rate_limit_info().map(|f| f.to_value()), view.retry_delay_ms());
        let _ = (view.request_id(), view.request_subtype(), view.state());
        let _ = view.tool_uses().count() + view.tool_results().count();
        assert_eq!(classify(view), class);
    }
    if !data.windows(2).any(|w| w == b"\\u") {
        let theirs = serde_json::from_slice::<serde_json::Map<String, serde_json::Value>>(data);
        // serde_json also rejects numbers beyond f64's range; the grammar allows them, and the
        // view (which never reads such numbers) accepts them.
        let out_of_range = matches!(&theirs, Err(e) if e.to_string().contains("number out of range"));
        if !out_of_range {
            assert_eq!(ours.is_ok(), theirs.is_ok(), "view and serde_json disagree");
        }
    }
});
