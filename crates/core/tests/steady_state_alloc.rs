//! Observing a line allocates nothing in steady state, and a session costs at most 256 bytes
//! (a counting global allocator). Both checks run in one test: the counters are global.
//!
//! This test binary needs `unsafe` for the `GlobalAlloc` impl that wraps the system allocator;
//! the library itself forbids unsafe code.

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicBool, AtomicIsize, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use watchdog_core::{Limits, LineView, Registry, SessionConfig};

struct Counting;

static COUNTING: AtomicBool = AtomicBool::new(false);
static ALLOCS: AtomicUsize = AtomicUsize::new(0);
static LIVE: AtomicIsize = AtomicIsize::new(0);

// SAFETY: forwards every call unchanged to the system allocator; only counts.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE.fetch_add(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as isize, Ordering::Relaxed);
        // SAFETY: same contract as the caller's.
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if COUNTING.load(Ordering::Relaxed) {
            ALLOCS.fetch_add(1, Ordering::Relaxed);
        }
        LIVE.fetch_add(
            new_size as isize - layout.size() as isize,
            Ordering::Relaxed,
        );
        // SAFETY: same contract as the caller's.
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static GLOBAL: Counting = Counting;

const LINES: [&[u8]; 8] = [
    br#"{"type":"stream_event","event":{"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"Hello"}},"session_id":"0abebf6c-ff8f","parent_tool_use_id":null}"#,
    br#"{"type":"stream_event","event":{"type":"ping"},"session_id":"0abebf6c-ff8f","parent_tool_use_id":null}"#,
    br#"{"type":"tool_progress","tool_use_id":"toolu_b-heartbeat-0","tool_name":"Bash","parent_tool_use_id":"toolu_b","elapsed_time_seconds":30,"heartbeat":true,"session_id":"0abebf6c-ff8f"}"#,
    br#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"toolu_b","name":"Bash","input":{"command":"ls"}}],"stop_reason":null},"session_id":"0abebf6c-ff8f","parent_tool_use_id":null}"#,
    br#"{"type":"user","message":{"role":"user","content":[{"tool_use_id":"toolu_b","type":"tool_result","content":"ok","is_error":false}]},"session_id":"0abebf6c-ff8f","parent_tool_use_id":null}"#,
    br#"{"type":"rate_limit_event","rate_limit_info":{"status":"allowed","resetsAt":1796033973,"utilization":0.5},"session_id":"0abebf6c-ff8f"}"#,
    br#"{"type":"system","subtype":"status","status":"requesting","session_id":"0abebf6c-ff8f"}"#,
    br#"{"type":"system","subtype":"thinking_tokens","estimated_tokens":4,"session_id":"0abebf6c-ff8f"}"#,
];

#[test]
fn steady_state_costs() {
    observing_lines_allocates_nothing_in_steady_state();
    a_session_costs_at_most_256_bytes();
}

fn a_session_costs_at_most_256_bytes() {
    let init = br#"{"type":"system","subtype":"init","session_id":"0abebf6c-ff8f-40d6-98c9-4d6f528a4451"}"#;
    let write_use = br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"toolu_w","name":"Write","input":{}}]}}"#;
    let write_result = br#"{"type":"user","message":{"content":[{"tool_use_id":"toolu_w","type":"tool_result"}]}}"#;
    let t0 = Instant::now();
    let before = LIVE.load(Ordering::Relaxed);
    let mut r = Registry::new(Limits::default());
    let n = 100_000;
    for i in 0..n {
        let now = t0 + Duration::from_micros(i);
        let id = r.register(now, SessionConfig::default());
        r.observe_line(now, id, init);
        r.observe_line(now, id, write_use);
        r.observe_line(now, id, write_result);
        r.observe_line(now, id, LINES[0]);
    }
    r.handle_timeout(t0 + Duration::from_secs(1));
    let per = (LIVE.load(Ordering::Relaxed) - before) as f64 / n as f64;
    assert!(per <= 256.0, "{per:.1} bytes per session");
    assert!(per >= 112.0, "{per:.1}: the probe measures something");
    drop(r);
}

fn observing_lines_allocates_nothing_in_steady_state() {
    let t0 = Instant::now();
    let mut r = Registry::new(Limits::default());
    let ids: Vec<_> = (0..1000)
        .map(|_| r.register(t0, SessionConfig::default()))
        .collect();
    let write_use = br#"{"type":"assistant","message":{"content":[{"type":"tool_use","id":"w","name":"Write","input":{}}]},"session_id":"0abebf6c-ff8f"}"#;
    let write_result = br#"{"type":"user","message":{"content":[{"tool_use_id":"w","type":"tool_result"}]},"session_id":"0abebf6c-ff8f"}"#;
    let views: Vec<LineView<'_>> = LINES.iter().map(|l| LineView::parse(l).unwrap()).collect();
    let mut now = t0;
    // Warm-up: first lines (session ids are stored), first writes, heap and queues at size.
    for id in &ids {
        r.observe_line(now, *id, write_use);
        r.observe_line(now, *id, write_result);
    }
    let feed = |r: &mut Registry, rounds: usize, now: &mut Instant| {
        for round in 0..rounds {
            for (i, id) in ids.iter().enumerate() {
                *now += Duration::from_millis(3);
                r.observe(*now, *id, &views[(i + round) % views.len()]);
                r.observe_line(*now, *id, LINES[(i + round + 3) % LINES.len()]);
            }
        }
        while r.poll_event().is_some() {}
    };
    feed(&mut r, 20, &mut now);
    COUNTING.store(true, Ordering::Relaxed);
    feed(&mut r, 20, &mut now);
    r.handle_timeout(now);
    COUNTING.store(false, Ordering::Relaxed);
    assert_eq!(
        ALLOCS.load(Ordering::Relaxed),
        0,
        "allocations while observing 40 000 lines"
    );
    assert_eq!(r.len(), 1000);
    assert!(ids.iter().all(|id| r.kill(*id).is_none()));
}
