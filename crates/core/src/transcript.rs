//! One line of a Claude Code transcript (`~/.claude/projects/…/<session>.jsonl`, a subagent's
//! `agent-<id>.jsonl`), read once, in place, for the fields the project reads of it
//! ([`Entry`]): the audit's timing entries and how a subagent's transcript ends
//! ([`SubagentEnd::from_transcript`](crate::recovery::SubagentEnd::from_transcript)). One
//! reader, one JSON walker (the one the stream-json view uses).
//!
//! And the mark Claude Code leaves when it stops a turn on an interrupt ([`INTERRUPT_MARKER`],
//! [`is_interrupt_text`]), in its transcripts and on its stdout alike: the one spelling every
//! reader (the audit, the subagent rule, the SDK-run fold) uses.

use std::borrow::Cow;

use watchdog_json::skim::{self as json, Val};

use crate::wall::parse_iso_ms;

/// How Claude Code marks a turn it stopped on an interrupt (the watchdog's kill ladder starts
/// with one): a user message `[Request interrupted by user]`, `[Request interrupted by user
/// for tool use]`.
pub const INTERRUPT_MARKER: &str = "[Request interrupted";

/// Whether `text` is the interrupt marker (leading blanks allowed).
///
/// ```
/// use watchdog_core::transcript::is_interrupt_text;
/// assert!(is_interrupt_text("[Request interrupted by user]"));
/// assert!(is_interrupt_text("  [Request interrupted by user for tool use]"));
/// assert!(!is_interrupt_text("The request was interrupted"));
/// ```
pub fn is_interrupt_text(text: &str) -> bool {
    text.trim_start().starts_with(INTERRUPT_MARKER)
}

/// The transcript entry types that have a stream-json meaning (the others are bookkeeping:
/// API request records, attachments, costs).
const TIMING_TYPES: [&str; 5] = ["assistant", "user", "system", "progress", "queue-operation"];

/// One transcript line, read in place: the raw JSON of the fields the project reads.
///
/// A line of a bookkeeping type is read only up to its `type` ([`Entry::is_timing`] is false):
/// those are often the biggest lines, and nothing else of them is read.
#[derive(Debug, Default)]
pub struct Entry<'a> {
    ty: Option<&'a [u8]>,
    timestamp: Option<&'a [u8]>,
    session_id: Option<&'a [u8]>,
    is_sidechain: Option<&'a [u8]>,
    is_meta: Option<&'a [u8]>,
    is_api_error: Option<&'a [u8]>,
    error: Option<&'a [u8]>,
    api_error: Option<&'a [u8]>,
    operation: Option<&'a [u8]>,
    subtype: Option<&'a [u8]>,
    permission: Option<&'a [u8]>,
    data: Option<&'a [u8]>,
    agent: Option<&'a [u8]>,
    stop_reason: Option<&'a [u8]>,
    /// `message.content` when it is a plain string.
    content_str: Option<&'a [u8]>,
    /// `message.content` blocks when it is an array.
    blocks: Vec<Block<'a>>,
    timing: bool,
}

/// The fields of one content block that are read.
#[derive(Debug, Default)]
struct Block<'a> {
    ty: Option<&'a [u8]>,
    id: Option<&'a [u8]>,
    name: Option<&'a [u8]>,
    tool_use_id: Option<&'a [u8]>,
    text: Option<&'a [u8]>,
    /// A `tool_result`'s `content` (a string, or blocks with text).
    content: Option<&'a [u8]>,
}

fn is_timing_type(v: &[u8]) -> bool {
    let raw = |t: &str| v.len() == t.len() + 2 && &v[1..v.len() - 1] == t.as_bytes();
    TIMING_TYPES.iter().any(|t| raw(t))
        || (v.contains(&b'\\') && json::as_str(v).is_some_and(|s| TIMING_TYPES.contains(&&*s)))
}

impl<'a> Entry<'a> {
    /// Read `line` (one JSON object, trimmed). `None`: it is not one whole JSON object (a timing
    /// entry is checked to its end; a bookkeeping one only needs to close with `}`).
    pub fn parse(line: &'a [u8]) -> Option<Entry<'a>> {
        let mut e = Entry::default();
        let end = json::object(line, 0, |k, vi| {
            let slot = match k {
                b"message" => return read_message(line, vi, &mut e),
                b"type" => {
                    let (v, end) = json::value_at(line, vi)?;
                    e.ty = Some(v);
                    e.timing = is_timing_type(v);
                    return Some(if e.timing { Val::End(end) } else { Val::Stop });
                }
                b"timestamp" => &mut e.timestamp,
                b"sessionId" => &mut e.session_id,
                b"isSidechain" => &mut e.is_sidechain,
                b"isMeta" => &mut e.is_meta,
                b"isApiErrorMessage" => &mut e.is_api_error,
                b"error" => &mut e.error,
                b"apiError" => &mut e.api_error,
                b"operation" => &mut e.operation,
                b"subtype" => &mut e.subtype,
                b"permissionDecision" => &mut e.permission,
                b"data" => &mut e.data,
                b"attributionAgent" => &mut e.agent,
                _ => return Some(Val::Skip),
            };
            let (v, end) = json::value_at(line, vi)?;
            *slot = Some(v);
            Some(Val::End(end))
        });
        match end {
            // Stopped at a bookkeeping type: a closed object is enough.
            Some(json::STOPPED) => (line.last() == Some(&b'}')).then_some(e),
            Some(end) if json::only_ws_after(line, end) => Some(e),
            _ => None,
        }
    }

    /// Whether the entry has a stream-json meaning (`assistant`, `user`, `system`, `progress`,
    /// `queue-operation`); the others were read only up to their `type`.
    pub fn is_timing(&self) -> bool {
        self.timing
    }

    /// `type`.
    pub fn kind(&self) -> Option<Cow<'a, str>> {
        self.ty.and_then(json::as_str)
    }

