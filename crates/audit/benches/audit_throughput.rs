//! `cargo bench -p watchdog-audit --bench audit_throughput`
//!
//! Generates a synthetic corpus shaped like Claude Code transcripts (seeded), then measures in
//! the same run, each on every core:
//! (a) the I/O floor: read every file with a 1 MiB buffer and count newlines;
//! (b) a full `serde_json::Value` parse of every line;
//! (c) the audit (read, analyse, simulate, recommend).
//!
//! Environment: `AUDIT_BENCH_BYTES` (default 1 GiB), `AUDIT_BENCH_FILES` (default 2000),
//! `AUDIT_BENCH_SEED` (default 7), `AUDIT_BENCH_DIR` (parent of the temporary corpus folder),
//! `AUDIT_BENCH_REPS` (median of, default 5), `AUDIT_BENCH_CORPUS` (keep or reuse the corpus in
//! this folder), `AUDIT_BENCH_REPORT` (print the audit's text report).
//! Entries follow the key order of the real transcripts in `testdata/transcripts`
//! (`type` first on API request records, after the payload on attachments and messages).
//! The corpus is deleted afterwards. All figures are with a warm page cache (the corpus was just
//! written, and a first untimed floor pass reads it once).
#![forbid(unsafe_code)]

use std::fs::{self, File};
use std::io::{BufRead, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::time::Instant;

use watchdog_audit::{audit_paths, render_text, scan};
use watchdog_core::Limits;

/// xorshift64*: small, seeded, good enough for shapes.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        let mut x = self.0;
        x ^= x >> 12;
        x ^= x << 25;
        x ^= x >> 27;
        self.0 = x;
        x.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }
}

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(default)
}

/// Words of the synthetic text: code and prose, with escapes about as often as in the real
/// transcripts in `testdata/transcripts` (there: ~36 quotes and ~7 backslashes per KB).
const WORDS: &[&str] = &[
    "the",
    "cargo",
    "test",
    "fn",
    "main",
    "error",
    "src/lib.rs",
    "let",
    "mut",
    "value",
    "\\n",
    "\\\"quoted\\\"",
    "ok",
    "path",
    "build",
    "=>",
    "{}",
    "[1, 2]",
    "Result<(), E>",
    "\\t",
    "\\u00e9t\\u00e9",
    "self",
    "impl",
    "struct",
    "return",
    "match",
    "Some(x)",
    "None",
    "if",
    "else",
    "for",
    "in",
    "while",
    "loop",
    "pub",
    "use",
    "crate::audit",
    "std::io",
    "Vec<u8>",
    "String",
    "&str",
    "as",
    "where",
    "async",
    "await",
    "println!",
    "assert_eq!",
    "0x7f",
    "42",
    "compile",
    "warning:",
    "unused",
    "variable",
    "function",
    "module",
    "trait",
    "type",
    "const",
];

/// A JSON string body (already escaped) of about `n` bytes.
fn text(rng: &mut Rng, n: usize) -> String {
    let mut s = String::with_capacity(n + 16);
    while s.len() < n {
        s.push_str(WORDS[rng.below(WORDS.len() as u64) as usize]);
        s.push(' ');
    }
    s
}

struct Gen<'a> {
    rng: &'a mut Rng,
    t: i64,
    sid: String,
    side: bool,
    out: BufWriter<File>,
    written: u64,
    target: u64,
}

