#![doc = include_str!("../README.md")]
//!
//! ## Pieces
//!
//! Public: [`scan`] (finding the files, reading them on every core), [`files`] (regular files
//! only; their lines are read by the core's [`watchdog_host::capture::lines`], in bounded
//! memory), the report's types and renderers. Inside: `transcript` (files → timed entries),
//! `spells` (spell kinds, endings, runs), `stats` (percentiles), `simulate` (the core registry
//! in virtual time), `recommend` (the ladder), `report` (text and JSON), `svg` (the plot).
//! Timestamps are read by [`watchdog_core::parse_iso_ms`], lines skimmed by the core's
//! JSON skimmer.
//!
//! The library prints nothing: [`audit_paths`] / [`audit_files`] return an [`AuditReport`], and
//! [`AuditReport::to_json`], [`render_text`] and [`render_svg`] render it as values. The
//! `agent-watchdog audit` command (crate `agent-sdk-watchdog-cli`) parses the flags, prints,
//! and sets the exit code.
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod files;
pub mod scan;

mod recommend;
mod report;
mod simulate;
mod spells;
mod stats;
mod svg;
mod transcript;

mod recommendation;
mod sessions;
mod summary;

use std::borrow::Cow;
use std::path::PathBuf;

use watchdog_core::Limits;
use watchdog_host::capture::StartFacts;

pub use report::{
    render_text, AuditReport, Bin, Recommendation, SessionSummary, Settings, Silence, WouldKill,
};
pub use spells::{Spell, SpellKind};
pub use stats::Distribution;
pub use svg::render_svg;
pub use transcript::{Ending, ReadCounts};

use scan::Discovery;
use sessions::build_sessions;
use summary::summarise;

/// The settings for one capture's simulation, from the settings being checked and what the
/// capture's `start` record says (`None` for a transcript, or a capture without one). The
/// `agent-watchdog` command applies the MCP rule of the recorded run here.
pub type StartLimits = dyn for<'l> Fn(&'l Limits, Option<&StartFacts>) -> Cow<'l, Limits> + Sync;

/// The settings as given, whatever a capture's `start` record says (a [`StartLimits`]).
pub fn as_given<'l>(limits: &'l Limits, _start: Option<&StartFacts>) -> Cow<'l, Limits> {
    Cow::Borrowed(limits)
}

/// Audit these paths (folders recursively, files as given) with these settings, on every core
/// (captures with the settings [`as_given`]).
pub fn audit_paths(paths: &[PathBuf], limits: &Limits) -> AuditReport {
    audit_files(
        scan::discover(paths),
        limits,
        scan::threads(),
        &|_| {},
        &as_given,
    )
}

/// Audit the discovered files on `threads` threads; `on_bytes` is told each chunk of bytes
/// read (for a progress bar), and `for_start` gives each capture's settings.
pub fn audit_files(
    discovery: Discovery,
    limits: &Limits,
    threads: usize,
    on_bytes: &(dyn Fn(u64) + Sync),
    for_start: &StartLimits,
) -> AuditReport {
    audit_files_with(discovery, limits, threads, on_bytes, for_start, false)
}

/// [`audit_files`], and with `spell_lists` each session's quiet spells in
/// [`SessionSummary::spell_list`] too (a copy of every spell: what a telemetry back-fill
/// exports; left empty otherwise, so the report costs nothing more).
pub fn audit_files_with(
    discovery: Discovery,
    limits: &Limits,
    threads: usize,
    on_bytes: &(dyn Fn(u64) + Sync),
    for_start: &StartLimits,
    spell_lists: bool,
) -> AuditReport {
    let Discovery { files, mut skipped } = discovery;
    let mut logs = Vec::with_capacity(files.len());
    for r in scan::read_all(&files, threads, on_bytes) {
        match r {
            Ok(log) => logs.push(log),
            Err(s) => skipped.push(s),
        }
    }
    let sessions = build_sessions(logs, threads);
    let given = recommendation::simulate_all(&sessions, limits, threads, for_start);
    let recommended = recommendation::recommend(&sessions, limits, threads, for_start);
    summarise(&sessions, &given, recommended, skipped, limits, spell_lists)
}
