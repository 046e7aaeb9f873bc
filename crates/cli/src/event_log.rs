//! A bounded log of a run's events, for the summary and the replay report.
//!
//! A long multi-turn session settles once per `result`, and may be warned about stalling
//! once per quiet spell: keeping every event would grow without bound. The log keeps the
//! **first [`HEAD`] and the last [`TAIL`] events** verbatim (the kill and the end of a run are
//! always among the last) and, for the ones in between, only **a count by kind**. In JSON the
//! left-out stretch is one marker object where the events were:
//! `{"event": "left_out", "count": N, "by_kind": {"settled": n, …}}`.

use std::collections::VecDeque;

use serde_json::{json, Map, Value};

/// Events kept from the start of a run.
pub const HEAD: usize = 64;
/// Events kept from the end of a run.
pub const TAIL: usize = 64;

/// The first [`HEAD`] and last [`TAIL`] events, and counts of the rest by kind.
#[derive(Debug, Clone)]
pub struct EventLog<T> {
    head: Vec<T>,
    tail: VecDeque<(&'static str, T)>,
    left_out: u64,
    /// Left-out events by kind, in first-seen order (a handful of kinds).
    by_kind: Vec<(&'static str, u64)>,
}

impl<T> Default for EventLog<T> {
    fn default() -> Self {
        EventLog {
            head: Vec::new(),
            tail: VecDeque::new(),
            left_out: 0,
            by_kind: Vec::new(),
        }
    }
}

impl<T> EventLog<T> {
    /// Append an event of kind `kind` (e.g. `settled`).
    pub fn push(&mut self, kind: &'static str, event: T) {
        if self.head.len() < HEAD {
            self.head.push(event);
            return;
        }
        if self.tail.len() == TAIL {
            if let Some((k, _)) = self.tail.pop_front() {
                self.left_out += 1;
                match self.by_kind.iter_mut().find(|(n, _)| *n == k) {
                    Some((_, c)) => *c += 1,
                    None => self.by_kind.push((k, 1)),
                }
            }
        }
        self.tail.push_back((kind, event));
    }

    /// Events pushed in all.
    pub fn total(&self) -> u64 {
        (self.head.len() + self.tail.len()) as u64 + self.left_out
    }

    /// Events not kept.
    pub fn left_out(&self) -> u64 {
        self.left_out
    }

    /// The kept events before the left-out stretch.
    pub fn head(&self) -> &[T] {
        &self.head
    }

    /// The kept events after the left-out stretch.
    pub fn tail(&self) -> impl Iterator<Item = &T> {
        self.tail.iter().map(|(_, e)| e)
    }

    /// Every kept event, in order.
    pub fn iter(&self) -> impl Iterator<Item = &T> {
        self.head.iter().chain(self.tail())
    }

    /// The left-out counts by kind, as `{kind: n}`.
    pub fn left_out_json(&self) -> Value {
        let m: Map<String, Value> = self
            .by_kind
            .iter()
            .map(|(k, n)| ((*k).to_owned(), json!(n)))
            .collect();
        Value::Object(m)
    }

    /// The events as a JSON array, rendering each with `f`; the left-out stretch, if any, is
    /// one `left_out` marker in its place.
    pub fn to_json_with(&self, f: impl Fn(&T) -> Value) -> Vec<Value> {
        let mut out: Vec<Value> = self.head.iter().map(&f).collect();
        if self.left_out > 0 {
            out.push(json!({
                "event": "left_out",
                "count": self.left_out,
                "by_kind": self.left_out_json(),
            }));
        }
        out.extend(self.tail().map(f));
        out
    }
}

impl EventLog<Value> {
    /// The events as a JSON array (see [`EventLog::to_json_with`]).
    pub fn to_vec(&self) -> Vec<Value> {
        self.to_json_with(Value::clone)
    }

    /// Append an event already rendered as JSON; its kind is its `event` member.
    pub fn push_json(&mut self, event: Value) {
        let kind = match event.get("event").and_then(Value::as_str) {
            Some("killed") => "killed",
            Some("extended") => "extended",
            Some("stalling") => "stalling",
            Some("settled") => "settled",
            Some("ended") => "ended",
            _ => "other",
        };
        self.push(kind, event);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_first_and_last_events_and_counts_the_rest() {
        let mut log = EventLog::default();
        for i in 0..10_000u64 {
            log.push_json(
                json!({"t_ms": i, "event": if i % 100 == 99 { "stalling" } else { "settled" }}),
            );
        }
        log.push_json(json!({"t_ms": 10_000, "event": "killed"}));
        assert_eq!(log.total(), 10_001);
        assert_eq!(log.left_out(), 10_001 - (HEAD + TAIL) as u64);
        let v = log.to_vec();
        assert_eq!(v.len(), HEAD + TAIL + 1);
        assert_eq!(v[0]["t_ms"], 0);
        assert_eq!(v[HEAD]["event"], "left_out");
        assert_eq!(v[HEAD]["count"], log.left_out());
        let by = &v[HEAD]["by_kind"];
        assert_eq!(
            by["settled"].as_u64().unwrap() + by["stalling"].as_u64().unwrap(),
            log.left_out()
        );
        assert_eq!(v.last().unwrap()["event"], "killed");
        assert_eq!(v[HEAD + 1]["t_ms"], 10_000 - TAIL as u64 + 1);
    }

    #[test]
    fn a_short_run_keeps_everything_without_a_marker() {
        let mut log = EventLog::default();
        for i in 0..(HEAD + TAIL) as u64 {
            log.push_json(json!({"t_ms": i, "event": "settled"}));
        }
        let v = log.to_vec();
        assert_eq!(v.len(), HEAD + TAIL);
        assert!(v.iter().all(|e| e["event"] == "settled"));
    }
}