impl Gen<'_> {
    fn line(&mut self, s: &str) {
        let _ = self.out.write_all(s.as_bytes());
        let _ = self.out.write_all(b"\n");
        self.written += s.len() as u64 + 1;
    }
    fn tick(&mut self, max_ms: u64) -> String {
        self.t += self.rng.below(max_ms) as i64 + 1;
        watchdog_core::format_iso_ms(self.t as u64)
    }
    fn common(&self) -> String {
        format!(
            r#""isSidechain":{},"userType":"external","entrypoint":"sdk-cli","cwd":"/home/user/project","sessionId":"{}","version":"2.1.332","gitBranch":"main""#,
            self.side, self.sid
        )
    }
    fn turn(&mut self, big: usize) {
        let ts = self.tick(600_000);
        let c = self.common();
        let prompt = text(self.rng, 200);
        self.line(&format!(
            r#"{{"type":"queue-operation","operation":"enqueue","timestamp":"{ts}","sessionId":"{}","content":"{prompt}"}}"#,
            self.sid
        ));
        let ts = self.tick(200);
        self.line(&format!(
            r#"{{"parentUuid":null,{c},"promptId":"p","type":"user","message":{{"role":"user","content":"{prompt}"}},"uuid":"u{}","timestamp":"{ts}","permissionMode":"default"}}"#,
            self.t
        ));
        for _ in 0..3 {
            let ts = self.tick(5);
            let body = text(self.rng, big / 4);
            let d = text(self.rng, 40);
            let line = format!(
                r#"{{"parentUuid":"x",{c},"attachment":{{"type":"skill_listing","content":"{body}","items":[{{"name":"a","d":"{d}"}}]}},"type":"attachment","uuid":"a{}","timestamp":"{ts}"}}"#,
                self.t
            );
            self.line(&line);
        }
        // Once per turn: the request shape with the tool definitions (structure-heavy).
        let ts = self.tick(20);
        let tools: String = (0..40)
            .map(|i| format!(r#"{{"name":"Tool{i}","description":"{}","input_schema":{{"type":"object","properties":{{"x":{{"type":"string","description":"an argument"}}}},"required":["x"]}}}}"#, text(self.rng, 800)))
            .collect::<Vec<_>>()
            .join(",");
        let line = format!(
            r#"{{"type":"api-request-shape","timestamp":"{ts}","shapeHash":"h{}","shape":{{"tools":[{tools}]}},"sessionId":"{}"}}"#,
            self.t, self.sid
        );
        self.line(&line);
        let steps = 2 + self.rng.below(12);
        for step in 0..steps {
            let ts = self.tick(20);
            let line = format!(
                r#"{{"type":"api-request","timestamp":"{ts}","id":"r{}","querySource":"sdk","shapeHash":"h","params":{{"model":"claude-opus-5-5","max_tokens":32000,"thinking":{{"type":"enabled","budget_tokens":4000}},"metadata":{{"user_id":"u"}}}},"keep":12,"tail":[{{"role":"user","ref":"b1"}},{{"role":"assistant","ref":"b2"}}],"requestDigest":"d{}","sessionId":"{}"}}"#,
                self.t, self.t, self.sid
            );
            self.line(&line);
            let last = step + 1 == steps || self.written >= self.target;
            let long = self.rng.below(50) == 0;
            let ts = self.tick(if long { 300_000 } else { 30_000 });
            let think = text(self.rng, 300 + big / 8);
            if last {
                self.line(&format!(
                    r#"{{"parentUuid":"x",{c},"message":{{"id":"m","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"text","text":"{think}"}}],"stop_reason":"end_turn","stop_sequence":null,"usage":{{"input_tokens":100,"output_tokens":20}}}},"type":"assistant","uuid":"v{}","timestamp":"{ts}"}}"#,
                    self.t
                ));
                break;
            }
            let tool = ["Bash", "Read", "Edit", "Write", "Grep"][self.rng.below(5) as usize];
            let id = format!("toolu_{}_{}", self.t, step);
            let cmd = text(self.rng, 80);
            let line = format!(
                r#"{{"parentUuid":"x",{c},"message":{{"id":"m","type":"message","role":"assistant","model":"claude-opus-5-5","content":[{{"type":"thinking","thinking":"{think}","signature":"sig"}},{{"type":"tool_use","id":"{id}","name":"{tool}","input":{{"command":"{cmd}","description":"d"}}}}],"stop_reason":"tool_use","stop_sequence":null,"usage":{{"input_tokens":100,"output_tokens":20}}}},"type":"assistant","uuid":"v{}","timestamp":"{ts}"}}"#,
                self.t
            );
            self.line(&line);
            if tool == "Bash" && self.rng.below(3) == 0 {
                for _ in 0..self.rng.below(6) {
                    let ts = self.tick(30_000);
                    let o = text(self.rng, 100);
                    let line = format!(
                        r#"{{"parentUuid":"x",{c},"type":"progress","data":{{"type":"bash_progress","output":"{o}","elapsedTimeSeconds":3}},"toolUseID":"{id}","uuid":"g{}","timestamp":"{ts}"}}"#,
                        self.t
                    );
                    self.line(&line);
                }
            }
            let ts = self.tick(if tool == "Bash" { 120_000 } else { 2_000 });
            let n = 200 + self.rng.below(big as u64) as usize;
            let result = text(self.rng, n);
            let stdout = text(self.rng, big / 4);
            let line = format!(
                r#"{{"parentUuid":"x",{c},"promptId":"p","type":"user","message":{{"role":"user","content":[{{"tool_use_id":"{id}","type":"tool_result","content":"{result}","is_error":false}}]}},"uuid":"w{}","timestamp":"{ts}","toolUseResult":{{"stdout":"{stdout}","stderr":"","interrupted":false}},"sourceToolAssistantUUID":"v","permissionDecision":{{"decision":"accept","source":"config","reasonType":"mode"}}}}"#,
                self.t
            );
            self.line(&line);
        }
        self.line(&format!(
            r#"{{"type":"last-prompt","lastPrompt":"x","sessionId":"{}"}}"#,
            self.sid
        ));
    }
}

fn generate(dir: &Path, total: u64, files: u64, seed: u64) -> u64 {
    let mut rng = Rng(seed.max(1).wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1);
    let per_file = (total / files.max(1)).max(1);
    let mut written = 0;
    for f in 0..files {
        let sid = format!(
            "{:08x}-{:04x}-4{:03x}-8{:03x}-{:012x}",
            rng.next() as u32,
            rng.below(0x10000),
            rng.below(0x1000),
            rng.below(0x1000),
            rng.next() & 0xffff_ffff_ffff
        );
        let project = dir.join(format!("-home-user-project{}", f % 20));
        let subagent = f % 10 == 9;
        let path = if subagent {
            project.join(&sid).join("subagents").join("agent-a1.jsonl")
        } else {
            project.join(format!("{sid}.jsonl"))
        };
        if let Some(p) = path.parent() {
            let _ = fs::create_dir_all(p);
        }
        let Ok(file) = File::create(&path) else {
            continue;
        };
        // File sizes vary from a quarter to 1.75 times the mean.
        let target = per_file / 4 + rng.below(per_file * 3 / 2);
        let big = 2_000 + rng.below(20_000) as usize;
        let mut g = Gen {
            t: 1_790_000_000_000 + rng.below(10_000_000_000) as i64,
            rng: &mut rng,
            sid,
            side: subagent,
            out: BufWriter::with_capacity(1 << 20, file),
            written: 0,
            target,
        };
        while g.written < target {
            g.turn(big);
        }
        let _ = g.out.flush();
        written += g.written;
    }
    written
}

fn files_of(dir: &Path, out: &mut Vec<PathBuf>) {
    if let Ok(rd) = fs::read_dir(dir) {
        for e in rd.flatten() {
            let p = e.path();
            if p.is_dir() {
                files_of(&p, out);
            } else {
                out.push(p);
            }
        }
    }
}

/// Run `f` on every file, on `threads` threads; returns the sum of what it returns.
fn par(files: &[PathBuf], threads: usize, f: impl Fn(&Path) -> u64 + Sync) -> u64 {
    let next = AtomicUsize::new(0);
    let sum = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(|| {
                while let Some(p) = files.get(next.fetch_add(1, Ordering::Relaxed)) {
                    sum.fetch_add(f(p), Ordering::Relaxed);
                }
            });
        }
    });
    sum.into_inner()
}

