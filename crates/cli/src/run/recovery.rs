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
    facts::ClaudeSessionId, recovery::Ledger, recovery::Recovery, recovery::TerminalFacts, Dialect,
};

use super::continuation::continuation_argv;
use super::host::{wall_ms, Host};
use super::host_signals::UserSig;
use crate::ledger_choice::{LedgerChoice, MarkerLedger};
use crate::policy_args::RecoveryArgs;
use crate::run_report::{
    ContinuedSummary, NoticeSummary, RecoveryResult, RecoverySummary, RunReport,
};
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
pub(crate) fn facts_of(run: &RunReport, role: ChainRole) -> TerminalFacts {
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
    Done(RecoveryResult, Box<RecoverySummary>),
    /// Continue the session once: the marker is claimed.
    Continue(Box<Continuation>),
}

/// A continuation recovery planned and claimed the marker for: what `run` needs to carry it
/// out ([`Continuation::argv`], the reset to wait for), and how to conclude it.
pub(crate) struct Continuation {
    /// The summary's `recovery` object so far.
    summary: RecoverySummary,
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
pub(crate) fn plan(settings: &Settings, first: &RunReport, host: &Host) -> Plan {
    let mut summary = RecoverySummary::default();
    let facts = facts_of(first, ChainRole::First);
    // Only a run that shows an enabled trigger and a session to resume touches the ledger.
    let expected = match to_continue(settings, first, &facts, host) {
        Ok(expected) => expected,
        Err(why) => {
            summary.skipped = Some(why);
            return Plan::Done(RecoveryResult::NotNeeded, Box::new(summary));
        }
    };
    let sid = expected.as_str().to_owned();
    let fail = |mut summary: RecoverySummary, why: String| {
        host.status
            .say(&format!("recovery: not continuing session {sid}: {why}"));
        summary.error = Some(why);
        Plan::Done(RecoveryResult::Error(None), Box::new(summary))
    };
    let ledger = match settings.ledger.open() {
        Ok(l) => l,
        Err(e) => return fail(summary, e),
    };
    let state = match ledger.get(sid.as_str()) {
        Ok(e) => LedgerState::from(e),
        Err(e) => return fail(summary, e.to_string()),
    };
    let decision = settings.recovery.decide(&facts, &state);
    let (trigger, prompt, wait_until) = match &decision {
        Decision::Nothing(skip) => {
            say_skip(settings, skip, host);
            summary.skipped = Some(skip.to_string());
            return Plan::Done(RecoveryResult::NotNeeded, Box::new(summary));
        }
        Decision::Notice(notice) => {
            let result = if give_notice(&ledger, &sid, notice, host, &mut summary) {
                RecoveryResult::Notice(None)
            } else {
                RecoveryResult::NotNeeded
            };
            return Plan::Done(result, Box::new(summary));
        }
        Decision::Continue {
            trigger,
            prompt,
            wait_until,
        } => (*trigger, prompt.clone(), *wait_until),
        // A decision this build does not know: nothing is done.
        _ => return Plan::Done(RecoveryResult::NotNeeded, Box::new(summary)),
    };
    let argv = match continuation_argv(&first.facts.argv, &sid, &prompt) {
        Ok(a) => a,
        Err(e) => return fail(summary, format!("{trigger}: {e}")),
    };
    let Some(marker) = Marker::for_continue(&facts, &decision) else {
        return fail(summary, "no marker can be made".into());
    };
    let marker_place = ledger.marker_place(&sid);
    match ledger.try_claim(sid.as_str(), &marker) {
        Ok(Claim::Won) => {}
        Ok(Claim::AlreadyClaimed) => {
            return fail(
                summary,
                "another run already continued this session (the marker exists)".into(),
            )
        }
        Err(e) => return fail(summary, e.to_string()),
    }
    summary.trigger = Some(trigger.as_str());
    summary.marker = marker_place;
    summary.waited_until_ms = wait_until;
    Plan::Continue(Box::new(Continuation {
        summary,
        sid,
        expected,
        trigger,
        argv,
        wait_until,
        ledger,
        recovery: settings.recovery.clone(),
    }))
}

/// The session the first run `first` (its `facts`) may continue, before the ledger is read:
/// one that shows an enabled trigger, with a session id, of Claude Code's. Otherwise why not
/// (said on the status line when worth saying).
fn to_continue(
    settings: &Settings,
    first: &RunReport,
    facts: &TerminalFacts,
    host: &Host,
) -> Result<ClaudeSessionId, String> {
    let ledger_check = settings.recovery.before_ledger(facts);
    // Continuing is Claude Code's `--resume`: another CLI's session that shows an enabled
    // trigger is left to its user, told how its own CLI resumes it (its id need not be one the
    // ledger takes: opencode's are not UUIDs).
    if matches!(ledger_check, Ok(_) | Err(Skip::NoSessionId)) {
        let sid = first
            .record
            .session_id
            .as_ref()
            .map_or("<id>", |s| s.as_str());
        if let Some(why) = other_dialect(first.record.dialect, sid) {
            host.status.say(&format!("recovery: not continuing: {why}"));
            return Err(why);
        }
    }
    match ledger_check {
        Ok((_, expected)) => Ok(expected),
        Err(skip) => {
            say_skip(settings, &skip, host);
            Err(skip.to_string())
        }
    }
}

/// Say why recovery does not continue, when the policy says it is worth saying.
fn say_skip(settings: &Settings, skip: &Skip, host: &Host) {
    if settings.recovery.worth_saying(skip) {
        host.status
            .say(&format!("recovery: not continuing: {skip}"));
    }
}

/// Why a session of `dialect` is not continued (`None`: Claude Code's, it may be), saying how
/// its own CLI continues it.
fn other_dialect(dialect: Dialect, sid: &str) -> Option<String> {
    let by_hand = match dialect {
        Dialect::Claude => return None,
        Dialect::Codex => format!("`codex exec resume {sid} \"…\"`"),
        Dialect::Opencode => format!("`opencode run --session {sid} \"…\"`"),
        _ => "its own CLI".to_owned(),
    };
    Some(format!(
        "recovery continues Claude Code sessions only, and this was an {} session ({sid}); \
         {by_hand} continues it",
        dialect.cli()
    ))
}

impl Continuation {
    /// The user's signal aborted the wait: nothing was continued.
    pub(crate) fn aborted(
        mut self,
        sig: UserSig,
        host: &Host,
    ) -> (RecoveryResult, RecoverySummary) {
        host.status.say(&format!(
            "recovery: the wait was aborted ({}); session {} is not continued",
            sig.name(),
            self.sid
        ));
        self.summary.aborted_wait = true;
        (RecoveryResult::NotContinued(self.trigger), self.summary)
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
    pub(crate) fn could_not_start(mut self) -> (RecoveryResult, RecoverySummary) {
        self.summary.error = Some("the continuation could not start".into());
        (RecoveryResult::Error(Some(self.trigger)), self.summary)
    }

    /// The continuation ran: its outcome, and the single notice if it hit a trigger again.
    pub(crate) fn conclude(
        mut self,
        cont: &RunReport,
        host: &Host,
    ) -> (RecoveryResult, RecoverySummary) {
        let done = RecoveryResult::Continued(self.trigger);
        let (sid, r) = (&self.sid, &mut self.summary);
        r.continued_outcome = Some(cont.record.outcome.as_str());
        r.continued = Some(ContinuedSummary {
            outcome_detail: outcome_fields(&cont.record.outcome),
            exit_code: cont.code,
            kill: cont.stopped_by().kill().map(|k| k.kind.as_str()),
            session_id: cont.record.session_id.clone(),
        });
        if let Some(other) = &cont.ours.session_mismatch {
            r.error = Some(format!("the continuation ran session {other:?}, not {sid}"));
            return (done, self.summary);
        }
        let facts = facts_of(cont, ChainRole::Continuation);
        match self.ledger.get(sid.as_str()).map(LedgerState::from) {
            Ok(state) => match self.recovery.decide(&facts, &state) {
                Decision::Notice(notice) => {
                    give_notice(&self.ledger, sid, &notice, host, r);
                }
                Decision::Nothing(skip) => r.after_continuation = Some(skip.to_string()),
                // A continuation is never continued: with the marker claimed this cannot happen
                // (nor is a decision this build does not know acted on).
                _ => {}
            },
            Err(e) => host
                .status
                .say(&format!("recovery: cannot read the marker of {sid}: {e}")),
        }
        (done, self.summary)
    }
}

/// Record the notice and, the first time only, show it (each line prefixed); whether it was
/// given now.
fn give_notice(
    ledger: &MarkerLedger,
    sid: &str,
    notice: &Notice,
    host: &Host,
    summary: &mut RecoverySummary,
) -> bool {
    match ledger.record_notice(sid) {
        Ok(true) => {
            let text = notice.to_string();
            for line in text.lines() {
                host.status.say(&format!("recovery: {line}"));
            }
            summary.notice = Some(NoticeSummary {
                session_id: notice.session_id.clone(),
                trigger: notice.trigger.as_str(),
                again: notice.again.as_str(),
                first: serde_json::to_value(&notice.first).unwrap_or(Value::Null),
                continued: serde_json::to_value(&notice.continued).unwrap_or(Value::Null),
                options: notice.options.iter().map(|o| o.describe(sid)).collect(),
                text,
            });
            true
        }
        Ok(false) => {
            summary.skipped = Some(Skip::AlreadyNoticed.to_string());
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
