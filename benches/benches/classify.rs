//! Bench 1: line classification. The core's borrowed line view + classifier against a full
//! `serde_json::Value` parse of the same lines (the baseline), over the real captures repeated
//! to ≥ 100 MB, plus allocations per line for lines without escapes.
//!
//! Run: `cargo bench -p watchdog-benches --bench classify`

use std::hint::black_box;
use std::time::Instant;

use watchdog_benches::{allocations, capture_lines, mb_per_s, CountingAlloc};
use watchdog_core::{classify, classify_line, LineView, Signal};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

fn main() {
    let target: usize = std::env::var("CLASSIFY_BENCH_BYTES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(100_000_000);
    let lines = capture_lines();
    let one_pass: usize = lines.iter().map(|l| l.len()).sum();
    let reps = target.div_ceil(one_pass).max(1);
    let total_lines = lines.len() * reps;
    let total_bytes = one_pass * reps;
    println!(
        "bench classify: {} distinct real lines ({} bytes), repeated {}× = {} lines, {:.1} MB",
        lines.len(),
        one_pass,
        reps,
        total_lines,
        total_bytes as f64 / 1e6
    );

    // Same work for both: every line, `reps` times, read its type and liveness meaning.
    let t = Instant::now();
    let mut progress = 0usize;
    for _ in 0..reps {
        for l in &lines {
            if classify_line(black_box(l.as_bytes())).signal == Signal::Progress {
                progress += 1;
            }
        }
    }
    let ours = t.elapsed();

    let t = Instant::now();
    let mut typed = 0usize;
    for _ in 0..reps {
        for l in &lines {
            let v: serde_json::Value = serde_json::from_str(black_box(l)).expect("valid line");
            if v.get("type").and_then(|t| t.as_str()).is_some() {
                typed += 1;
            }
        }
    }
    let baseline = t.elapsed();
    assert_eq!(typed, total_lines);
    black_box(progress);

    // Allocations per line, for lines without escapes (one pass over the distinct lines).
    let plain: Vec<&String> = lines.iter().filter(|l| !l.contains('\\')).collect();
    let before = allocations();
    for l in &plain {
        let v = LineView::parse(l.as_bytes()).expect("parses");
        black_box(classify(&v));
        black_box(v.session_id());
        black_box(v.event_type());
    }
    let allocs = allocations() - before;

    let ns = |d: std::time::Duration| d.as_nanos() as f64 / total_lines as f64;
    println!(
        "  line view + classify : {:>8.1} ns/line  {:>8.1} MB/s",
        ns(ours),
        mb_per_s(total_bytes, ours)
    );
    println!(
        "  serde_json::Value    : {:>8.1} ns/line  {:>8.1} MB/s   (baseline)",
        ns(baseline),
        mb_per_s(total_bytes, baseline)
    );
    println!(
        "  ratio                : {:.2}× faster than the full parse (target ≥ 3×)",
        baseline.as_secs_f64() / ours.as_secs_f64()
    );
    println!(
        "  allocations          : {} over {} lines without escapes = {:.3} per line (target 0)",
        allocs,
        plain.len(),
        allocs as f64 / plain.len() as f64
    );
}
