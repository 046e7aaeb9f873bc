//! Bench 6: replay that streams. A capture of N lines (default 1,000,000) is built from the
//! real captures' stdout lines, in order and over and over, 50 ms apart (nothing is due: every
//! line is observed), and replayed.
//!
//! - **Per line, in process** (thread CPU, median of 3): the core's replay path, reading each
//!   capture line in place (`EntryView::parse`) and feeding it (`Replay::feed`, events
//!   drained), against the baseline measured in the same run: `LineView::parse` alone on the
//!   same stdout lines. Target: ≤ 2×.
//! - **The binary**: `agent-watchdog replay --json FILE > /dev/null`: wall, CPU, peak RSS
//!   (target ≤ 32 MB), next to the same binary replaying a 3-line capture (its fixed floor) and
//!   `wc -l FILE` (reading the file at all).
//!
//! Run: `cargo build --release --bin agent-watchdog && cargo bench -p watchdog-benches --bench
//! replay` (`REPLAY_LINES`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use watchdog_benches::{
    agent_watchdog_bin, capture_lines, load_average, measure, median, thread_cpu, Measured,
};
use watchdog_core::{Limits, LineView};
use watchdog_host::capture::EntryView;
use watchdog_host::replay::{Replay, Step};

const GAP_MS: u64 = 50;

fn per_line(d: Duration, n: u64) -> f64 {
    d.as_nanos() as f64 / n as f64
}

fn show(what: &str, m: &Measured, n: u64) {
    let per = if n >= 1000 {
        format!("{:>6.0} ns/line", per_line(m.cpu, n))
    } else {
        format!("{:>14}", "")
    };
    println!(
        "  {what:<46} wall {:>7.3} s  CPU {:>6.2} s ({per})  peak RSS {:>7.1} MB",
        m.wall.as_secs_f64(),
        m.cpu.as_secs_f64(),
        m.peak_kb as f64 / 1024.0
    );
}

fn main() {
    let n: u64 = std::env::var("REPLAY_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let lines = capture_lines();
    println!(
        "bench replay: {n} capture lines from the {} real stdout lines, {GAP_MS} ms apart; load average {} (start)",
        lines.len(),
        load_average()
    );

    // The capture, on disk (for the binary) and in memory (for the in-process figures).
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("bench-replay-{n}.capture.jsonl"));
    let mut text = Vec::with_capacity(lines.iter().map(|l| l.len() + 24).sum::<usize>() * 4);
    {
        let mut w = BufWriter::new(File::create(&path).expect("create the capture"));
        for i in 0..n {
            let line = &lines[(i as usize) % lines.len()];
            let rec = format!("{{\"t_ms\":{},\"line\":{line}}}\n", i * GAP_MS);
            w.write_all(rec.as_bytes()).expect("write the capture");
            if text.len() < 400 << 20 {
                text.extend_from_slice(rec.as_bytes());
            }
        }
        w.flush().expect("flush the capture");
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!(
        "  capture: {} ({:.0} MB, {:.0} B a line)",
        path.display(),
        bytes as f64 / 1e6,
        bytes as f64 / n as f64
    );
    let in_memory: Vec<&[u8]> = text
        .split(|b| *b == b'\n')
        .filter(|l| !l.is_empty())
        .collect();
    let m = in_memory.len() as u64;

    // (a) In process, the same m lines: parse alone vs the replay path.
    let (mut base_t, mut replay_t) = (Vec::new(), Vec::new());
    let mut kills = 0;
    for _ in 0..3 {
        let t = thread_cpu();
        let mut ok = 0u64;
        for i in 0..m {
            let line = lines[(i as usize) % lines.len()].as_bytes();
            ok += u64::from(LineView::parse(std::hint::black_box(line)).is_ok());
        }
        base_t.push(thread_cpu() - t);
        assert_eq!(ok, m);

        let t = thread_cpu();
        let mut r = Replay::new(Limits::default(), Instant::now());
        let mut observed = 0u64;
        for (i, line) in in_memory.iter().enumerate() {
            if let Ok(Some(e)) = EntryView::parse(line) {
                if let Step::Line { .. } = r.feed(i as u64 + 1, &e) {
                    observed += 1;
                }
            }
            while let Some(e) = r.poll_event() {
                kills += u64::from(matches!(e.event, watchdog_core::Event::Killed(_)));
            }
        }
        replay_t.push(thread_cpu() - t);
        assert_eq!(
            observed, m,
            "every line is observed (no kill before the end)"
        );
        let _ = r.finish();
    }
    let (b, r) = (median(base_t), median(replay_t));
    println!("(a) per line, in process, {m} lines (thread CPU, median of 3)");
    println!(
        "  LineView::parse alone (baseline)               {:>7.1} ns/line",
        per_line(b, m)
    );
    println!(
        "  replay: EntryView::parse + Replay::feed        {:>7.1} ns/line  = {:.2}× the baseline (target ≤ 2×)",
        per_line(r, m),
        r.as_secs_f64() / b.as_secs_f64()
    );
    assert_eq!(kills, 0, "nothing is due 50 ms apart");

    // (b) The binary, whole file.
    let bin = agent_watchdog_bin();
    let small = dir.join("bench-replay-small.capture.jsonl");
    std::fs::write(
        &small,
        "{\"t_ms\":0,\"line\":{\"type\":\"system\",\"subtype\":\"init\",\"session_id\":\"s\"}}\n{\"t_ms\":5,\"line\":{\"type\":\"result\",\"subtype\":\"success\",\"is_error\":false}}\n{\"t_ms\":6,\"exit\":{\"code\":0,\"signal\":null}}\n",
    )
    .expect("write the small capture");
    let null = || File::create("/dev/null").expect("/dev/null");
    let mut runs = Vec::new();
    for _ in 0..3 {
        let floor = measure(
            Command::new(&bin)
                .args(["replay", "--json"])
                .arg(&small)
                .stdout(null())
                .stderr(Stdio::null()),
        );
        let wc = measure(Command::new("wc").arg("-l").arg(&path).stdout(null()));
        let full = measure(
            Command::new(&bin)
                .args(["replay", "--json"])
                .arg(&path)
                .stdout(null())
                .stderr(Stdio::null()),
        );
        runs.push((floor, wc, full));
    }
    runs.sort_by_key(|r| r.2.cpu);
    let (floor, wc, full) = runs[1];
    println!("(b) the binary (median of 3 by CPU)");
    show("agent-watchdog replay, 3-line capture (floor)", &floor, 3);
    show("wc -l FILE (reading the file)", &wc, n);
    show(
        &format!("agent-watchdog replay --json, {n} lines"),
        &full,
        n,
    );
    println!(
        "  peak RSS {:.1} MB for {n} lines (target ≤ 32 MB); {:.1} MB over the fixed floor",
        full.peak_kb as f64 / 1024.0,
        (full.peak_kb.saturating_sub(floor.peak_kb)) as f64 / 1024.0,
    );
    println!(
        "  CPU per line {:.2}× LineView::parse (a), {:.2}× after the file-reading floor (wc -l); CPU is read in 10 ms ticks",
        per_line(full.cpu, n) / per_line(b, m),
        (per_line(full.cpu, n) - per_line(wc.cpu, n)) / per_line(b, m)
    );
    println!("  load average {} (end)", load_average());
    let _ = std::fs::remove_file(&path);
}
