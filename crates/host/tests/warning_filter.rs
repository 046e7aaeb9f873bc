//! The once-per-code warning filter and the stderr line filter (no `tracing` feature needed).
//!
//! The reference's 13 checks patch Node's `process.emitWarning`; a Rust host never sees Node
//! warnings, so each check maps to the same promise made by [`WarningFilter`] (warnings the host
//! raises itself), [`StderrFilter`] (the CLI's stderr lines) and, with `--features tracing`,
//! the `tracing` layer and its process-wide install (`tests/warning_filter_tracing.rs`, which
//! carries the install-related checks 1 and 3–8). Checks covered here are marked `ref N`.
//! Deliberate difference: the first warning of a listed code is *shown* (`WarningDecision::First`) as
//! well as reported to `on_first`; the reference swallows it and only calls `onFirst`.

use std::sync::{Arc, Mutex};

use watchdog_host::warning_filter::{
    Pattern, StderrFilter, Summary, WarningDecision, WarningFilter, SHADOWED_CODE,
};

/// (code, message) per `on_first` call.
type Notes = Arc<Mutex<Vec<(String, String)>>>;

fn notes() -> (Notes, impl FnMut(&str, &str) + Send + 'static) {
    let seen = Arc::new(Mutex::new(Vec::new()));
    let s = seen.clone();
    (seen, move |code: &str, msg: &str| {
        s.lock().unwrap().push((code.to_owned(), msg.to_owned()))
    })
}

#[test]
fn ref_02_12_the_default_code_shows_once_and_every_repeat_is_counted() {
    let (seen, cb) = notes();
    let mut f = WarningFilter::default().on_first(cb);
    assert_eq!(f.codes(), [SHADOWED_CODE]);
    assert_eq!(
        f.check_warning(SHADOWED_CODE, "canUseTool will not be invoked"),
        WarningDecision::First
    );
    assert_eq!(
        f.check(SHADOWED_CODE),
        WarningDecision::Suppressed { count: 1 }
    );
    assert_eq!(
        f.check(SHADOWED_CODE),
        WarningDecision::Suppressed { count: 2 }
    );
    assert_eq!(
        *seen.lock().unwrap(),
        [(
            SHADOWED_CODE.to_owned(),
            "canUseTool will not be invoked".to_owned()
        )],
        "ref 2: exactly one on_first note"
    );
    assert_eq!(f.suppressed(SHADOWED_CODE), 2);
}

#[test]
fn ref_03_13_another_code_passes_untouched_and_is_not_counted() {
    let (seen, cb) = notes();
    let mut f = WarningFilter::default().on_first(cb);
    for _ in 0..3 {
        assert_eq!(f.check("DEP0040"), WarningDecision::Pass);
    }
    assert!(seen.lock().unwrap().is_empty());
    assert_eq!(f.suppressed("DEP0040"), 0);
    assert!(f.summary().is_empty());
    assert!(WarningDecision::Pass.shows() && WarningDecision::First.shows());
    assert!(!WarningDecision::Suppressed { count: 1 }.shows());
}

#[test]
fn ref_10_13_a_custom_code_list_reports_each_code_once_in_order() {
    let (seen, cb) = notes();
    let mut f = WarningFilter::with_codes(["PC_A", "PC_B"]).on_first(cb);
    assert_eq!(f.check("PC_B"), WarningDecision::First);
    assert_eq!(f.check("PC_A"), WarningDecision::First);
    assert_eq!(f.check("PC_B"), WarningDecision::Suppressed { count: 1 });
    assert_eq!(f.check("PC_A"), WarningDecision::Suppressed { count: 1 });
    // ref 13: the default code is not in the custom list: it passes.
    assert_eq!(f.check(SHADOWED_CODE), WarningDecision::Pass);
    let codes: Vec<String> = seen
        .lock()
        .unwrap()
        .iter()
        .map(|(c, _)| c.clone())
        .collect();
    assert_eq!(codes, ["PC_B", "PC_A"], "ref 10: once per code, in order");
}

