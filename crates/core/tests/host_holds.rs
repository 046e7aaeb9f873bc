//! What a host holds back, as facts it hands the registry: output it cannot hand on
//! (`output_blocked`: the idle and no-progress clocks stand still) and lines it may still hold
//! unread (`input_pending`: a deadline waits for them, at most `INPUT_HOLD`). The same rule
//! whoever drives the timer. Virtual time throughout.

use std::time::{Duration, Instant};

use watchdog_core::config::INPUT_HOLD;
use watchdog_core::{Event, KillKind, Limits, LineView, Registry, SessionConfig, SessionId};

const ASSISTANT: &[u8] = br#"{"type":"assistant","message":{"content":[]}}"#;
const PING: &[u8] = br#"{"type":"stream_event","event":{"type":"ping"}}"#;

fn ms(n: u64) -> Duration {
    Duration::from_millis(n)
}

/// Idle 1 s (no extension), no-progress 3 s, no warnings before the kill that matter here.
fn limits() -> Limits {
    Limits::default()
        .with_idle(ms(1000))
        .and_then(|l| l.with_extend_factor(1.0))
        .and_then(|l| l.with_no_progress(ms(3000)))
        .unwrap()
}

fn session(r: &mut Registry, t0: Instant) -> SessionId {
    let id = r.register(t0, SessionConfig::default());
    r.observe_line(t0, id, ASSISTANT);
    id
}

/// The kills reported so far: (session, kind, instant since t0).
fn kills(r: &mut Registry, t0: Instant) -> Vec<(SessionId, KillKind, Duration)> {
    std::iter::from_fn(|| r.poll_event())
        .filter_map(|e| match e {
            Event::Killed(k) => Some((k.id, k.kind, k.at - t0)),
            _ => None,
        })
        .collect()
}

/// Wake at every `poll_timeout` up to `until` (bounded), as a host's timer would.
fn drive(r: &mut Registry, t0: Instant, until: Duration) {
    for _ in 0..1000 {
        match r.poll_timeout() {
            Some(at) if at <= t0 + until => r.handle_timeout(at),
            _ => return,
        }
    }
    panic!("the registry keeps asking for wake-ups");
}

#[test]
fn a_blocked_output_stops_the_idle_and_no_progress_clocks_and_the_block_does_not_count() {
    let t0 = Instant::now();
    // No bound on the block itself here (`output_blocked.rs` has that rule).
    let mut r = Registry::new(limits().with_output_blocked(Duration::ZERO));
    let id = session(&mut r, t0);
    r.output_blocked(t0 + ms(400), id, true);
    drive(&mut r, t0, ms(60_000));
    assert_eq!(kills(&mut r, t0), [], "nothing falls due while blocked");
    assert_eq!(r.poll_timeout(), None, "no ceiling: nothing to wake for");
    r.output_blocked(t0 + ms(60_000), id, false);
    // 400 ms of the idle second were used before the block: 600 ms left after it.
    drive(&mut r, t0, ms(61_000));
    assert_eq!(kills(&mut r, t0), [(id, KillKind::Idle, ms(60_600))]);
}

#[test]
fn a_block_holds_neither_the_ceiling_nor_the_startup_clock() {
    let t0 = Instant::now();
    let l = limits()
        .with_ceiling(Some(ms(5000)))
        .and_then(|l| l.with_startup(ms(2000)))
        .unwrap();
    let mut r = Registry::new(l);
    let id = session(&mut r, t0);
    let silent = r.register(t0, SessionConfig::default());
    r.output_blocked(t0 + ms(100), id, true);
    r.output_blocked(t0 + ms(100), silent, true);
    drive(&mut r, t0, ms(10_000));
    assert_eq!(
        kills(&mut r, t0),
        [
            (silent, KillKind::Startup, ms(2000)),
            (id, KillKind::Ceiling, ms(5000))
        ]
    );
}

