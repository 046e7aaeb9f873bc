//! The rate-limit frame reader on arbitrary input: never panics, never poisons its state
//! (utilization stays a finite number in range), and every rendering is total.
#![no_main]
use libfuzzer_sys::fuzz_target;
use watchdog_core::rate_limit::{RateLimitConfig, RateLimitMonitor, MAX_UTILIZATION};
use watchdog_core::LineView;

fuzz_target!(|data: &[u8]| {
    let mut monitor = RateLimitMonitor::new(RateLimitConfig::default());
    // The first 8 bytes pick "now"; the rest is one or more frames, one per line.
    let (now, rest) = match data.split_first_chunk::<8>() {
        Some((n, rest)) => (u64::from_le_bytes(*n) >> 20, rest),
        None => (0, data),
    };
    for (i, line) in rest.split(|&b| b == b'\n').enumerate() {
        let t = now.saturating_add(i as u64 * 1000);
        if let Ok(view) = LineView::parse(line) {
            for e in monitor.observe(t, &view) {
                let _ = e.to_string();
            }
        }
        if let Ok(value) = serde_json::from_slice::<serde_json::Value>(line) {
            let _ = monitor.note(t, &value);
        }
        if let Some(u) = monitor.utilization(t) {
            assert!(
                u.is_finite() && (0.0..=MAX_UTILIZATION).contains(&u),
                "utilization {u}"
            );
        }
        if let Some(r) = monitor.latest() {
            let _ = (r.to_string(), r.resets_at_iso());
        }
        let _ = (
            monitor.summary(t),
            monitor.next_expiry(t),
            monitor.rejection(t),
        );
    }
});
