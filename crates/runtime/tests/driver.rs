//! Virtual-time tests of the driver: exact kill instants, many sessions, callbacks that
//! panic, the supervise combinator, drop, and the timer task's lifetime.

use std::pin::Pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll};
use std::time::Duration;

use agent_sdk_watchdog::{supervise, Killed, Watchdog, WatchdogConfig};
use futures_core::Stream;
use tokio::time::{advance, Instant};
use watchdog_core::{Event, KillKind, Limits, Outcome, SessionConfig};

const MS: Duration = Duration::from_millis(1);

fn limits() -> Limits {
    Limits::default()
        .with_startup(Duration::from_secs(5))
        .unwrap()
        .with_idle(Duration::from_secs(10))
        .unwrap()
        .with_extend_factor(1.0)
        .unwrap()
}

/// Let the timer task (and anything it woke) run.
async fn run_tasks() {
    for _ in 0..20 {
        tokio::task::yield_now().await;
    }
}

async fn advance_to(target: Instant) {
    let now = Instant::now();
    if target > now {
        advance(target - now).await;
    }
    run_tasks().await;
}

const ASSISTANT: &str = r#"{"type":"assistant","message":{"role":"assistant","content":[{"type":"text","text":"hi"}]},"session_id":"s"}"#;
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"s"}"#;

#[tokio::test(start_paused = true)]
async fn startup_kill_at_exactly_the_deadline() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let t0 = Instant::now();
    let s = wd.register(SessionConfig::default());
    let token = s.token();
    advance_to(t0 + Duration::from_secs(5) - MS).await;
    assert!(!token.is_cancelled());
    assert!(s.kill().is_none());
    advance_to(t0 + Duration::from_secs(5)).await;
    assert!(token.is_cancelled());
    let kill = s.kill().unwrap();
    assert_eq!(kill.kind, KillKind::Startup);
    assert_eq!(kill.at, (t0 + Duration::from_secs(5)).into_std());
}

#[tokio::test(start_paused = true)]
async fn idle_kill_at_exactly_the_deadline_after_the_last_line() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let s = wd.register(SessionConfig::default());
    advance(Duration::from_secs(3)).await;
    let t1 = Instant::now();
    s.observe_line(ASSISTANT);
    advance_to(t1 + Duration::from_secs(10) - MS).await;
    assert!(!s.token().is_cancelled());
    advance_to(t1 + Duration::from_secs(10)).await;
    let kill = s.kill().expect("killed at the idle deadline");
    assert_eq!(kill.kind, KillKind::Idle);
    assert_eq!(kill.at, (t1 + Duration::from_secs(10)).into_std());
}

#[tokio::test(start_paused = true)]
async fn a_deadline_moved_earlier_wakes_the_timer() {
    // The first session arms the timer far away; a second, shorter one must still fire on time.
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let t0 = Instant::now();
    let long = wd.register(
        SessionConfig::default()
            .with_limits(limits().with_startup(Duration::from_secs(3600)).unwrap()),
    );
    run_tasks().await;
    let short = wd.register(
        SessionConfig::default()
            .with_limits(limits().with_startup(Duration::from_secs(1)).unwrap()),
    );
    advance_to(t0 + Duration::from_secs(1)).await;
    assert_eq!(short.kill().map(|k| k.kind), Some(KillKind::Startup));
    assert!(long.kill().is_none());
}

#[tokio::test(start_paused = true)]
async fn many_sessions_each_killed_at_its_own_instant() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let t0 = Instant::now();
    let sessions: Vec<_> = (0..500u64)
        .map(|i| {
            let startup = Duration::from_millis(100 + 10 * i);
            wd.register(
                SessionConfig::default().with_limits(limits().with_startup(startup).unwrap()),
            )
        })
        .collect();
    for step in 0..=500u64 {
        let at = t0 + Duration::from_millis(100 + 10 * step);
        advance_to(at - MS).await;
        let killed = sessions.iter().filter(|s| s.is_killed()).count() as u64;
        assert_eq!(killed, step, "just before {step}");
        advance_to(at).await;
        let killed = sessions.iter().filter(|s| s.is_killed()).count() as u64;
        assert_eq!(killed, step + 1, "at {step}");
        if step == 499 {
            break;
        }
    }
    assert!(sessions.iter().all(|s| s.token().is_cancelled()));
}

