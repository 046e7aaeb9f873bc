//! Issue 37: what sampling the child's process tree costs the supervisor. One supervised
//! child shaped like a Claude Code session in a tool call: a root with a dozen threads (as
//! node's), three long-lived helpers in its group (as MCP servers), and a Bash tool in a
//! session of its own whose process keeps four loopback TCP connections moving bytes, with a
//! `sleep` beside it. The same child runs with sampling off (the baseline) and with sampling
//! every `TREE_BENCH_PERIOD_MS` (default 20 ms, fifty times the default rate, so the cost
//! stands out of the noise), alternating, `TREE_BENCH_ROUNDS` times (default 3), each for
//! `TREE_BENCH_SECS` (default 8 s).
//!
//! Reported: this process's CPU time (the process CPU clock: every thread, the blocking
//! threads that read `/proc` included) per second of each run, the cost of one sample (the
//! difference over the samples taken), and that cost at the default rate (one sample a second
//! while a tool call is outstanding) as a fraction of one core, against the 0.5 % budget and
//! against the baseline's own CPU in the same run.
//!
//! Run: `cargo bench -p watchdog-benches --bench tree_sampling`.

use std::time::{Duration, Instant};

use agent_sdk_watchdog::{Output, Supervisor, SupervisorConfig};
use watchdog_core::config::PositiveDuration;
use watchdog_core::{Limits, SessionConfig};

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// CPU time of this whole process (every thread), to the nanosecond.
fn process_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ProcessCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

const CHILD: &str = r#"
import subprocess, sys, threading, time
for _ in range(11):
    threading.Thread(target=lambda: time.sleep(10**6), daemon=True).start()
helpers = [subprocess.Popen(["sleep", "100000"]) for _ in range(3)]
def say(line):
    sys.stdout.write(line + "\n"); sys.stdout.flush()
say('{"type":"system","subtype":"init","session_id":"s1"}')
say('{"type":"assistant","message":{"content":[{"type":"tool_use","id":"tb","name":"Bash","input":{}}]},"session_id":"s1"}')
subprocess.Popen(["bash", "-c", TOOL], start_new_session=True, stdin=subprocess.DEVNULL)
while True:
    time.sleep(1)
    say('{"type":"tool_progress","tool_name":"Bash","parent_tool_use_id":"tb","session_id":"s1"}')
"#;

const TOOL: &str = r#"sleep 100000 & exec python3 -c '
import socket, time
l = socket.socket(); l.bind(("127.0.0.1", 0)); l.listen()
pairs = []
for _ in range(4):
    c = socket.create_connection(l.getsockname()); a, _ = l.accept(); pairs.append((c, a))
while True:
    for c, a in pairs:
        c.sendall(b"x" * 1024); a.recv(4096)
    time.sleep(0.1)
'"#;

/// One run of `secs` with sampling at `period` (`None`: off): (CPU, samples).
async fn one(period: Option<Duration>, secs: u64) -> (Duration, u64) {
    let limits = Limits::default()
        .with_idle(Duration::from_secs(3600))
        .and_then(|l| l.with_no_progress(Duration::from_secs(3600)))
        .unwrap();
    let config = SupervisorConfig {
        policy: Some(SessionConfig::default().with_limits(limits)),
        tree_sample: period.and_then(|p| PositiveDuration::new(p).ok()),
        term_grace: Duration::from_millis(200),
        interrupt_grace: Duration::from_millis(200),
        ..SupervisorConfig::default()
    };
    let mut cmd = tokio::process::Command::new("python3");
    cmd.arg("-c").arg(format!("TOOL = {TOOL:?}\n{CHILD}"));
    // Let the child start before the clock starts: its start is not the sampler's.
    let mut sup = Supervisor::spawn(cmd, config).expect("spawn the child");
    let mut lines = 0;
    while lines < 2 {
        if let Some(Output::Stdout(_)) = sup.next_output().await {
            lines += 1;
        }
    }
    tokio::time::sleep(Duration::from_millis(500)).await;
    let cpu0 = process_cpu();
    let t0 = Instant::now();
    let mut samples = 0u64;
    let end = tokio::time::sleep(Duration::from_secs(secs));
    tokio::pin!(end);
    loop {
        tokio::select! {
            () = &mut end => break,
            out = sup.next_output() => match out {
                Some(Output::Tree { sample, .. }) => {
                    assert!(sample.fault.is_none(), "{:?}", sample.fault);
                    samples += 1;
                }
                Some(_) => {}
                None => panic!("the child ended"),
            }
        }
    }
    let cpu = process_cpu() - cpu0;
    let wall = t0.elapsed();
    sup.kill_now();
    let _ = sup.wait().await;
    (cpu.mul_f64(secs as f64 / wall.as_secs_f64()), samples)
}

fn main() {
    let rounds = env_u64("TREE_BENCH_ROUNDS", 3);
    let secs = env_u64("TREE_BENCH_SECS", 8);
    let period = Duration::from_millis(env_u64("TREE_BENCH_PERIOD_MS", 20));
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    println!(
        "tree sampling: {rounds} rounds of {secs} s each, baseline (off) and sampled every {} ms",
        period.as_millis()
    );
    let mut per_sample = Vec::new();
    let mut base_share = Vec::new();
    for r in 0..rounds {
        let (base, _) = rt.block_on(one(None, secs));
        let (sampled, n) = rt.block_on(one(Some(period), secs));
        let extra = sampled.saturating_sub(base);
        let each = extra / n.max(1) as u32;
        per_sample.push(each);
        base_share.push(base.as_secs_f64() / secs as f64);
        println!(
            "  round {r}: baseline {:.3} % of a core; sampled {:.3} % ({n} samples): {:.1} µs a sample",
            100.0 * base.as_secs_f64() / secs as f64,
            100.0 * sampled.as_secs_f64() / secs as f64,
            each.as_secs_f64() * 1e6
        );
    }
    per_sample.sort();
    base_share.sort_by(f64::total_cmp);
    let each = per_sample[per_sample.len() / 2];
    let base = base_share[base_share.len() / 2];
    // The default rate: one sample a second while a tool call is outstanding.
    let default = each.as_secs_f64() / 1.0;
    println!(
        "median: {:.1} µs a sample; at the default rate (1/s) {:.4} % of one core (budget 0.5 %, \
         {:.0}x under it); the supervisor's own baseline {:.3} % of a core: sampling adds {:.2}x \
         of it",
        each.as_secs_f64() * 1e6,
        100.0 * default,
        0.005 / default.max(1e-12),
        100.0 * base,
        default / base.max(1e-12)
    );
}
