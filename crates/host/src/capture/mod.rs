//! The capture format: a recording of one supervised run, JSON Lines.
//!
//! Each line is one object with `t_ms` (milliseconds since the child was spawned) and exactly
//! one of:
//!
//! | key | value |
//! |---|---|
//! | `start` | optional, first: `{"wall_ms": epoch ms at spawn, "argv": [...], "version": 1}`, plus `"env": {name: value}` with the child's variables that change the policy (the MCP limits; never the rest of the environment) when any is set, and `"dialect"` (`claude`, `codex`, `opencode`: the one the host expected from the command, [`crate::dialect`]) when it had one |
//! | `line` | a stdout line that parsed as JSON, as that JSON value |
//! | `raw` | a stdout line that did not parse, as a string (lossy UTF-8) |
//! | `stderr` | a stderr line, as a string |
//! | `stdin` | a JSON line the supervisor wrote to the child's stdin |
//! | `exit` | `{"code": int or null, "signal": int or null}` |
//! | `boundary` | a marker between two runs of one recording (a recovery continuation) |
//! | `tree` | a sample of the child's process tree ([`TreeSample`]): each process's `pid`, `start`, `ppid`, `pgid`, `cmd`, `state`, `cpu_ms`, `rss`, `age_ms`, `tcp`, `net`; or `{"fault": why}` when it could not be read |
//! | `receipt` | the tree as it stood when the host stopped it, and what each stage of its kill ladder did to each process ([`Receipt`]) |
//!
//! Unknown keys are ignored on read, so other tools' recordings with extra fields replay.
//!
//! One reader, two results: [`EntryView::parse`] borrows from the line, validating it once and
//! reading the `line` record through the same [`LineView`] as a live run (what
//! [`crate::replay`] streams); [`Entry::parse`] keeps each record's JSON, owned (for tools and
//! tests), read by the same grammar.
//! A capture (or a transcript) is split into those lines by [`lines::Lines`], from any reader,
//! in bounded memory.

pub mod lines;

use std::collections::BTreeMap;

use serde_json::{json, Map, Value};

use watchdog_core::evidence::{Receipt, TreeSample};
use watchdog_core::{Dialect, Field, LineView, RawJson};

/// Version written in the `start` record.
pub(crate) const CAPTURE_VERSION: u64 = 1;

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
        /// The dialect the host expected from the command ([`crate::dialect::of_command`]), if
        /// it had one; the lines confirm it or choose another, in the replay as live.
        dialect: Option<Dialect>,
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
    /// A sample of the process tree ([`TreeSample`], as JSON).
    Tree(Value),
    /// The receipt of a stopped tree ([`Receipt`], as JSON).
    Receipt(Value),
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

/// A `t_ms` that is not a whole, non-negative number of milliseconds that fits in a `u64`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum BadTime {
    /// A fraction of a millisecond, e.g. `12.5`.
    Fractional,
    /// Below zero.
    Negative,
    /// Too large for a `u64` (or not finite).
    TooLarge,
}

/// The record of one capture line, borrowed from it (see [`EntryView::parse`]).
#[derive(Debug)]
pub enum RecordView<'a> {
    /// `start`: the wall clock at spawn, if recorded.
    Start {
        /// Epoch milliseconds at spawn.
        wall_ms: Option<u64>,
        /// The recorded command line reads stream-json on stdin
        /// ([`reads_stream_json_input`](crate::claude_code::session::reads_stream_json_input)).
        stream_json_input: bool,
        /// The dialect the live host expected: the recorded `dialect`, else the one its recorded
        /// command line runs ([`crate::dialect::of_command`]).
        dialect: Option<Dialect>,
    },
    /// `line`: a stdout line that is a JSON object.
    Line(LineView<'a>),
    /// `raw`, or a `line` that is not a JSON object: a stdout line that does not parse.
    Unparseable,
    /// `stderr`.
    Stderr,
    /// `stdin`: a line written to the child; its view when it is an object.
    Stdin(Option<LineView<'a>>),
    /// `exit`.
    Exit {
        /// Exit code, if it exited normally.
        code: Option<i32>,
        /// Signal number, if a signal ended it.
        signal: Option<i32>,
    },
    /// `boundary`: one run of the recording ended, the next begins (its `t_ms` from 0).
    Boundary,
    /// `tree`: a sample of the process tree (`None`: not one this version reads).
    Tree(Option<Box<TreeSample>>),
    /// `receipt`: the receipt of a stopped tree (`None`: not one this version reads).
    Receipt(Option<Box<Receipt>>),
}

/// One capture line, read in place: its time as written and its record.
#[derive(Debug)]
pub struct EntryView<'a> {
    /// `t_ms`, or why it is not a usable number of milliseconds.
    pub t_ms: Result<u64, BadTime>,
    /// What happened.
    pub record: RecordView<'a>,
}

