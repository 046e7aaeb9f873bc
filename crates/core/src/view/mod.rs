//! A borrowed, lenient view of one stream-json line ([`LineView`]).

use std::fmt;

use serde_json::Value;

use watchdog_json::{skim, validate};

mod accessors;
mod content;
mod field;

pub use content::ContentBlock;
use field::{unescape_key, FromFields};
pub use field::{Field, RawJson};

/// Declares a lenient wire struct: every field is an optional raw JSON value, so a field of an
/// unexpected type never fails the line; unknown fields are skipped; the last duplicate wins.
macro_rules! wire {
    ($name:ident { $($field:ident $(= $rename:literal)?),* $(,)? }) => {
        #[derive(Default)]
        struct $name<'a> {
            $( $field: Option<&'a str>, )*
            value: Option<&'a Value>,
        }

        impl<'a> $name<'a> {
            $(
                fn $field(&self) -> Option<Field<'a>> {
                    if let Some(v) = self.value {
                        return v.get(wire!(@key $field $(= $rename)?)).map(Field::Value);
                    }
                    self.$field.map(|t| Field::Raw(RawJson(t)))
                }
            )*

            fn set(&mut self, key: &str, value: &'a str) {
                match key {
                    $( wire!(@key $field $(= $rename)?) => self.$field = Some(value), )*
                    _ => {}
                }
            }
        }

        impl<'a> FromFields<'a> for $name<'a> {
            fn from_raw(raw: &'a str) -> Option<Self> {
                let mut out = $name::default();
                let is_object = skim::for_each_member(raw, |k, esc, v| {
                    if esc {
                        if let Some(k) = unescape_key(k) {
                            out.set(&k, v);
                        }
                    } else {
                        out.set(k, v);
                    }
                });
                is_object.then_some(out)
            }
            fn from_value(v: &'a Value) -> Self {
                $name { value: Some(v), ..Default::default() }
            }
        }
    };
    (@key $field:ident = $rename:literal) => { $rename };
    (@key $field:ident) => { stringify!($field) };
}

wire!(Top {
    ty = "type",
    subtype,
    session_id,
    parent_tool_use_id,
    event,
    message,
    stop_reason,
    is_error,
    terminal_reason,
    rate_limit_info,
    retry_delay_ms,
    state,
    request_id,
    request,
    response,
    abandoned_blocks,
    api_error,
    api_error_status,
    error,
    num_turns,
    total_cost_usd,
    tool_name,
    elapsed_time_seconds,
    item,
    part,
});

wire!(Block { ty = "type", id, name, tool_use_id, is_error });

/// A [`LineView`] being built from the members of a validated object, in order.
pub(crate) struct LineBuilder<'a> {
    top: Top<'a>,
}

impl<'a> LineBuilder<'a> {
    /// One top-level member (`key` as written between its quotes).
    pub(crate) fn member(&mut self, key: &str, escaped: bool, value: &'a str) {
        if escaped {
            if let Some(k) = unescape_key(key) {
                self.top.set(&k, value);
            }
        } else {
            self.top.set(key, value);
        }
    }

    /// The view of the object whose text is `whole` (for [`LineView::member`]).
    pub(crate) fn finish(self, whole: &'a str) -> LineView<'a> {
        LineView {
            top: self.top,
            whole: Field::Raw(RawJson(whole)),
        }
    }
}

/// A line that is not a JSON object (malformed, truncated, not UTF-8, or another JSON type).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("unparseable stream-json line: {reason}")]
pub struct Unparseable {
    /// What was wrong, for logs.
    pub reason: String,
}

/// A borrowed view of one stream-json line: the fields the policy reads, nothing else.
///
/// [`LineView::parse`] reads the handful of fields the policy needs from one stdout line of the
/// Claude Code CLI and skips everything else. It borrows from the input: a line without escaped
/// strings is read without a single allocation. Every field is read leniently: a field of an
/// unexpected JSON type reads as absent, an unknown `type` is still a view, and only a line that is
/// not a JSON object at all is an [`Unparseable`] error (which the classifier turns into a
/// keep-alive, never into a stop).
///
/// ```
/// use watchdog_core::LineView;
/// let line = br#"{"type":"stream_event","event":{"type":"ping"},"session_id":"s1"}"#;
/// let view = LineView::parse(line).unwrap();
/// assert_eq!(view.kind().as_deref(), Some("stream_event"));
/// assert_eq!(view.event_type().as_deref(), Some("ping"));
/// assert_eq!(view.session_id().as_deref(), Some("s1"));
/// ```
pub struct LineView<'a> {
    top: Top<'a>,
    /// The whole line, for [`LineView::member`] (fields the view does not keep).
    whole: Field<'a>,
}

