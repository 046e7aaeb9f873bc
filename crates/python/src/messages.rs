//! The Python Agent SDK's message objects as the core's stream-json lines.
//!
//! `query()` yields dataclass instances (`AssistantMessage`, `StreamEvent`, …); the core reads
//! stream-json lines. Each message is written here as the smallest line that carries what the
//! core reads of it (type, subtype, tool ids and names, the result's verdict and text, the
//! session id, a stream event's `ping` or not and its `abandoned_blocks`, a user message's
//! [interrupt marker](watchdog_core::transcript::INTERRUPT_MARKER)), straight from the
//! object's attributes: no `dict`, no `json.dumps`.
//!
//! A stream event is a keep-alive when its event is a `ping` or when it carries
//! `abandoned_blocks` (the classifier's two fields). The SDK's `StreamEvent` (0.1.x) does not
//! keep the CLI's top-level `abandoned_blocks` (its parser takes `uuid`, `session_id`,
//! `event`, `parent_tool_use_id` and the user message ids only), so today an abandoned
//! stream's last events count as progress under the Python SDK; the attribute is read when an
//! SDK keeps it. A class is recognised by
//! the names in its MRO once and cached by type, so the SDK's own subclasses
//! (`TaskStartedMessage` is a `SystemMessage`) and a future SDK's new fields need nothing here;
//! a class that is none of them counts as the core counts an unknown line type (a keep-alive).

