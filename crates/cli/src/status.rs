//! The live one-line status on a terminal (stderr), and the writer for our own messages that
//! keeps the status line intact. Off a terminal there is no status line.

use std::io::{IsTerminal, Write};
use std::time::{Duration, Instant};

use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

use watchdog_core::config::HumanDuration;

/// Where our stderr output goes: plain, or around a live status line.
#[derive(Debug)]
pub struct Status {
    bar: Option<ProgressBar>,
}

impl Status {
    /// A status line when `wanted` and stderr is a terminal; plain output otherwise.
    pub fn new(wanted: bool) -> Self {
        let bar = (wanted && std::io::stderr().is_terminal()).then(|| {
            let bar = ProgressBar::with_draw_target(None, ProgressDrawTarget::stderr());
            bar.set_style(
                ProgressStyle::with_template("{spinner} {msg}")
                    .unwrap_or_else(|_| ProgressStyle::default_spinner()),
            );
            bar
        });
        Status { bar }
    }

    /// Whether a status line is shown.
    pub fn is_live(&self) -> bool {
        self.bar.is_some()
    }

    /// Update the status line.
    pub fn set(&self, msg: String) {
        if let Some(bar) = &self.bar {
            bar.set_message(msg);
            bar.tick();
        }
    }

    /// Write raw bytes (the child's stderr) without breaking the status line.
    pub fn write_raw(&self, bytes: &[u8]) {
        let write = || {
            let mut e = std::io::stderr().lock();
            let _ = e.write_all(bytes);
            let _ = e.flush();
        };
        match &self.bar {
            Some(bar) => bar.suspend(write),
            None => write(),
        }
    }

    /// Write one of our own messages, prefixed `agent-watchdog: `.
    pub fn say(&self, msg: &str) {
        self.write_raw(format!("agent-watchdog: {msg}\n").as_bytes());
    }

    /// Remove the status line.
    pub fn finish(&self) {
        if let Some(bar) = &self.bar {
            bar.finish_and_clear();
        }
    }
}

/// Render the status: elapsed, activity (and for how long), time since progress, rate limits.
pub fn render(
    now: Instant,
    start: Instant,
    activity: &str,
    activity_since: Instant,
    last_progress: Option<Instant>,
    rate: Option<&str>,
) -> String {
    let secs = |d: Duration| HumanDuration(Duration::from_secs(d.as_secs())).to_string();
    let mut s = format!(
        "{} · {activity} {}",
        secs(now.saturating_duration_since(start)),
        secs(now.saturating_duration_since(activity_since))
    );
    match last_progress {
        Some(p) => s += &format!(" · progress {} ago", secs(now.saturating_duration_since(p))),
        None => s += " · no progress yet",
    }
    if let Some(r) = rate {
        s += &format!(" · {r}");
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use watchdog_core::facts::Activity;

    #[test]
    fn the_status_line_names_the_mcp_tool_in_flight_and_its_age() {
        let start = Instant::now();
        let now = start + Duration::from_secs(1900);
        let a = Activity::InFlight {
            tool: "mcp__db__query".into(),
            for_secs: 1830,
        };
        // `run` dates the activity back by what the heartbeat said.
        let since = now - Duration::from_secs(30) - a.already();
        let line = render(now, start, &a.to_string(), since, Some(since), None);
        assert_eq!(line, "31m40s · tool mcp__db__query 31m · progress 31m ago");
    }
}