impl fmt::Debug for LineView<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("LineView")
            .field("type", &self.kind())
            .field("subtype", &self.subtype())
            .field("event_type", &self.event_type())
            .finish_non_exhaustive()
    }
}

impl<'a> LineView<'a> {
    /// Parse one stdout line (without its newline; a trailing `\r` and surrounding whitespace
    /// are fine). Fails only when the line is not a JSON object.
    pub fn parse(line: &'a [u8]) -> Result<Self, Unparseable> {
        let first = line.iter().find(|b| !b.is_ascii_whitespace());
        if first != Some(&b'{') {
            return Err(Unparseable {
                reason: match first {
                    None => "empty line".into(),
                    Some(_) => "not a JSON object".into(),
                },
            });
        }
        let text = std::str::from_utf8(line).map_err(|e| Unparseable {
            reason: format!("not UTF-8: {e}"),
        })?;
        let mut top = Top::default();
        validate::members(text, |k, esc, v| {
            if esc {
                if let Some(k) = unescape_key(k) {
                    top.set(&k, v);
                }
            } else {
                top.set(k, v);
            }
        })
        .map_err(|e| Unparseable {
            reason: e.to_string(),
        })?;
        Ok(LineView {
            top,
            whole: Field::Raw(RawJson(text)),
        })
    }

