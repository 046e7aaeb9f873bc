//! The host's own control requests (field report N3): a `control_request` the host writes to
//! the child's stdin (`interrupt`, `get_context_usage`, `set_permission_mode`, …) that Claude
//! Code never answers leaves an SDK's `request()` waiting for ever. Each is bounded by
//! `control_timeout` (kill `unanswered`, the receipt naming the request), whatever the
//! session does meanwhile; its `control_response` ends the wait, the host's
//! `control_cancel_request` withdraws it, a `system/control_request_progress` restarts its
//! clock. `initialize` is not bounded here, and the child's own requests (a permission ask)
//! stay human waits. Virtual time only.

mod common;

use std::time::Duration;

use common::{lines as l, min, sec, H};
use watchdog_core::{Event, Kill, KillKind, Limits, SessionConfig, SessionId};

fn limits() -> Limits {
    Limits::default()
        .with_idle(min(10.0))
        .and_then(|l| l.with_extend_factor(1.0))
        .and_then(|l| l.with_linger(min(30.0)))
        .unwrap()
        .with_control_timeout(min(2.0))
}

fn session(h: &mut H, limits: Limits, host_input: bool) -> SessionId {
    let cfg = SessionConfig::default()
        .with_limits(limits)
        .with_host_input(host_input);
    h.r.register(h.t0, cfg)
}

fn request(rid: &str, subtype: &str) -> String {
    format!(
        r#"{{"type":"control_request","request_id":"{rid}","request":{{"subtype":"{subtype}"}}}}"#
    )
}

/// Claude Code's answer (a stdout line).
fn answer(rid: &str) -> String {
    format!(
        r#"{{"type":"control_response","response":{{"subtype":"success","request_id":"{rid}","response":{{}}}}}}"#
    )
}

const USER: &str = r#"{"type":"user","session_id":"","parent_tool_use_id":null,"message":{"role":"user","content":[{"type":"text","text":"go"}]}}"#;

/// The kills until `until`, each with its own instant.
fn kills(h: &mut H, until: Duration) -> Vec<(Duration, Kill)> {
    h.run_until(until)
        .into_iter()
        .filter_map(|(_, e)| match e {
            Event::Killed(k) => Some((h.off(&k), k)),
            _ => None,
        })
        .collect()
}

/// A streaming-input session that started its first turn at 0 and printed its init.
fn started(h: &mut H, limits: Limits) -> SessionId {
    let id = session(h, limits, true);
    h.input(Duration::ZERO, id, &request("r_init", "initialize"));
    h.line(sec(0.5), id, &answer("r_init"));
    h.input(sec(1.0), id, USER);
    h.line(sec(1.2), id, l::INIT);
    id
}

#[test]
fn every_kind_of_host_request_left_unanswered_is_killed_naming_it_in_every_phase() {
    for subtype in [
        "interrupt",
        "get_context_usage",
        "set_permission_mode",
        "mcp_status",
    ] {
        // Mid-turn with progress flowing (the idle clock never fires), waiting for the host
        // after a result (no clock ran before), and settled in -p-like fashion with the input
        // closed (the linger is 30 m).
        for phase in ["working", "waiting_for_host", "input_closed"] {
            let mut h = H::default();
            let id = started(&mut h, limits());
            match phase {
                "working" => {}
                _ => {
                    h.line(sec(2.0), id, l::ASSISTANT_TEXT);
                    h.line(sec(2.0), id, l::RESULT_OK);
                }
            }
            if phase == "input_closed" {
                h.r.input_closed(h.at(sec(2.0)), id);
            }
            h.input(sec(3.0), id, &request("r1", subtype));
            if phase == "working" {
                for s in (4..300).step_by(5) {
                    h.line(sec(f64::from(s)), id, l::DELTA);
                }
            }
            let k = kills(&mut h, min(60.0));
            assert_eq!(k.len(), 1, "{subtype} {phase}: {k:?}");
            let (at, kill) = &k[0];
            assert_eq!(
                (*at, kill.kind),
                (sec(123.0), KillKind::Unanswered),
                "{subtype} {phase}"
            );
            let r = &kill.outstanding.as_ref().unwrap().requests;
            assert_eq!(r.len(), 1);
            assert_eq!(
                (r[0].request_id.as_str(), r[0].subtype.as_str(), r[0].waited),
                ("r1", subtype, min(2.0))
            );
        }
    }
}

