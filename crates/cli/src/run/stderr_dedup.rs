//! Stderr pass-through with known repeated warnings shown once, on the core's
//! [`watchdog_host::warning_filter::StderrFilter`].

use watchdog_host::warning_filter::{Pattern, StderrFilter as CoreFilter, SHADOWED_CODE};

/// Decides which child stderr lines are shown: every line, except repeats of a known warning.
///
/// Known warnings: the Agent SDK's `CLAUDE_SDK_CAN_USE_TOOL_SHADOWED` (repeated on every query
/// that passes `canUseTool` beside bare tool names in `allowedTools`).
#[derive(Debug)]
pub struct StderrDedup {
    inner: CoreFilter,
    lines: u64,
}

impl Default for StderrDedup {
    fn default() -> Self {
        StderrDedup {
            inner: CoreFilter::default()
                .with_rule(SHADOWED_CODE, Pattern::Contains(SHADOWED_CODE.into())),
            lines: 0,
        }
    }
}

impl StderrDedup {
    /// Whether to show this stderr line (without its newline).
    pub fn admit(&mut self, line: &[u8]) -> bool {
        self.lines += 1;
        self.inner.check(&String::from_utf8_lossy(line)).shows()
    }

    /// Lines seen.
    pub fn lines(&self) -> u64 {
        self.lines
    }

    /// Lines not shown.
    pub fn suppressed(&self) -> u64 {
        self.inner.summary().total()
    }

    /// Suppressed repeats per warning code, e.g. `{"CLAUDE_SDK_CAN_USE_TOOL_SHADOWED": 3}`.
    pub fn suppressed_json(&self) -> serde_json::Value {
        let mut m = serde_json::Map::new();
        for (code, n) in self.inner.summary().0 {
            m.insert(code, n.into());
        }
        serde_json::Value::Object(m)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_known_warning_is_shown_once_others_always() {
        let mut f = StderrDedup::default();
        let w = b"warning: CLAUDE_SDK_CAN_USE_TOOL_SHADOWED: canUseTool is shadowed";
        assert!(f.admit(w));
        assert!(!f.admit(w));
        assert!(!f.admit(w));
        assert!(f.admit(b"something else"));
        assert!(f.admit(b"something else"));
        assert_eq!((f.lines(), f.suppressed()), (5, 2));
        assert_eq!(f.suppressed_json()[SHADOWED_CODE], 2);
    }
}