    /// Start a view built member by member by a scan that validates them
    /// ([`LineBuilder::member`]).
    pub(crate) fn builder() -> LineBuilder<'a> {
        LineBuilder {
            top: Top::default(),
        }
    }

    /// A view of a JSON value that an enclosing line's scan already validated (a capture's
    /// `line` member): its members are skimmed, not checked again. `None` when the value is
    /// not an object.
    pub(crate) fn from_validated(text: &'a str) -> Option<Self> {
        Top::from_raw(text).map(|top| LineView {
            top,
            whole: Field::Raw(RawJson(text)),
        })
    }

    /// Validate `text`, a JSON object that carries a line as its member `inner` (a capture
    /// entry's `line`), in one pass: every top-level member goes to `member` in order (its key
    /// unescaped, its value as raw JSON; a member whose key cannot be unescaped is skipped),
    /// and the view of the last `inner` member is built in the same pass, with no second
    /// check or any copy. `Ok(None)` when there is no `inner` member or it is not an object.
    ///
    /// ```
    /// use watchdog_core::LineView;
    /// let entry = r#"{"t_ms":40,"line":{"type":"system","subtype":"init"}}"#;
    /// let mut keys = Vec::new();
    /// let view = LineView::parse_envelope(entry, "line", |k, _| keys.push(k.to_owned()));
    /// assert_eq!(view.unwrap().unwrap().subtype().as_deref(), Some("init"));
    /// assert_eq!(keys, ["t_ms", "line"]);
    /// ```
    pub fn parse_envelope(
        text: &'a str,
        inner: &str,
        mut member: impl FnMut(&str, RawJson<'a>),
    ) -> Result<Option<Self>, Unparseable> {
        let mut built: Option<LineBuilder<'a>> = None;
        let mut built_of: Option<&'a str> = None;
        let mut last: Option<&'a str> = None;
        let mut fresh = false;
        validate::members_nested(text, inner, |m| match m {
            validate::Member::InnerStart => {
                built = Some(LineView::builder());
                fresh = true;
            }
            validate::Member::Inner(k, esc, v) => {
                if let Some(b) = built.as_mut() {
                    b.member(k, esc, v);
                }
            }
            validate::Member::Outer(k, esc, v) => {
                // The members just built belong to this value (an unescaped `inner`).
                let built_here = std::mem::take(&mut fresh);
                let key: std::borrow::Cow<'_, str> = if esc {
                    match unescape_key(k) {
                        Some(k) => k,
                        None => return,
                    }
                } else {
                    k.into()
                };
                if key == inner {
                    last = Some(v);
                    // Which value the built view belongs to (a later duplicate replaces it).
                    built_of = built_here.then_some(v);
                }
                member(&key, RawJson(v));
            }
        })
        .map_err(|e| Unparseable {
            reason: e.to_string(),
        })?;
        let Some(v) = last else { return Ok(None) };
        Ok(match (built, built_of) {
            (Some(b), Some(of)) if std::ptr::eq(of, v) => Some(b.finish(v)),
            _ => LineView::from_validated(v),
        })
    }

    /// A view of a line that [`LineView::parse`] accepted before (e.g. a line the supervisor
    /// passed on with its class): its members are skimmed, not validated again, which costs
    /// a fraction of a parse. On any other input it never panics, but which fields it reads
    /// is unspecified. `None` when the line is not UTF-8 or not an object.
    ///
    /// ```
    /// use watchdog_core::LineView;
    /// let line = br#"{"type":"system","subtype":"init","session_id":"s1"}"#;
    /// assert!(LineView::parse(line).is_ok());
    /// let view = LineView::parse_validated(line).unwrap();
    /// assert_eq!(view.subtype().as_deref(), Some("init"));
    /// ```
    pub fn parse_validated(line: &'a [u8]) -> Option<Self> {
        let text = std::str::from_utf8(line).ok()?;
        Self::from_validated(text.trim_ascii())
    }

    /// Parse one line given as text.
    pub fn parse_str(line: &'a str) -> Result<Self, Unparseable> {
        Self::parse(line.as_bytes())
    }

    /// A view of an already parsed message. Fails only when `value` is not an object.
    pub fn from_value(value: &'a Value) -> Result<Self, Unparseable> {
        if !value.is_object() {
            return Err(Unparseable {
                reason: "not a JSON object".into(),
            });
        }
        Ok(LineView {
            top: Top::from_value(value),
            whole: Field::Value(value),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn escaped_strings_are_unescaped() {
        let line = br#"{"type":"as\u0073istant","session_id":"a\"b"}"#;
        let v = LineView::parse(line).unwrap();
        assert_eq!(v.kind().as_deref(), Some("assistant"));
        assert_eq!(v.session_id().as_deref(), Some("a\"b"));
    }

    #[test]
    fn a_field_of_the_wrong_type_reads_as_absent_not_as_an_error() {
        let line = br#"{"type":"result","subtype":7,"is_error":"yes","event":"x","message":[1]}"#;
        let v = LineView::parse(line).unwrap();
        assert_eq!(v.kind().as_deref(), Some("result"));
        assert_eq!(v.subtype(), None);
        assert_eq!(v.is_error(), None);
        assert_eq!(v.event_type(), None);
        assert_eq!(v.tool_uses().count(), 0);
    }

    #[test]
    fn malformed_input_is_unparseable() {
        for bad in [
            &b""[..],
            b"   ",
            b"[1,2]",
            b"\"str\"",
            b"{\"type\":",
            b"{\"type\":\"a\"} trailing",
            b"{\"type\":\"\xff\xfe\"}",
            b"not json",
        ] {
            assert!(
                LineView::parse(bad).is_err(),
                "{:?}",
                String::from_utf8_lossy(bad)
            );
        }
    }
}
