//! The audit report: its figures (`figures`), the JSON object (`json`) and the human text
//! (`text`).

mod figures;
mod json;
mod text;

pub use figures::{AuditReport, Bin, Recommendation, SessionSummary, Settings, Silence, WouldKill};
pub use text::render_text;
