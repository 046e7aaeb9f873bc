//! `agent-watchdog audit`: the flags, the printing and the exit code around the
//! [`watchdog_audit`] library (see its README for what the audit does).

mod args;

use std::io::{IsTerminal, Write};
use std::path::PathBuf;

pub use args::AuditArgs;
use watchdog_audit::{audit_files_with, render_svg, render_text, scan, AuditReport};

/// Why `audit` could not run at all.
#[derive(Debug, thiserror::Error)]
pub enum AuditError {
    /// A policy flag is invalid.
    #[error("{0}")]
    Config(#[from] watchdog_core::ConfigError),
    /// No path given and no Claude Code projects folder found.
    #[error("no transcripts folder: pass PATHS, or set CLAUDE_CONFIG_DIR or HOME")]
    NoDefaultPath,
    /// Writing the report or the plot failed.
    #[error("{what}: {source}")]
    Io {
        /// What was being written.
        what: String,
        /// The error.
        #[source]
        source: std::io::Error,
    },
}

/// The default folder: `$CLAUDE_CONFIG_DIR/projects`, else `~/.claude/projects`.
pub(crate) fn default_projects_dir() -> Option<PathBuf> {
    if let Some(d) = std::env::var_os("CLAUDE_CONFIG_DIR").filter(|d| !d.is_empty()) {
        return Some(PathBuf::from(d).join("projects"));
    }
    std::env::var_os("HOME")
        .filter(|h| !h.is_empty())
        .map(|h| PathBuf::from(h).join(".claude").join("projects"))
}

/// Run `audit`: the report goes to `out` (text, or JSON with `--json`), notes to `err`.
/// Returns the exit code: 0, or 1 when no file could be read. With telemetry switched on
/// (`AGENT_WATCHDOG_TELEMETRY=1` and the `OTEL_*` variables, as for `run`), every session is
/// also exported as metrics and events marked `agent_watchdog.source = "audit"`
/// (docs/telemetry.md), with the same bounded flush at the end. A progress bar is drawn on
/// the terminal's stderr (through indicatif) when stderr is a terminal, more than a few files
/// are scanned, and `--quiet` is not given.
pub fn run_audit(
    args: &AuditArgs,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, AuditError> {
    let limits = args.policy.limits();
    let mut paths = if args.paths.is_empty() {
        vec![default_projects_dir().ok_or(AuditError::NoDefaultPath)?]
    } else {
        args.paths.clone()
    };
    // `-`: standard input, whatever it is (a pipe, a terminal, a device), spooled once to a
    // temporary file because a capture is streamed again for every simulation.
    let spool = if paths.iter().any(|p| p.as_os_str() == "-") {
        let spool = Spool::from_stdin().map_err(|source| AuditError::Io {
            what: "reading standard input".into(),
            source,
        })?;
        for p in paths.iter_mut().filter(|p| p.as_os_str() == "-") {
            p.clone_from(&spool.path);
        }
        Some(spool)
    } else {
        None
    };
    // With telemetry on (the same switch and `OTEL_*` variables as `run`): the back-fill,
    // recorded before the report is written and flushed (bounded) after it.
    let telemetry = crate::telemetry::Telemetry::from_env_for(crate::telemetry::Use::Audit);
    let discovery = scan::discover(&paths);
    let total: u64 = discovery.files.iter().map(|f| f.1).sum();
    let show_bar = !args.quiet && discovery.files.len() > 4 && std::io::stderr().is_terminal();
    let bar = if show_bar {
        let pb = indicatif::ProgressBar::new(total);
        if let Ok(style) = indicatif::ProgressStyle::with_template(
            "agent-watchdog: audit {bar:30} {binary_bytes}/{binary_total_bytes} {binary_bytes_per_sec} {eta}",
        ) {
            pb.set_style(style);
        }
        Some(pb)
    } else {
        None
    };
    let on_bytes = |n: u64| {
        if let Some(pb) = &bar {
            pb.inc(n);
        }
    };
    let mut report = audit_files_with(
        discovery,
        &limits,
        scan::threads(),
        &on_bytes,
        &crate::claude_code::for_start,
        telemetry.is_on(),
    );
    if let Some(pb) = bar {
        pb.finish_and_clear();
    }
    if let Some(spool) = &spool {
        spool.rename_in(&mut report);
    }
    let over = telemetry.record_audit(&report);
    let code = write_report(args, &report, out, err);
    telemetry.shutdown();
    if let Some(line) = over {
        // Said last, where it is seen; the report's own code stands.
        let _ = writeln!(err, "agent-watchdog: {line}");
    }
    code
}

/// Write the report (text or JSON), the notes and the plot; the exit code.
fn write_report(
    args: &AuditArgs,
    report: &AuditReport,
    out: &mut dyn Write,
    err: &mut dyn Write,
) -> Result<i32, AuditError> {
    let io = |what: &str| {
        let what = what.to_string();
        move |source| AuditError::Io { what, source }
    };
    // Nothing could be read: say why on stderr; the text report would be all zeros, so it is
    // left out (`--json` still prints its object, for scripts).
    if report.sessions_scanned == 0 && report.files_skipped > 0 && !args.json {
        for (f, why) in &report.skipped {
            writeln!(
                err,
                "agent-watchdog: audit: cannot read {}: {why}",
                f.display()
            )
            .map_err(io("writing to stderr"))?;
        }
        return Ok(1);
    }
    // The text report lists skipped files itself; with --json they are also told on stderr.
    if args.json {
        for (f, why) in &report.skipped {
            writeln!(err, "agent-watchdog: audit: skipped {}: {why}", f.display())
                .map_err(io("writing to stderr"))?;
        }
    }
    if args.json {
        writeln!(out, "{}", report.to_json()).map_err(io("writing the report"))?;
    } else {
        out.write_all(render_text(report).as_bytes())
            .map_err(io("writing the report"))?;
    }
    if let Some(plot) = &args.plot {
        std::fs::write(plot, render_svg(report))
            .map_err(io(&format!("writing {}", plot.display())))?;
        if !args.json {
            writeln!(out, "\nPlot written to {}", plot.display())
                .map_err(io("writing the report"))?;
        }
    }
    Ok(
        if report.sessions_scanned == 0 && report.files_skipped > 0 {
            1
        } else {
            0
        },
    )
}

/// Standard input copied to a temporary file (removed on drop), line by line with the 64 MiB
/// cap: an over-long line is kept as one unreadable line, so `/dev/zero` costs no disk.
struct Spool {
    path: PathBuf,
}

impl Spool {
    fn from_stdin() -> std::io::Result<Spool> {
        use watchdog_host::capture::lines::{Item, Lines};
        let nanos = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.subsec_nanos());
        let path = std::env::temp_dir().join(format!(
            "agent-watchdog-audit-stdin-{}-{nanos}.jsonl",
            std::process::id()
        ));
        let file = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&path)?;
        let spool = Spool { path };
        let mut w = std::io::BufWriter::new(file);
        let mut lines = Lines::new(std::io::stdin().lock());
        while let Some(item) = lines.next_item()? {
            match item {
                Item::Line { line, .. } => w.write_all(line)?,
                Item::Overlong(..) => w.write_all(b"\0 over-long line")?,
            }
            w.write_all(b"\n")?;
        }
        w.flush()?;
        Ok(spool)
    }

    /// Name the spooled file `-` in the report.
    fn rename_in(&self, r: &mut AuditReport) {
        let dash = PathBuf::from("-");
        let fix = |p: &mut PathBuf| {
            if *p == self.path {
                p.clone_from(&dash);
            }
        };
        r.skipped.iter_mut().for_each(|(p, _)| fix(p));
        r.would_kill.iter_mut().for_each(|k| fix(&mut k.file));
        r.sessions.iter_mut().for_each(|s| fix(&mut s.file));
        r.longest_productive_silences
            .iter_mut()
            .for_each(|s| fix(&mut s.file));
    }
}

impl Drop for Spool {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.path);
    }
}
