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

/// The repository's `testdata/` folder (recordings of the real CLI). Panics with a clear
/// message when it is missing: a benchmark never runs on made-up input.
pub fn testdata_dir() -> PathBuf {
    let dir = PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../testdata");
    assert!(
        dir.join("captures").is_dir(),
        "the recordings are missing: expected {}/captures",
        dir.display()
    );
    dir
}

/// Every stdout line of every real capture in `testdata/captures`, as the CLI printed it
/// (the raw JSON text of each `line` record, key order kept).
pub fn capture_lines() -> Vec<String> {
    lines_of("captures", "")
}

/// Every stdout line of the recorded runs of another CLI in `testdata/dialects` whose file
/// name starts with `prefix` (`codex_`, `opencode_`), as the CLI printed it.
pub fn dialect_lines(prefix: &str) -> Vec<String> {
    lines_of("dialects", prefix)
}

/// The `line` records of the captures in `testdata/<folder>` named `<prefix>…`, in file order.
fn lines_of(folder: &str, prefix: &str) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct Rec<'a> {
        #[serde(borrow)]
        line: Option<&'a serde_json::value::RawValue>,
    }
    let dir = testdata_dir().join(folder);
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("read captures")
        .map(|e| e.expect("dir entry").path())
        .filter(|p| {
            p.file_name()
                .is_some_and(|n| n.to_string_lossy().starts_with(prefix))
        })
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

/// Every real capture in `testdata/captures`, in file order: its name and its stdout
/// lines with the milliseconds at which the CLI printed them.
pub fn capture_timelines() -> Vec<(String, Vec<(u64, String)>)> {
    #[derive(serde::Deserialize)]
    struct Rec<'a> {
        t_ms: Option<u64>,
        #[serde(borrow)]
        line: Option<&'a serde_json::value::RawValue>,
    }
    let dir = testdata_dir().join("captures");
    let mut files: Vec<_> = std::fs::read_dir(&dir)
        .expect("read captures")
        .map(|e| e.expect("dir entry").path())
        .collect();
    files.sort();
    files
        .into_iter()
        .map(|f| {
            let text = std::fs::read_to_string(&f).expect("read capture");
            let lines = text
                .lines()
                .filter_map(|l| match serde_json::from_str::<Rec>(l) {
                    Ok(Rec {
                        t_ms: Some(t),
                        line: Some(raw),
                    }) => Some((t, raw.get().to_owned())),
                    _ => None,
                })
                .collect();
            let name = f.file_name().map(|n| n.to_string_lossy().into_owned());
            (name.unwrap_or_default(), lines)
        })
        .collect()
}

/// A tiny seeded generator (SplitMix64): the same seed gives the same traffic in every run.
#[derive(Debug, Clone)]
pub struct Rng(u64);

impl Rng {
    /// A generator with this seed.
    pub fn new(seed: u64) -> Self {
        Rng(seed)
    }
    /// The next 64 random bits.
    pub fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }
    /// Uniform in `0..n` (`n > 0`).
    pub fn below(&mut self, n: u64) -> u64 {
        ((u128::from(self.next_u64()) * u128::from(n)) >> 64) as u64
    }
    /// Uniform in `[0, 1)`.
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }
    /// Uniform in `[lo, hi)`.
    pub fn uniform(&mut self, lo: f64, hi: f64) -> f64 {
        lo + (hi - lo) * self.unit()
    }
    /// Log-uniform in `[lo, hi)` (`lo > 0`): as many short values per decade as long ones.
    pub fn log_uniform(&mut self, lo: f64, hi: f64) -> f64 {
        (lo.ln() + (hi.ln() - lo.ln()) * self.unit()).exp()
    }
}

/// CPU time consumed by the calling thread so far (`CLOCK_THREAD_CPUTIME_ID`): unlike wall
/// time, it does not grow while the thread waits for a core on a shared machine.
pub fn thread_cpu() -> Duration {
    let t = rustix::time::clock_gettime(rustix::time::ClockId::ThreadCPUTime);
    Duration::new(t.tv_sec as u64, t.tv_nsec as u32)
}