use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyBytes, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple, PyType};
use serde_json::Value;
use watchdog_core::transcript::is_interrupt_text;

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Kind {
    Stream,
    Assistant,
    User,
    System,
    Result,
    RateLimit,
    Unknown,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Block {
    ToolUse,
    ToolResult,
    Text,
    Other,
}

/// Class → kind, by type identity (a strong reference keeps the type, so its address is never
/// reused while cached).
#[derive(Default)]
pub(crate) struct Kinds {
    messages: Vec<(Py<PyType>, Kind)>,
    blocks: Vec<(Py<PyType>, Block)>,
}

/// The line being written (reused: no allocation per message once grown).
#[derive(Default)]
pub(crate) struct LineBuf(Vec<u8>);

impl LineBuf {
    pub(crate) fn bytes(&self) -> &[u8] {
        &self.0
    }

    pub(crate) fn set(&mut self, line: &[u8]) {
        self.0.clear();
        self.0.extend_from_slice(line);
    }

    fn raw(&mut self, s: &str) {
        self.0.extend_from_slice(s.as_bytes());
    }

    /// A JSON string literal.
    fn string(&mut self, s: &str) {
        let out = &mut self.0;
        out.push(b'"');
        for &b in s.as_bytes() {
            match b {
                b'"' => out.extend_from_slice(b"\\\""),
                b'\\' => out.extend_from_slice(b"\\\\"),
                0..=0x1f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
                _ => out.push(b),
            }
        }
        out.push(b'"');
    }

    /// `,"key":"value"` when `value` is a Python `str`.
    fn str_field(&mut self, key: &str, value: &Bound<'_, PyAny>) {
        if let Ok(s) = value.cast::<PyString>() {
            if let Ok(s) = s.to_cow() {
                self.raw(",\"");
                self.raw(key);
                self.raw("\":");
                self.string(&s);
            }
        }
    }
}

fn names_in_mro(ty: &Bound<'_, PyType>) -> Vec<String> {
    let py = ty.py();
    let Ok(mro) = ty.getattr(intern!(py, "__mro__")) else {
        return Vec::new();
    };
    let Ok(mro) = mro.cast_into::<PyTuple>() else {
        return Vec::new();
    };
    mro.iter()
        .filter_map(|t| {
            t.getattr(intern!(py, "__name__"))
                .ok()
                .and_then(|n| n.extract::<String>().ok())
        })
        .collect()
}

fn message_kind(ty: &Bound<'_, PyType>) -> Kind {
    for name in names_in_mro(ty) {
        let k = match name.as_str() {
            "StreamEvent" => Kind::Stream,
            "AssistantMessage" => Kind::Assistant,
            "UserMessage" => Kind::User,
            "SystemMessage" => Kind::System,
            "ResultMessage" => Kind::Result,
            "RateLimitEvent" => Kind::RateLimit,
            _ => continue,
        };
        return k;
    }
    Kind::Unknown
}

fn block_kind(ty: &Bound<'_, PyType>) -> Block {
    for name in names_in_mro(ty) {
        match name.as_str() {
            "ToolUseBlock" => return Block::ToolUse,
            "ToolResultBlock" => return Block::ToolResult,
            "TextBlock" => return Block::Text,
            _ => {}
        }
    }
    Block::Other
}

impl Kinds {
    fn message(&mut self, ty: Bound<'_, PyType>) -> Kind {
        if let Some((_, k)) = self.messages.iter().find(|(t, _)| t.is(&ty)) {
            return *k;
        }
        let k = message_kind(&ty);
        if self.messages.len() < 64 {
            self.messages.push((ty.unbind(), k));
        }
        k
    }

    fn block(&mut self, ty: Bound<'_, PyType>) -> Block {
        if let Some((_, k)) = self.blocks.iter().find(|(t, _)| t.is(&ty)) {
            return *k;
        }
        let k = block_kind(&ty);
        if self.blocks.len() < 64 {
            self.blocks.push((ty.unbind(), k));
        }
        k
    }

    /// Write `message` into `buf` as a stream-json line; returns whether it is a result, and
    /// whether this module wrote the line (valid by construction) rather than the caller.
    pub(crate) fn write_line(
        &mut self,
        message: &Bound<'_, PyAny>,
        buf: &mut LineBuf,
    ) -> PyResult<(bool, bool)> {
        let py = message.py();
        buf.0.clear();
        // A raw line, or a raw stream-json dict: as it is.
        if let Ok(b) = message.cast::<PyBytes>() {
            buf.set(b.as_bytes());
            return Ok((is_result_line(buf.bytes()), false));
        }
        if let Ok(s) = message.cast::<PyString>() {
            buf.set(s.to_cow()?.as_bytes());
            return Ok((is_result_line(buf.bytes()), false));
        }
        if let Ok(d) = message.cast::<PyDict>() {
            let v = to_value(d.as_any(), 0);
            buf.0 = serde_json::to_vec(&v).unwrap_or_default();
            return Ok((
                v.get("type").and_then(Value::as_str) == Some("result"),
                true,
            ));
        }
        let kind = self.message(message.get_type());
        match kind {
            Kind::Stream => {
                // The core tells a `ping` (a keep-alive) from every other event (progress):
                // compared as Python strings, without converting the type to UTF-8.
                let event = message.getattr(intern!(py, "event"))?;
                let ty = event
                    .cast::<PyDict>()
                    .ok()
                    .and_then(|d| d.get_item(intern!(py, "type")).ok().flatten());
                let line: &[u8] = match ty {
                    Some(t) if t.eq(intern!(py, "ping"))? => {
                        br#"{"type":"stream_event","event":{"type":"ping"}"#
                    }
                    Some(t) if t.cast::<PyString>().is_ok() => {
                        br#"{"type":"stream_event","event":{"type":"content_block_delta"}"#
                    }
                    _ => br#"{"type":"stream_event","event":{}"#,
                };
                buf.set(line);
                // The classifier's other field: an abandoned stream's events are keep-alives.
                let abandoned = message
                    .getattr_opt(intern!(py, "abandoned_blocks"))?
                    .is_some_and(|v| !v.is_none());
                if abandoned {
                    buf.raw(r#","abandoned_blocks":{}"#);
                }
                buf.raw("}");
            }
            Kind::Assistant | Kind::User => {
                buf.raw(if kind == Kind::Assistant {
                    r#"{"type":"assistant""#
                } else {
                    r#"{"type":"user""#
                });
                if let Ok(sid) = message.getattr(intern!(py, "session_id")) {
                    buf.str_field("session_id", &sid);
                }
                if let Some(parent) = message.getattr_opt(intern!(py, "parent_tool_use_id"))? {
                    buf.str_field("parent_tool_use_id", &parent);
                }
                buf.raw(r#","message":{"content":["#);
                let content = message.getattr(intern!(py, "content"))?;
                // The interrupt marker (a user message's text): the end of a stopped turn.
                let marker = |text: &Bound<'_, PyAny>| -> Option<String> {
                    let s = text.cast::<PyString>().ok()?.to_cow().ok()?;
                    is_interrupt_text(&s).then(|| s.into_owned())
                };
                let mut first = true;
                if kind == Kind::User {
                    if let Some(text) = marker(&content) {
                        buf.raw(r#"{"type":"text","text":"#);
                        buf.string(&text);
                        buf.raw("}");
                        first = false;
                    }
                }
                if let Ok(list) = content.cast::<PyList>() {
                    for block in list.iter() {
                        let b = self.block(block.get_type());
                        let text = match b {
                            Block::Other => continue,
                            Block::Text if kind != Kind::User => continue,
                            Block::Text => match marker(&block.getattr(intern!(py, "text"))?) {
                                Some(t) => Some(t),
                                None => continue,
                            },
                            _ => None,
                        };
                        if !first {
                            buf.raw(",");
                        }
                        first = false;
                        if let Some(text) = text {
                            buf.raw(r#"{"type":"text","text":"#);
                            buf.string(&text);
                        } else if b == Block::ToolUse {
                            buf.raw(r#"{"type":"tool_use""#);
                            buf.str_field("id", &block.getattr(intern!(py, "id"))?);
                            buf.str_field("name", &block.getattr(intern!(py, "name"))?);
                        } else {
                            buf.raw(r#"{"type":"tool_result""#);
                            buf.str_field(
                                "tool_use_id",
                                &block.getattr(intern!(py, "tool_use_id"))?,
                            );
                            let err = block.getattr(intern!(py, "is_error"))?;
                            if err.is_truthy()? {
                                buf.raw(r#","is_error":true"#);
                            }
                        }
                        buf.raw("}");
                    }
                }
                buf.raw("]}");
                // A declared wait's result (a Monitor's expiry, a wakeup's due time): the
                // fields the core reads, not the whole of every tool's output.
                if kind == Kind::User {
                    if let Ok(d) = message.getattr(intern!(py, "tool_use_result")) {
                        if let Ok(d) = d.cast::<PyDict>() {
                            let mut fields = serde_json::Map::new();
                            for key in ["scheduledFor", "nextFireAt", "timeoutMs", "stopped"] {
                                if let Some(v) = d.get_item(key)? {
                                    fields.insert(key.into(), to_value(&v, 0));
                                }
                            }
                            if !fields.is_empty() {
                                buf.raw(r#","tool_use_result":"#);
                                buf.raw(&Value::Object(fields).to_string());
                            }
                        }
                    }
                }
                buf.raw("}");
            }
            Kind::System if carries_its_data(message)? => {
                // What the core reads of these is in their own fields (the task ids, states
                // and lists; a retry's delay, status and error): the SDK's `data` is the
                // CLI's message, written whole.
                let data = message.getattr(intern!(py, "data"))?;
                let subtype = message.getattr(intern!(py, "subtype"))?;
                let mut v = to_value(&data, 0);
                if let Value::Object(m) = &mut v {
                    m.insert("type".into(), Value::from("system"));
                    m.insert("subtype".into(), to_value(&subtype, 0));
                }
                buf.0 = serde_json::to_vec(&v).unwrap_or_default();
            }
            Kind::System => {
                buf.raw(r#"{"type":"system""#);
                buf.str_field("subtype", &message.getattr(intern!(py, "subtype"))?);
                if let Ok(data) = message.getattr(intern!(py, "data")) {
                    if let Ok(d) = data.cast::<PyDict>() {
                        for key in ["session_id", "state"] {
                            if let Some(v) = d.get_item(key)? {
                                buf.str_field(key, &v);
                            }
                        }
                        if let Some(v) = d.get_item("retry_delay_ms")? {
                            if let Ok(ms) = v.extract::<f64>() {
                                if ms.is_finite() {
                                    buf.raw(&format!(r#","retry_delay_ms":{ms}"#));
                                }
                            }
                        }
                    }
                }
                buf.raw("}");
            }
            Kind::Result => {
                buf.raw(r#"{"type":"result""#);
                buf.str_field("subtype", &message.getattr(intern!(py, "subtype"))?);
                if message.getattr(intern!(py, "is_error"))?.is_truthy()? {
                    buf.raw(r#","is_error":true"#);
                } else {
                    buf.raw(r#","is_error":false"#);
                }
                for key in ["stop_reason", "session_id", "terminal_reason", "result"] {
                    if let Ok(v) = message.getattr(key) {
                        buf.str_field(key, &v);
                    }
                }
                buf.raw("}");
                return Ok((true, true));
            }
            Kind::RateLimit => buf.raw(r#"{"type":"rate_limit_event"}"#),
            Kind::Unknown => buf.raw(r#"{"type":"python_sdk_unknown"}"#),
        }
        Ok((false, true))
    }
}

/// The `system` subtypes whose own fields the core reads: background tasks (which keep a
/// session working after its `result`; their progress is a sign of their own life) and
/// announced retries (a back-off is not a hang).
const SUBTYPES_WITH_DATA: [&str; 6] = [
    "background_tasks_changed",
    "task_started",
    "task_updated",
    "task_notification",
    "task_progress",
    "api_retry",
];

/// Whether a `SystemMessage` is one of [`SUBTYPES_WITH_DATA`] and carries its message as a
/// `dict` in `data`.
fn carries_its_data(message: &Bound<'_, PyAny>) -> PyResult<bool> {
    let py = message.py();
    let subtype = message.getattr(intern!(py, "subtype"))?;
    let Ok(subtype) = subtype.cast::<PyString>() else {
        return Ok(false);
    };
    let known = SUBTYPES_WITH_DATA.contains(&&*subtype.to_cow()?);
    let is_dict = message
        .getattr(intern!(py, "data"))
        .is_ok_and(|d| d.cast::<PyDict>().is_ok());
    Ok(known && is_dict)
}

fn is_result_line(line: &[u8]) -> bool {
    watchdog_core::LineView::parse(line)
        .ok()
        .and_then(|v| v.kind().map(|k| k == "result"))
        .unwrap_or(false)
}

/// A Python value as JSON (dicts, lists, tuples, str, int, float, bool, None; anything else is
/// `null`), at most 64 levels deep.
pub(crate) fn to_value(o: &Bound<'_, PyAny>, depth: usize) -> Value {
    if depth > 64 || o.is_none() {
        return Value::Null;
    }
    if let Ok(b) = o.cast::<PyBool>() {
        return Value::Bool(b.is_true());
    }
    if o.cast::<PyInt>().is_ok() {
        if let Ok(i) = o.extract::<i64>() {
            return Value::from(i);
        }
        return o.extract::<f64>().map_or(Value::Null, Value::from);
    }
    if let Ok(f) = o.cast::<PyFloat>() {
        return serde_json::Number::from_f64(f.value()).map_or(Value::Null, Value::Number);
    }
    if let Ok(s) = o.cast::<PyString>() {
        return s
            .to_cow()
            .map_or(Value::Null, |s| Value::String(s.into_owned()));
    }
    if let Ok(d) = o.cast::<PyDict>() {
        let mut m = serde_json::Map::new();
        for (k, v) in d.iter() {
            if let Ok(k) = k.extract::<String>() {
                m.insert(k, to_value(&v, depth + 1));
            }
        }
        return Value::Object(m);
    }
    if let Ok(l) = o.cast::<PyList>() {
        return Value::Array(l.iter().map(|v| to_value(&v, depth + 1)).collect());
    }
    if let Ok(t) = o.cast::<PyTuple>() {
        return Value::Array(t.iter().map(|v| to_value(&v, depth + 1)).collect());
    }
    Value::Null
}