#[tokio::test(start_paused = true)]
async fn panicking_callbacks_are_reported_and_change_nothing() {
    let errors = Arc::new(Mutex::new(Vec::new()));
    let kills = Arc::new(Mutex::new(0));
    let cfg = WatchdogConfig::new(limits())
        .on_kill({
            let kills = kills.clone();
            move |_| {
                *kills.lock().unwrap() += 1;
                panic!("boom in on_kill");
            }
        })
        .on_error({
            let errors = errors.clone();
            move |e| errors.lock().unwrap().push(e.clone())
        });
    let wd = Watchdog::new(cfg);
    let t0 = Instant::now();
    let a = wd.register(SessionConfig::default());
    let b = wd.register(
        SessionConfig::default()
            .with_limits(limits().with_startup(Duration::from_secs(8)).unwrap()),
    );
    advance_to(t0 + Duration::from_secs(5)).await;
    assert!(a.token().is_cancelled(), "cancellation not skipped");
    assert!(!b.token().is_cancelled());
    advance_to(t0 + Duration::from_secs(8)).await;
    assert!(b.token().is_cancelled(), "the timer kept working");
    assert_eq!(*kills.lock().unwrap(), 2);
    let errors = errors.lock().unwrap();
    assert_eq!(errors.len(), 2);
    assert_eq!(errors[0].callback, "on_kill");
    assert_eq!(errors[0].session, a.id());
    assert!(errors[0].message.contains("boom"));
}

#[tokio::test(start_paused = true)]
async fn on_kill_runs_after_the_kill_is_recorded_and_before_the_cancel() {
    let seen = Arc::new(Mutex::new(None));
    let probe: Arc<Mutex<Option<tokio_util::sync::CancellationToken>>> = Arc::default();
    let cfg = WatchdogConfig::new(limits()).on_kill({
        let seen = seen.clone();
        let probe = probe.clone();
        move |k| {
            let cancelled = probe.lock().unwrap().as_ref().map(|t| t.is_cancelled());
            *seen.lock().unwrap() = Some((k.kind, cancelled));
        }
    });
    let wd = Watchdog::new(cfg);
    let s = wd.register(SessionConfig::default());
    *probe.lock().unwrap() = Some(s.token());
    advance(Duration::from_secs(5)).await;
    run_tasks().await;
    assert_eq!(
        *seen.lock().unwrap(),
        Some((KillKind::Startup, Some(false)))
    );
    assert!(s.token().is_cancelled());
}

#[tokio::test(start_paused = true)]
async fn events_are_broadcast_per_session() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let s = wd.register(SessionConfig::default());
    let mut events = s.events();
    advance(Duration::from_secs(5)).await;
    run_tasks().await;
    match events.try_recv() {
        Ok(Event::Killed(k)) => assert_eq!(k.id, s.id()),
        other => panic!("{other:?}"),
    }
}

/// A stream that never yields.
struct Never;
impl Stream for Never {
    type Item = String;
    fn poll_next(self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<String>> {
        Poll::Pending
    }
}

/// A stream of the given items, then the end.
struct Items(std::vec::IntoIter<String>);
impl Stream for Items {
    type Item = String;
    fn poll_next(mut self: Pin<&mut Self>, _: &mut Context<'_>) -> Poll<Option<String>> {
        Poll::Ready(self.0.next())
    }
}

async fn next<S: Stream + Unpin>(s: &mut S) -> Option<S::Item> {
    std::future::poll_fn(|cx| Pin::new(&mut *s).poll_next(cx)).await
}

#[tokio::test(start_paused = true)]
async fn a_stream_that_never_yields_ends_with_killed() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let t0 = Instant::now();
    let mut stream = supervise(Never, wd.register(SessionConfig::default()));
    let item = next(&mut stream).await;
    assert_eq!(
        Instant::now(),
        t0 + Duration::from_secs(5),
        "woken at the kill instant"
    );
    match item {
        Some(Err(Killed(kill))) => assert_eq!(kill.kind, KillKind::Startup),
        other => panic!("{other:?}"),
    }
    assert!(next(&mut stream).await.is_none());
}

