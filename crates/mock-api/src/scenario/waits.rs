//! Scenarios where the model declares a wait: a `ScheduleWakeup`, a `CronCreate` job, a
//! `Monitor` (Claude Code 2.1.332's tools). Each answers the turn Claude Code starts by itself
//! when the wait comes due (the wakeup's or job's prompt, the monitor's event), found in the
//! messages after the last reply ([`Matcher::TailContains`]), so it works in `-p` and in
//! streaming-input mode alike.
//!
//! Measured on 2.1.332: `-p` keeps the process open for a `ScheduleWakeup` and fires it (at
//! the next whole minute at least 60 s away), exits right after its `result` with a
//! `CronCreate` job pending (the job is dropped), and runs a `Monitor` as a background task,
//! taking one turn per event; in streaming-input mode a one-shot job fires at its minute.

use std::time::Duration;

use serde_json::json;

use super::{Matcher, Scenario, Turn};

/// The prompt of the mock's `ScheduleWakeup` (the fired turn's message carries it).
pub const WAKE_PROMPT: &str = "MOCK-WAKE: check the build again";
/// The answer after the `ScheduleWakeup` call.
pub const WAKE_ARMED: &str = "WAKE-ARMED: back in a while.";
/// The answer of the fired wakeup's turn.
pub const WAKE_DONE: &str = "WAKE-DONE: checked the build.";
/// The prompt of the mock's `CronCreate` job.
pub const CRON_PROMPT: &str = "MOCK-CRON: check the deploy";
/// The answer after the `CronCreate` call.
pub const CRON_ARMED: &str = "CRON-ARMED: reminder set.";
/// The answer of the job's turn.
pub const CRON_DONE: &str = "CRON-DONE: checked the deploy.";
/// What the mock's monitored command prints, once per event.
pub const MONITOR_TICK: &str = "MOCK-TICK";
/// The answer after the `Monitor` call.
pub const MONITOR_ARMED: &str = "MONITOR-ARMED: watching.";
/// The answer of each monitor event's turn.
pub const MONITOR_EVENT: &str = "MONITOR-EVENT: saw a tick.";

/// `tool_use` id of the mock's `ScheduleWakeup`.
pub const WAKE_ID: &str = "toolu_mock_wake_1";
/// `tool_use` id of the mock's `CronCreate`.
pub const CRON_ID: &str = "toolu_mock_cron_1";
/// `tool_use` id of the mock's `Monitor`.
pub const MONITOR_ID: &str = "toolu_mock_monitor_1";

/// Loads a deferred tool with `ToolSearch`, then calls it.
fn deferred(name: &str, tool: &str, id: &str, input: serde_json::Value) -> Scenario {
    let search = format!("toolu_mock_ts_{}", tool.to_lowercase());
    Scenario::new(name)
        .when(
            Matcher::Answered(search.clone()),
            Turn::new().text("Calling it.").tool_use(id, tool, input),
        )
        .turn(Turn::new().text("Loading the tool.").tool_use(
            search,
            "ToolSearch",
            json!({"query": format!("select:{tool}"), "max_results": 1}),
        ))
}

impl Scenario {
    /// The model schedules its next `/loop` tick `delay` away (`ScheduleWakeup`; Claude Code
    /// clamps it to 60–3600 s), answers [`WAKE_ARMED`], and [`WAKE_DONE`] when the wakeup's
    /// turn comes.
    pub fn schedule_wakeup(delay: Duration) -> Scenario {
        Scenario::new("schedule_wakeup")
            .when(
                Matcher::TailContains(WAKE_PROMPT.into()),
                Turn::answer(WAKE_DONE),
            )
            .when(Matcher::Answered(WAKE_ID.into()), Turn::answer(WAKE_ARMED))
            .turn(Turn::new().text("I will check back.").tool_use(
                WAKE_ID,
                "ScheduleWakeup",
                json!({
                    "delaySeconds": delay.as_secs(),
                    "reason": "the build takes a while",
                    "prompt": WAKE_PROMPT,
                    "noop": false,
                }),
            ))
    }