    /// `timestamp`, when it is a valid ISO-8601 time: ms since the epoch (before it: negative).
    pub fn timestamp_ms(&self) -> Option<i64> {
        parse_iso_ms(&self.timestamp.and_then(json::as_str)?)
    }

    /// `sessionId`.
    pub fn session_id(&self) -> Option<Cow<'a, str>> {
        self.session_id.and_then(json::as_str)
    }

    /// `isSidechain: true`: a subagent's entry.
    pub fn is_sidechain(&self) -> bool {
        self.is_sidechain.and_then(json::as_bool) == Some(true)
    }

    /// `isMeta: true`: the CLI's own note, not a human's prompt.
    pub fn is_meta(&self) -> bool {
        self.is_meta.and_then(json::as_bool) == Some(true)
    }

    /// `isApiErrorMessage: true`: the CLI's synthetic entry for an API error.
    pub fn is_api_error(&self) -> bool {
        self.is_api_error.and_then(json::as_bool) == Some(true)
    }

    /// The API error of a synthetic error entry: `apiError`, else `error`.
    pub fn api_error(&self) -> Option<Cow<'a, str>> {
        self.api_error
            .and_then(json::as_str)
            .or_else(|| self.error.and_then(json::as_str))
    }

    /// Whether `error` or `apiError` says `max_output_tokens`.
    pub fn is_max_output_tokens(&self) -> bool {
        let is_max = |v: Option<&[u8]>| {
            v.and_then(json::as_str)
                .is_some_and(|s| s == "max_output_tokens")
        };
        is_max(self.error) || is_max(self.api_error)
    }

    /// `operation` (of a `queue-operation`).
    pub fn operation(&self) -> Option<Cow<'a, str>> {
        self.operation.and_then(json::as_str)
    }

    /// `subtype` (of a `system` entry).
    pub fn subtype(&self) -> Option<Cow<'a, str>> {
        self.subtype.and_then(json::as_str)
    }

    /// Whether `permissionDecision.source` is `user`: a human answered the tool's prompt.
    pub fn decided_by_user(&self) -> bool {
        let mut human = false;
        if let Some(p) = self.permission {
            json::fields(p, 0, |k, v| {
                if k == b"source" && json::as_str(v).as_deref() == Some("user") {
                    human = true;
                }
            });
        }
        human
    }

    /// `data.type` (of a `progress` entry: `agent_progress` is a subagent's).
    pub fn data_type(&self) -> Option<Cow<'a, str>> {
        let mut out = None;
        if let Some(d) = self.data {
            json::fields(d, 0, |k, v| {
                if k == b"type" {
                    out = json::as_str(v);
                }
            });
        }
        out
    }

    /// `attributionAgent`: the agent type of a subagent's entry.
    pub fn attribution_agent(&self) -> Option<Cow<'a, str>> {
        self.agent.and_then(json::as_str)
    }

    /// `message.stop_reason`.
    pub fn stop_reason(&self) -> Option<Cow<'a, str>> {
        self.stop_reason.and_then(json::as_str)
    }

    /// The message's text: its content when a string, else its text blocks joined by newlines.
    pub fn text(&self) -> Option<String> {
        if let Some(s) = self.content_str.and_then(json::as_str) {
            return Some(s.into_owned());
        }
        let texts: Vec<Cow<'a, str>> = self
            .blocks
            .iter()
            .filter_map(|b| b.text.and_then(json::as_str))
            .collect();
        (!texts.is_empty()).then(|| texts.join("\n"))
    }

    /// The `tool_use` blocks, as `(id, name)`.
    pub fn tool_uses(&self) -> impl Iterator<Item = (Cow<'a, str>, Cow<'a, str>)> + '_ {
        self.blocks
            .iter()
            .filter(|b| b.ty.and_then(json::as_str).as_deref() == Some("tool_use"))
            .map(|b| {
                let s = |v: Option<&'a [u8]>| v.and_then(json::as_str).unwrap_or_default();
                (s(b.id), s(b.name))
            })
    }

    /// The ids the `tool_result` blocks answer.
    pub fn tool_result_ids(&self) -> impl Iterator<Item = Cow<'a, str>> + '_ {
        self.blocks
            .iter()
            .filter(|b| b.ty.and_then(json::as_str).as_deref() == Some("tool_result"))
            .map(|b| b.tool_use_id.and_then(json::as_str).unwrap_or_default())
    }

    /// Whether the message says its turn was interrupted ([`INTERRUPT_MARKER`]): its content,
    /// a text block, or a tool result's content.
    pub fn is_interrupt(&self) -> bool {
        let text = |v: Option<&[u8]>| {
            v.and_then(json::as_str)
                .is_some_and(|t| is_interrupt_text(&t))
        };
        text(self.content_str)
            || self
                .blocks
                .iter()
                .any(|b| text(b.text) || text(b.content) || b.content.is_some_and(blocks_interrupt))
    }
}

