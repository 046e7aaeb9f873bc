//! Issue 17 target 4: one process supervising many small children on **one shared
//! `Watchdog`** (one timer task for all of them). Each child (`ticker`, a bench-only binary)
//! prints a line a second for a few seconds (5 to 24, so the silences spread over 20 s while
//! the others go on printing), then goes silent; the shared watchdog's idle deadline then kills
//! every one of them.
//!
//! Reported: host RSS per child (the supervising process's peak RSS over the children, next to
//! the same process's RSS before any child: the baseline), host CPU per child line (this
//! process's CPU over every line the children printed), and the kill lateness of all children
//! under that load: the instant the shared timer handled each kill (`on_kill`) minus the kill's
//! exact deadline (`Kill::at`), p50/p99/max. Target: p99 ≤ 5 ms.
//!
//! Run: `cargo bench -p watchdog-benches --bench many_children` (`CHILDREN`, default 1000;
//! `CHILD_LINES`, default 5; `CHILD_PERIOD_MS`, default 1000).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use agent_sdk_watchdog::{Supervisor, SupervisorConfig, Watchdog, WatchdogConfig};
use watchdog_benches::{load_average, median, rss_kb};
use watchdog_core::config::PositiveDuration;
use watchdog_core::{Limits, SessionConfig};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn quantile(sorted: &[Duration], q: f64) -> Duration {
    let rank = ((q * sorted.len() as f64).ceil() as usize).clamp(1, sorted.len());
    sorted[rank - 1]
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// CPU time of this whole process (all threads), from `/proc/self/stat` (10 ms ticks).
fn process_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let rest = &stat[stat.rfind(')').map_or(0, |i| i + 1)..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks: u64 = f.get(11).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0)
        + f.get(12).and_then(|s| s.parse::<u64>().ok()).unwrap_or(0);
    Duration::from_millis(ticks * 10)
}

fn ticker_bin() -> std::path::PathBuf {
    let exe = std::env::current_exe().expect("current exe");
    // target/<profile>/deps/many_children-… → target/<profile>/ticker
    let dir = exe.parent().and_then(|d| d.parent()).expect("target dir");
    let bin = dir.join("ticker");
    assert!(
        bin.is_file(),
        "build the helper first: cargo build --release -p watchdog-benches --bin ticker ({})",
        bin.display()
    );
    bin
}

fn main() {
    let n = env_u64("CHILDREN", 1000);
    let lines = env_u64("CHILD_LINES", 5);
    let period = env_u64("CHILD_PERIOD_MS", 1000);
    let idle = Duration::from_secs(2);
    let ticker = ticker_bin();
    println!(
        "many children on one shared Watchdog: {n} children, {lines} to {} lines each, one per \
         {period} ms, then silent; idle {} s; load average {}",
        lines + 19,
        idle.as_secs(),
        load_average()
    );
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (rss0, _) = rss_kb(std::process::id()).unwrap_or((0, 0));
    let late: Arc<Mutex<Vec<Duration>>> = Arc::new(Mutex::new(Vec::new()));
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let (printed, peak_kb) = rt.block_on(async {
        let seen = late.clone();
        let limits = Limits::default()
            .with_idle(idle)
            .and_then(|l| l.with_extend_factor(1.0))
            .expect("limits");
        let watchdog = Watchdog::new(WatchdogConfig::new(limits).on_kill(move |k| {
            let lateness = Instant::now().saturating_duration_since(k.at);
            seen.lock().unwrap().push(lateness);
        }));
        let mut tasks = Vec::new();
        for i in 0..n {
            // Silences spread over 20 s: while some children are killed, the others print on.
            let mut cmd = tokio::process::Command::new(&ticker);
            cmd.args([(lines + i % 20).to_string(), period.to_string()]);
            let config = SupervisorConfig {
                policy: Some(SessionConfig::default()),
                watchdog: Some(watchdog.clone()),
                pipe_stdin: false,
                term_grace: Duration::from_secs(1),
                // One tree scan per child per 10 s: the host's own load stays the timer's.
                tree_scan: PositiveDuration::new(Duration::from_secs(10)).ok(),
                ..SupervisorConfig::default()
            };
            let mut sup = Supervisor::spawn(cmd, config).expect("spawn ticker");
            tasks.push(tokio::spawn(async move {
                let mut lines = 0u64;
                while let Some(b) = sup.next_batch().await {
                    if let agent_sdk_watchdog::Batch::Stdout(b) = b {
                        lines += b.lines().len() as u64;
                    }
                }
                let report = sup.wait().await.expect("report");
                assert!(
                    report.kill.is_some(),
                    "every child is killed when it goes silent"
                );
                lines
            }));
        }
        let mut peak = 0;
        let mut printed = 0;
        for t in tasks {
            printed += t.await.expect("child task");
            if let Some((_, hwm)) = rss_kb(std::process::id()) {
                peak = peak.max(hwm);
            }
        }
        assert_eq!(watchdog.len(), 0);
        (printed, peak)
    });
    let took = t0.elapsed();
    let cpu = process_cpu().saturating_sub(cpu0);
    let mut late = late.lock().unwrap().clone();
    late.sort();
    assert_eq!(late.len() as u64, n, "one kill per child");
    println!(
        "  host RSS: {:.1} MB before any child (baseline), peak {:.1} MB: {:.1} KB per child",
        rss0 as f64 / 1024.0,
        peak_kb as f64 / 1024.0,
        (peak_kb.saturating_sub(rss0)) as f64 / n as f64
    );
    println!(
        "  host CPU: {:.0} ms over {printed} child lines in {:.1} s: {:.1} µs per child line \
         (spawns, tree scans and kills included)",
        ms(cpu),
        took.as_secs_f64(),
        cpu.as_secs_f64() * 1e6 / printed.max(1) as f64
    );
    println!(
        "  kill lateness across all {n}: p50 {:.2} ms, p99 {:.2} ms, max {:.2} ms \
         (target p99 ≤ 5 ms; median lateness {:.2} ms)",
        ms(quantile(&late, 0.5)),
        ms(quantile(&late, 0.99)),
        ms(*late.last().unwrap()),
        ms(median(late.clone())),
    );
}