thread_local! {
    static BUF: std::cell::RefCell<Vec<u8>> = std::cell::RefCell::new(vec![0u8; 1 << 20]);
}

fn count_newlines(p: &Path) -> u64 {
    let Ok(mut f) = File::open(p) else { return 0 };
    BUF.with(|b| {
        let mut buf = b.borrow_mut();
        let mut n = 0;
        loop {
            match f.read(&mut buf) {
                Ok(0) | Err(_) => return n,
                Ok(k) => n += memchr::memchr_iter(b'\n', &buf[..k]).count() as u64,
            }
        }
    })
}

fn parse_values(p: &Path) -> u64 {
    let Ok(f) = File::open(p) else { return 0 };
    let mut r = BufReader::with_capacity(1 << 20, f);
    let mut line = Vec::new();
    let mut n = 0;
    loop {
        line.clear();
        match r.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return n,
            Ok(_) => {
                if serde_json::from_slice::<serde_json::Value>(&line).is_ok() {
                    n += 1;
                }
            }
        }
    }
}

/// Process CPU time (user + system), seconds, from `/proc/self/stat` (Linux; 0 elsewhere).
fn cpu_seconds() -> f64 {
    let Ok(stat) = fs::read_to_string("/proc/self/stat") else {
        return 0.0;
    };
    // Fields after the `(comm)`: state is field 3; utime and stime are fields 14 and 15.
    let rest = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| f.get(i).and_then(|v| v.parse::<f64>().ok()).unwrap_or(0.0);
    (ticks(11) + ticks(12)) / 100.0 // USER_HZ is 100 on Linux
}

/// Median wall-clock MB/s over `reps` runs, and MB per CPU-second (all threads) of that run:
/// the median, not the best, so that a ratio holds reliably on a busy machine.
fn median_of(reps: u64, mb: f64, mut f: impl FnMut()) -> (f64, f64) {
    let mut runs = Vec::new();
    for _ in 0..reps.max(1) {
        let (t, c) = (Instant::now(), cpu_seconds());
        f();
        runs.push((t.elapsed().as_secs_f64(), cpu_seconds() - c));
    }
    runs.sort_by(|a, b| a.0.total_cmp(&b.0));
    let mid = runs[runs.len() / 2];
    (mb / mid.0, mb / mid.1.max(0.01))
}