/// Whether an array of blocks (a tool result's content) has a text that is the marker.
fn blocks_interrupt(v: &[u8]) -> bool {
    let mut found = false;
    if v.first() == Some(&b'[') {
        json::array(v, 0, |bi| {
            if v.get(bi) != Some(&b'{') {
                return Some(Val::Skip);
            }
            let end = json::fields(v, bi, |k, t| {
                if k == b"text" {
                    found |= json::as_str(t).is_some_and(|t| is_interrupt_text(&t));
                }
            })?;
            Some(Val::End(end))
        });
    }
    found
}

/// Read `message` at `line[vi]` in place. A `message` that is not an object is skipped.
fn read_message<'a>(line: &'a [u8], vi: usize, e: &mut Entry<'a>) -> Option<Val> {
    if line.get(vi) != Some(&b'{') {
        return Some(Val::Skip);
    }
    let end = json::object(line, vi, |k, ci| match k {
        b"stop_reason" => {
            let (v, end) = json::value_at(line, ci)?;
            e.stop_reason = Some(v);
            Some(Val::End(end))
        }
        b"content" if line.get(ci) == Some(&b'[') => {
            let end = json::array(line, ci, |bi| {
                if line.get(bi) != Some(&b'{') {
                    return Some(Val::Skip);
                }
                let mut b = Block::default();
                let end = json::fields(line, bi, |k, v| match k {
                    b"type" => b.ty = Some(v),
                    b"id" => b.id = Some(v),
                    b"name" => b.name = Some(v),
                    b"tool_use_id" => b.tool_use_id = Some(v),
                    b"text" => b.text = Some(v),
                    b"content" => b.content = Some(v),
                    _ => {}
                })?;
                e.blocks.push(b);
                Some(Val::End(end))
            })?;
            Some(Val::End(end))
        }
        b"content" => {
            let (v, end) = json::value_at(line, ci)?;
            e.content_str = Some(v);
            Some(Val::End(end))
        }
        _ => Some(Val::Skip),
    })?;
    Some(Val::End(end))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_entry_is_read_in_place_and_bookkeeping_only_to_its_type() {
        let line = br#"{"type":"assistant","timestamp":"2026-01-02T03:04:05.678Z","sessionId":"s","attributionAgent":"Explore","message":{"stop_reason":"tool_use","content":[{"type":"text","text":"hi"},{"type":"tool_use","id":"t1","name":"Bash","input":{}}]}}"#;
        let e = Entry::parse(line).unwrap();
        assert!(e.is_timing());
        assert_eq!(e.kind().as_deref(), Some("assistant"));
        assert!(e.timestamp_ms().is_some());
        assert_eq!(e.attribution_agent().as_deref(), Some("Explore"));
        assert_eq!(e.stop_reason().as_deref(), Some("tool_use"));
        assert_eq!(e.text().as_deref(), Some("hi"));
        let tools: Vec<_> = e.tool_uses().collect();
        assert_eq!(tools, [("t1".into(), "Bash".into())]);
        // Bookkeeping: read to its type, closed is enough (even if malformed after it).
        let big = br#"{"type":"attachment","x":[1,2,"#;
        assert!(Entry::parse(big).is_none(), "not closed");
        let closed = br#"{"type":"attachment","x":[1,2,}"#;
        assert!(!Entry::parse(closed).unwrap().is_timing());
        assert!(Entry::parse(br#"{"type":"user","message":{"content":"x"}"#).is_none());
    }

    #[test]
    fn the_interrupt_marker_is_found_wherever_claude_code_writes_it() {
        for line in [
            &br#"{"type":"user","message":{"content":"[Request interrupted by user]"}}"#[..],
            br#"{"type":"user","message":{"content":[{"type":"text","text":"[Request interrupted by user for tool use]"}]}}"#,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"[Request interrupted by user for tool use]"}]}}"#,
            br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":[{"type":"text","text":" [Request interrupted by user]"}]}]}}"#,
        ] {
            assert!(Entry::parse(line).unwrap().is_interrupt(), "{}", String::from_utf8_lossy(line));
        }
        let not = br#"{"type":"user","message":{"content":[{"type":"tool_result","tool_use_id":"t","content":"ok"}]}}"#;
        assert!(!Entry::parse(not).unwrap().is_interrupt());
        let ids: Vec<_> = Entry::parse(not).unwrap().tool_result_ids().collect();
        assert_eq!(ids, ["t"]);
    }
}
