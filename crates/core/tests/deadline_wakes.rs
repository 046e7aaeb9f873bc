//! `poll_timeout` is exact under churn: lines that move deadlines later, sessions that end and
//! are forgotten, and far deadlines never make the host wake for nothing.

mod common;

use common::{lines as l, min, sec, H};
use std::time::Duration;
use watchdog_core::{Limits, SessionId};

/// A tiny deterministic generator (xorshift).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n
    }
}

/// Wake at every `poll_timeout` up to `until`; every wake must produce at least one event.
fn wake_until(h: &mut H, until: Duration, wakes: &mut u64) {
    while let Some(p) = h.r.poll_timeout() {
        if p > h.at(until) {
            break;
        }
        h.r.handle_timeout(p);
        assert!(
            !h.drain().is_empty(),
            "a wake at {:?} found nothing due",
            p - h.t0
        );
        *wakes += 1;
    }
}

#[test]
fn every_wake_has_an_event_under_churn() {
    // Short limits, so that many deadlines fire within the run; a ceiling beyond the wheel's
    // span exercises far deadlines too.
    let limits = Limits::default()
        .with_idle(sec(20.0))
        .unwrap()
        .with_startup(sec(5.0))
        .unwrap()
        .with_ceiling(Some(min(150.0)))
        .unwrap();
    let mut h = H::new(limits);
    let mut rng = Rng(0x2545_F491_4F6C_DD1D);
    let mut ids: Vec<SessionId> = (0..300).map(|_| h.reg(Duration::ZERO)).collect();
    let mut now = Duration::ZERO;
    let mut wakes = 0;
    let lines = [
        l::DELTA,
        l::PING,
        l::TOOL_PROGRESS,
        l::ASSISTANT_TEXT,
        l::RESULT_OK,
    ];
    for _ in 0..30_000 {
        now += Duration::from_millis(rng.below(80));
        wake_until(&mut h, now, &mut wakes);
        let i = rng.below(ids.len() as u64) as usize;
        match rng.below(100) {
            0 => {
                // The process exits: end, forget, and start a new session in its place.
                h.r.end(h.at(now), ids[i]);
                h.drain();
                h.r.unregister(ids[i]);
                ids[i] = h.reg(now);
            }
            1 => {
                h.line(now, ids[i], l::REQUIRES_ACTION); // a long pause: only the ceiling
            }
            2 => {
                h.line(now, ids[i], l::RUNNING);
            }
            r if r < 40 => {} // this session stays quiet for a while
            _ => {
                h.line(now, ids[i], lines[rng.below(lines.len() as u64) as usize]);
            }
        }
        h.drain();
        if let Some(p) = h.r.poll_timeout() {
            assert!(p > h.at(now));
        }
    }
    wake_until(&mut h, now + min(200.0), &mut wakes);
    assert!(
        wakes > 500,
        "{wakes} wakes: the run exercised few deadlines"
    );
}