#[test]
fn an_answer_a_cancel_or_progress_ends_or_restarts_the_wait() {
    // Answered in time: nothing. Withdrawn by the host: nothing. Progress at 100 s: the
    // bound counts from there. Answered after the bound: too late.
    // (name, the lines at their seconds: `true` for a host line, the kill expected)
    type Step = (f64, bool, String);
    let cases: [(&str, &[Step], Option<f64>); 4] = [
        ("answered", &[(60.0, false, answer("r1"))], None),
        (
            "cancelled",
            &[(
                60.0,
                true,
                r#"{"type":"control_cancel_request","request_id":"r1"}"#.to_string(),
            )],
            None,
        ),
        (
            "progress",
            &[(
                100.0,
                false,
                r#"{"type":"system","subtype":"control_request_progress","request_id":"r1","status":"api_retry","session_id":"s"}"#.to_string(),
            )],
            Some(220.0),
        ),
        ("late", &[(200.0, false, answer("r1"))], Some(123.0)),
    ];
    for (name, steps, want) in cases {
        let mut h = H::default();
        let id = started(&mut h, limits());
        h.line(sec(2.0), id, l::RESULT_OK);
        h.input(sec(3.0), id, &request("r1", "get_context_usage"));
        let mut k = Vec::new();
        for (at, stdin, line) in steps {
            k.extend(kills(&mut h, sec(*at)));
            if *stdin {
                h.input(sec(*at), id, line);
            } else {
                h.line(sec(*at), id, line);
            }
        }
        k.extend(kills(&mut h, min(60.0)));
        assert_eq!(
            k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
            want.map(|t| (sec(t), KillKind::Unanswered))
                .into_iter()
                .collect::<Vec<_>>(),
            "{name}"
        );
    }
}

#[test]
fn the_oldest_request_bounds_and_each_is_named() {
    let mut h = H::default();
    let id = started(&mut h, limits());
    h.line(sec(2.0), id, l::RESULT_OK);
    h.input(sec(10.0), id, &request("a", "interrupt"));
    h.input(sec(20.0), id, &request("b", "get_context_usage"));
    h.line(sec(30.0), id, &answer("a"));
    let k = kills(&mut h, min(60.0));
    assert_eq!(
        k.iter().map(|(t, k)| (*t, k.kind)).collect::<Vec<_>>(),
        [(sec(140.0), KillKind::Unanswered)]
    );
    let r = &k[0].1.outstanding.as_ref().unwrap().requests;
    assert_eq!(
        r.iter().map(|r| r.request_id.as_str()).collect::<Vec<_>>(),
        ["b"]
    );
}

#[test]
fn initialize_and_the_childs_own_requests_are_not_bounded_here() {
    // The host's initialize is the SDK's to bound (and a CLI that never prints is the
    // startup deadline's); here the CLI printed a line first.
    let mut h = H::default();
    let id = session(&mut h, limits(), true);
    h.line(sec(0.1), id, l::INIT);
    h.line(sec(0.2), id, l::RESULT_OK);
    h.input(sec(1.0), id, &request("r_init", "initialize"));
    assert!(kills(&mut h, min(120.0)).is_empty());
    // A permission ask of the child, never answered: a human wait, however long.
    let mut h = H::default();
    let id = started(&mut h, limits());
    h.line(sec(2.0), id, &l::can_use_tool("p1"));
    assert!(kills(&mut h, min(120.0)).is_empty());
    // The host's answer to it (a control_response on stdin) starts no bound either.
    h.input(min(120.0), id, &l::control_response("p1"));
    h.line(min(120.0), id, l::RESULT_OK);
    assert!(kills(&mut h, min(240.0)).is_empty());
}

#[test]
fn a_zero_control_timeout_turns_the_bound_off() {
    let mut h = H::default();
    let id = started(&mut h, limits().with_control_timeout(Duration::ZERO));
    h.line(sec(2.0), id, l::RESULT_OK);
    h.input(sec(3.0), id, &request("r1", "interrupt"));
    assert!(kills(&mut h, min(600.0)).is_empty());
}

#[test]
fn each_session_has_its_own_bound_and_its_own_task_silence() {
    // Two sessions of one registry (default 2 m) with their own bounds: each is its own
    // policy (equal limits share one; these differ only in the new options).
    let mut h = H::default();
    let fast = Limits::default().with_control_timeout(sec(3.0));
    let quiet = Limits::default()
        .with_control_timeout(sec(5.0))
        .with_task_silence(Some(min(30.0)))
        .unwrap();
    let a =
        h.r.register(h.t0, SessionConfig::default().with_limits(fast));
    let b =
        h.r.register(h.t0, SessionConfig::default().with_limits(quiet));
    let c = h.r.register(h.t0, SessionConfig::default());
    for id in [a, b, c] {
        h.line(sec(0.1), id, l::INIT);
        h.input(sec(0.2), id, &request("r1", "interrupt"));
    }
    let mut k: Vec<(watchdog_core::SessionId, Duration)> = kills(&mut h, min(10.0))
        .into_iter()
        .map(|(t, k)| (k.id, t))
        .collect();
    k.sort_by_key(|(_, t)| *t);
    assert_eq!(k, [(a, sec(3.2)), (b, sec(5.2)), (c, sec(120.2))]);
}
