//! Stderr pass-through with known repeated warnings shown once (the core's
//! [`watchdog_core::StderrFilter`]; today: the SDK's `CLAUDE_SDK_CAN_USE_TOOL_SHADOWED`).

use watchdog_core::warning_filter::{Pattern, SHADOWED_CODE};

/// Decides which child stderr lines are shown.
#[derive(Debug)]
pub struct StderrFilter {
    inner: watchdog_core::StderrFilter,
    lines: u64,
    suppressed: u64,
}

impl Default for StderrFilter {
    fn default() -> Self {
        StderrFilter {
            inner: watchdog_core::StderrFilter::default()
                .with_rule(SHADOWED_CODE, Pattern::Contains(SHADOWED_CODE.into())),
            lines: 0,
            suppressed: 0,
        }
    }
}

impl StderrFilter {
    /// Whether to show this stderr line (without its newline).
    pub fn admit(&mut self, line: &[u8]) -> bool {
        self.lines += 1;
        let shows = self.inner.check(&String::from_utf8_lossy(line)).shows();
        if !shows {
            self.suppressed += 1;
        }
        shows
    }

    /// Lines seen.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Lines not shown.
    pub fn suppressed(&self) -> u64 {
        self.suppressed
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_repeated_sdk_warning_is_shown_once_and_other_lines_always() {
        let mut f = StderrFilter::default();
        let w = format!("warning [{SHADOWED_CODE}]: canUseTool is shadowed").into_bytes();
        assert!(f.admit(&w));
        assert!(!f.admit(&w));
        assert!(f.admit(b"some other line"));
        assert!(f.admit(b"some other line"));
        assert_eq!((f.lines(), f.suppressed()), (4, 1));
    }
}