/// Read a raw JSON number as whole milliseconds.
fn time_of(raw: RawJson<'_>) -> Option<Result<u64, BadTime>> {
    let text = raw.get();
    if !text.is_empty() && text.bytes().all(|b| b.is_ascii_digit()) {
        return Some(text.parse::<u64>().map_err(|_| BadTime::TooLarge));
    }
    let f = Field::Raw(raw).as_f64()?;
    Some(if f < 0.0 {
        Err(BadTime::Negative)
    } else if !f.is_finite() || f >= u64::MAX as f64 {
        Err(BadTime::TooLarge)
    } else if f.fract() != 0.0 {
        Err(BadTime::Fractional)
    } else {
        Ok(f as u64)
    })
}

fn i32_of(f: Option<Field<'_>>) -> Option<i32> {
    let n = f?.as_f64()?;
    (n.fract() == 0.0 && n >= f64::from(i32::MIN) && n <= f64::from(i32::MAX)).then_some(n as i32)
}

/// The keys of a capture line's records, in their precedence (`t_ms` first).
const KEYS: [&str; 10] = [
    "t_ms", "line", "raw", "stderr", "stdin", "exit", "start", "boundary", "tree", "receipt",
];

/// One capture line read once, in place: the one grammar both readers use. Its members by key
/// (the last duplicate wins, as in a `serde_json::Map`), its time, the record it holds (the
/// first of the record keys present) and, for a `line`, its view (read in the pass that
/// validates the capture line).
struct Members<'a> {
    t_ms: Option<Result<u64, BadTime>>,
    record: Option<(usize, RawJson<'a>)>,
    line: Option<LineView<'a>>,
}

