//! Bench 7: flat memory of `run`. The child, `cat FILE`, prints N lines (default 1,000,000) of
//! real `result`, `rate_limit_event` and `assistant` lines from the captures, in turn: the
//! lines whose facts the summary keeps. We measure the peak RSS of
//! `agent-watchdog run --summary S -- cat FILE > /dev/null` (target ≤ 16 MB), next to two
//! floors measured in the same run: the copy-only reader (`cat FILE | pipe_sink`: `pipe_sink`'s
//! own peak RSS, with the same 1 MiB pipe) and the same `run` over a 3-line file (the
//! watchdog's fixed cost). The summary is checked: every event counted, a bounded list kept.
//!
//! Run: `cargo build --release --bin agent-watchdog && cargo bench -p watchdog-benches --bench
//! run_memory` (`RUN_MEMORY_LINES`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::process::{Command, Stdio};

use watchdog_benches::{
    agent_watchdog_bin, capture_lines, load_average, measure, rss_kb, Measured,
};

fn show(what: &str, m: &Measured) {
    println!(
        "  {what:<52} wall {:>7.3} s  CPU {:>6.2} s  peak RSS {:>7.1} MB",
        m.wall.as_secs_f64(),
        m.cpu.as_secs_f64(),
        m.peak_kb as f64 / 1024.0
    );
}

fn kind(line: &str) -> Option<&'static str> {
    let v: serde_json::Value = serde_json::from_str(line).ok()?;
    match v["type"].as_str()? {
        "result" => Some("result"),
        "rate_limit_event" => Some("rate_limit_event"),
        "assistant" if v["parent_tool_use_id"].is_null() => Some("assistant"),
        _ => None,
    }
}

fn main() {
    let n: u64 = std::env::var("RUN_MEMORY_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let lines = capture_lines();
    let pick = |k: &str| -> Vec<&String> { lines.iter().filter(|l| kind(l) == Some(k)).collect() };
    let (results, rates, assistants) =
        (pick("result"), pick("rate_limit_event"), pick("assistant"));
    assert!(
        !results.is_empty() && !rates.is_empty() && !assistants.is_empty(),
        "the captures have results, rate_limit_events and assistant lines"
    );
    println!(
        "bench run_memory: {n} lines, result / rate_limit_event / assistant in turn ({} / {} / {} distinct real lines); load average {} (start)",
        results.len(),
        rates.len(),
        assistants.len(),
        load_average()
    );
    let dir = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"));
    let path = dir.join(format!("bench-run-memory-{n}.jsonl"));
    let small = dir.join("bench-run-memory-small.jsonl");
    {
        let mut w = BufWriter::new(File::create(&path).expect("create the input"));
        for i in 0..n as usize {
            let set = [&results, &rates, &assistants][i % 3];
            let line = set[(i / 3) % set.len()];
            w.write_all(line.as_bytes()).expect("write");
            w.write_all(b"\n").expect("write");
        }
        w.flush().expect("flush");
        let mut s = File::create(&small).expect("create the small input");
        for set in [&assistants, &rates, &results] {
            writeln!(s, "{}", set[0]).expect("write");
        }
    }
    let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
    println!("  input: {} ({:.0} MB)", path.display(), bytes as f64 / 1e6);
    let bin = agent_watchdog_bin();
    let sink = env!("CARGO_BIN_EXE_pipe_sink");
    let summary = dir.join("bench-run-memory-summary.json");
    let null = || File::create("/dev/null").expect("/dev/null");
    let watchdog = |input: &std::path::Path, mmap_threshold: bool| {
        let mut cmd = Command::new(&bin);
        if mmap_threshold {
            // Diagnostic: glibc's mmap threshold fixed at its initial 128 KiB, so the 1 MiB
            // batch buffers go back to the system when freed instead of staying in the heap.
            cmd.env("MALLOC_MMAP_THRESHOLD_", "131072");
        }
        measure(
            cmd.arg("run")
                .arg("--summary")
                .arg(&summary)
                .arg("--")
                .arg("cat")
                .arg(input)
                .stdout(null())
                .stderr(Stdio::null()),
        )
    };
    let mut runs = Vec::new();
    for _ in 0..3 {
        let floor = watchdog(&small, false);
        // cat FILE | pipe_sink: the copy-only reader's own peak RSS.
        let mut cat = Command::new("cat")
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .expect("spawn cat");
        let pipe = cat.stdout.take().expect("cat stdout");
        let mut sink_child = Command::new(sink)
            .stdin(pipe)
            .stdout(null())
            .spawn()
            .expect("spawn pipe_sink");
        let mut sink_peak = 0;
        loop {
            if let Some((hwm, _)) = rss_kb(sink_child.id()) {
                sink_peak = sink_peak.max(hwm);
            }
            if sink_child.try_wait().expect("wait").is_some() {
                break;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        assert!(cat.wait().expect("wait cat").success());
        let full = watchdog(&path, false);
        let fixed = watchdog(&path, true);
        runs.push((floor, sink_peak, full, fixed));
    }
    runs.sort_by_key(|r| r.2.peak_kb);
    let (floor, sink_peak, full, _) = runs[1];
    let mut fixed: Vec<u64> = runs.iter().map(|r| r.3.peak_kb).collect();
    fixed.sort_unstable();
    println!("results (median of 3 by peak RSS)");
    println!(
        "  {:<52} peak RSS {:>7.1} MB",
        "cat FILE | pipe_sink (copy-only floor)",
        sink_peak as f64 / 1024.0
    );
    show("agent-watchdog run -- cat (3 lines: fixed floor)", &floor);
    show(&format!("agent-watchdog run -- cat ({n} lines)"), &full);
    println!(
        "  {:<52} peak RSS {:>7.1} MB (median)",
        "  the same, MALLOC_MMAP_THRESHOLD_=131072 (diagnostic)",
        fixed[1] as f64 / 1024.0
    );
    println!(
        "  all three runs' peak RSS: {}",
        runs.iter()
            .map(|r| format!("{:.1}", r.2.peak_kb as f64 / 1024.0))
            .collect::<Vec<_>>()
            .join(" / ")
    );
    println!(
        "  peak RSS {:.1} MB (target ≤ 16 MB): {:.1} MB over run's own 3-line floor, {:.1} MB over the copy-only reader",
        full.peak_kb as f64 / 1024.0,
        full.peak_kb.saturating_sub(floor.peak_kb) as f64 / 1024.0,
        full.peak_kb.saturating_sub(sink_peak) as f64 / 1024.0
    );
    let s: serde_json::Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("read the summary"))
            .expect("summary JSON");
    let events = s["events"].as_array().map_or(0, Vec::len);
    let left_out = s["events"]
        .as_array()
        .and_then(|e| e.iter().find(|e| e["event"] == "left_out"))
        .map_or(0, |e| e["count"].as_u64().unwrap_or(0));
    println!(
        "  summary of the last run: {} stdout lines counted, {events} events kept, {left_out} more counted in the left_out marker",
        s["lines"].as_object().map_or(0, |m| m.values().filter_map(|v| v.as_u64()).sum::<u64>()),
    );
    println!("  load average {} (end)", load_average());
    let _ = std::fs::remove_file(&path);
}