#[test]
fn repeating_a_block_state_changes_nothing() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let id = session(&mut r, t0);
    r.output_blocked(t0 + ms(200), id, true);
    r.output_blocked(t0 + ms(5000), id, true); // still blocked: the block began at 200 ms
    r.output_blocked(t0 + ms(9000), id, false);
    r.output_blocked(t0 + ms(9100), id, false); // not blocked: no second shift
    drive(&mut r, t0, ms(20_000));
    assert_eq!(kills(&mut r, t0), [(id, KillKind::Idle, ms(9800))]);
}

#[test]
fn lines_a_late_host_held_unread_rescue_the_session_they_came_in_time_for() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let id = session(&mut r, t0);
    // The host was stopped for 5 s; at resume its reader is woken for lines, its timer too.
    let resume = t0 + ms(5000);
    r.input_pending(resume, id, true);
    r.handle_timeout(resume);
    assert_eq!(kills(&mut r, t0), []);
    let line = LineView::parse(ASSISTANT).unwrap();
    r.observe_waited(resume + ms(1), id, Some(&line));
    r.input_pending(resume + ms(1), id, false);
    assert_eq!(
        kills(&mut r, t0),
        [],
        "the waiting line counts before the deadline"
    );
    drive(&mut r, t0, ms(7000));
    assert_eq!(kills(&mut r, t0), [(id, KillKind::Idle, ms(6001))]);
}

#[test]
fn a_hold_whose_lines_do_not_rescue_ends_in_the_kill_dated_at_its_deadline() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let id = session(&mut r, t0);
    // A reader busy with a batch when the deadline passes: pings only (keep-alives).
    r.input_pending(t0 + ms(2900), id, true);
    let ping = LineView::parse(PING).unwrap();
    r.observe_waited(t0 + ms(2950), id, Some(&ping));
    drive(&mut r, t0, ms(3050));
    assert_eq!(
        kills(&mut r, t0),
        [],
        "the no-progress deadline waits for the reader"
    );
    r.input_pending(t0 + ms(3060), id, false);
    assert_eq!(kills(&mut r, t0), [(id, KillKind::NoProgress, ms(3000))]);
}

#[test]
fn a_hold_lasts_at_most_input_hold_past_the_host_s_word() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let id = session(&mut r, t0);
    let word = t0 + ms(5000);
    r.input_pending(word, id, true);
    assert_eq!(r.poll_timeout(), Some(word + INPUT_HOLD));
    drive(&mut r, t0, ms(5000) + INPUT_HOLD - ms(1));
    assert_eq!(kills(&mut r, t0), []);
    drive(&mut r, t0, ms(6000));
    assert_eq!(
        kills(&mut r, t0),
        [(id, KillKind::Idle, ms(1000))],
        "a reader that never says it read them delays the kill by INPUT_HOLD, no more"
    );
}

#[test]
fn a_hold_is_per_session() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let held = session(&mut r, t0);
    let other = session(&mut r, t0);
    r.input_pending(t0 + ms(1000), held, true);
    r.output_blocked(t0 + ms(10), other, false); // not blocked: nothing
    r.handle_timeout(t0 + ms(1000));
    assert_eq!(kills(&mut r, t0), [(other, KillKind::Idle, ms(1000))]);
}

#[test]
fn a_session_that_leaves_takes_its_holds_with_it() {
    let t0 = Instant::now();
    let mut r = Registry::new(limits());
    let old = session(&mut r, t0);
    r.input_pending(t0 + ms(10), old, true);
    r.output_blocked(t0 + ms(10), old, true);
    r.unregister(old);
    // The new session may take the old one's slot: it starts with no hold.
    let new = session(&mut r, t0 + ms(20));
    drive(&mut r, t0, ms(2000));
    assert_eq!(kills(&mut r, t0), [(new, KillKind::Idle, ms(1020))]);
    // Nor does an ended one keep them.
    let ended = session(&mut r, t0 + ms(2000));
    r.input_pending(t0 + ms(2000), ended, true);
    r.end(t0 + ms(2001), ended);
    r.input_pending(t0 + ms(2002), ended, false);
    drive(&mut r, t0, ms(9000));
    assert_eq!(kills(&mut r, t0), []);
}
