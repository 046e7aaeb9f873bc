//! One watchdog's state: the core's [`Registry`], the caller's clock mapped onto it, and the
//! per-session state the core does not keep (tools in flight, permission requests); every
//! call of the Python class lands here, with its lock held.

use std::collections::HashMap;
use std::time::{Duration, Instant};

use pyo3::prelude::*;
use pyo3::types::PyTuple;

use watchdog_core::{Event, Limits, LineView, Registry, SessionConfig, SessionId};
use watchdog_host::metrics::{Counters, Metrics};

use crate::messages::{Kinds, LineBuf};
use crate::options::{seconds, value_error};

/// Per-session state the core does not keep: the tools in flight (from the hooks), the
/// permission requests open (from a wrapped `can_use_tool`).
struct Extra {
    /// The core's id (ids are made only by the registry: the number the caller holds is
    /// looked up here).
    sid: SessionId,
    in_flight: Vec<Box<str>>,
}

/// Flags returned by every feed: what the Python layer must do next.
const EVENTS: u32 = 1;
const REARM: u32 = 2;

/// One watchdog's state (behind the [`Core`](crate::core_class::Core) object's mutex).
pub(crate) struct Inner {
    pub(crate) registry: Registry,
    base: Instant,
    epoch: f64,
    /// The instant the timer sleeps until (`None`: not sleeping on a deadline).
    armed: Option<f64>,
    pub(crate) pending: Vec<Event>,
    /// What was delivered, for `metrics()` and the Prometheus text.
    counters: Counters,
    extra: HashMap<u64, Extra>,
    kinds: Kinds,
    buf: LineBuf,
    next_request: u64,
}

impl Inner {
    fn at(&self, now: f64) -> Instant {
        let d = now - self.epoch;
        if d.is_finite() && d > 0.0 {
            self.base + Duration::try_from_secs_f64(d).unwrap_or(Duration::from_secs(1 << 40))
        } else {
            self.base
        }
    }

    pub(crate) fn secs(&self, at: Instant) -> f64 {
        self.epoch + at.saturating_duration_since(self.base).as_secs_f64()
    }

    /// Collect the registry's events (each counted as delivered at `at`, the instant of the
    /// call that made it); tell the caller whether there are any and whether the next
    /// deadline is now earlier than the one the timer sleeps on.
    fn flags(&mut self, at: Instant) -> u32 {
        while let Some(e) = self.registry.poll_event() {
            self.counters.record(&e, || at);
            if let Event::Killed(k) = &e {
                if let Some(x) = self.extra.get_mut(&k.id.as_u64()) {
                    x.in_flight.clear();
                }
            }
            self.pending.push(e);
        }
        let mut f = 0;
        if !self.pending.is_empty() {
            f |= EVENTS;
        }
        if let Some(t) = self.registry.poll_timeout() {
            if self.armed.is_none_or(|a| self.secs(t) < a) {
                f |= REARM;
            }
        }
        f
    }

    /// `None`: now on the real clock (`Instant::now()`, the same monotonic clock as Python's
    /// `time.monotonic()`), without a call back into Python for it.
    fn at_or_now(&self, now: Option<f64>) -> Instant {
        now.map_or_else(Instant::now, |n| self.at(n))
    }

    /// Feed the line in `buf`: `trusted` when this module wrote it (valid JSON by
    /// construction: skimmed, not validated again).
    fn feed(&mut self, id: u64, now: Option<f64>, trusted: bool) -> PyResult<u32> {
        let Some(sid) = self.sid(id) else {
            return Ok(0);
        };
        let at = self.at_or_now(now);
        let line = self.buf.bytes();
        match LineView::parse_validated(line).filter(|_| trusted) {
            Some(view) => {
                self.registry.observe(at, sid, &view);
            }
            None => {
                self.registry.observe_line(at, sid, line);
            }
        }
        Ok(self.flags(at))
    }

    pub(crate) fn new(epoch: f64, limits: Limits) -> Self {
        Inner {
            registry: Registry::new(limits),
            base: Instant::now(),
            epoch,
            armed: None,
            pending: Vec::new(),
            counters: Counters::default(),
            extra: HashMap::new(),
            kinds: Kinds::default(),
            buf: LineBuf::default(),
            next_request: 0,
        }
    }

