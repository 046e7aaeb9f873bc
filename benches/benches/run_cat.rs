//! Bench 9 (issue 24): the live path per line. `agent-watchdog run -- cat FILE > /dev/null`
//! over FILE, about 300,000 real stdout lines of the captures in order (default; each capture's
//! lines, repeated until there are enough), next to two commands measured in the same run:
//! `cat FILE > /dev/null` (the floor) and, when `BASELINE_AGENT_WATCHDOG` names one, the same
//! `run` of another build (the "today": a build of an earlier `main`). CPU of all
//! children (user + system), CPU per line over the floor, the ratio to the baseline, and each
//! `run`'s peak RSS. Median of `RUN_CAT_ROUNDS` (5) rounds, interleaved.
//!
//! Then the dialects: the same `run -- cat` over as many of Codex's and of opencode's real lines
//! (`testdata/dialects`; `cat` names no CLI, so the first line chooses the dialect), CPU a line
//! over each file's own `cat` floor beside the Claude Code lines', in the same rounds.
//!
//! Run: `cargo build --release --bin agent-watchdog && BASELINE_AGENT_WATCHDOG=/path/to/old
//! cargo bench -p watchdog-benches --bench run_cat` (`RUN_CAT_LINES`).

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::Duration;

use watchdog_benches::{
    agent_watchdog_bin, capture_lines, dialect_lines, load_average, measure, median, Measured,
};

fn run(bin: &Path, file: &Path) -> Measured {
    measure(
        Command::new(bin)
            .args(["run", "--"])
            .arg("cat")
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

fn floor(file: &Path) -> Measured {
    measure(
        Command::new("cat")
            .arg(file)
            .stdout(Stdio::null())
            .stderr(Stdio::null()),
    )
}

fn per_line_us(cpu: Duration, over: Duration, n: u64) -> f64 {
    cpu.saturating_sub(over).as_secs_f64() * 1e6 / n as f64
}

fn main() {
    let n: u64 = std::env::var("RUN_CAT_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(300_000);
    let rounds: usize = std::env::var("RUN_CAT_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(5)
        .max(1);
    let lines = capture_lines();
    assert!(!lines.is_empty(), "no capture lines in testdata/");
    let (file, bytes) = write_lines("claude", &lines, n);
    let dialects = [
        ("codex", dialect_lines("codex_")),
        ("opencode", dialect_lines("opencode_")),
    ];
    let dialect_files: Vec<_> = dialects
        .iter()
        .map(|(name, lines)| (*name, write_lines(name, lines, n)))
        .collect();
    let ours = agent_watchdog_bin();
    let baseline = std::env::var_os("BASELINE_AGENT_WATCHDOG").map(std::path::PathBuf::from);
    println!(
        "  {n} lines, {:.1} MB ({} B a line on average); load average {}",
        bytes as f64 / 1e6,
        bytes / n as usize,
        load_average()
    );
    let (mut floors, mut this, mut base) = (Vec::new(), Vec::new(), Vec::new());
    let (mut this_rss, mut base_rss) = (Vec::new(), Vec::new());
    // Warm the page cache and both binaries once.
    floor(&file);
    run(&ours, &file);
    // Per dialect: its floor and its run, CPU.
    let mut dialect_cpu: Vec<(Vec<Duration>, Vec<Duration>)> =
        dialect_files.iter().map(|_| Default::default()).collect();
    for _ in 0..rounds {
        floors.push(floor(&file).cpu);
        let m = run(&ours, &file);
        this.push(m.cpu);
        this_rss.push(m.peak_kb);
        if let Some(b) = &baseline {
            let m = run(b, &file);
            base.push(m.cpu);
            base_rss.push(m.peak_kb);
        }
        for (i, (_, (f, _))) in dialect_files.iter().enumerate() {
            dialect_cpu[i].0.push(floor(f).cpu);
            dialect_cpu[i].1.push(run(&ours, f).cpu);
        }
    }
    let show = |xs: &[Duration]| {
        xs.iter()
            .map(|d| format!("{:.3}", d.as_secs_f64()))
            .collect::<Vec<_>>()
            .join(" / ")
    };
    let floor_cpu = median(floors.clone());
    println!(
        "  cat FILE (floor), CPU s: {} → median {:.3} s, {:.2} µs a line",
        show(&floors),
        floor_cpu.as_secs_f64(),
        per_line_us(floor_cpu, Duration::ZERO, n)
    );
    let this_cpu = median(this.clone());
    let this_line = per_line_us(this_cpu, Duration::ZERO, n);
    this_rss.sort_unstable();
    println!(
        "  run -- cat (this build), CPU s: {} → median {:.3} s, {:.2} µs a line ({:.2} over the floor); peak RSS median {:.1} MB",
        show(&this),
        this_cpu.as_secs_f64(),
        this_line,
        per_line_us(this_cpu, floor_cpu, n),
        this_rss[this_rss.len() / 2] as f64 / 1024.0
    );
    if baseline.is_some() {
        let base_cpu = median(base.clone());
        let base_line = per_line_us(base_cpu, Duration::ZERO, n);
        base_rss.sort_unstable();
        println!(
            "  run -- cat (baseline), CPU s: {} → median {:.3} s, {:.2} µs a line ({:.2} over the floor); peak RSS median {:.1} MB",
            show(&base),
            base_cpu.as_secs_f64(),
            base_line,
            per_line_us(base_cpu, floor_cpu, n),
            base_rss[base_rss.len() / 2] as f64 / 1024.0
        );
        println!(
            "  ratio this / baseline: CPU per line {:.2}×, over the floor {:.2}×, peak RSS {:.2}×",
            this_line / base_line,
            per_line_us(this_cpu, floor_cpu, n) / per_line_us(base_cpu, floor_cpu, n).max(1e-9),
            this_rss[this_rss.len() / 2] as f64 / base_rss[base_rss.len() / 2].max(1) as f64
        );
    } else {
        println!("  (no BASELINE_AGENT_WATCHDOG: no ratio)");
    }
    let claude_over = per_line_us(this_cpu, floor_cpu, n);
    for (i, (name, (_, bytes))) in dialect_files.iter().enumerate() {
        let f = median(dialect_cpu[i].0.clone());
        let r = median(dialect_cpu[i].1.clone());
        let over = per_line_us(r, f, n);
        println!(
            "  run -- cat, {name} lines ({} B a line): {:.2} µs a line, {over:.2} over its floor; / Claude Code's over its floor: {:.2}× (target ≤ 1.10)",
            bytes / n as usize,
            per_line_us(r, Duration::ZERO, n),
            over / claude_over
        );
    }
}

/// `n` of `lines`, cycled, in a file of the bench's; its path and size.
fn write_lines(name: &str, lines: &[String], n: u64) -> (std::path::PathBuf, usize) {
    assert!(!lines.is_empty(), "no {name} lines in testdata/");
    let file = std::path::PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("bench-run-cat-{name}-{n}.jsonl"));
    let mut bytes = 0usize;
    let mut w = BufWriter::new(File::create(&file).expect("create"));
    for line in lines.iter().cycle().take(n as usize) {
        w.write_all(line.as_bytes()).expect("write");
        w.write_all(b"\n").expect("write");
        bytes += line.len() + 1;
    }
    w.flush().expect("flush");
    (file, bytes)
}