    /// The model creates a `CronCreate` job on `cron` (`recurring` as given), answers
    /// [`CRON_ARMED`], and [`CRON_DONE`] when the job's turn comes.
    pub fn cron_create(cron: &str, recurring: bool) -> Scenario {
        let input = json!({"cron": cron, "prompt": CRON_PROMPT, "recurring": recurring});
        // The rules are tried in order: the job's turn, the answer after the call, the call.
        let s = deferred("cron_create", "CronCreate", CRON_ID, input);
        let mut rules = vec![
            (
                Matcher::TailContains(CRON_PROMPT.into()),
                Turn::answer(CRON_DONE),
            ),
            (Matcher::Answered(CRON_ID.into()), Turn::answer(CRON_ARMED)),
        ];
        rules.extend(s.rules);
        Scenario { rules, ..s }
    }

    /// The model starts a `Monitor` on a command that prints [`MONITOR_TICK`] `ticks` times,
    /// `every` apart, with a `timeout` (`None`: `persistent`), answers [`MONITOR_ARMED`], and
    /// [`MONITOR_EVENT`] on each event's turn.
    pub fn monitor(ticks: u32, every: Duration, timeout: Option<Duration>) -> Scenario {
        let command = format!(
            "for i in $(seq 1 {ticks}); do echo {MONITOR_TICK} $i; sleep {}; done",
            every.as_secs_f64()
        );
        let mut input = json!({"description": "watch the build log", "command": command});
        match timeout {
            Some(t) => input["timeout_ms"] = json!(t.as_millis() as u64),
            None => input["persistent"] = json!(true),
        }
        let s = deferred("monitor", "Monitor", MONITOR_ID, input);
        let mut rules = vec![
            (
                Matcher::TailContains(MONITOR_TICK.into()),
                Turn::answer(MONITOR_EVENT),
            ),
            (
                Matcher::Answered(MONITOR_ID.into()),
                Turn::answer(MONITOR_ARMED),
            ),
        ];
        rules.extend(s.rules);
        Scenario { rules, ..s }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::Block;
    use crate::RequestSummary;

    fn pick(s: &Scenario, answered: &[&str], tail: &str) -> Turn {
        let summary = RequestSummary {
            answered_tool_ids: answered.iter().map(|a| a.to_string()).collect(),
            tail_text: Some(tail.into()),
            ..RequestSummary::default()
        };
        s.select(0, &summary)
    }

    fn first_tool(t: &Turn) -> Option<String> {
        t.blocks().find_map(|b| match b {
            Block::ToolUse { name, .. } => Some(name.clone()),
            _ => None,
        })
    }

    #[test]
    fn each_scenario_calls_its_tool_then_answers_the_turns_it_brings() {
        let w = Scenario::schedule_wakeup(Duration::from_secs(60));
        assert_eq!(
            first_tool(&pick(&w, &[], "go")).as_deref(),
            Some("ScheduleWakeup")
        );
        assert_eq!(
            pick(&w, &[WAKE_ID], "Next wakeup").effective_stop_reason(),
            crate::StopReason::EndTurn
        );
        let fired = pick(&w, &[WAKE_ID], WAKE_PROMPT);
        assert!(fired
            .blocks()
            .any(|b| matches!(b, Block::Text(t) if t == WAKE_DONE)));
        for (s, tool, id) in [
            (
                Scenario::cron_create("* * * * *", false),
                "CronCreate",
                CRON_ID,
            ),
            (
                Scenario::monitor(3, Duration::from_secs(1), Some(Duration::from_secs(60))),
                "Monitor",
                MONITOR_ID,
            ),
        ] {
            assert_eq!(
                first_tool(&pick(&s, &[], "go")).as_deref(),
                Some("ToolSearch")
            );
            let search = format!("toolu_mock_ts_{}", tool.to_lowercase());
            assert_eq!(
                first_tool(&pick(&s, &[&search], "Tool loaded.")).as_deref(),
                Some(tool)
            );
            let armed = pick(&s, &[&search, id], "started");
            assert!(
                first_tool(&armed).is_none(),
                "{tool}: answered, no more calls"
            );
        }
        let m = Scenario::monitor(3, Duration::from_secs(1), None);
        let event = pick(
            &m,
            &["toolu_mock_ts_monitor", MONITOR_ID],
            &format!("{MONITOR_TICK} 2"),
        );
        assert!(event
            .blocks()
            .any(|b| matches!(b, Block::Text(t) if t == MONITOR_EVENT)));
    }
}
