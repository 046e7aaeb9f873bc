//! Stderr pass-through with known repeated warnings shown once.
//!
//! Until the core's warning filter is available this passes every line through; the
//! suppressed count stays zero.

/// Decides which child stderr lines are shown.
#[derive(Debug, Default)]
pub struct StderrFilter {
    lines: u64,
    suppressed: u64,
}

impl StderrFilter {
    /// Whether to show this stderr line (without its newline).
    pub fn admit(&mut self, line: &[u8]) -> bool {
        let _ = line;
        self.lines += 1;
        true
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