/// The median of some durations (the upper one of the two middle values for an even count).
pub fn median(mut xs: Vec<Duration>) -> Duration {
    xs.sort();
    xs.get(xs.len() / 2).copied().unwrap_or_default()
}

/// Format a rate in MB/s.
pub fn mb_per_s(bytes: usize, d: Duration) -> f64 {
    bytes as f64 / 1e6 / d.as_secs_f64()
}

/// CPU time (user + system) of this process's waited-for children and their waited-for
/// descendants so far (`cutime + cstime` of `/proc/self/stat`, in 10 ms clock ticks).
pub fn children_cpu() -> Duration {
    let stat = std::fs::read_to_string("/proc/self/stat").expect("read /proc/self/stat");
    // Fields after the command name (which ends at the last ')'): state is field 3.
    let rest = &stat[stat.rfind(')').expect("stat format") + 1..];
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| -> u64 { f[i - 3].parse().expect("clock ticks") };
    // USER_HZ is 100 on Linux for everything /proc reports.
    Duration::from_millis((ticks(16) + ticks(17)) * 10)
}

/// The release `agent-watchdog` binary: `$AGENT_WATCHDOG_BIN`, else beside this bench's
/// target directory (`target/release/agent-watchdog`). Panics with the command that builds it.
pub fn agent_watchdog_bin() -> PathBuf {
    if let Some(bin) = std::env::var_os("AGENT_WATCHDOG_BIN") {
        return PathBuf::from(bin);
    }
    let exe = std::env::current_exe().expect("current exe");
    // target/release/deps/<bench> → target/release/agent-watchdog
    let bin = exe
        .parent()
        .and_then(|d| d.parent())
        .map(|d| d.join("agent-watchdog"))
        .expect("target dir");
    assert!(
        bin.is_file(),
        "{} is missing: run `cargo build --release --bin agent-watchdog` first (scripts/bench does)",
        bin.display()
    );
    bin
}

/// Peak resident set (`VmHWM`) and current resident set (`VmRSS`) of a live process, in kB.
pub fn rss_kb(pid: u32) -> Option<(u64, u64)> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let field = |name: &str| -> Option<u64> {
        let line = status.lines().find(|l| l.starts_with(name))?;
        line.split_whitespace().nth(1)?.parse().ok()
    };
    Some((field("VmHWM:")?, field("VmRSS:")?))
}

/// What [`measure`] saw of one command: wall time, CPU of the command and its children (user +
/// system), and the command's own peak resident set (`VmHWM`).
#[derive(Debug, Clone, Copy)]
pub struct Measured {
    /// Wall time from spawn to exit.
    pub wall: Duration,
    /// CPU of the process and its waited-for children.
    pub cpu: Duration,
    /// The process's peak resident set, kB (sampled continuously for the first 50 ms, then
    /// every millisecond: the high-water mark only ever grows, so a sample after the peak reads
    /// it; a process that lives less than a sample may read 0).
    pub peak_kb: u64,
}

/// Run `cmd` (stdout and stderr to /dev/null unless set) and measure it (see [`Measured`]).
/// Panics if it fails.
pub fn measure(cmd: &mut std::process::Command) -> Measured {
    use std::process::Stdio;
    let cpu0 = children_cpu();
    let t = std::time::Instant::now();
    let mut child = cmd.stdin(Stdio::null()).spawn().expect("spawn");
    let mut peak = 0;
    let status = loop {
        if let Some((hwm, _)) = rss_kb(child.id()) {
            peak = peak.max(hwm);
        }
        if let Some(status) = child.try_wait().expect("wait") {
            break status;
        }
        if t.elapsed() > Duration::from_millis(50) {
            std::thread::sleep(Duration::from_millis(1));
        }
    };
    let wall = t.elapsed();
    assert!(status.success(), "{cmd:?} failed: {status}");
    Measured {
        wall,
        cpu: children_cpu() - cpu0,
        peak_kb: peak,
    }
}

/// `/proc/loadavg`'s three load averages, for the record of how busy the machine was.
pub fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_else(|_| "unknown".into())
}
