//! Bench 2: the registry at scale, against the reference design's tick-scan registry measured
//! in the same run.
//!
//! - (a) observe cost per line into random sessions among 100,000 (pre-parsed `LineView` and raw
//!   bytes), lines drawn from the real captures;
//! - (b) bytes of memory per session (counting allocator);
//! - (c) `handle_timeout` when 1 % of the sessions are due, and when none is;
//! - (d) one simulated hour of the same traffic for both designs (defined in [`SlotGen`]), with
//!   the CPU split into timer work and observing.
//!
//! The baseline (`TickScan`) is the reference design written efficiently in Rust: a `Vec` of
//! plain structs, observe = update timestamps, and every 30 s tick evaluates every session with
//! the reference rule (the reference TypeScript package's "Pure policy
//! evaluateWatchdog").
//!
//! Run: `cargo bench -p watchdog-benches --bench registry`
//! (`REGISTRY_BENCH_SESSIONS`, default 100000; `REGISTRY_BENCH_MINUTES`, default 60).

use std::hint::black_box;
use std::time::{Duration, Instant};

use watchdog_benches::{
    capture_lines, capture_timelines, live_bytes, median, thread_cpu, CountingAlloc, Rng,
};
use watchdog_core::{
    classify, Dialect, Event, ExtendReason, KillKind, LineKind, LineView, Registry, SessionConfig,
    SessionId,
};

#[global_allocator]
static GLOBAL: CountingAlloc = CountingAlloc;

const MS: u64 = 1_000_000;
const SEC: u64 = 1_000 * MS;
const MIN: u64 = 60 * SEC;
/// The reference design's tick.
const TICK: u64 = 30 * SEC;
/// Both designs get the same hard ceiling (the reference requires one per registration).
const CEILING: u64 = 120 * MIN;

