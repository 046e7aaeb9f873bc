//! Bench 4: pass-through overhead of `agent-watchdog run`. A child (`stream_gen`, a bench-only
//! binary) prints N stream-json lines from the real captures as fast as it can; we compare
//! `agent-watchdog run -- stream_gen N > /dev/null` with two baselines measured in the same
//! run: `stream_gen N > /dev/null` (direct, no pipe at all: the baseline) and
//! `stream_gen N | pipe_sink > /dev/null` (a reader that only copies the pipe to /dev/null: the
//! floor of any observer that reads the stream through a pipe). Wall time (throughput) and CPU
//! of all children (user + system, from `/proc/self/stat` after each wait). Median of 3 runs
//! each, interleaved.
//!
//! Run: `cargo build --release --bin agent-watchdog --bin claude-watchdog &&
//! cargo bench -p watchdog-benches --bench passthrough` (`PASSTHROUGH_LINES`, default 1000000).

use std::fs::File;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use watchdog_benches::{agent_watchdog_bin, capture_lines, children_cpu, median};

fn run(cmd: &mut Command) -> (Duration, Duration) {
    let null = File::create("/dev/null").expect("/dev/null");
    let cpu0 = children_cpu();
    let t = Instant::now();
    let status = cmd
        .stdin(Stdio::null())
        .stdout(null)
        .stderr(Stdio::null())
        .status()
        .expect("spawn");
    let wall = t.elapsed();
    assert!(status.success(), "{cmd:?} failed: {status}");
    (wall, children_cpu() - cpu0)
}

/// `gen n | pipe_sink > /dev/null`: wall time and CPU of both processes.
fn run_piped(gen: &str, n: u64, sink: &str) -> (Duration, Duration) {
    let null = File::create("/dev/null").expect("/dev/null");
    let cpu0 = children_cpu();
    let t = Instant::now();
    let mut producer = Command::new(gen)
        .arg(n.to_string())
        .stdin(Stdio::null())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .expect("spawn stream_gen");
    let pipe = producer.stdout.take().expect("piped stdout");
    let status = Command::new(sink)
        .stdin(pipe)
        .stdout(null)
        .stderr(Stdio::null())
        .status()
        .expect("spawn pipe_sink");
    let gen_status = producer.wait().expect("wait stream_gen");
    let wall = t.elapsed();
    assert!(
        status.success() && gen_status.success(),
        "pipe baseline failed"
    );
    (wall, children_cpu() - cpu0)
}

fn main() {
    let n: u64 = std::env::var("PASSTHROUGH_LINES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(1_000_000);
    let gen = env!("CARGO_BIN_EXE_stream_gen");
    let sink = env!("CARGO_BIN_EXE_pipe_sink");
    let watchdog = agent_watchdog_bin();
    let lines = capture_lines();
    let bytes: usize = lines.iter().map(|l| l.len() + 1).sum();
    let avg = bytes as f64 / lines.len() as f64;
    println!(
        "bench passthrough: {n} lines ({:.0} B average, {:.0} MB) from the real captures, child stdout → /dev/null",
        avg,
        avg * n as f64 / 1e6
    );
    println!("  watchdog: {}", watchdog.display());
    let (mut dw, mut dc, mut ww, mut wc) = (Vec::new(), Vec::new(), Vec::new(), Vec::new());
    let (mut pw, mut pc) = (Vec::new(), Vec::new());
    for _ in 0..3 {
        let (w, c) = run(Command::new(gen).arg(n.to_string()));
        dw.push(w);
        dc.push(c);
        let (w, c) = run_piped(gen, n, sink);
        pw.push(w);
        pc.push(c);
        let (w, c) = run(Command::new(&watchdog)
            .arg("run")
            .arg("--")
            .arg(gen)
            .arg(n.to_string()));
        ww.push(w);
        wc.push(c);
    }
    let (dw, dc, ww, wc) = (median(dw), median(dc), median(ww), median(wc));
    let (pw, pc) = (median(pw), median(pc));
    let rate = |w: Duration| n as f64 / w.as_secs_f64();
    let us_per_line = |d: Duration| d.as_secs_f64() * 1e6 / n as f64;
    let row = |name: &str, w: Duration, c: Duration| {
        println!(
            "  {name:<12}: {:>7.3} s wall  {:>10.0} lines/s  CPU {:>7.3} s",
            w.as_secs_f64(),
            rate(w),
            c.as_secs_f64()
        );
    };
    row("direct", dw, dc);
    row("pipe → sink", pw, pc);
    row("via watchdog", ww, wc);
    for (name, bw, bc) in [("direct", dw, dc), ("pipe → sink", pw, pc)] {
        let ratio = bw.as_secs_f64() / ww.as_secs_f64();
        let extra = wc.saturating_sub(bc);
        println!(
            "  vs {name:<11}: throughput {:.1} % ({}), CPU {:.2}× , extra CPU {:.3} s = {:.2} µs per line ({})",
            ratio * 100.0,
            if ratio >= 0.9 { "≥ 90 %: met" } else { "< 90 %: MISSED" },
            wc.as_secs_f64() / bc.as_secs_f64().max(1e-9),
            extra.as_secs_f64(),
            us_per_line(extra),
            if us_per_line(extra) <= 1.0 { "≤ 1 µs: met" } else { "> 1 µs: MISSED" },
        );
    }
    println!(
        "  pipe floor  : the copy-only reader runs at {:.1} % of direct and adds {:.2} µs of CPU per line",
        dw.as_secs_f64() / pw.as_secs_f64() * 100.0,
        us_per_line(pc.saturating_sub(dc))
    );
    // For scale: the fastest real session in the captures.
    let fastest = watchdog_benches::capture_timelines()
        .iter()
        .filter_map(|(_, tl)| {
            let (first, last) = (tl.first()?.0, tl.last()?.0);
            (last > first).then(|| tl.len() as f64 / ((last - first) as f64 / 1e3))
        })
        .fold(0.0, f64::max);
    println!(
        "  for scale   : the watchdog sustains {:.0} lines/s; the fastest real capture printed {:.0} lines/s on average ({:.0}× headroom)",
        rate(ww),
        fastest,
        rate(ww) / fastest.max(1e-9)
    );
}