    /// Register a session; `ceiling` overrides the watchdog's (None: the watchdog's).
    pub(crate) fn register(&mut self, now: f64, ceiling: Option<f64>) -> PyResult<(u64, u32)> {
        let config = match ceiling {
            None => SessionConfig::default(),
            Some(c) => SessionConfig::default().with_limits(
                self.registry
                    .limits()
                    .clone()
                    .with_ceiling(Some(seconds("hard_ceiling", c)?))
                    .map_err(|e| {
                        let mut e = e;
                        e.option = "hard_ceiling";
                        value_error(e)
                    })?,
            ),
        };
        let at = self.at(now);
        let sid = self.registry.register(at, config);
        let id = sid.as_u64();
        self.extra.insert(
            id,
            Extra {
                sid,
                in_flight: Vec::new(),
            },
        );
        Ok((id, self.flags(at)))
    }

    /// Feed one message `query()` yielded (any SDK message object, a raw stream-json `dict`,
    /// or a raw line as `bytes`/`str`).
    pub(crate) fn observe(
        &mut self,
        id: u64,
        message: &Bound<'_, PyAny>,
        now: Option<f64>,
    ) -> PyResult<u32> {
        let (in_flight_end, trusted) = self.kinds.write_line(message, &mut self.buf)?;
        if in_flight_end {
            // A result ends the turn: no tool is in flight any more.
            if let Some(x) = self.extra.get_mut(&id) {
                x.in_flight.clear();
            }
        }
        self.feed(id, now, trusted)
    }

    /// A tool boundary by hand (`activity(tool_name)`): progress; a write tool's completes
    /// the first write.
    pub(crate) fn activity(&mut self, id: u64, tool_name: Option<&str>, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        self.registry.tool_boundary(at, sid, tool_name);
        self.flags(at)
    }