fn env_u64(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

fn limits() -> watchdog_core::Limits {
    // The defaults (idle 10 min, × 2 before the first write, no-progress 30 min, linger 11 min,
    // startup 3 min) and the shared ceiling.
    watchdog_core::Limits::default()
        .with_ceiling(Some(Duration::from_nanos(CEILING)))
        .expect("valid")
}

// ---------------------------------------------------------------------------------------------
// The baseline: the reference design's tick-scan registry.

/// One registration of the reference design (`startedAt`, `lastToolAt`, `lastActivityAt`,
/// `firstWriteAt`, `settled`, `kill`, `extendNoted`), times in ns.
#[derive(Debug, Clone, Copy)]
struct RefEntry {
    started: u64,
    last_tool: u64,
    last_activity: u64,
    /// `u64::MAX` = null.
    first_write: u64,
    settled: bool,
    killed: bool,
    extend_noted: bool,
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum Verdict {
    Ok,
    Kill(RefKillKind),
    Extend(ExtendReason),
}

#[derive(Debug, Clone, Copy, PartialEq)]
enum RefKillKind {
    HardCeiling,
    Idle,
}

/// The kill record the reference stores on the entry and returns from the pass.
#[derive(Debug, Clone, Copy)]
struct RefKill {
    slot: u32,
    kind: RefKillKind,
    elapsed: u64,
    since_tool: u64,
    /// How long after the exact deadline the tick noticed it (bench bookkeeping).
    late: u64,
}

struct RefLimits {
    idle: u64,
    extended: u64,
    ceiling: u64,
    high_utilization: f64,
}

/// "Pure policy evaluateWatchdog", step by step.
#[inline]
fn evaluate(e: &RefEntry, now: u64, utilization: Option<f64>, l: &RefLimits) -> Verdict {
    // 1. The ceiling first.
    if now.saturating_sub(e.started) >= l.ceiling {
        return Verdict::Kill(RefKillKind::HardCeiling);
    }
    // 2. Settled: ok.
    if e.settled {
        return Verdict::Ok;
    }
    // 3. Idle since the last tool boundary or activity.
    let idle = now.saturating_sub(e.last_tool.max(e.last_activity));
    // 4.–5. Patience, extended while utilization is high or before the first write.
    let high = utilization.is_some_and(|u| u >= l.high_utilization);
    let extended = high || e.first_write == u64::MAX;
    let patience = if extended { l.extended } else { l.idle };
    // 6.–8. Inclusive boundaries.
    if idle >= patience {
        Verdict::Kill(RefKillKind::Idle)
    } else if idle >= l.idle {
        Verdict::Extend(if high {
            ExtendReason::HighUtilization
        } else {
            ExtendReason::PreWrite
        })
    } else {
        Verdict::Ok
    }
}

/// Whether a `user` line carries a successful result of a write tool call of the captures
/// (the mock API names its `Write` call `toolu_mock_write_1`).
fn completes_write(view: &LineView<'_>) -> bool {
    view.tool_results()
        .any(|(id, is_error)| !is_error && id.starts_with("toolu_mock_write"))
}

/// The reference registry: every tick evaluates every live entry.
struct TickScan {
    entries: Vec<RefEntry>,
    limits: RefLimits,
    kills: Vec<RefKill>,
    extends: u64,
}

impl TickScan {
    fn new(l: &watchdog_core::Limits) -> Self {
        TickScan {
            entries: Vec::new(),
            limits: RefLimits {
                idle: l.idle().as_nanos() as u64,
                extended: l.extended_idle().as_nanos() as u64,
                ceiling: CEILING,
                high_utilization: l.high_utilization(),
            },
            kills: Vec::new(),
            extends: 0,
        }
    }

    fn fresh(now: u64) -> RefEntry {
        RefEntry {
            started: now,
            last_tool: now,
            last_activity: now,
            first_write: u64::MAX,
            settled: false,
            killed: false,
            extend_noted: false,
        }
    }

    /// `register`: a new entry (the host reuses the slot of a session that ended).
    fn register(&mut self, slot: usize, now: u64) {
        if slot == self.entries.len() {
            self.entries.push(Self::fresh(now));
        } else {
            self.entries[slot] = Self::fresh(now);
        }
    }

    /// `observe(message)` in 0.2.0, plus the hook's `activity()` for a tool result (the
    /// reference host installs `makeWatchdogHook`: PostToolUse → `activity(tool_name)`).
    #[inline]
    fn observe(&mut self, slot: usize, now: u64, view: Option<&LineView<'_>>) {
        let Some(view) = view else {
            return; // not a message: the SDK would not deliver it
        };
        let e = &mut self.entries[slot];
        let working = |e: &mut RefEntry| {
            e.settled = false;
            e.last_activity = now;
        };
        match classify(view).kind {
            LineKind::Result => e.settled = true,
            LineKind::RateLimit => e.last_activity = now,
            LineKind::StreamEvent | LineKind::Ping | LineKind::Abandoned => working(e),
            LineKind::ToolProgress => working(e), // toolHeartbeats defaults to true
            LineKind::System if view.subtype().as_deref() == Some("thinking_tokens") => working(e),
            LineKind::User => {
                // activity(tool_name): a tool boundary; a completed write tool is the first
                // write (the hook knows the tool's name; here: the result's `tool_use_id` is
                // one the captures gave to a write tool).
                e.last_tool = now;
                if e.first_write == u64::MAX && completes_write(view) {
                    e.first_write = now;
                }
                working(e);
            }
            _ => {}
        }
    }

    /// One tick: evaluate every entry; returns the number of kills of this pass.
    fn tick(&mut self, now: u64, utilization: Option<f64>) -> usize {
        let before = self.kills.len();
        for (slot, e) in self.entries.iter_mut().enumerate() {
            if e.killed {
                continue;
            }
            match evaluate(e, now, utilization, &self.limits) {
                Verdict::Ok => {}
                Verdict::Kill(kind) => {
                    e.killed = true;
                    let deadline = match kind {
                        RefKillKind::HardCeiling => e.started + self.limits.ceiling,
                        RefKillKind::Idle => {
                            let patience = if e.first_write == u64::MAX {
                                self.limits.extended
                            } else {
                                self.limits.idle
                            };
                            e.last_tool.max(e.last_activity) + patience
                        }
                    };
                    self.kills.push(RefKill {
                        slot: slot as u32,
                        kind,
                        elapsed: now - e.started,
                        since_tool: now - e.last_tool,
                        late: now.saturating_sub(deadline),
                    });
                }
                Verdict::Extend(_) => {
                    if !e.extend_noted {
                        e.extend_noted = true;
                        self.extends += 1;
                    }
                }
            }
        }
        self.kills.len() - before
    }
}

// ---------------------------------------------------------------------------------------------
// The traffic.

/// Real lines sorted by the role they play in a session, from the captures.
struct Pools {
    lines: Vec<String>,
    /// `system/init`.
    init: Vec<u32>,
    /// One model turn each: the lines between a tool result (or init) and the next tool result
    /// or `result` (status, stream events, thinking tokens, assistant messages…).
    turns: Vec<Vec<u32>>,
    /// `user` lines (tool results).
    user: Vec<u32>,
    /// `tool_progress` heartbeats.
    progress: Vec<u32>,
    /// `result` lines.
    result: Vec<u32>,
}

impl Pools {
    fn from_captures() -> Self {
        let mut p = Pools {
            lines: Vec::new(),
            init: Vec::new(),
            turns: Vec::new(),
            user: Vec::new(),
            progress: Vec::new(),
            result: Vec::new(),
        };
        for (_, timeline) in capture_timelines() {
            let mut turn = Vec::new();
            for (_, line) in timeline {
                let i = p.lines.len() as u32;
                let (kind, subtype) = match LineView::parse(line.as_bytes()) {
                    Ok(v) => (classify(&v).kind, v.subtype().map(|s| s.into_owned())),
                    Err(_) => (LineKind::Unparseable, None),
                };
                p.lines.push(line);
                let close = |turn: &mut Vec<u32>, turns: &mut Vec<Vec<u32>>| {
                    if !turn.is_empty() {
                        turns.push(std::mem::take(turn));
                    }
                };
                match kind {
                    LineKind::System if subtype.as_deref() == Some("init") => {
                        close(&mut turn, &mut p.turns);
                        p.init.push(i);
                    }
                    LineKind::User => {
                        close(&mut turn, &mut p.turns);
                        p.user.push(i);
                    }
                    LineKind::Result => {
                        close(&mut turn, &mut p.turns);
                        p.result.push(i);
                    }
                    LineKind::ToolProgress => p.progress.push(i),
                    LineKind::ControlRequest | LineKind::ControlResponse => {}
                    _ => turn.push(i),
                }
            }
            if !turn.is_empty() {
                p.turns.push(turn);
            }
        }
        for (name, pool) in [
            ("init", &p.init),
            ("user", &p.user),
            ("progress", &p.progress),
            ("result", &p.result),
        ] {
            assert!(!pool.is_empty(), "no {name} line in the captures");
        }
        assert!(!p.turns.is_empty(), "no turn in the captures");
        p
    }
}

/// Probability that a model turn ends the session with a `result`.
const P_RESULT: f64 = 0.1;
/// Probability that a tool call hangs (no line ever again; the host restarts the slot after
/// 25 min). Both designs kill it (idle, 20 min of silence before the first write).
const P_HANG: f64 = 0.002;

const STARTUP: u8 = 0;
const TURN: u8 = 1;
const TOOL: u8 = 2;
const RESULT: u8 = 3;
const EXIT: u8 = 4;

/// What happens to a session slot.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum Action {
    /// The session prints this line.
    Line(u32),
    /// The session's process exited: end it, forget it, and register a new session in the slot.
    Restart,
}

/// One session slot's traffic, a state machine over real lines (times in ns):
///
/// - a new session prints `system/init` 0.5–3 s after it starts (the first sessions: 0.5–30 s,
///   a staggered cold start);
/// - a model turn (0.3–2 s after the previous line) streams the lines of one real turn, one
///   every 10–100 ms;
/// - then, with probability 0.1 (ten tool calls per session on average), the `result` (10–100 ms later) and the process exits
///   50–500 ms after it, and a new session starts in the slot; with probability 0.002 the tool
///   hangs for good (the host restarts the slot 25 min later); otherwise a tool runs for a
///   log-uniform 0.5–180 s, silent but for a `tool_progress` heartbeat every 30 s (as in the
///   captures), and its `user` tool result starts the next turn.
struct SlotGen {
    next_t: u64,
    phase: u8,
    turn: u32,
    pos: u32,
    tool_end: u64,
    next_progress: u64,
}

fn secs(rng: &mut Rng, lo: f64, hi: f64) -> u64 {
    (rng.uniform(lo, hi) * SEC as f64) as u64
}

fn pick(rng: &mut Rng, pool: &[u32]) -> u32 {
    pool[rng.below(pool.len() as u64) as usize]
}

impl SlotGen {
    fn new(rng: &mut Rng) -> Self {
        SlotGen {
            next_t: secs(rng, 0.5, 30.0),
            phase: STARTUP,
            turn: 0,
            pos: 0,
            tool_end: 0,
            next_progress: 0,
        }
    }

    fn start_turn(&mut self, rng: &mut Rng, p: &Pools, t: u64) {
        self.phase = TURN;
        self.turn = rng.below(p.turns.len() as u64) as u32;
        self.pos = 0;
        self.next_t = t + secs(rng, 0.3, 2.0);
    }

    /// The event at `next_t`, and move on to the next one.
    fn step(&mut self, rng: &mut Rng, p: &Pools) -> (u64, Action) {
        let t = self.next_t;
        let action = match self.phase {
            STARTUP => {
                self.start_turn(rng, p, t);
                Action::Line(pick(rng, &p.init))
            }
            TURN => {
                let turn = &p.turns[self.turn as usize];
                let line = turn[self.pos as usize];
                self.pos += 1;
                if (self.pos as usize) < turn.len() {
                    self.next_t = t + secs(rng, 0.010, 0.100);
                } else {
                    let r = rng.unit();
                    if r < P_RESULT {
                        self.phase = RESULT;
                        self.next_t = t + secs(rng, 0.010, 0.100);
                    } else if r < P_RESULT + P_HANG {
                        self.phase = EXIT;
                        self.next_t = t + 25 * MIN;
                    } else {
                        self.phase = TOOL;
                        self.tool_end = t + (rng.log_uniform(0.5, 180.0) * SEC as f64) as u64;
                        self.next_progress = t + 30 * SEC;
                        self.next_t = self.next_progress.min(self.tool_end);
                    }
                }
                Action::Line(line)
            }
            TOOL if t >= self.tool_end => {
                self.start_turn(rng, p, t);
                Action::Line(pick(rng, &p.user))
            }
            TOOL => {
                self.next_progress += 30 * SEC;
                self.next_t = self.next_progress.min(self.tool_end);
                Action::Line(pick(rng, &p.progress))
            }
            RESULT => {
                self.phase = EXIT;
                self.next_t = t + secs(rng, 0.05, 0.5);
                Action::Line(pick(rng, &p.result))
            }
            _ => {
                self.phase = STARTUP;
                self.next_t = t + secs(rng, 0.5, 3.0);
                Action::Restart
            }
        };
        (t, action)
    }
}

// ---------------------------------------------------------------------------------------------
// The deadline design's host.

#[derive(Debug, Default)]
struct Counts {
    kills: [u64; KillKind::ALL.len()],
    extended: u64,
    stalling: u64,
    settled: u64,
    ended: u64,
}

struct Host {
    reg: Registry,
    ids: Vec<SessionId>,
    counts: Counts,
    cfg: SessionConfig,
}

impl Host {
    fn drain(&mut self) {
        while let Some(e) = self.reg.poll_event() {
            match e {
                Event::Killed(k) => {
                    self.counts.kills[kill_index(k.kind)] += 1;
                }
                Event::Extended { .. } => self.counts.extended += 1,
                Event::Stalling { .. } => self.counts.stalling += 1,
                Event::Settled { .. } => self.counts.settled += 1,
                Event::Ended { .. } => self.counts.ended += 1,
                _ => {}
            }
        }
    }
}

fn kill_index(k: KillKind) -> usize {
    KillKind::ALL.iter().position(|x| *x == k).unwrap_or(0)
}

/// Time split of one design over the hour.
#[derive(Debug, Default, Clone, Copy)]
struct Split {
    /// Timer work (thread CPU, per segment, clock-read cost subtracted).
    timer: Duration,
    /// Observing lines and the host's register/end/unregister (thread CPU, same).
    lines: Duration,
    /// Thread CPU of the whole replay.
    cpu: Duration,
    /// Timer wake-ups (deadline: `handle_timeout` calls; tick-scan: ticks).
    wakes: u64,
    /// Clock reads inside timer segments and line segments.
    timer_segments: u64,
    line_segments: u64,
}

/// What one read of the thread CPU clock costs (a system call), to subtract per segment.
fn clock_cost() -> Duration {
    let n = 200_000u32;
    let t = thread_cpu();
    for _ in 0..n {
        black_box(thread_cpu());
    }
    (thread_cpu() - t) / n
}

#[derive(Debug, Default)]
struct Hour {
    /// How many times each distinct line was printed.
    per_line: Vec<u64>,
    restarts: u64,
    deadline: Split,
    tick: Split,
    counts: Counts,
    ref_kills: Vec<RefKill>,
    ref_extends: u64,
    /// Bytes of the deadline registry after the hour (live bytes freed by dropping it).
    registry_bytes: i64,
}

fn simulate_hour(
    n: usize,
    minutes: u64,
    pools: &Pools,
    views: &[Option<LineView<'_>>],
    base: Instant,
) -> Hour {
    let l = limits();
    let cfg = SessionConfig::default();
    let mut rng = Rng::new(0x5EED_2026);
    let mut gens: Vec<SlotGen> = (0..n).map(|_| SlotGen::new(&mut rng)).collect();
    let mut host = Host {
        reg: Registry::new(l.clone()),
        ids: Vec::with_capacity(n),
        counts: Counts::default(),
        cfg,
    };
    let mut ts = TickScan::new(&l);
    ts.entries.reserve(n);
    // The cold start: every slot registers at t = 0 (setup, not timed).
    for slot in 0..n {
        host.ids.push(host.reg.register(base, host.cfg.clone()));
        ts.register(slot, 0);
    }
    let mut out = Hour {
        per_line: vec![0; pools.lines.len()],
        ..Hour::default()
    };
    let mut evs: Vec<(u64, u32, Action)> = Vec::new();
    let windows = minutes * MIN / TICK;
    for w in 0..windows {
        let hi = (w + 1) * TICK;
        evs.clear();
        for (slot, g) in gens.iter_mut().enumerate() {
            while g.next_t < hi {
                let (t, a) = g.step(&mut rng, pools);
                evs.push((t, slot as u32, a));
            }
        }
        evs.sort_unstable();
        for e in &evs {
            match e.2 {
                Action::Line(i) => out.per_line[i as usize] += 1,
                Action::Restart => out.restarts += 1,
            }
        }

        // The deadline design: wake at every poll_timeout up to the next line, then feed it.
        let d = &mut out.deadline;
        let cpu0 = thread_cpu();
        let mut seg = cpu0;
        let mut in_timer = false;
        for &(t, slot, action) in &evs {
            let at = base + Duration::from_nanos(t);
            while let Some(p) = host.reg.poll_timeout() {
                if p > at {
                    break;
                }
                if !in_timer {
                    let now = thread_cpu();
                    d.lines += now - seg;
                    d.line_segments += 1;
                    seg = now;
                    in_timer = true;
                }
                host.reg.handle_timeout(p);
                host.drain();
                d.wakes += 1;
            }
            if in_timer {
                let now = thread_cpu();
                d.timer += now - seg;
                d.timer_segments += 1;
                seg = now;
                in_timer = false;
            }
            let slot = slot as usize;
            match action {
                Action::Line(i) => match &views[i as usize] {
                    Some(v) => {
                        host.reg.observe(at, host.ids[slot], v);
                    }
                    None => {
                        host.reg.observe_line(at, host.ids[slot], b"");
                    }
                },
                Action::Restart => {
                    host.reg.end(at, host.ids[slot]);
                    host.drain();
                    host.reg.unregister(host.ids[slot]);
                    host.ids[slot] = host.reg.register(at, host.cfg.clone());
                }
            }
            host.drain();
        }
        // The last wake-ups of the window.
        let end = base + Duration::from_nanos(hi);
        let now = thread_cpu();
        d.lines += now - seg;
        d.line_segments += 1;
        seg = now;
        while let Some(p) = host.reg.poll_timeout() {
            if p > end {
                break;
            }
            host.reg.handle_timeout(p);
            host.drain();
            d.wakes += 1;
        }
        d.timer += thread_cpu() - seg;
        d.timer_segments += 1;
        d.cpu += thread_cpu() - cpu0;

        // The tick-scan design: the same lines, then the tick at the window's end.
        let s = &mut out.tick;
        let cpu0 = thread_cpu();
        let seg = cpu0;
        for &(t, slot, action) in &evs {
            let slot = slot as usize;
            match action {
                Action::Line(i) => ts.observe(slot, t, views[i as usize].as_ref()),
                Action::Restart => ts.register(slot, t),
            }
        }
        let mid = thread_cpu();
        s.lines += mid - seg;
        s.line_segments += 1;
        black_box(ts.tick(hi, None));
        s.timer += thread_cpu() - mid;
        s.timer_segments += 1;
        s.wakes += 1;
        s.cpu += thread_cpu() - cpu0;
    }
    out.counts = std::mem::take(&mut host.counts);
    out.ref_kills = std::mem::take(&mut ts.kills);
    out.ref_extends = ts.extends;
    drop(evs);
    drop(gens);
    let before = live_bytes();
    drop(host);
    out.registry_bytes = before - live_bytes();
    out
}

// ---------------------------------------------------------------------------------------------

/// (e) The dialects: what a line of a Codex or an opencode session costs the registry beside a
/// line of a Claude Code session's, in the same run. Each dialect's real lines (the recorded
/// runs of `testdata/`), cycled, into one hot session of its own (`observe_line`, parse
/// included; `observe`, pre-parsed), then into random sessions among `n / 3` of its own; Claude
/// Code twice: registered without a dialect (every host but `run`) and with its dialect
/// expected (`run`: confirmed by its first line, then read as without). Median of 5, the
/// dialects interleaved.
fn dialect_costs(base: Instant, l: &watchdog_core::Limits, n: usize) {
    use watchdog_benches::dialect_lines;
    let sets: [(&str, Option<Dialect>, Vec<String>); 4] = [
        ("Claude Code, no dialect", None, capture_lines()),
        (
            "Claude Code, expected",
            Some(Dialect::Claude),
            capture_lines(),
        ),
        ("Codex", Some(Dialect::Codex), dialect_lines("codex_")),
        (
            "opencode",
            Some(Dialect::Opencode),
            dialect_lines("opencode_"),
        ),
    ];
    let per = (n / 3).max(1);
    let lines_n = 500_000u64;
    let mut rng = Rng::new(11);
    let picks: Vec<u32> = (0..lines_n).map(|_| rng.below(per as u64) as u32).collect();
    let mut results: Vec<[Vec<Duration>; 3]> = sets.iter().map(|_| Default::default()).collect();
    let mut regs: Vec<(Registry, Vec<SessionId>)> = sets
        .iter()
        .map(|(_, d, _)| {
            let mut reg = Registry::new(l.clone());
            let ids = (0..per)
                .map(|_| {
                    let cfg = match d {
                        Some(d) => SessionConfig::default().with_dialect(*d),
                        None => SessionConfig::default(),
                    };
                    reg.register(base, cfg)
                })
                .collect();
            (reg, ids)
        })
        .collect();
    let views: Vec<Vec<LineView<'_>>> = sets
        .iter()
        .map(|(_, _, lines)| {
            lines
                .iter()
                .filter_map(|l| LineView::parse(l.as_bytes()).ok())
                .collect()
        })
        .collect();
    let step = Duration::from_micros(1);
    let mut now = base + Duration::from_secs(1);
    for _ in 0..5 {
        for (i, (_, _, lines)) in sets.iter().enumerate() {
            let (reg, ids) = &mut regs[i];
            let v = &views[i];
            let c = thread_cpu();
            for k in 0..lines_n as usize {
                now += step;
                let line = &lines[k % lines.len()];
                black_box(reg.observe_line(now, ids[0], line.as_bytes()));
            }
            results[i][0].push(thread_cpu() - c);
            let c = thread_cpu();
            for k in 0..lines_n as usize {
                now += step;
                black_box(reg.observe(now, ids[0], &v[k % v.len()]));
            }
            results[i][1].push(thread_cpu() - c);
            let c = thread_cpu();
            for (k, &s) in picks.iter().enumerate() {
                now += step;
                black_box(reg.observe(now, ids[s as usize], &v[k % v.len()]));
            }
            results[i][2].push(thread_cpu() - c);
            while reg.poll_event().is_some() {}
        }
    }
    println!(
        "(e) a dialect's cost a line: {lines_n} of its real lines a measure (thread CPU, median of 5, interleaved); {per} sessions a dialect"
    );
    let cost = |i: usize, m: usize| ns_per(median(results[i][m].clone()), lines_n);
    for (i, (name, _, lines)) in sets.iter().enumerate() {
        let bytes: usize = lines.iter().map(|l| l.len()).sum::<usize>() / lines.len();
        println!(
            "  {name:<24}: observe_line {:>6.1} ns, observe one hot session {:>6.1} ns, observe random session {:>6.1} ns   ({bytes} B a line)",
            cost(i, 0),
            cost(i, 1),
            cost(i, 2)
        );
    }
    for (i, (name, _, _)) in sets.iter().enumerate().skip(1) {
        println!(
            "  {name:<24} / Claude Code, no dialect: observe_line {:.2}×, observe hot {:.2}×, observe random {:.2}×   (target ≤ 1.10)",
            cost(i, 0) / cost(0, 0),
            cost(i, 1) / cost(0, 1),
            cost(i, 2) / cost(0, 2)
        );
    }
}

fn ns_per(d: Duration, n: u64) -> f64 {
    d.as_nanos() as f64 / n as f64
}

fn main() {
    let n = env_u64("REGISTRY_BENCH_SESSIONS", 100_000) as usize;
    let minutes = env_u64("REGISTRY_BENCH_MINUTES", 60);
    let pools = Pools::from_captures();
    let base = Instant::now();
    let l = limits();
    println!(
        "bench registry: {n} sessions; {} real lines ({} turns, {} init, {} tool results, {} heartbeats, {} results)",
        pools.lines.len(),
        pools.turns.len(),
        pools.init.len(),
        pools.user.len(),
        pools.progress.len(),
        pools.result.len()
    );

    // (b) Memory per session.
    let mut reg = Registry::new(l.clone());
    let before = live_bytes();
    let ids: Vec<SessionId> = Vec::with_capacity(n);
    let ids_bytes = live_bytes() - before;
    let mut ids = ids;
    for _ in 0..n {
        ids.push(reg.register(base, SessionConfig::default()));
    }
    let registered = live_bytes() - before - ids_bytes;
    let init = pools.lines[pools.init[0] as usize].as_bytes();
    for &id in &ids {
        reg.observe_line(base, id, init);
    }
    let with_line = live_bytes() - before - ids_bytes;
    let mut ts = TickScan::new(&l);
    let before = live_bytes();
    for slot in 0..n {
        ts.register(slot, 0);
    }
    let ref_bytes = live_bytes() - before;
    println!(
        "(b) memory per session (live bytes / {n}, counting allocator; includes Vec growth slack)"
    );
    println!(
        "  registered               : {:>6.1} B/session   (target ≤ 256)",
        registered as f64 / n as f64
    );
    println!(
        "  after a first line       : {:>6.1} B/session   (the CLI session id is kept)",
        with_line as f64 / n as f64
    );
    println!(
        "  tick-scan baseline       : {:>6.1} B/session   ({} B per entry)",
        ref_bytes as f64 / n as f64,
        std::mem::size_of::<RefEntry>()
    );
    drop(ts);

    // (a) Observe cost per line into random sessions.
    let views: Vec<LineView<'_>> = pools
        .lines
        .iter()
        .filter_map(|l| LineView::parse(l.as_bytes()).ok())
        .collect();
    let mut rng = Rng::new(7);
    let picks: Vec<(u32, u32)> = (0..1_000_000)
        .map(|_| {
            (
                rng.below(n as u64) as u32,
                rng.below(views.len() as u64) as u32,
            )
        })
        .collect();
    let reps = 2u64;
    let total = reps * picks.len() as u64;
    let step = Duration::from_micros(1);
    let mut now = base + Duration::from_secs(1);
    let mut ts = TickScan::new(&l);
    for slot in 0..n {
        ts.register(slot, 0);
    }
    let mut observe = Vec::new();
    let mut observe_line = Vec::new();
    let mut ref_view = Vec::new();
    let mut ref_line = Vec::new();
    let mut hot = Vec::new();
    for _ in 0..3 {
        // The same lines into one session (in cache): the computation without the miss.
        let c = thread_cpu();
        for _ in 0..reps {
            for &(_, v) in &picks {
                now += step;
                black_box(reg.observe(now, ids[0], &views[v as usize]));
            }
        }
        hot.push(thread_cpu() - c);
        let c = thread_cpu();
        for _ in 0..reps {
            for &(s, v) in &picks {
                now += step;
                black_box(reg.observe(now, ids[s as usize], &views[v as usize]));
            }
        }
        observe.push(thread_cpu() - c);
        let c = thread_cpu();
        for _ in 0..reps {
            for &(s, v) in &picks {
                now += step;
                black_box(reg.observe_line(
                    now,
                    ids[s as usize],
                    pools.lines[v as usize].as_bytes(),
                ));
            }
        }
        observe_line.push(thread_cpu() - c);
        let t0 = (now - base).as_nanos() as u64;
        let c = thread_cpu();
        for r in 0..reps {
            for (k, &(s, v)) in picks.iter().enumerate() {
                let t = t0 + (r * picks.len() as u64 + k as u64) * 1000;
                ts.observe(s as usize, t, Some(&views[v as usize]));
            }
        }
        ref_view.push(thread_cpu() - c);
        let c = thread_cpu();
        for r in 0..reps {
            for (k, &(s, v)) in picks.iter().enumerate() {
                let t = t0 + (r * picks.len() as u64 + k as u64) * 1000;
                let view = LineView::parse(pools.lines[v as usize].as_bytes()).ok();
                ts.observe(s as usize, t, view.as_ref());
            }
        }
        ref_line.push(thread_cpu() - c);
    }
    black_box(&ts.entries);
    while reg.poll_event().is_some() {}
    // The fastest run too: what other tenants of the machine's caches add is noise, and it
    // only ever adds; comparing two builds, the fastest runs agree better than the medians.
    let fastest = observe.iter().min().copied().unwrap_or_default();
    let (o, ol, rv, rl) = (
        median(observe),
        median(observe_line),
        median(ref_view),
        median(ref_line),
    );
    println!("(a) observe, {total} lines into random sessions among {n} (thread CPU, median of 3)");
    println!(
        "  observe(&LineView)       : {:>6.1} ns/line   (target ≤ 200)   tick-scan observe: {:>5.1} ns  ({:.1}×)",
        ns_per(o, total),
        ns_per(rv, total),
        o.as_secs_f64() / rv.as_secs_f64()
    );
    println!(
        "  observe(&LineView), fastest of 3: {:>6.1} ns/line   (compare builds by this and the median)",
        ns_per(fastest, total)
    );
    println!(
        "  observe(&LineView), one hot session: {:>6.1} ns/line   (the same work without the cache miss to a random session)",
        ns_per(median(hot), total)
    );
    println!(
        "  observe_line(&[u8])      : {:>6.1} ns/line   (parse included)  tick-scan parse+observe: {:>5.1} ns  ({:.2}×)",
        ns_per(ol, total),
        ns_per(rl, total),
        ol.as_secs_f64() / rl.as_secs_f64()
    );
    drop(reg);

    dialect_costs(base, &l, n);

    // (c) handle_timeout when 1 % are due: 1 % went quiet 20 min ago (the pre-write idle
    // patience), the rest 5 min ago.
    let due = n / 100;
    let mut ours = Vec::new();
    let mut drain = Vec::new();
    let mut idle_call = Vec::new();
    let mut scan = Vec::new();
    let mut idle_scan = Vec::new();
    let mut killed = (0, 0);
    for _ in 0..5 {
        let mut reg = Registry::new(l.clone());
        let mut ts = TickScan::new(&l);
        for slot in 0..n {
            let t = if slot < due { 0 } else { 15 * MIN };
            let at = base + Duration::from_nanos(t);
            let id = reg.register(at, SessionConfig::default());
            reg.observe_line(at, id, init);
            ts.register(slot, t);
        }
        reg.handle_timeout(base + Duration::from_nanos(19 * MIN));
        while reg.poll_event().is_some() {}
        let at = base + Duration::from_nanos(20 * MIN);
        let t = Instant::now();
        reg.handle_timeout(at);
        ours.push(t.elapsed());
        let t = Instant::now();
        let mut kills = 0;
        while let Some(e) = reg.poll_event() {
            kills += usize::from(matches!(e, Event::Killed(_)));
        }
        drain.push(t.elapsed());
        let t = Instant::now();
        reg.handle_timeout(at + Duration::from_secs(1));
        idle_call.push(t.elapsed());
        let t = Instant::now();
        let ref_kills = ts.tick(20 * MIN, None);
        scan.push(t.elapsed());
        let t = Instant::now();
        black_box(ts.tick(20 * MIN + SEC, None));
        idle_scan.push(t.elapsed());
        killed = (kills, ref_kills);
    }
    let (hc, dr, ic, sc, isc) = (
        median(ours),
        median(drain),
        median(idle_call),
        median(scan),
        median(idle_scan),
    );
    println!(
        "(c) one timer call with {due} of {n} due ({} / {} kills; wall, median of 5)",
        killed.0, killed.1
    );
    println!(
        "  handle_timeout           : {:>9.1} µs  = {:>6.1} ns per due session  (+ draining the events: {:.1} µs)",
        hc.as_secs_f64() * 1e6,
        ns_per(hc, due as u64),
        dr.as_secs_f64() * 1e6
    );
    println!(
        "  tick-scan pass           : {:>9.1} µs  = {:>6.1} ns per session   ({:.1}× the deadline call)",
        sc.as_secs_f64() * 1e6,
        ns_per(sc, n as u64),
        sc.as_secs_f64() / hc.as_secs_f64()
    );
    println!(
        "  nothing due              : handle_timeout {:.3} µs, tick-scan pass {:.1} µs ({:.0}×)",
        ic.as_secs_f64() * 1e6,
        isc.as_secs_f64() * 1e6,
        isc.as_secs_f64() / ic.as_secs_f64().max(1e-9)
    );

    // (d) One simulated hour of the same traffic. Both designs observe pre-parsed views of
    // the same lines; the parse (the same `LineView::parse` for both) is measured per distinct
    // line and added to both totals, weighted by how often the hour printed each line.
    let all_views: Vec<Option<LineView<'_>>> = pools
        .lines
        .iter()
        .map(|l| LineView::parse(l.as_bytes()).ok())
        .collect();
    let read = clock_cost();
    let mut h = simulate_hour(n, minutes, &pools, &all_views, base);
    for s in [&mut h.deadline, &mut h.tick] {
        s.timer = s.timer.saturating_sub(read * s.timer_segments as u32);
        s.lines = s.lines.saturating_sub(read * s.line_segments as u32);
    }
    let lines: u64 = h.per_line.iter().sum();
    let mut parse_ns = 0f64;
    for (line, &count) in pools.lines.iter().zip(&h.per_line) {
        if count == 0 {
            continue;
        }
        let k = 2_000u32;
        let c = thread_cpu();
        for _ in 0..k {
            black_box(LineView::parse(black_box(line.as_bytes())).is_ok());
        }
        parse_ns += (thread_cpu() - c).as_nanos() as f64 / f64::from(k) * count as f64;
    }
    let parse = Duration::from_nanos(parse_ns as u64);
    let d = h.deadline;
    let s = h.tick;
    println!(
        "(d) {minutes} simulated min at a 30 s tick, {n} sessions, the same traffic for both: {lines} lines ({:.0} per session-hour), {} session restarts",
        lines as f64 / n as f64 * 60.0 / minutes.max(1) as f64,
        h.restarts
    );
    println!(
        "  deadline kills {:?} (ceiling, startup, linger, idle, no_progress) at their deadlines; {} extended, {} stalling, {} settled, {} ended",
        h.counts.kills, h.counts.extended, h.counts.stalling, h.counts.settled, h.counts.ended
    );
    let ref_idle = h
        .ref_kills
        .iter()
        .filter(|k| k.kind == RefKillKind::Idle)
        .count();
    let late: Vec<u64> = h.ref_kills.iter().map(|k| k.late).collect();
    let mean_late = late.iter().sum::<u64>() as f64 / late.len().max(1) as f64 / SEC as f64;
    let max_late = late.iter().max().copied().unwrap_or(0) as f64 / SEC as f64;
    black_box(
        h.ref_kills
            .iter()
            .map(|k| k.since_tool + k.elapsed + u64::from(k.slot))
            .sum::<u64>(),
    );
    println!(
        "  tick-scan kills {} ({} idle), {} extends; its kills came {:.1} s late on average (max {:.1} s)",
        h.ref_kills.len(),
        ref_idle,
        h.ref_extends,
        mean_late,
        max_late
    );
    println!(
        "  thread CPU per simulated hour, per segment ({:.0} ns per clock read subtracted); last column: the whole replay incl. clock reads",
        read.as_nanos() as f64
    );
    println!(
        "  {:<18}  {:>22}  {:>14}  {:>12}  {:>12}  {:>14}",
        "", "(i) timer work", "observe+host", "parse (same)", "(ii) total", "thread CPU+parse"
    );
    let secs_of = |x: Duration| x.as_secs_f64();
    let row = |name: &str, x: &Split, wakes: String| {
        println!(
            "  {name:<18}  {:>8.3} s {wakes:>11}  {:>12.3} s  {:>10.3} s  {:>10.3} s  {:>12.3} s",
            secs_of(x.timer),
            secs_of(x.lines),
            secs_of(parse),
            secs_of(x.timer + x.lines + parse),
            secs_of(x.cpu + parse)
        );
    };
    row("deadline (wheel)", &d, format!("{} wakes", d.wakes));
    row("tick-scan (30 s)", &s, format!("{} scans", s.wakes));
    let ratio = |a: Duration, b: Duration| a.as_secs_f64() / b.as_secs_f64().max(1e-12);
    println!(
        "  {:<18}  {:>8.3}×             {:>12.3}×  {:>12}  {:>10.3}×  {:>12.3}×",
        "tick / deadline",
        ratio(s.timer, d.timer),
        ratio(s.lines, d.lines),
        "",
        ratio(s.timer + s.lines + parse, d.timer + d.lines + parse),
        ratio(s.cpu + parse, d.cpu + parse)
    );
    println!(
        "  per line: observe+host {:.0} ns (deadline) vs {:.0} ns (tick-scan); parse {:.0} ns; timer work per wake {:.0} ns, per scan {:.0} µs",
        ns_per(d.lines, lines),
        ns_per(s.lines, lines),
        ns_per(parse, lines),
        ns_per(d.timer, d.wakes.max(1)),
        ns_per(s.timer, s.wakes.max(1)) / 1e3
    );
    let scan = s.timer.as_secs_f64() / s.wakes.max(1) as f64;
    let hour_scale = 60.0 / minutes.max(1) as f64;
    println!(
        "  equal precision: a tick-scan as exact as the deadline design's p99 (5 ms tick) would spend {:.0} s per hour scanning ({:.0}× the deadline timer work)",
        scan * 720_000.0,
        scan * 720_000.0 / (d.timer.as_secs_f64() * hour_scale).max(1e-12)
    );
    println!(
        "  target: deadline design ≥ 20× cheaper than tick-scan at 30 s → timer work {:.2}×, total {:.2}× : {}",
        ratio(s.timer, d.timer),
        ratio(s.timer + s.lines + parse, d.timer + d.lines + parse),
        if ratio(s.timer, d.timer) >= 20.0 && ratio(s.timer + s.lines + parse, d.timer + d.lines + parse) >= 20.0 {
            "met"
        } else {
            "MISSED"
        }
    );
    println!(
        "  registry after the run   : {:>6.1} B/session (live bytes freed by dropping it, incl. the deadline index)",
        h.registry_bytes as f64 / n as f64
    );
}