impl<'a> Members<'a> {
    fn read(line: &'a [u8]) -> Result<Self, CaptureError> {
        let text = std::str::from_utf8(line)
            .map_err(|e| CaptureError::NotAnObject(format!("not UTF-8: {e}")))?;
        let mut m: [Option<RawJson<'a>>; 10] = [None; 10];
        let line = LineView::parse_envelope(text, "line", |key, v| {
            if let Some(i) = KEYS.iter().position(|x| *x == key) {
                m[i] = Some(v);
            }
        })
        .map_err(|e| CaptureError::NotAnObject(e.reason))?;
        let record = (1..KEYS.len()).find_map(|i| m[i].map(|v| (i, v)));
        Ok(Members {
            t_ms: m[0].and_then(time_of),
            record,
            line,
        })
    }
}

impl<'a> EntryView<'a> {
    /// Read one capture line in place: it is validated once, and a `line` record becomes a
    /// [`LineView`] without a second check or any copy. `Ok(None)` for an object with a `t_ms`
    /// and none of the known keys.
    pub fn parse(line: &'a [u8]) -> Result<Option<Self>, CaptureError> {
        let m = Members::read(line)?;
        let t_ms = m.t_ms.ok_or(CaptureError::NoTime)?;
        let Some((i, v)) = m.record else {
            return Ok(None);
        };
        let field = Field::Raw(v);
        let record = match KEYS[i] {
            "line" => match m.line {
                Some(view) => RecordView::Line(view),
                None => RecordView::Unparseable,
            },
            "raw" => RecordView::Unparseable,
            "stderr" => RecordView::Stderr,
            "stdin" => RecordView::Stdin(LineView::parse_validated(v.get().as_bytes())),
            "exit" => RecordView::Exit {
                code: i32_of(field.member("code")),
                signal: i32_of(field.member("signal")),
            },
            "start" => {
                let wall_ms = field
                    .member("wall_ms")
                    .and_then(|w| match w {
                        Field::Raw(r) => time_of(r),
                        Field::Value(_) => None,
                    })
                    .and_then(Result::ok);
                let argv: Vec<String> = match field.member("argv").and_then(|a| a.to_value()) {
                    Some(Value::Array(items)) => items
                        .into_iter()
                        .filter_map(|a| match a {
                            Value::String(s) => Some(s),
                            _ => None,
                        })
                        .collect(),
                    _ => Vec::new(),
                };
                let stream_json_input = crate::claude_code::session::reads_stream_json_input(
                    argv.iter().map(String::as_str),
                );
                let recorded = field
                    .member("dialect")
                    .and_then(|d| d.as_str())
                    .and_then(|d| Dialect::parse(&d));
                RecordView::Start {
                    wall_ms,
                    stream_json_input,
                    dialect: recorded.or_else(|| crate::dialect::of_command(&argv)),
                }
            }
            "boundary" => RecordView::Boundary,
            "tree" => RecordView::Tree(serde_json::from_str(v.get()).ok().map(Box::new)),
            _ => RecordView::Receipt(serde_json::from_str(v.get()).ok().map(Box::new)),
        };
        Ok(Some(EntryView { t_ms, record }))
    }
}

impl Entry {
    /// Read one capture line into owned records: the grammar of [`EntryView::parse`] (the one
    /// reader: the same precedence, duplicates and times), each record's JSON kept. `Ok(None)`
    /// for an object with a valid `t_ms` but none of the known keys (skipped, as other tools'
    /// extra records are); a `t_ms` that is not a whole number of milliseconds is no time.
    pub fn parse(line: &[u8]) -> Result<Option<Entry>, CaptureError> {
        let m = Members::read(line)?;
        let t_ms = match m.t_ms {
            Some(Ok(t)) => t,
            _ => return Err(CaptureError::NoTime),
        };
        let Some((i, raw)) = m.record else {
            return Ok(None);
        };
        let v: Value = serde_json::from_str(raw.get())
            .map_err(|e| CaptureError::NotAnObject(e.to_string()))?;
        let text = |v: Value| match v {
            Value::String(s) => s,
            other => other.to_string(),
        };
        let record = match KEYS[i] {
            "line" => Record::Line(v),
            "raw" => Record::Raw(text(v)),
            "stderr" => Record::Stderr(text(v)),
            "stdin" => Record::Stdin(v),
            "exit" => Record::Exit {
                code: as_i32(v.get("code")),
                signal: as_i32(v.get("signal")),
            },
            "start" => {
                let (argv, env) = start_argv_env(&v);
                Record::Start {
                    wall_ms: v.get("wall_ms").and_then(Value::as_u64),
                    argv,
                    env,
                    dialect: v
                        .get("dialect")
                        .and_then(Value::as_str)
                        .and_then(Dialect::parse),
                }
            }
            "boundary" => Record::Boundary(v),
            "tree" => Record::Tree(v),
            _ => Record::Receipt(v),
        };
        Ok(Some(Entry { t_ms, record }))
    }

