//! The audit on the real transcripts and captures in `testdata/`, and the plot.

use watchdog_audit::Ending;
use watchdog_audit::SpellKind;
use watchdog_audit::{audit_paths, render_svg, render_text};
use watchdog_core::Limits;

#[test]
fn the_real_transcripts_give_sensible_values() {
    let dir = mock_api::harness::testdata_dir().join("transcripts");
    let r = audit_paths(&[dir], &Limits::default());
    assert_eq!(r.sessions_scanned, 2);
    assert_eq!(r.files_skipped, 0);
    assert_eq!(
        (r.read.bad_lines, r.read.untimed_entries, r.read.clock_jumps),
        (0, 0, 0)
    );
    // The tool session ran `sleep 75` in Bash.
    let bash = r.tools.iter().find(|(t, _)| t == "Bash").unwrap().1;
    assert_eq!(bash.count, 1);
    assert!((74_000..77_000).contains(&bash.max_ms), "{bash:?}");
    let top = &r.longest_productive_silences[0];
    assert_eq!(top.session_id, "1b6bbdfc-803c-44dd-a3f7-17170b8f5997");
    assert_eq!(
        (top.kind, top.tool.as_deref()),
        (SpellKind::Tool, Some("Bash"))
    );
    assert_eq!(top.ms, bash.max_ms);
    // The max-tokens session was resumed twice by hand: two waits after a result.
    let after = r
        .quiet_spells
        .iter()
        .find(|(k, _)| *k == SpellKind::AfterResult)
        .unwrap()
        .1;
    assert_eq!(after.count, 2);
    assert!(after.max_ms > 400_000, "{after:?}");
    // Both sessions' last turns ended with a final answer.
    let result = r
        .outcomes
        .iter()
        .find(|(e, _)| *e == Ending::Result)
        .unwrap()
        .1;
    assert_eq!(result, 2);
    assert!(r.would_kill.is_empty());
    // 75 s × 1.25 → 2 min.
    assert_eq!(
        (r.recommended.idle_ms, r.recommended.no_progress_ms),
        (120_000, 120_000)
    );
    assert!(r.recommended.verified);
}

#[test]
fn the_real_captures_are_read_and_replayed() {
    let dir = mock_api::harness::testdata_dir().join("captures");
    let n = std::fs::read_dir(&dir).unwrap().count() as u64;
    let r = audit_paths(&[dir], &Limits::default());
    assert_eq!(r.sessions_scanned, n);
    assert_eq!(r.files_skipped, 0);
    assert_eq!(r.read.bad_lines, 0);
    // The Bash call of the tool capture is split by the CLI's progress lines: under 76 s.
    let tool = r
        .quiet_spells
        .iter()
        .find(|(k, _)| *k == SpellKind::Tool)
        .unwrap()
        .1;
    assert!(tool.max_ms < 76_000, "{tool:?}");
    // The longest productive silence: the 300 s mid-stream stall the CLI recovered from.
    let top = &r.longest_productive_silences[0];
    assert!(
        top.file.ends_with("s4_stall_long_silent.capture.jsonl"),
        "{top:?}"
    );
    assert_eq!(top.kind, SpellKind::Model);
    assert!((300_000..301_000).contains(&top.ms), "{top:?}");
    // The bidirectional captures end without an `exit` record: replayed, the child stays
    // silent after its result, and the linger limit (11 min) ends it. Nothing productive is
    // killed.
    let kills: Vec<(&str, u64)> = r.would_kill.iter().map(|k| (k.kind, k.at_ms)).collect();
    assert_eq!(r.would_kill.len(), 3, "{kills:?}");
    for k in &r.would_kill {
        assert_eq!(k.kind, "linger");
        assert!(!k.productive);
        assert!(k.file.to_string_lossy().contains("s6_bidir"), "{k:?}");
        assert!((660_000..662_000).contains(&k.at_ms), "{k:?}");
    }
}

/// A tiny XML well-formedness check: balanced tags, quoted attributes, known entities.
fn check_xml(s: &str) -> Result<usize, String> {
    let mut stack: Vec<String> = Vec::new();
    let mut rest = s;
    let mut elements = 0;
    while let Some(lt) = rest.find('<') {
        check_text(&rest[..lt])?;
        let gt = rest[lt..].find('>').ok_or("unclosed tag")? + lt;
        let tag = &rest[lt + 1..gt];
        rest = &rest[gt + 1..];
        if tag.starts_with('?') || tag.starts_with('!') {
            continue;
        }
        if let Some(name) = tag.strip_prefix('/') {
            match stack.pop() {
                Some(open) if open == name.trim() => {}
                other => return Err(format!("</{name}> closes {other:?}")),
            }
            continue;
        }
        elements += 1;
        let self_closing = tag.ends_with('/');
        let body = tag.trim_end_matches('/');
        let name = body.split_whitespace().next().ok_or("empty tag")?;
        let attrs = &body[name.len()..];
        if !attrs.matches('"').count().is_multiple_of(2) {
            return Err(format!("unbalanced quotes in <{tag}>"));
        }
        for part in attrs.split('"').step_by(2) {
            let p = part.trim();
            if !(p.is_empty() || p.ends_with('=')) {
                return Err(format!("bad attribute {p:?} in <{tag}>"));
            }
        }
        for value in attrs.split('"').skip(1).step_by(2) {
            check_text(value)?;
            if value.contains('<') {
                return Err(format!("< in attribute of <{tag}>"));
            }
        }
        if !self_closing {
            stack.push(name.to_string());
        }
    }
    check_text(rest)?;
    if stack.is_empty() {
        Ok(elements)
    } else {
        Err(format!("unclosed {stack:?}"))
    }
}

fn check_text(t: &str) -> Result<(), String> {
    let mut rest = t;
    while let Some(i) = rest.find('&') {
        let semi = rest[i..].find(';').ok_or("bare &")? + i;
        let ent = &rest[i + 1..semi];
        if !matches!(ent, "amp" | "lt" | "gt" | "quot" | "apos") {
            return Err(format!("unknown entity &{ent};"));
        }
        rest = &rest[semi + 1..];
    }
    Ok(())
}

#[test]
fn the_plot_is_well_formed_with_one_bar_per_non_empty_bin_and_kind() {
    let dir = mock_api::harness::testdata_dir();
    let r = audit_paths(&[dir], &Limits::default());
    let svg = render_svg(&r);
    check_xml(&svg).unwrap();
    let bars = svg.matches(r#"<rect class="bar""#).count();
    let expected: usize = r
        .histogram
        .iter()
        .map(|b| b.counts.iter().filter(|c| **c > 0).count())
        .sum();
    assert!(expected > 3);
    assert_eq!(bars, expected);
    assert_eq!(svg.matches(r#"class="threshold""#).count(), 4);
    let idle = watchdog_core::config::HumanDuration(std::time::Duration::from_millis(
        r.recommended.idle_ms,
    ))
    .to_string();
    assert!(
        svg.contains(&format!("recommended --idle {idle}")),
        "{idle}"
    );
    // Spells are all counted once in the histogram.
    let spells: u64 = r.quiet_spells.iter().map(|(_, d)| d.count).sum();
    let binned: u64 = r.histogram.iter().flat_map(|b| b.counts).sum();
    assert_eq!(spells, binned);
    assert!(check_xml("<a><b></a>").is_err() && check_xml("<a x=\"&bad;\"/>").is_err());
}

#[test]
fn an_empty_audit_renders_too() {
    let r = audit_paths(&[], &Limits::default());
    assert!(render_text(&r).contains("no productive silence"));
    assert_eq!(r.to_json()["sessions_scanned"], 0);
}
