//! The host's control requests waiting for their answers: a `control_request` the host wrote
//! to the child's stdin (`interrupt`, `get_context_usage`, `set_permission_mode`, …) is
//! answered by a `control_response` on stdout with its `request_id`. An SDK's `request()`
//! resolves only then, so one Claude Code never answers is a host that waits for ever: each
//! request is bounded ([`Limits::control_timeout`](crate::Limits::control_timeout)).
//! `initialize` is not (the SDKs bound it themselves, and a CLI that never prints is the
//! startup deadline's); a `system/control_request_progress` for a request (a long one, such as
//! a side question) restarts its clock; the host's `control_cancel_request` withdraws it.
//! The child's own requests (a permission ask, `can_use_tool`) are the human waits', not
//! these.

use super::{Cold, Host, Session, NEVER};
use crate::event::RequestNote;

/// At most this many requests are remembered per session (a hostile host cannot grow a
/// session without bound; extra ones are not bounded).
const MAX_ASKED: usize = 64;

/// The longest `request_id` or subtype kept, in bytes (longer ones are cut).
const MAX_ID: usize = 200;

/// One host control request waiting for its answer.
#[derive(Debug, Clone)]
pub(crate) struct Asked {
    /// Its `request_id`.
    pub id: Box<str>,
    /// Its `request.subtype`.
    pub subtype: Box<str>,
    /// When it was sent, or last showed progress.
    pub since: u64,
}

/// `s` cut to at most [`MAX_ID`] bytes at a character boundary.
fn cut(s: &str) -> Box<str> {
    let mut end = s.len().min(MAX_ID);
    while !s.is_char_boundary(end) {
        end -= 1;
    }
    Box::from(&s[..end])
}

impl Session {
    /// The host sent control request `id` of `subtype` at `now` (`initialize` is not
    /// bounded; a repeated id restarts its clock).
    pub(crate) fn note_asked(&mut self, c: &mut Cold, id: &str, subtype: &str, now: u64) {
        if subtype == "initialize" {
            return;
        }
        let id = cut(id);
        let w = c.waits_or_new();
        if let Some(a) = w.asked.iter_mut().find(|a| a.id == id) {
            a.since = now;
        } else if w.asked.len() < MAX_ASKED {
            w.asked.push(Asked {
                id,
                subtype: cut(subtype),
                since: now,
            });
        }
        self.host.insert(Host::Asked);
    }

    /// A line about request `id` at `now`: its answer (`answered`: a `control_response`, or
    /// the host's own `control_cancel_request`) ends its wait; its progress restarts its
    /// clock.
    pub(crate) fn note_answer(&mut self, c: &mut Cold, id: &str, answered: bool, now: u64) {
        if !self.host.has(Host::Asked) {
            return;
        }
        let Some(w) = c.waits_mut() else { return };
        if answered {
            w.asked.retain(|a| &*a.id != id);
        } else if let Some(a) = w.asked.iter_mut().find(|a| &*a.id == id) {
            a.since = now;
        }
        if w.asked.is_empty() {
            self.host.remove(Host::Asked);
            c.free_idle_work();
        }
    }

    /// When the oldest request still waiting was sent (or last showed progress), or
    /// [`NEVER`].
    pub(crate) fn asked_since(&self, c: &Cold) -> u64 {
        if !self.host.has(Host::Asked) {
            return NEVER;
        }
        c.waits()
            .and_then(|w| w.asked.iter().map(|a| a.since).min())
            .unwrap_or(NEVER)
    }

    /// The requests waiting, as a receipt states them at `at`, the oldest first.
    pub(crate) fn request_notes(&self, c: &Cold, at: u64) -> Vec<RequestNote> {
        if !self.host.has(Host::Asked) {
            return Vec::new();
        }
        let mut asked: Vec<&Asked> = c
            .waits()
            .map(|w| w.asked.iter().collect())
            .unwrap_or_default();
        asked.sort_by_key(|a| a.since);
        asked
            .into_iter()
            .map(|a| RequestNote {
                request_id: a.id.to_string(),
                subtype: a.subtype.to_string(),
                waited: std::time::Duration::from_nanos(at.saturating_sub(a.since)),
            })
            .collect()
    }
}