    /// Render as one capture line (no trailing newline).
    pub fn to_json(&self) -> String {
        let mut m = Map::new();
        m.insert("t_ms".into(), json!(self.t_ms));
        let (k, v) = match &self.record {
            Record::Start {
                wall_ms,
                argv,
                env,
                dialect,
            } => {
                let mut v = json!({"wall_ms": wall_ms, "argv": argv, "version": CAPTURE_VERSION});
                if !env.is_empty() {
                    v["env"] = json!(env);
                }
                if let Some(d) = dialect {
                    v["dialect"] = json!(d.as_str());
                }
                ("start", v)
            }
            Record::Line(v) => ("line", v.clone()),
            Record::Raw(s) => ("raw", json!(s)),
            Record::Stderr(s) => ("stderr", json!(s)),
            Record::Stdin(v) => ("stdin", v.clone()),
            Record::Exit { code, signal } => ("exit", json!({"code": code, "signal": signal})),
            Record::Boundary(v) => ("boundary", v.clone()),
            Record::Tree(v) => ("tree", v.clone()),
            Record::Receipt(v) => ("receipt", v.clone()),
        };
        m.insert(k.into(), v);
        Value::Object(m).to_string()
    }
}

/// What a capture's `start` record says about the recorded child: its command line and the
/// policy environment recorded with it (only the variables that change the policy).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct StartFacts {
    /// The child's command line, the program first.
    pub argv: Vec<String>,
    /// The recorded variables.
    pub env: BTreeMap<String, String>,
}

impl StartFacts {
    /// Read from a `start` record's object (values of other types are left out).
    ///
    /// ```
    /// let v = serde_json::json!({"argv": ["claude", "-p"], "env": {"MCP_TIMEOUT": "9000"}});
    /// let s = watchdog_host::capture::StartFacts::from_start_object(&v);
    /// assert_eq!(s.argv, ["claude", "-p"]);
    /// assert_eq!(s.env["MCP_TIMEOUT"], "9000");
    /// ```
    pub fn from_start_object(v: &Value) -> Self {
        let (argv, env) = start_argv_env(v);
        StartFacts { argv, env }
    }
}