    /// A stream frame by hand: progress.
    pub(crate) fn stream(&mut self, id: u64, now: f64) -> PyResult<u32> {
        self.buf
            .set(br#"{"type":"stream_event","event":{"type":"content_block_delta"}}"#);
        self.feed(id, Some(now), true)
    }

    /// A keep-alive by hand (a sign of life, not progress; a settled session stays settled).
    pub(crate) fn heartbeat(&mut self, id: u64, now: f64) -> PyResult<u32> {
        self.buf.set(br#"{"type":"tool_progress"}"#);
        self.feed(id, Some(now), true)
    }

    /// Settle by hand, as a result would.
    pub(crate) fn settle(&mut self, id: u64, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        self.registry.settle(at, sid);
        self.flags(at)
    }

    /// A tool started (`PreToolUse`): progress, and until its end the session counts as
    /// receiving the CLI's tool heartbeats (the idle rule is held off; the no-progress cap and
    /// the ceiling run).
    pub(crate) fn tool_start(&mut self, id: u64, tool_use_id: &str, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        self.registry.tool_boundary(at, sid, None);
        if self.registry.kill(sid).is_some() {
            return self.flags(at);
        }
        if let Some(x) = self.extra.get_mut(&id) {
            if x.in_flight.len() < 64 && !x.in_flight.iter().any(|t| &**t == tool_use_id) {
                x.in_flight.push(tool_use_id.into());
            }
        }
        self.flags(at)
    }

    /// A tool ended (`PostToolUse` with its name, `PostToolUseFailure` with none).
    pub(crate) fn tool_end(
        &mut self,
        id: u64,
        tool_use_id: &str,
        tool_name: Option<&str>,
        now: f64,
    ) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        // The heartbeats it had until now count first (the tool was in flight until `now`).
        self.refresh_one(id, at);
        if let Some(x) = self.extra.get_mut(&id) {
            x.in_flight.retain(|t| &**t != tool_use_id);
        }
        self.registry.tool_boundary(at, sid, tool_name);
        self.flags(at)
    }

    /// A permission request began (a wrapped `can_use_tool` was called): a human wait, the
    /// idle and no-progress clocks stand still until it ends. Returns the request id.
    pub(crate) fn permission_begin(&mut self, id: u64, now: f64) -> PyResult<(String, u32)> {
        self.next_request += 1;
        let rid = format!("py-{}", self.next_request);
        self.buf.set(
            format!(
                r#"{{"type":"control_request","request_id":"{rid}","request":{{"subtype":"can_use_tool"}}}}"#
            )
            .as_bytes(),
        );
        let f = self.feed(id, Some(now), true)?;
        Ok((rid, f))
    }

    /// The permission request `rid` was answered.
    pub(crate) fn permission_end(&mut self, id: u64, rid: &str, now: f64) -> u32 {
        let Some(sid) = self.sid(id) else {
            return 0;
        };
        let at = self.at(now);
        let line = format!(r#"{{"type":"control_response","response":{{"request_id":"{rid}"}}}}"#);
        if let Ok(view) = watchdog_core::LineView::parse(line.as_bytes()) {
            self.registry.observe_input(at, sid, &view);
        }
        self.flags(at)
    }

    /// The stream ended: returns the outcome's name.
    pub(crate) fn end(&mut self, id: u64, now: f64) -> (Option<String>, u32) {
        let Some(sid) = self.sid(id) else {
            return (None, 0);
        };
        let at = self.at(now);
        let outcome = self.registry.end(at, sid).map(|o| o.as_str().to_owned());
        if let Some(x) = self.extra.get_mut(&id) {
            x.in_flight.clear();
        }
        (outcome, self.flags(at))
    }

    /// Forget the session; returns its kill, if any.
    pub(crate) fn unregister<'py>(
        &mut self,
        py: Python<'py>,
        id: u64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(x) = self.extra.remove(&id) else {
            return Ok(None);
        };
        match self.registry.unregister(x.sid) {
            Some(k) => Ok(Some(self.kill_tuple(py, &k)?)),
            None => Ok(None),
        }
    }

    /// Forget every session.
    pub(crate) fn clear(&mut self) {
        self.registry.clear();
        self.extra.clear();
        self.pending.clear();
    }

    /// The kill of a session, if killed.
    pub(crate) fn kill<'py>(
        &self,
        py: Python<'py>,
        id: u64,
    ) -> PyResult<Option<Bound<'py, PyTuple>>> {
        let Some(sid) = self.sid(id) else {
            return Ok(None);
        };
        match self.registry.kill(sid) {
            Some(k) => Ok(Some(self.kill_tuple(py, k)?)),
            None => Ok(None),
        }
    }

    /// The next deadline of any session, in clock seconds (None: nothing is due ever).
    pub(crate) fn poll_timeout(&self) -> Option<f64> {
        self.registry.poll_timeout().map(|t| self.secs(t))
    }

    /// The timer sleeps until `at` (None: it does not sleep on a deadline).
    pub(crate) fn set_armed(&mut self, at: Option<f64>) {
        self.armed = at;
    }

    /// Process everything due at `now`. A session with a tool in flight first counts as
    /// having had the CLI's heartbeat at `now` (the idle rule does not apply to it).
    pub(crate) fn handle_timeout(&mut self, now: f64) -> u32 {
        let at = self.at(now);
        let ids: Vec<u64> = self
            .extra
            .iter()
            .filter(|(_, x)| !x.in_flight.is_empty())
            .map(|(id, _)| *id)
            .collect();
        for id in ids {
            self.refresh_one(id, at);
        }
        self.registry.handle_timeout(at);
        self.flags(at)
    }

    /// The rate-limit utilization (highest active window), or None.
    pub(crate) fn set_utilization(&mut self, utilization: Option<f64>, now: f64) -> u32 {
        let at = self.at(now);
        if self.registry.utilization() != utilization {
            self.registry.set_utilization(at, utilization);
        }
        self.flags(at)
    }

    /// What this watchdog counted since it was made, and its gauges now.
    pub(crate) fn metrics(&self) -> Metrics {
        self.counters
            .snapshot(self.registry.len(), self.registry.utilization())
    }

    /// The registered sessions.
    pub(crate) fn __len__(&self) -> usize {
        self.registry.len()
    }

    fn sid(&self, id: u64) -> Option<SessionId> {
        self.extra.get(&id).map(|x| x.sid)
    }

    /// A session with a tool in flight had the CLI's heartbeat at `at` (counted before what
    /// is due at `at`, which then fires only if it still holds).
    fn refresh_one(&mut self, id: u64, at: Instant) {
        let Some(x) = self.extra.get(&id).filter(|x| !x.in_flight.is_empty()) else {
            return;
        };
        let sid = x.sid;
        if let Ok(view) = watchdog_core::LineView::parse(br#"{"type":"tool_progress"}"#) {
            self.registry.observe_waited(at, sid, Some(&view));
        }
    }
}
