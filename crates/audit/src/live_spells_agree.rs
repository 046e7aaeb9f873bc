//! A live run's quiet spells are `audit`'s: every capture in `testdata/` fed to a registry
//! with live facts on (as `agent-watchdog run` does with telemetry on), at the capture's own
//! times, reports exactly the spells `audit` finds in the same file (kind, tool, start,
//! length, longest gap, productive), so the dashboard's live points and a back-fill's agree.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use crate::spells::{analyse, Spell};
use crate::transcript::{read_session, Format};
use watchdog_core::capture::{EntryView, RecordView};
use watchdog_core::{Event, Limits, Registry, SessionConfig};

fn captures() -> Vec<PathBuf> {
    let root = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../testdata");
    let mut out = Vec::new();
    for dir in ["captures", "mcp"] {
        for e in std::fs::read_dir(root.join(dir)).unwrap() {
            let p = e.unwrap().path();
            if p.to_string_lossy().ends_with(".capture.jsonl") {
                out.push(p);
            }
        }
    }
    out.sort();
    assert!(out.len() >= 20, "{out:?}");
    out
}

/// Limits no capture reaches: the registry never kills, so every line counts.
fn patient() -> Limits {
    let long = Duration::from_secs(10_000_000);
    Limits::default()
        .with_idle(long)
        .and_then(|l| l.with_no_progress(long))
        .and_then(|l| l.with_startup(long))
        .and_then(|l| l.with_linger(long))
        .and_then(|l| l.with_ceiling(None))
        .unwrap()
}

/// The spells a live registry reports for the capture `path`, as `audit` spells (ms since
/// spawn).
fn live_spells(path: &Path) -> Vec<Spell> {
    let text = std::fs::read(path).unwrap();
    let base = Instant::now();
    let mut reg = Registry::new(patient());
    let id = reg.register(base, SessionConfig::default().with_live_facts(true));
    let mut t_ms = 0u64;
    let mut out = Vec::new();
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        let Ok(Some(entry)) = EntryView::parse(line) else {
            continue;
        };
        // The capture readers' rule: a time that goes backwards is the previous one.
        if let Ok(t) = entry.t_ms {
            t_ms = t_ms.max(t);
        }
        let now = base + Duration::from_millis(t_ms);
        match &entry.record {
            RecordView::Line(view) => {
                reg.observe(now, id, view);
            }
            RecordView::Unparseable => {
                reg.observe_line(now, id, b"not json");
            }
            RecordView::Stdin(Some(view)) => reg.observe_input(now, id, view),
            _ => {}
        }
        while let Some(ev) = reg.poll_event() {
            assert!(
                !matches!(ev, Event::Killed(_)),
                "{}: killed",
                path.display()
            );
            if let Event::QuietSpells { spells, .. } = ev {
                out.extend(spells.into_iter().map(|s| Spell {
                    kind: s.kind,
                    tool: s.tool.map(|t| Box::from(&*t)),
                    start_ms: s.started.duration_since(base).as_millis() as u64,
                    ms: s.length.as_millis() as u64,
                    quiet_ms: s.quiet.as_millis() as u64,
                    productive: s.productive,
                }));
            }
        }
    }
    out
}

#[test]
fn every_captures_live_spells_are_audits() {
    let mut spells = 0;
    let mut kinds = std::collections::BTreeSet::new();
    for path in captures() {
        let log = read_session(&path, &mut |_| {}).unwrap();
        assert_eq!(log.format, Format::Capture, "{}", path.display());
        let audit = analyse(Format::Capture, &log.entries).spells;
        let live = live_spells(&path);
        assert_eq!(live.len(), audit.len(), "{}", path.display());
        for (i, (l, a)) in live.iter().zip(&audit).enumerate() {
            assert_eq!(l, a, "{} spell {i}", path.display());
        }
        spells += live.len();
        kinds.extend(live.iter().map(|s| s.kind));
    }
    // The captures hold enough to make the comparison mean something.
    assert!(spells > 400, "{spells}");
    assert!(kinds.len() >= 3, "{kinds:?}");
}

#[test]
fn a_session_without_live_facts_reports_none() {
    let path = captures().into_iter().next().unwrap();
    let text = std::fs::read(&path).unwrap();
    let base = Instant::now();
    let mut reg = Registry::new(patient());
    let id = reg.register(base, SessionConfig::default().with_tally(true));
    for line in text.split(|b| *b == b'\n').filter(|l| !l.is_empty()) {
        if let Ok(Some(EntryView {
            t_ms: Ok(t),
            record: RecordView::Line(view),
            ..
        })) = EntryView::parse(line)
        {
            reg.observe(base + Duration::from_millis(t), id, &view);
        }
    }
    assert!(std::iter::from_fn(|| reg.poll_event()).all(|e| !matches!(
        e,
        Event::QuietSpells { .. } | Event::McpCalls { .. } | Event::SessionIdentified { .. }
    )));
}
