//! Recovery in `run`: after the first run ends, [`plan`] decides (the core's pure
//! [`Recovery::decide`]) and claims the durable marker ([`FileLedger`]); `run` carries the
//! plan out (maybe a wait for a rate-limit reset, then the same session continued once through
//! the same supervised path), and the [`Continuation`] concludes it (the notice, if it hit a
//! trigger again).
//!
//! Every failure along the way (no session id, no state directory, an unreadable marker, a
//! command line whose prompt cannot be located, a lost claim) means: no continuation, and we
//! say why. A continued run that hits a trigger again gets the single notice, never a second
//! continuation.

use std::ffi::OsString;
use std::io::IsTerminal;
use std::time::Duration;

use serde_json::{json, Value};
use watchdog_core::recovery::{
    ChainRole, Claim, Decision, LedgerState, Marker, Notice, Skip, Trigger,
};
use watchdog_core::{
    facts::ClaudeSessionId, recovery::Ledger, recovery::Recovery, recovery::TerminalFacts,
};

use super::continuation::continuation_argv;
use super::finished::Finished;
use super::host::{wall_ms, Host};
use super::host_signals::UserSig;
use crate::ledger_choice::{LedgerChoice, MarkerLedger};
use crate::policy_args::RecoveryArgs;
use crate::run_report::RecoveryResult;
use crate::verdict::outcome_fields;
use watchdog_core::config::HumanDuration;

/// The recovery policy of one `run` and where its markers live.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The policy.
    pub recovery: Recovery,
    /// Where the markers live: a shared ledger, else the state directory.
    pub ledger: LedgerChoice,
}

/// The settings `args` describe.
pub(crate) fn settings(args: &RecoveryArgs) -> Settings {
    let mut recovery = Recovery::default()
        .with_trigger(Trigger::OutputLimit, !args.no_recover_output_limit)
        .with_trigger(Trigger::AfterKill, args.resume_after_kill)
        .with_trigger(Trigger::RateLimitWait, args.wait_for_reset)
        .with_reset_margin(args.reset_margin.get());
    // The flag's type is the rule: nothing left to reject.
    recovery.set_max_wait(args.max_wait);
    Settings {
        recovery,
        ledger: LedgerChoice {
            url: args.ledger.clone(),
            state_dir: args.state_dir.clone(),
        },
    }
}

/// The facts of a finished run, for the decision: `role` says whether `run` started it as
/// the continuation (after claiming the marker) or by itself.
pub(crate) fn facts_of(run: &Finished, role: ChainRole) -> TerminalFacts {
    let mut facts = TerminalFacts::from_record(&run.record, run.facts.ended_wall_ms)
        .with_role(role)
        .with_user_interrupt(run.ours.interrupted.is_some());
    // Our own output_blocked stop is a kill of that kind for recovery (never continued: the
    // reader takes nothing).
    if matches!(run.stopped_by(), crate::exit_code::StoppedBy::OutputBlocked) {
        facts.outcome = watchdog_core::Outcome::Killed {
            kind: watchdog_core::KillKind::OutputBlocked,
        };
    }
    facts
}

/// What recovery decided after the first run: the plan `run` carries out.
pub(crate) enum Plan {
    /// Nothing more runs: what recovery did, and the summary's `recovery` object saying why
    /// (a skip, the notice given, a marker that could not be claimed).
    Done(RecoveryResult, Value),
    /// Continue the session once: the marker is claimed.
    Continue(Box<Continuation>),
}

/// A continuation recovery planned and claimed the marker for: what `run` needs to carry it
/// out ([`Continuation::argv`], the reset to wait for), and how to conclude it.
pub(crate) struct Continuation {
    /// The summary's `recovery` object so far.
    json: Value,
    sid: String,
    /// The session the continuation must run (its `system/init` is checked).
    pub(crate) expected: ClaudeSessionId,
    trigger: Trigger,
    /// The continuation's command line (`claude --resume <sid> …`).
    pub(crate) argv: Vec<OsString>,
    /// Wait until this instant (epoch ms) first: a rate-limit window's reset.
    pub(crate) wait_until: Option<u64>,
    ledger: MarkerLedger,
    recovery: Recovery,
}

