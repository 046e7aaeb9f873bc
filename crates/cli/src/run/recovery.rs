//! Recovery in `run`: after the first run ends, decide (the core's pure
//! [`Recovery::decide`]), claim the durable marker ([`FileLedger`]), maybe wait for a
//! rate-limit reset, and continue the same session once through the same supervised path.
//!
//! Every failure along the way (no session id, no state directory, an unreadable marker, a
//! command line whose prompt cannot be located, a lost claim) means: no continuation, and we
//! say why. A continued run that hits a trigger again gets the single notice, never a second
//! continuation.

use std::io::IsTerminal;
use std::path::PathBuf;
use std::time::Duration;

use agent_sdk_watchdog::FileLedger;
use serde_json::{json, Value};
use watchdog_core::capture::Record;
use watchdog_core::recovery::{
    trigger_of, validate_session_id, ChainRole, Claim, Decision, LedgerState, Marker, Notice, Skip,
    Trigger,
};
use watchdog_core::{Ledger, Recovery, TerminalFacts};

use super::config::RunConfig;
use super::continuation::continuation_argv;
use super::finished::Finished;
use super::host::{wall_ms, Host};
use super::host_signals::UserSig;
use super::supervise::supervise;
use crate::policy_args::RecoveryArgs;
use crate::verdict::{ms, outcome_fields};
use watchdog_core::config::format_duration;

/// The recovery policy of one `run` and where its markers live.
#[derive(Debug, Clone)]
pub struct Settings {
    /// The policy.
    pub recovery: Recovery,
    /// The marker directory (`None`: the default state directory).
    pub state_dir: Option<PathBuf>,
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
        state_dir: args.state_dir.clone(),
    }
}

/// What recovery did after the first run.
pub(crate) struct Recovered {
    /// The summary's `recovery` object.
    pub(crate) json: Value,
    /// The continued run, if one ran.
    pub(crate) continued: Option<Finished>,
    /// The exit code when it differs from the runs' (an aborted wait, a continuation that
    /// could not start).
    pub(crate) code: Option<i32>,
}

/// The facts of a finished run, for the decision: `role` says whether `run` started it as
/// the continuation (after claiming the marker) or by itself.
pub(crate) fn facts_of(run: &Finished, role: ChainRole) -> TerminalFacts {
    let r = &run.record;
    let mut facts = TerminalFacts::new(r.outcome.clone(), run.ended_wall_ms).with_role(role);
    if let Some(id) = &r.session_id {
        facts = facts.with_session_id(id.clone());
    }
    if let Some(result) = &r.result {
        facts = facts.with_result(result);
    }
    facts
        .with_rate_limits(&r.rate_limits)
        .with_user_interrupt(run.ours.interrupted.is_some())
}

fn open_ledger(settings: &Settings) -> Result<FileLedger, String> {
    match &settings.state_dir {
        Some(dir) => FileLedger::open(dir.clone()),
        None => FileLedger::open_default(),
    }
    .map_err(|e| e.to_string())
}

/// Skips worth telling the user about: a trigger was seen, but nothing will be done.
fn worth_saying(skip: &Skip) -> bool {
    matches!(
        skip,
        Skip::ResetUnknown
            | Skip::WaitTooLong { .. }
            | Skip::CreditsRequired
            | Skip::NoSessionId
            | Skip::ContinuedElsewhere
    )
}