#[test]
fn ref_11_a_panicking_on_first_does_not_propagate() {
    let mut f = WarningFilter::default().on_first(|_, _| panic!("callback bug"));
    assert_eq!(f.check(SHADOWED_CODE), WarningDecision::First);
    assert_eq!(
        f.check(SHADOWED_CODE),
        WarningDecision::Suppressed { count: 1 }
    );
    assert_eq!(f.callback_panics(), 1);
}

#[test]
fn summary_lists_suppressed_counts_per_code() {
    let mut f = WarningFilter::with_codes(["A", "B", "C"]);
    for code in ["B", "B", "B", "A", "A", "C"] {
        f.check(code);
    }
    assert_eq!(f.summary(), Summary(vec![("A".into(), 1), ("B".into(), 2)]));
    assert_eq!(
        f.summary().to_string(),
        "A: 1 repeat suppressed; B: 2 repeats suppressed"
    );
    assert_eq!(f.summary().total(), 3);
}

#[test]
fn an_empty_code_list_passes_everything() {
    let mut f = WarningFilter::with_codes(Vec::<String>::new());
    assert_eq!(f.check(SHADOWED_CODE), WarningDecision::Pass);
}

#[test]
fn stderr_filter_shows_a_known_noisy_line_once_and_counts_the_rest() {
    let (seen, cb) = notes();
    let mut f = StderrFilter::default()
        .on_first(cb)
        .with_rule("MCP_SLOW", Pattern::Contains("MCP server is slow".into()))
        .with_rule("DEPRECATED", Pattern::Prefix("Warning: deprecated".into()));
    assert_eq!(
        f.check("[x] MCP server is slow (3 s)\n"),
        WarningDecision::First
    );
    assert_eq!(
        f.check("[x] MCP server is slow (9 s)"),
        WarningDecision::Suppressed { count: 1 }
    );
    assert_eq!(
        f.check("  Warning: deprecated flag --foo\r\n"),
        WarningDecision::First
    );
    assert_eq!(
        f.check("see Warning: deprecated"),
        WarningDecision::Pass,
        "prefix only"
    );
    assert_eq!(f.check("Error: real trouble"), WarningDecision::Pass);
    assert_eq!(f.code_of("… MCP server is slow"), Some("MCP_SLOW"));
    assert_eq!(f.suppressed("MCP_SLOW"), 1);
    assert_eq!(f.summary().to_string(), "MCP_SLOW: 1 repeat suppressed");
    assert_eq!(
        *seen.lock().unwrap(),
        [
            (
                "MCP_SLOW".to_owned(),
                "[x] MCP server is slow (3 s)".to_owned()
            ),
            (
                "DEPRECATED".to_owned(),
                "  Warning: deprecated flag --foo".to_owned()
            ),
        ]
    );
}

#[test]
fn stderr_filter_without_rules_passes_every_line() {
    let mut f = StderrFilter::default();
    assert_eq!(f.check("anything"), WarningDecision::Pass);
    assert!(f.summary().is_empty());
}

#[test]
fn two_rules_for_one_code_share_its_count() {
    let mut f = StderrFilter::default()
        .with_rule("X", Pattern::Prefix("x:".into()))
        .with_rule("X", Pattern::Contains("ex".into()));
    assert_eq!(f.check("x: one"), WarningDecision::First);
    assert_eq!(f.check("an ex"), WarningDecision::Suppressed { count: 1 });
}

#[test]
fn a_panicking_stderr_callback_does_not_propagate() {
    let mut f = StderrFilter::default()
        .with_rule("X", Pattern::Prefix("x".into()))
        .on_first(|_, _| panic!("bug"));
    assert_eq!(f.check("x"), WarningDecision::First);
    assert_eq!(f.check("x"), WarningDecision::Suppressed { count: 1 });
}