/// The command line and the policy environment of a `start` record's object (`argv`, `env`;
/// values of other types are left out). What [`Entry::parse`] reads into [`Record::Start`],
/// for a host that holds only the `start` object.
pub(crate) fn start_argv_env(v: &Value) -> (Vec<String>, BTreeMap<String, String>) {
    let argv = v
        .get("argv")
        .and_then(Value::as_array)
        .map(|a| {
            a.iter()
                .filter_map(|s| s.as_str().map(str::to_owned))
                .collect()
        })
        .unwrap_or_default();
    let env = v
        .get("env")
        .and_then(Value::as_object)
        .map(|o| {
            o.iter()
                .filter_map(|(k, v)| Some((k.clone(), v.as_str()?.to_owned())))
                .collect()
        })
        .unwrap_or_default();
    (argv, env)
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
                dialect: None,
            },
            Record::Start {
                wall_ms: None,
                argv: vec![],
                env: [("MCP_TIMEOUT".to_owned(), "60000".to_owned())].into(),
                dialect: Some(Dialect::Codex),
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
            Record::Tree(json!({"root": 1, "procs": []})),
            Record::Receipt(json!({"cause": "kill", "at_ms": 5, "tree": {"root": 1}})),
        ];
        for (i, record) in entries.into_iter().enumerate() {
            let e = Entry {
                t_ms: i as u64 * 10,
                record,
            };
            assert_eq!(Entry::parse(e.to_json().as_bytes()).unwrap(), Some(e));
        }
    }

    /// The in-place reader agrees with the owned one on every record and on errors.
    #[test]
    fn the_view_reads_what_the_owned_reader_reads() {
        let lines: &[&[u8]] = &[
            br#"{"t_ms":0,"start":{"wall_ms":1796030275077,"argv":["claude"],"version":1}}"#,
            br#"{"t_ms":5,"line":{"type":"system","subtype":"init","session_id":"s1"}}"#,
            br#"{"t_ms":6,"line":[1,2]}"#,
            br#"{"t_ms":7,"raw":"x"}"#,
            br#"{"t_ms":8,"stderr":"w"}"#,
            br#"{"t_ms":9,"stdin":{"type":"control_response"}}"#,
            br#"{"t_ms":10,"exit":{"code":-1,"signal":null}}"#,
            br#"{"t_ms":11,"exit":{"code":null,"signal":9}}"#,
            br#"{"t_ms":12,"boundary":{}}"#,
            br#"{"t_ms":12,"tree":{"root":3,"procs":[{"pid":3,"start":1,"ppid":1,"state":"asleep","cpu_ms":0,"rss":1,"age_ms":1}]}}"#,
            br#"{"t_ms":12,"tree":{"fault":"no /proc"}}"#,
            br#"{"t_ms":12,"tree":"x"}"#,
            br#"{"t_ms":12,"receipt":{"cause":"kill","at_ms":12,"tree":{"root":3},"actions":[]}}"#,
            br#"{"t_ms":13,"other":1}"#,
            br#"{"t_ms":14,"line":{"type":"user"},"raw":"ignored: line wins"}"#,
            br#"{"line":{}}"#,
            br#"{"t_ms":1,"line":{"#,
            br#"{"t_ms":15,"line":{"type":"user"},"line":5}"#,
            br#"{"t_ms":16,"line":5,"line":{"type":"assistant","session_id":"z"}}"#,
            br#"{"t_ms":17,"line":{"type":"user"},"line":{"type":"result"}}"#,
            b"\xff",
            b"[]",
        ];
        for line in lines {
            let owned = Entry::parse(line);
            let view = EntryView::parse(line);
            match (&owned, &view) {
                (Ok(None), Ok(None)) => {}
                (Err(a), Err(b)) => assert_eq!(
                    std::mem::discriminant(a),
                    std::mem::discriminant(b),
                    "{}",
                    String::from_utf8_lossy(line)
                ),
                (Ok(Some(o)), Ok(Some(v))) => {
                    assert_eq!(Ok(o.t_ms), v.t_ms);
                    let same = match (&o.record, &v.record) {
                        (
                            Record::Start { wall_ms: a, .. },
                            RecordView::Start { wall_ms: b, .. },
                        ) => a == b,
                        (Record::Line(x), RecordView::Line(view)) => {
                            x["type"].as_str() == view.kind().as_deref()
                                && x["session_id"].as_str() == view.session_id().as_deref()
                        }
                        (Record::Line(x), RecordView::Unparseable) => !x.is_object(),
                        (Record::Raw(_), RecordView::Unparseable)
                        | (Record::Stderr(_), RecordView::Stderr)
                        | (Record::Boundary(_), RecordView::Boundary) => true,
                        (Record::Tree(x), RecordView::Tree(t)) => {
                            t.as_deref().map(|t| u64::from(t.root))
                                == x.is_object().then(|| x["root"].as_u64().unwrap_or(0))
                        }
                        (Record::Receipt(x), RecordView::Receipt(r)) => {
                            r.as_deref().map(|r| r.at_ms) == x["at_ms"].as_u64()
                        }
                        (Record::Stdin(x), RecordView::Stdin(view)) => {
                            view.as_ref().and_then(|v| v.kind()).as_deref() == x["type"].as_str()
                        }
                        (
                            Record::Exit { code, signal },
                            RecordView::Exit { code: c, signal: s },
                        ) => code == c && signal == s,
                        _ => false,
                    };
                    assert!(same, "{}: {o:?} vs {v:?}", String::from_utf8_lossy(line));
                }
                _ => panic!("{}: {owned:?} vs {view:?}", String::from_utf8_lossy(line)),
            }
        }
        let t = |s: &str| {
            EntryView::parse(format!("{{\"t_ms\":{s},\"raw\":\"\"}}").as_bytes())
                .map(|e| e.map(|e| e.t_ms))
        };
        assert_eq!(t("12"), Ok(Some(Ok(12))));
        assert_eq!(t("12.0"), Ok(Some(Ok(12))));
        assert_eq!(t("12.5"), Ok(Some(Err(BadTime::Fractional))));
        assert_eq!(t("-1"), Ok(Some(Err(BadTime::Negative))));
        assert_eq!(t("1e300"), Ok(Some(Err(BadTime::TooLarge))));
        assert_eq!(t("99999999999999999999"), Ok(Some(Err(BadTime::TooLarge))));
        assert_eq!(t("\"12\""), Err(CaptureError::NoTime));
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
