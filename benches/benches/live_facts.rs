//! Bench 10 (issue 27): what the live facts cost the line path. The real captures' stdout lines
//! (parsed once, beforehand: the parse is the same either way) fed to a registry session the
//! way `agent-watchdog run` registers it: with its tally (telemetry off), and with its tally
//! and live facts (telemetry on: quiet spells, MCP calls, session id; the events drained
//! every 64 lines, as a batch of the supervisor would). Prints ns per line (median of
//! `LIVE_FACTS_ROUNDS`, 7) and allocations per line (counting allocator), and the events.
//!
//! Run: `cargo bench -p watchdog-benches --bench live_facts` (`LIVE_FACTS_LINES`, 200,000).

use std::time::{Duration, Instant};

use watchdog_benches::{capture_lines, load_average, CountingAlloc};
use watchdog_core::{Event, Limits, LineView, Registry, SessionConfig};

#[global_allocator]
static ALLOC: CountingAlloc = CountingAlloc;

/// Limits no line reaches: the session lives through every line.
fn patient() -> Limits {
    let long = Duration::from_secs(10_000_000);
    Limits::default()
        .with_idle(long)
        .and_then(|l| l.with_no_progress(long))
        .and_then(|l| l.with_startup(long))
        .and_then(|l| l.with_linger(long))
        .and_then(|l| l.with_ceiling(None))
        .expect("limits")
}

struct Round {
    ns_per_line: f64,
    allocs_per_line: f64,
    events: usize,
    spells: usize,
    by_kind: std::collections::BTreeMap<&'static str, usize>,
}

fn round(views: &[LineView<'_>], config: SessionConfig) -> Round {
    let t0 = Instant::now();
    let mut reg = Registry::new(patient());
    let id = reg.register(t0, config);
    let (mut events, mut spells) = (0, 0);
    let mut by_kind = std::collections::BTreeMap::new();
    let allocs = watchdog_benches::allocations();
    let start = Instant::now();
    for (i, chunk) in views.chunks(64).enumerate() {
        for (j, v) in chunk.iter().enumerate() {
            let now = t0 + Duration::from_millis((i * 64 + j) as u64);
            reg.observe(now, id, v);
        }
        while let Some(e) = reg.poll_event() {
            events += 1;
            if let Event::QuietSpells { spells: s, .. } = &e {
                spells += s.len();
            }
            *by_kind.entry(kind(&e)).or_insert(0) += 1;
        }
    }
    let took = start.elapsed();
    let allocs = watchdog_benches::allocations() - allocs;
    std::hint::black_box(&reg);
    let n = views.len() as f64;
    Round {
        ns_per_line: took.as_nanos() as f64 / n,
        allocs_per_line: allocs as f64 / n,
        events,
        spells,
        by_kind,
    }
}

fn kind(e: &Event) -> &'static str {
    match e {
        Event::QuietSpells { .. } => "quiet_spells",
        Event::McpCalls { .. } => "mcp_calls",
        Event::SessionIdentified { .. } => "session_identified",
        Event::Settled { .. } => "settled",
        Event::RateLimit { .. } => "rate_limit",
        Event::Stalling { .. } => "stalling",
        Event::Extended { .. } => "extended",
        _ => "other",
    }
}

fn median(xs: &[f64]) -> f64 {
    let mut v = xs.to_vec();
    v.sort_by(f64::total_cmp);
    v[v.len() / 2]
}

fn main() {
    let n: usize = std::env::var("LIVE_FACTS_LINES")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(200_000);
    let rounds: usize = std::env::var("LIVE_FACTS_ROUNDS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(7)
        .max(1);
    let lines: Vec<String> = capture_lines().into_iter().cycle().take(n).collect();
    let views: Vec<LineView<'_>> = lines
        .iter()
        .filter_map(|l| LineView::parse(l.as_bytes()).ok())
        .collect();
    println!(
        "  {} lines of the captures; load average {}",
        views.len(),
        load_average()
    );
    let configs = [
        (
            "tally (telemetry off)",
            SessionConfig::default().with_tally(true),
        ),
        (
            "tally + live facts (telemetry on)",
            SessionConfig::default()
                .with_tally(true)
                .with_live_facts(true),
        ),
    ];
    let mut results: Vec<Vec<Round>> = configs.iter().map(|_| Vec::new()).collect();
    // Interleaved rounds, after one warm-up of each.
    for r in 0..=rounds {
        for (i, (_, config)) in configs.iter().enumerate() {
            let got = round(&views, config.clone());
            if r > 0 {
                results[i].push(got);
            }
        }
    }
    for ((name, _), rs) in configs.iter().zip(&results) {
        let ns: Vec<f64> = rs.iter().map(|r| r.ns_per_line).collect();
        let last = rs.last().expect("a round");
        println!(
            "  {name}: {:.1} ns/line (median of {}; {:.1}..{:.1}), {:.4} allocations/line, {} events {:?}, {} spells",
            median(&ns),
            ns.len(),
            ns.iter().cloned().fold(f64::INFINITY, f64::min),
            ns.iter().cloned().fold(0.0, f64::max),
            last.allocs_per_line,
            last.events,
            last.by_kind,
            last.spells,
        );
    }
}