fn main() {
    // `cargo bench` passes `--bench`; nothing else to parse.
    let total = env_u64("AUDIT_BENCH_BYTES", 1 << 30);
    let nfiles = env_u64("AUDIT_BENCH_FILES", 2000);
    let seed = env_u64("AUDIT_BENCH_SEED", 7);
    let reps = env_u64("AUDIT_BENCH_REPS", 5);
    let threads = std::thread::available_parallelism().map_or(2, |n| n.get());
    // AUDIT_BENCH_CORPUS: keep (or reuse) the corpus in this folder instead of a temporary one.
    let keep = std::env::var_os("AUDIT_BENCH_CORPUS").map(PathBuf::from);
    let mut _tmp = None;
    let dir = match keep {
        Some(d) => d,
        None => {
            let parent = std::env::var_os("AUDIT_BENCH_DIR").map(PathBuf::from);
            let tmp = match &parent {
                Some(p) => tempfile::Builder::new().prefix("audit-bench").tempdir_in(p),
                None => tempfile::Builder::new().prefix("audit-bench").tempdir(),
            };
            let Ok(tmp) = tmp else {
                eprintln!("audit_throughput: cannot create a temporary folder");
                std::process::exit(1);
            };
            let d = tmp.path().to_path_buf();
            _tmp = Some(tmp);
            d
        }
    };
    let t = Instant::now();
    let mut files = Vec::new();
    files_of(&dir, &mut files);
    if files.is_empty() {
        generate(&dir, total, nfiles, seed);
        files_of(&dir, &mut files);
    }
    let bytes: u64 = files
        .iter()
        .filter_map(|f| fs::metadata(f).ok())
        .map(|m| m.len())
        .sum();
    println!(
        "corpus: {} files, {:.1} MB (seed {seed}), ready in {:.1}s; {threads} threads, median of {reps}",
        files.len(),
        bytes as f64 / 1e6,
        t.elapsed().as_secs_f64()
    );
    let mb = bytes as f64 / 1e6;
    let _warm = par(&files, threads, count_newlines);
    let dirs = [dir.clone()];
    let only_audit = std::env::var_os("AUDIT_BENCH_ONLY_AUDIT").is_some();

    let (mut floor, mut full) = ((f64::NAN, f64::NAN), (f64::NAN, f64::NAN));
    let mut lines = 0;
    if !only_audit {
        floor = median_of(reps, mb, || lines = par(&files, threads, count_newlines));
        println!(
            "(a) read + count newlines: {:>8.1} MB/s wall, {:>8.1} MB per CPU-second  ({lines} lines)",
            floor.0, floor.1
        );
        let mut parsed = 0;
        full = median_of(reps.min(2), mb, || {
            parsed = par(&files, threads, parse_values)
        });
        println!(
            "(b) serde_json::Value:     {:>8.1} MB/s wall, {:>8.1} MB per CPU-second  ({parsed} lines parsed)",
            full.0, full.1
        );
    }
    let mut n = 0;
    let scan_only = median_of(reps, mb, || {
        let found = scan::discover(&dirs);
        n = scan::read_all(&found.files, threads, &|_| {}).len();
    });
    println!(
        "(c') audit, reading only:  {:>8.1} MB/s wall, {:>8.1} MB per CPU-second  ({n} files)",
        scan_only.0, scan_only.1
    );
    if std::env::var_os("AUDIT_BENCH_SCAN_ONLY").is_some() {
        return;
    }
    let mut report = None;
    let audit = median_of(reps, mb, || {
        report = Some(audit_paths(&dirs, &Limits::default()));
    });
    let Some(report) = report else { return };
    println!(
        "(c) audit:                 {:>8.1} MB/s wall, {:>8.1} MB per CPU-second  ({} sessions, {} lines)",
        audit.0,
        audit.1,
        report.sessions_scanned,
        report.read.lines
    );
    if !only_audit {
        println!(
            "ratios (wall): audit/floor = {:.2} (floor {:.2}x faster; target <= 3x), audit/full-parse = {:.2}",
            audit.0 / floor.0,
            floor.0 / audit.0,
            audit.0 / full.0
        );
        println!(
            "ratios (CPU):  audit/floor = {:.2} (floor {:.2}x cheaper), audit/full-parse = {:.2}",
            audit.1 / floor.1,
            floor.1 / audit.1,
            audit.1 / full.1
        );
    }
    if std::env::var_os("AUDIT_BENCH_REPORT").is_some() {
        print!("{}", render_text(&report));
    }
}
