//! The capture format: a recording of one supervised run, JSON Lines.
//!
//! Each line is one object with `t_ms` (milliseconds since the child was spawned) and exactly
//! one of:
//!
//! | key | value |
//! |---|---|
//! | `start` | optional, first: `{"wall_ms": epoch ms at spawn, "argv": [...], "version": 1}`, plus `"env": {name: value}` with the child's variables that change the policy (the MCP limits; never the rest of the environment) when any is set |
//! | `line` | a stdout line that parsed as JSON, as that JSON value |
//! | `raw` | a stdout line that did not parse, as a string (lossy UTF-8) |
//! | `stderr` | a stderr line, as a string |
//! | `stdin` | a JSON line the supervisor wrote to the child's stdin |
//! | `exit` | `{"code": int or null, "signal": int or null}` |
//! | `boundary` | a marker between two runs of one recording (a recovery continuation) |
//!
//! Unknown keys are ignored on read, so other tools' recordings with extra fields replay.

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

/// Version written in the `start` record.
pub const CAPTURE_VERSION: u64 = 1;

/// What one capture entry records.
#[derive(Debug, Clone, PartialEq)]
pub enum Record {
    /// The run started: wall clock at spawn (epoch ms) and the command line.
    Start {
        /// Epoch milliseconds at spawn.
        wall_ms: Option<u64>,
        /// The command line.
        argv: Vec<String>,
        /// The child's environment variables that change the policy (only those).
        env: BTreeMap<String, String>,
    },
    /// A stdout line that parsed as JSON.
    Line(Value),
    /// A stdout line that did not parse.
    Raw(String),
    /// A stderr line.
    Stderr(String),
    /// A JSON line written to the child's stdin.
    Stdin(Value),
    /// The child exited.
    Exit {
        /// Exit code, if it exited normally.
        code: Option<i32>,
        /// Signal number, if a signal ended it.
        signal: Option<i32>,
    },
    /// A boundary between two runs recorded into one capture (e.g. a recovery continuation).
    Boundary(Value),
}

/// One capture entry: a time offset and a record.
#[derive(Debug, Clone, PartialEq)]
pub struct Entry {
    /// Milliseconds since the child was spawned.
    pub t_ms: u64,
    /// What happened.
    pub record: Record,
}

/// A capture line that cannot be read.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum CaptureError {
    /// Not a JSON object.
    #[error("capture line is not a JSON object: {0}")]
    NotAnObject(String),
    /// `t_ms` is missing or not a non-negative integer.
    #[error("capture line has no valid t_ms")]
    NoTime,
}

fn as_i32(v: Option<&Value>) -> Option<i32> {
    v.and_then(Value::as_i64)
        .and_then(|n| i32::try_from(n).ok())
}

impl Entry {
    /// Read one capture line. `Ok(None)` for an object with a valid `t_ms` but none of the
    /// known keys (skipped, as other tools' extra records are).
    pub fn parse(line: &[u8]) -> Result<Option<Entry>, CaptureError> {
        let v: Value =
            serde_json::from_slice(line).map_err(|e| CaptureError::NotAnObject(e.to_string()))?;
        let Value::Object(mut m) = v else {
            return Err(CaptureError::NotAnObject("not an object".into()));
        };
        let t = m.get("t_ms").and_then(|t| {
            t.as_u64().or_else(|| {
                t.as_f64()
                    .filter(|f| *f >= 0.0 && f.is_finite())
                    .map(|f| f as u64)
            })
        });
        let t_ms = t.ok_or(CaptureError::NoTime)?;
        let record = if let Some(v) = m.remove("line") {
            Record::Line(v)
        } else if let Some(v) = m.remove("raw") {
            Record::Raw(match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
        } else if let Some(v) = m.remove("stderr") {
            Record::Stderr(match v {
                Value::String(s) => s,
                other => other.to_string(),
            })
        } else if let Some(v) = m.remove("stdin") {
            Record::Stdin(v)
        } else if let Some(v) = m.remove("exit") {
            Record::Exit {
                code: as_i32(v.get("code")),
                signal: as_i32(v.get("signal")),
            }
        } else if let Some(v) = m.remove("start") {
            Record::Start {
                wall_ms: v.get("wall_ms").and_then(Value::as_u64),
                argv: v
                    .get("argv")
                    .and_then(Value::as_array)
                    .map(|a| {
                        a.iter()
                            .filter_map(|s| s.as_str().map(str::to_owned))
                            .collect()
                    })
                    .unwrap_or_default(),
                env: v
                    .get("env")
                    .and_then(Value::as_object)
                    .map(|o| {
                        o.iter()
                            .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                            .collect()
                    })
                    .unwrap_or_default(),
            }
        } else if let Some(v) = m.remove("boundary") {
            Record::Boundary(v)
        } else {
            return Ok(None);
        };
        Ok(Some(Entry { t_ms, record }))
    }

    /// Render as one capture line (no trailing newline).
    pub fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("t_ms".into(), json!(self.t_ms));
        let (k, v) = match &self.record {
            Record::Start { wall_ms, argv, env } => {
                let mut v = json!({"wall_ms": wall_ms, "argv": argv, "version": CAPTURE_VERSION});
                if !env.is_empty() {
                    v["env"] = json!(env);
                }
                ("start", v)
            }
            Record::Line(v) => ("line", v.clone()),
            Record::Raw(s) => ("raw", json!(s)),
            Record::Stderr(s) => ("stderr", json!(s)),
            Record::Stdin(v) => ("stdin", v.clone()),
            Record::Exit { code, signal } => ("exit", json!({"code": code, "signal": signal})),
            Record::Boundary(v) => ("boundary", v.clone()),
        };
        m.insert(k.into(), v);
        Value::Object(m).to_string()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trips_every_record() {
        let entries = [
            Record::Start {
                wall_ms: Some(1_796_030_275_077),
                argv: vec!["claude".into(), "-p".into()],
                env: BTreeMap::new(),
            },
            Record::Start {
                wall_ms: None,
                argv: vec![],
                env: [("MCP_TIMEOUT".to_owned(), "60000".to_owned())].into(),
            },
            Record::Line(json!({"type":"system","subtype":"init"})),
            Record::Raw("not json \u{fffd}".into()),
            Record::Stderr("warning: x".into()),
            Record::Stdin(json!({"type":"control_response"})),
            Record::Exit {
                code: None,
                signal: Some(9),
            },
            Record::Boundary(json!({"recovery":"max_output_tokens"})),
        ];
        for (i, record) in entries.into_iter().enumerate() {
            let e = Entry {
                t_ms: i as u64 * 10,
                record,
            };
            assert_eq!(Entry::parse(e.to_json().as_bytes()).unwrap(), Some(e));
        }
    }

    #[test]
    fn unknown_keys_are_ignored_and_bad_lines_are_errors() {
        let e = Entry::parse(br#"{"t_ms":5,"extra":1,"line":{"type":"x"}}"#).unwrap();
        assert_eq!(e.unwrap().t_ms, 5);
        assert_eq!(Entry::parse(br#"{"t_ms":5,"other":1}"#).unwrap(), None);
        assert_eq!(Entry::parse(br#"{"line":{}}"#), Err(CaptureError::NoTime));
        assert!(Entry::parse(b"[]").is_err());
        assert!(Entry::parse(b"{\"t_ms\":").is_err());
    }
}
