//! Shared pieces of the benchmarks: a counting allocator, the real captures, and reporting.
//!
//! The counting allocator is the one place in the project with `unsafe` code: implementing
//! [`GlobalAlloc`] is unsafe by definition. It only forwards to the system allocator and counts.
#![deny(unsafe_code)]
#![warn(missing_docs)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::path::PathBuf;
use std::sync::atomic::{AtomicI64, AtomicU64, Ordering::Relaxed};
use std::time::Duration;

/// A global allocator that counts allocations and live bytes.
pub struct CountingAlloc;

static ALLOCS: AtomicU64 = AtomicU64::new(0);
static LIVE: AtomicI64 = AtomicI64::new(0);

#[allow(unsafe_code)]
// SAFETY: every method forwards to `System` with the same arguments; the counters are atomics.
unsafe impl GlobalAlloc for CountingAlloc {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        System.alloc(layout)
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size() as i64, Relaxed);
        System.dealloc(ptr, layout)
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        LIVE.fetch_add(layout.size() as i64, Relaxed);
        System.alloc_zeroed(layout)
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        ALLOCS.fetch_add(1, Relaxed);
        LIVE.fetch_add(new_size as i64 - layout.size() as i64, Relaxed);
        System.realloc(ptr, layout, new_size)
    }
}

/// Number of allocations so far (only meaningful when [`CountingAlloc`] is the global allocator).
pub fn allocations() -> u64 {
    ALLOCS.load(Relaxed)
}

/// Bytes currently allocated (only meaningful when [`CountingAlloc`] is the global allocator).
pub fn live_bytes() -> i64 {
    LIVE.load(Relaxed)
}

/// The shared reference folder (`../shared` beside the repository, or `AGENT_WATCHDOG_SHARED`).
/// Panics with a clear message when it is missing: a benchmark never runs on made-up input.
pub fn shared_dir() -> PathBuf {
    let dir = std::env::var_os("AGENT_WATCHDOG_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../../shared"));
    assert!(
        dir.join("protocol/captures").is_dir(),
        "the reference captures are missing: expected {}/protocol/captures (set AGENT_WATCHDOG_SHARED)",
        dir.display()
    );
    dir
}

/// Every stdout line of every real capture in `shared/protocol/captures`, as the CLI printed it
/// (the raw JSON text of each `line` record, key order kept).
pub fn capture_lines() -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Rec<'a> {
        #[serde(borrow)]
        line: Option<&'a serde_json::value::RawValue>,
    }
    let dir = shared_dir().join("protocol/captures");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("read captures")
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    let mut out = Vec::new();
    for f in files {
        let text = std::fs::read_to_string(&f).expect("read capture");
        for l in text.lines() {
            if let Ok(Rec { line: Some(raw) }) = serde_json::from_str::<Rec>(l) {
                out.push(raw.get().to_owned());
            }
        }
    }
    assert!(!out.is_empty(), "no lines in {}", dir.display());
    out
}

/// Format a rate in MB/s.
pub fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}