#[tokio::test(start_paused = true)]
async fn supervise_passes_items_through_and_classifies_the_end() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let session = wd.register(SessionConfig::default());
    let mut events = session.events();
    let items = vec![
        ASSISTANT.to_string(),
        "garbage".to_string(),
        RESULT.to_string(),
    ];
    let mut stream = supervise(Items(items.clone().into_iter()), session);
    let mut got = Vec::new();
    while let Some(item) = next(&mut stream).await {
        got.push(item.unwrap());
    }
    assert_eq!(got, items);
    let mut ended = None;
    while let Ok(ev) = events.try_recv() {
        if let Event::Ended { outcome, .. } = ev {
            ended = Some(outcome);
        }
    }
    assert_eq!(ended, Some(Outcome::Success));
}

#[tokio::test(start_paused = true)]
async fn values_and_results_are_lines_too() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let s = wd.register(SessionConfig::default());
    let v: serde_json::Value = serde_json::from_str(ASSISTANT).unwrap();
    let class = s.observe_value(&v);
    assert_eq!(class.kind, watchdog_core::LineKind::Assistant);
    let class = s.observe_value(&serde_json::json!(3));
    assert_eq!(class.kind, watchdog_core::LineKind::Unparseable);
    use agent_sdk_watchdog::AsLine;
    let ok: Result<String, ()> = Ok(ASSISTANT.into());
    let err: Result<String, ()> = Err(());
    assert!(ok.as_line().is_some());
    assert!(err.as_line().is_none());
}

#[tokio::test(start_paused = true)]
async fn drop_unregisters() {
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let a = wd.register(SessionConfig::default());
    let b = wd.register(SessionConfig::default());
    assert_eq!(wd.len(), 2);
    drop(a);
    assert_eq!(wd.len(), 1);
    drop(b);
    assert!(wd.is_empty());
    // Nothing left to fire.
    advance(Duration::from_secs(60)).await;
    run_tasks().await;
}

#[tokio::test(start_paused = true)]
async fn the_timer_task_ends_when_the_watchdog_is_dropped() {
    let metrics = tokio::runtime::Handle::current().metrics();
    let before = metrics.num_alive_tasks();
    let wd = Watchdog::new(WatchdogConfig::new(limits()));
    let clone = wd.clone();
    let s = wd.register(SessionConfig::default());
    run_tasks().await;
    assert_eq!(metrics.num_alive_tasks(), before + 1);
    drop(wd);
    run_tasks().await;
    assert_eq!(metrics.num_alive_tasks(), before + 1, "a clone keeps it");
    drop(clone);
    run_tasks().await;
    assert_eq!(metrics.num_alive_tasks(), before);
    drop(s);
}

#[tokio::test(start_paused = true)]
async fn stalling_and_extension_callbacks() {
    let stalls = Arc::new(Mutex::new(Vec::new()));
    let extends = Arc::new(Mutex::new(Vec::new()));
    let lim = limits().with_extend_factor(2.0).unwrap();
    let cfg = WatchdogConfig::new(lim)
        .on_stalling({
            let stalls = stalls.clone();
            move |id, clock, left| stalls.lock().unwrap().push((id, clock, left))
        })
        .on_extend({
            let extends = extends.clone();
            move |id, reason| extends.lock().unwrap().push((id, reason))
        });
    let wd = Watchdog::new(cfg);
    let s = wd.register(SessionConfig::default());
    s.observe_line(ASSISTANT);
    s.tool_boundary(Some("Write"));
    wd.set_utilization(Some(0.95));
    let t1 = Instant::now();
    advance_to(t1 + Duration::from_secs(19)).await;
    assert!(!s.is_killed(), "high utilization doubles the patience");
    assert!(!extends.lock().unwrap().is_empty());
    assert!(!stalls.lock().unwrap().is_empty());
    advance_to(t1 + Duration::from_secs(20)).await;
    assert_eq!(s.kill().map(|k| k.kind), Some(KillKind::Idle));
}

#[test]
fn handles_are_send_and_sync() {
    fn send_sync<T: Send + Sync>() {}
    fn send<T: Send>() {}
    send_sync::<Watchdog>();
    send_sync::<agent_sdk_watchdog::Session>();
    send::<agent_sdk_watchdog::Supervised<Never>>();
    send_sync::<agent_sdk_watchdog::Supervisor>();
    send_sync::<agent_sdk_watchdog::SupervisorHandle>();
    send_sync::<agent_sdk_watchdog::StdinWriter>();
}