/// After the first run ended: the core's decision ([`Recovery::decide`]), the notice given when
/// it says so, and for a continuation the marker claimed. Nothing waits or runs here.
pub(crate) fn plan(settings: &Settings, first: &Finished, host: &Host) -> Plan {
    let mut json =
        json!({"trigger": null, "marker": null, "continued_outcome": null, "notice": null});
    let facts = facts_of(first, ChainRole::First);
    let say = |skip: &Skip| {
        if settings.recovery.worth_saying(skip) {
            host.status
                .say(&format!("recovery: not continuing: {skip}"));
        }
    };
    // Only a run that shows an enabled trigger and a session to resume touches the ledger.
    let expected = match settings.recovery.before_ledger(&facts) {
        Ok((_, expected)) => expected,
        Err(skip) => {
            say(&skip);
            json["skipped"] = json!(skip.to_string());
            return Plan::Done(RecoveryResult::NotNeeded, json);
        }
    };
    let sid = expected.as_str().to_owned();
    let fail = |mut json: Value, why: String| {
        host.status
            .say(&format!("recovery: not continuing session {sid}: {why}"));
        json["error"] = json!(why);
        Plan::Done(RecoveryResult::Error(None), json)
    };
    let ledger = match settings.ledger.open() {
        Ok(l) => l,
        Err(e) => return fail(json, e),
    };
    let state = match ledger.get(sid.as_str()) {
        Ok(e) => LedgerState::from(e),
        Err(e) => return fail(json, e.to_string()),
    };
    let decision = settings.recovery.decide(&facts, &state);
    let (trigger, prompt, wait_until) = match &decision {
        Decision::Nothing(skip) => {
            say(skip);
            json["skipped"] = json!(skip.to_string());
            return Plan::Done(RecoveryResult::NotNeeded, json);
        }
        Decision::Notice(notice) => {
            let result = if give_notice(&ledger, &sid, notice, host, &mut json) {
                RecoveryResult::Notice(None)
            } else {
                RecoveryResult::NotNeeded
            };
            return Plan::Done(result, json);
        }
        Decision::Continue {
            trigger,
            prompt,
            wait_until,
        } => (*trigger, prompt.clone(), *wait_until),
        // A decision this build does not know: nothing is done.
        _ => return Plan::Done(RecoveryResult::NotNeeded, json),
    };
    let argv = match continuation_argv(&first.facts.argv, &sid, &prompt) {
        Ok(a) => a,
        Err(e) => return fail(json, format!("{trigger}: {e}")),
    };
    let Some(marker) = Marker::for_continue(&facts, &decision) else {
        return fail(json, "no marker can be made".into());
    };
    let marker_place = ledger.marker_place(&sid);
    match ledger.try_claim(sid.as_str(), &marker) {
        Ok(Claim::Won) => {}
        Ok(Claim::AlreadyClaimed) => {
            return fail(
                json,
                "another run already continued this session (the marker exists)".into(),
            )
        }
        Err(e) => return fail(json, e.to_string()),
    }
    json["trigger"] = json!(trigger.as_str());
    json["marker"] = json!(marker_place);
    if let Some(until) = wait_until {
        json["waited_until_ms"] = json!(until);
    }
    Plan::Continue(Box::new(Continuation {
        json,
        sid,
        expected,
        trigger,
        argv,
        wait_until,
        ledger,
        recovery: settings.recovery.clone(),
    }))
}

impl Continuation {
    /// The user's signal aborted the wait: nothing was continued.
    pub(crate) fn aborted(mut self, sig: UserSig, host: &Host) -> (RecoveryResult, Value) {
        host.status.say(&format!(
            "recovery: the wait was aborted ({}); session {} is not continued",
            sig.name(),
            self.sid
        ));
        self.json["aborted_wait"] = json!(true);
        (RecoveryResult::NotContinued(self.trigger), self.json)
    }

    /// What the capture records where the continuation begins; says it begins.
    pub(crate) fn boundary(&self, host: &Host) -> Value {
        host.status.say(&format!(
            "recovery: {}: continuing session {} once (claude --resume)",
            self.trigger, self.sid
        ));
        json!({
            "recovery": self.trigger.as_str(),
            "session_id": self.sid,
            "argv": self.argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        })
    }

    /// The continuation could not be started.
    pub(crate) fn could_not_start(mut self) -> (RecoveryResult, Value) {
        self.json["error"] = json!("the continuation could not start");
        (RecoveryResult::Error(Some(self.trigger)), self.json)
    }