/// After the first run ended: decide, and act (continue once, or give the notice).
pub(crate) async fn after(
    cfg: &RunConfig,
    settings: &Settings,
    first: &Finished,
    host: &mut Host,
) -> Recovered {
    let mut r = Recovered {
        json: json!({"trigger": null, "marker": null, "continued_outcome": null, "notice": null}),
        continued: None,
        code: None,
    };
    let facts = facts_of(first, ChainRole::First);
    // Only a run that shows an enabled trigger touches the ledger.
    match trigger_of(&facts) {
        Ok(t) if settings.recovery.is_enabled(t) => {}
        Ok(t) => {
            r.json["skipped"] = json!(Skip::Disabled(t).to_string());
            return r;
        }
        Err(skip) => {
            if worth_saying(&skip) {
                host.status
                    .say(&format!("recovery: not continuing: {skip}"));
            }
            r.json["skipped"] = json!(skip.to_string());
            return r;
        }
    }
    // The ledger keys markers by UUID: a session id of another shape is not resumed.
    let Some(sid) = facts
        .session_id
        .as_ref()
        .map(|id| id.as_str().to_owned())
        .filter(|id| validate_session_id(id).is_ok())
    else {
        let skip = Skip::NoSessionId;
        host.status
            .say(&format!("recovery: not continuing: {skip}"));
        r.json["skipped"] = json!(skip.to_string());
        return r;
    };
    let fail = |r: &mut Recovered, host: &Host, why: String| {
        host.status
            .say(&format!("recovery: not continuing session {sid}: {why}"));
        r.json["error"] = json!(why);
    };
    let ledger = match open_ledger(settings) {
        Ok(l) => l,
        Err(e) => {
            fail(&mut r, host, e);
            return r;
        }
    };
    let state = match ledger.get(&sid) {
        Ok(e) => LedgerState::from(e),
        Err(e) => {
            fail(&mut r, host, e.to_string());
            return r;
        }
    };
    let decision = settings.recovery.decide(&facts, &state);
    let (trigger, prompt, wait_until) = match &decision {
        Decision::Nothing(skip) => {
            if worth_saying(skip) {
                host.status
                    .say(&format!("recovery: not continuing: {skip}"));
            }
            r.json["skipped"] = json!(skip.to_string());
            return r;
        }
        Decision::Notice(notice) => {
            give_notice(&ledger, &sid, notice, host, &mut r.json);
            return r;
        }
        Decision::Continue {
            trigger,
            prompt,
            wait_until,
        } => (*trigger, prompt.clone(), *wait_until),
    };
    let argv = match continuation_argv(&first.argv, &sid, &prompt) {
        Ok(a) => a,
        Err(e) => {
            fail(&mut r, host, format!("{trigger}: {e}"));
            return r;
        }
    };
    let Some(marker) = Marker::for_continue(&facts, &decision) else {
        fail(&mut r, host, "no marker can be made".into());
        return r;
    };
    let marker_path = ledger.marker_path(&sid).ok();
    match ledger.try_claim(&sid, &marker) {
        Ok(Claim::Won) => {}
        Ok(Claim::AlreadyClaimed) => {
            fail(
                &mut r,
                host,
                "it was already continued once (the marker exists)".into(),
            );
            return r;
        }
        Err(e) => {
            fail(&mut r, host, e.to_string());
            return r;
        }
    }
    r.json["trigger"] = json!(trigger.as_str());
    r.json["marker"] = json!(marker_path.map(|p| p.display().to_string()));
    if let Some(until) = wait_until {
        r.json["waited_until_ms"] = json!(until);
        if let Err(sig) = wait_for(until, &sid, cfg.status, host).await {
            host.status.say(&format!(
                "recovery: the wait was aborted ({}); session {sid} is not continued",
                sig.name()
            ));
            r.json["aborted_wait"] = json!(true);
            r.code = Some(sig.exit_code());
            return r;
        }
    }
    host.status.say(&format!(
        "recovery: {trigger}: continuing session {sid} once (claude --resume)"
    ));
    host.recorder.write(
        ms(first.duration),
        Record::Boundary(json!({
            "recovery": trigger.as_str(),
            "session_id": sid,
            "argv": argv.iter().map(|a| a.to_string_lossy().into_owned()).collect::<Vec<_>>(),
        })),
    );
    let cont = match supervise(cfg, &argv, host, facts.session_id.as_ref()).await {
        Ok(c) => c,
        Err(code) => {
            r.json["error"] = json!("the continuation could not start");
            r.code = Some(code);
            return r;
        }
    };
    r.json["continued_outcome"] = json!(cont.record.outcome.as_str());
    r.json["continued"] = json!({
        "outcome_detail": outcome_fields(&cont.record.outcome),
        "exit_code": cont.code,
        "kill": cont.kill().map(|k| k.kind.as_str()),
        "session_id": cont.record.session_id,
    });
    if let Some(other) = &cont.ours.session_mismatch {
        let why = format!("the continuation ran session {other:?}, not {sid}");
        r.json["error"] = json!(why);
        r.continued = Some(cont);
        return r;
    }
    // The continued run: the single notice if it hit a trigger again.
    let facts = facts_of(&cont, ChainRole::Continuation);
    match ledger.get(&sid).map(LedgerState::from) {
        Ok(state) => match settings.recovery.decide(&facts, &state) {
            Decision::Notice(notice) => give_notice(&ledger, &sid, &notice, host, &mut r.json),
            Decision::Nothing(skip) => r.json["after_continuation"] = json!(skip.to_string()),
            // A continuation is never continued: with the marker claimed this cannot happen.
            Decision::Continue { .. } => {}
        },
        Err(e) => host
            .status
            .say(&format!("recovery: cannot read the marker of {sid}: {e}")),
    }
    r.continued = Some(cont);
    r
}

/// Record the notice and, the first time only, show it (each line prefixed).
fn give_notice(ledger: &FileLedger, sid: &str, notice: &Notice, host: &Host, json_out: &mut Value) {
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
        }
        Ok(false) => json_out["skipped"] = json!(Skip::AlreadyNoticed.to_string()),
        Err(e) => host
            .status
            .say(&format!("recovery: cannot record the notice of {sid}: {e}")),
    }
}

/// Wait until `until_ms` (epoch ms): a countdown on a terminal, one message otherwise.
/// A SIGINT or SIGTERM aborts the wait.
async fn wait_for(until_ms: u64, sid: &str, status: bool, host: &mut Host) -> Result<(), UserSig> {
    let tty = status && std::io::stderr().is_terminal();
    let left = |now: u64| Duration::from_millis(until_ms.saturating_sub(now));
    let iso = watchdog_core::wall::format_iso_ms(until_ms);
    if !tty {
        host.status.say(&format!(
            "recovery: rate limited; waiting {} (until {iso}) to continue session {sid}; \
             Ctrl-C aborts",
            format_duration(left(wall_ms()))
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
                    format_duration(secs)
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