    /// The continuation ran: its outcome, and the single notice if it hit a trigger again.
    pub(crate) fn conclude(mut self, cont: &Finished, host: &Host) -> (RecoveryResult, Value) {
        let done = RecoveryResult::Continued(self.trigger);
        let (sid, r) = (&self.sid, &mut self.json);
        r["continued_outcome"] = json!(cont.record.outcome.as_str());
        r["continued"] = json!({
            "outcome_detail": outcome_fields(&cont.record.outcome),
            "exit_code": cont.code,
            "kill": cont.stopped_by().kill().map(|k| k.kind.as_str()),
            "session_id": cont.record.session_id,
        });
        if let Some(other) = &cont.ours.session_mismatch {
            r["error"] = json!(format!("the continuation ran session {other:?}, not {sid}"));
            return (done, self.json);
        }
        let facts = facts_of(cont, ChainRole::Continuation);
        match self.ledger.get(sid.as_str()).map(LedgerState::from) {
            Ok(state) => match self.recovery.decide(&facts, &state) {
                Decision::Notice(notice) => {
                    give_notice(&self.ledger, sid, &notice, host, r);
                }
                Decision::Nothing(skip) => r["after_continuation"] = json!(skip.to_string()),
                // A continuation is never continued: with the marker claimed this cannot happen
                // (nor is a decision this build does not know acted on).
                _ => {}
            },
            Err(e) => host
                .status
                .say(&format!("recovery: cannot read the marker of {sid}: {e}")),
        }
        (done, self.json)
    }
}

/// Record the notice and, the first time only, show it (each line prefixed); whether it was
/// given now.
fn give_notice(
    ledger: &MarkerLedger,
    sid: &str,
    notice: &Notice,
    host: &Host,
    json_out: &mut Value,
) -> bool {
    match ledger.record_notice(sid) {
        Ok(true) => {
            let text = notice.to_string();
            for line in text.lines() {
                host.status.say(&format!("recovery: {line}"));
            }
            json_out["notice"] = json!({
                "session_id": notice.session_id,
                "trigger": notice.trigger.as_str(),
                "again": notice.again.as_str(),
                "first": serde_json::to_value(&notice.first).unwrap_or(Value::Null),
                "continued": serde_json::to_value(&notice.continued).unwrap_or(Value::Null),
                "options": notice.options.iter().map(|o| o.describe(sid)).collect::<Vec<_>>(),
                "text": text,
            });
            true
        }
        Ok(false) => {
            json_out["skipped"] = json!(Skip::AlreadyNoticed.to_string());
            false
        }
        Err(e) => {
            host.status
                .say(&format!("recovery: cannot record the notice of {sid}: {e}"));
            false
        }
    }
}

/// Wait until `until_ms` (epoch ms): a countdown on a terminal, one message otherwise.
/// A SIGINT or SIGTERM aborts the wait.
pub(crate) async fn wait_for(
    until_ms: u64,
    sid: &str,
    status: bool,
    host: &mut Host,
) -> Result<(), UserSig> {
    let tty = status && std::io::stderr().is_terminal();
    let left = |now: u64| Duration::from_millis(until_ms.saturating_sub(now));
    let iso = watchdog_core::format_iso_ms(until_ms);
    if !tty {
        host.status.say(&format!(
            "recovery: rate limited; waiting {} (until {iso}) to continue session {sid}; \
             Ctrl-C aborts",
            HumanDuration(left(wall_ms()))
        ));
    }
    loop {
        let now = wall_ms();
        if now >= until_ms {
            break;
        }
        if tty {
            let secs = Duration::from_secs(left(now).as_secs());
            host.status.write_raw(
                format!(
                    "\r\x1b[2Kagent-watchdog: rate limited; continuing session {sid} in {} \
                     (Ctrl-C aborts)",
                    HumanDuration(secs)
                )
                .as_bytes(),
            );
        }
        let step = left(now).min(Duration::from_secs(1));
        tokio::select! {
            () = tokio::time::sleep(step) => {}
            sig = host.signals.recv() => {
                if tty {
                    host.status.write_raw(b"\n");
                }
                return Err(sig);
            }
        }
    }
    if tty {
        host.status.write_raw(b"\n");
    }
    Ok(())
}
