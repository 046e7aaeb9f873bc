//! What a shared `Watchdog` counts (`Watchdog::metrics`, on virtual time), and its Prometheus
//! scrape endpoint (`agent_sdk_watchdog::prometheus`, on a real loopback listener): the
//! exposition parses line by line, and garbage, silent, oversized and non-GET clients get
//! their answer (or are dropped) while the endpoint keeps serving others.
//!
//! The endpoint tests need the cargo feature `prometheus` (`scripts/test` builds with
//! `--all-features`): without it one test fails and says so; nothing skips.

#[cfg(target_os = "linux")]
mod common;

use std::time::Duration;

use agent_sdk_watchdog::{Watchdog, WatchdogConfig};
use watchdog_core::{ExtendReason, KillKind, Limits, SessionConfig, StallClock};

const INIT: &str = r#"{"type":"system","subtype":"init","session_id":"s"}"#;
const RESULT: &str = r#"{"type":"result","subtype":"success","is_error":false,"stop_reason":"end_turn","session_id":"s"}"#;

fn limits() -> Limits {
    Limits::default()
        .with_startup(Duration::from_secs(30))
        .unwrap()
        .with_idle(Duration::from_secs(2))
        .unwrap()
}

#[tokio::test(start_paused = true)]
async fn an_idle_kill_is_counted_and_the_session_leaves_the_gauge() {
    let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
    let m = watchdog.metrics();
    assert_eq!(m.sessions(), 0);
    assert_eq!(m.kills(KillKind::Idle), 0);

    let session = watchdog.register(SessionConfig::default());
    session.observe_line(INIT);
    assert_eq!(watchdog.metrics().sessions(), 1);
    let kill = session.killed().await;
    assert_eq!(kill.kind, KillKind::Idle);

    let m = watchdog.metrics();
    assert_eq!(m.kills(KillKind::Idle), 1);
    assert_eq!(m.kills(KillKind::Startup), 0);
    // Default extend factor 2 and warn_at 0.8: one pre-write extension past the 2 s, then one
    // idle warning before the kill at 4 s.
    assert_eq!(m.extensions(ExtendReason::PreWrite), 1);
    assert_eq!(m.extensions(ExtendReason::HighUtilization), 0);
    assert_eq!(m.stalling_warnings(StallClock::Idle), 1);
    assert_eq!(m.stalling_warnings(StallClock::NoProgress), 0);
    assert_eq!(m.kill_lateness().count(), 1);
    // Virtual time: the timer fires exactly at the deadline; a real clock is late by far
    // less than a second.
    assert!(m.kill_lateness().sum() < Duration::from_secs(1), "{m:?}");
    let buckets: Vec<_> = m.kill_lateness().buckets().collect();
    assert_eq!(buckets.last(), Some(&(f64::INFINITY, 1)));
    assert_eq!(
        buckets.iter().find(|(le, _)| *le == 1.0).map(|b| b.1),
        Some(1)
    );
    assert_eq!(m.ended("killed"), 0, "not ended yet");
    assert_eq!(m.sessions(), 1);

    assert!(session.end().is_some());
    assert_eq!(watchdog.metrics().ended("killed"), 1);
    drop(session);

    let m = watchdog.metrics();
    assert_eq!(m.sessions(), 0);
    assert_eq!(m.ended("killed"), 1);
    assert_eq!(m.ended("success"), 0);
    let text = m.render_prometheus();
    for line in [
        r#"agent_watchdog_sessions{agent_watchdog_source="run"} 0"#,
        r#"agent_watchdog_kill_count_total{kill_kind="idle",agent_watchdog_source="run"} 1"#,
        r#"agent_watchdog_kill_count_total{kill_kind="startup",agent_watchdog_source="run"} 0"#,
        r#"agent_watchdog_session_count_total{outcome="killed",kill_kind="idle",agent_watchdog_source="run"} 1"#,
        r#"agent_watchdog_session_count_total{outcome="success",agent_watchdog_source="run"} 0"#,
        r#"agent_watchdog_stalling_warning_count_total{clock="idle",agent_watchdog_source="run"} 1"#,
        r#"agent_watchdog_extension_count_total{reason="pre_write",agent_watchdog_source="run"} 1"#,
        r#"agent_watchdog_kill_lateness_seconds_bucket{le="+Inf",agent_watchdog_source="run"} 1"#,
        r#"agent_watchdog_kill_lateness_seconds_count{agent_watchdog_source="run"} 1"#,
    ] {
        assert!(text.lines().any(|l| l == line), "{line} missing in\n{text}");
    }
    check_exposition(&text);
}

#[tokio::test(start_paused = true)]
async fn outcomes_are_counted_by_name_and_sessions_dropped_unended_are_not() {
    let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
    let a = watchdog.register(SessionConfig::default());
    let b = watchdog.register(SessionConfig::default());
    let c = watchdog.register(SessionConfig::default());
    assert_eq!(watchdog.metrics().sessions(), 3);
    a.observe_line(INIT);
    a.observe_line(RESULT);
    assert_eq!(a.end().map(|o| o.as_str()), Some("success"));
    b.observe_line(INIT);
    assert_eq!(b.end().map(|o| o.as_str()), Some("no_result"));
    assert_eq!(b.end().map(|o| o.as_str()), Some("no_result"), "idempotent");
    drop(c);

    let m = watchdog.metrics();
    assert_eq!(m.sessions(), 2);
    assert_eq!(m.ended("success"), 1);
    assert_eq!(m.ended("no_result"), 1);
    assert_eq!(m.ended("killed"), 0);
    assert_eq!(m.ended("no such outcome"), 0);
    for kind in [KillKind::Ceiling, KillKind::Startup, KillKind::Idle] {
        assert_eq!(m.kills(kind), 0);
    }
    assert_eq!(m.kill_lateness().count(), 0);
    check_exposition(&m.render_prometheus());
}

#[tokio::test(start_paused = true)]
async fn the_utilization_gauge_is_absent_while_unknown() {
    let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
    let name = "agent_watchdog_rate_limit_utilization_ratio";
    let m = watchdog.metrics();
    assert_eq!(m.utilization(), None);
    let text = m.render_prometheus();
    assert!(text.contains(&format!("# TYPE {name} gauge")), "{text}");
    assert!(!text.lines().any(|l| l.starts_with(name)), "{text}");

    watchdog.set_utilization(Some(0.5));
    let m = watchdog.metrics();
    assert_eq!(m.utilization(), Some(0.5));
    let want = format!(r#"{name}{{agent_watchdog_source="run"}} 0.5"#);
    let text = m.render_prometheus();
    assert!(text.lines().any(|l| l == want), "{text}");
    check_exposition(&text);

    watchdog.set_utilization(None);
    assert_eq!(watchdog.metrics().utilization(), None);
}

/// A `claude`-like child supervised on the shared watchdog is counted like an in-process
/// session: its kill, and its end once the supervisor reaped it.
#[cfg(target_os = "linux")]
#[tokio::test]
async fn a_supervised_child_on_the_shared_watchdog_is_counted() {
    use agent_sdk_watchdog::{Supervisor, SupervisorConfig};
    let limits = limits().with_idle(Duration::from_millis(300)).unwrap();
    let watchdog = Watchdog::new(WatchdogConfig::new(limits));
    let config = SupervisorConfig {
        policy: Some(SessionConfig::default()),
        watchdog: Some(watchdog.clone()),
        ..common::quick()
    };
    let script = format!("echo '{INIT}'; exec sleep 1000");
    let sup = Supervisor::spawn(common::sh(&script), config).unwrap();
    assert_eq!(watchdog.metrics().sessions(), 1);
    let (_, report) = common::run_all(sup, Duration::from_secs(60)).await;
    assert_eq!(
        report.outcome().map(|o| o.as_str()),
        Some("killed"),
        "{report:?}"
    );
    let m = watchdog.metrics();
    assert_eq!(m.kills(KillKind::Idle), 1, "{m:?}");
    assert_eq!(m.ended("killed"), 1, "{m:?}");
    assert_eq!(m.sessions(), 0, "{m:?}");
    assert_eq!(m.kill_lateness().count(), 1);
}

#[cfg(not(feature = "prometheus"))]
#[test]
fn the_endpoint_tests_need_the_prometheus_feature() {
    panic!("build with `--features prometheus` (scripts/test uses --all-features)");
}

/// Every line is `# HELP name text`, `# TYPE name kind` (once per family, before its samples),
/// or `name{label="value",…} value` of the family declared last (a histogram's with
/// `_bucket`, `_sum`, `_count`; any other exactly its name); a counter is named `…_total` and
/// its value is a non-negative number.
fn check_exposition(text: &str) {
    assert!(text.ends_with('\n'), "the last line ends with a newline");
    let mut families = std::collections::HashSet::new();
    let mut current: Option<(String, String)> = None;
    let mut samples = 0;
    let (mut last_bucket, mut inf_bucket) = (0.0, None);
    for line in text.lines() {
        if let Some(rest) = line.strip_prefix("# HELP ") {
            let (name, help) = rest.split_once(' ').expect(line);
            assert!(metric_name(name), "{line}");
            assert!(!help.is_empty() && !help.contains('\\'), "{line}");
        } else if let Some(rest) = line.strip_prefix("# TYPE ") {
            let (name, kind) = rest.split_once(' ').expect(line);
            assert!(metric_name(name), "{line}");
            assert!(
                ["counter", "gauge", "histogram", "summary", "untyped"].contains(&kind),
                "{line}"
            );
            assert!(families.insert(name.to_owned()), "family twice: {line}");
            current = Some((name.to_owned(), kind.to_owned()));
        } else {
            assert!(!line.starts_with('#') && !line.is_empty(), "{line}");
            let (series, value) = line.rsplit_once(' ').expect(line);
            let (name, labels) = match series.split_once('{') {
                Some((n, l)) => (n, l.strip_suffix('}').expect(line)),
                None => (series, ""),
            };
            assert!(metric_name(name), "{line}");
            check_labels(labels, line);
            let v: f64 = match value {
                "NaN" => f64::NAN,
                "+Inf" => f64::INFINITY,
                "-Inf" => f64::NEG_INFINITY,
                v => v.parse().expect(line),
            };
            let (family, kind) = current.as_ref().expect("a sample before any # TYPE");
            // Format 0.0.4: a counter's `# TYPE` names it with its `_total` (unlike
            // OpenMetrics); only a histogram's samples add suffixes to the family name.
            let suffixes: &[&str] = match kind.as_str() {
                "histogram" => &["_bucket", "_sum", "_count"],
                _ => &[""],
            };
            if kind == "counter" {
                assert!(family.ends_with("_total"), "{family}");
            }
            assert!(
                suffixes.iter().any(|s| name == format!("{family}{s}")),
                "{line} is not of family {family} ({kind})"
            );
            if kind == "counter" {
                assert!(v >= 0.0, "{line}");
            }
            if kind == "histogram" {
                // Buckets cumulative, ending with `+Inf`, which equals `_count`.
                if name.ends_with("_bucket") {
                    assert!(labels.contains("le=\""), "{line}");
                    assert!(v >= last_bucket, "buckets go down: {line}");
                    last_bucket = v;
                    if labels.contains("le=\"+Inf\"") {
                        inf_bucket = Some(v);
                    }
                } else if name.ends_with("_count") {
                    assert_eq!(inf_bucket.take(), Some(v), "+Inf bucket vs {line}");
                    last_bucket = 0.0;
                }
            }
            samples += 1;
        }
    }
    assert!(samples > 20, "{samples} samples:\n{text}");
}

fn metric_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_' || c == b':')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_' || c == b':')
}

fn label_name(s: &str) -> bool {
    let mut b = s.bytes();
    matches!(b.next(), Some(c) if c.is_ascii_alphabetic() || c == b'_')
        && b.all(|c| c.is_ascii_alphanumeric() || c == b'_')
}

/// `key="value"` pairs separated by commas (a trailing comma allowed), values escaped.
fn check_labels(mut labels: &str, line: &str) {
    let mut seen = std::collections::HashSet::new();
    while !labels.is_empty() {
        let (key, rest) = labels.split_once("=\"").expect(line);
        assert!(label_name(key), "{line}");
        assert!(seen.insert(key), "label twice: {line}");
        let mut chars = rest.char_indices();
        let end = loop {
            match chars.next().expect(line) {
                (_, '\\') => {
                    let (_, e) = chars.next().expect(line);
                    assert!(matches!(e, '\\' | '"' | 'n'), "{line}");
                }
                (i, '"') => break i,
                (_, '\n') => panic!("{line}"),
                _ => {}
            }
        };
        labels = &rest[end + 1..];
        labels = labels.strip_prefix(',').unwrap_or_else(|| {
            assert!(labels.is_empty(), "{line}");
            labels
        });
    }
}

#[cfg(feature = "prometheus")]
mod endpoint {
    use std::time::Duration;

    use agent_sdk_watchdog::prometheus::{serve_with, ServeConfig};
    use agent_sdk_watchdog::{Watchdog, WatchdogConfig};
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    use tokio::net::{TcpListener, TcpStream};
    use watchdog_core::{KillKind, SessionConfig};

    use super::{check_exposition, limits, INIT};

    /// Generous: only a hang fails it.
    const BOUND: Duration = Duration::from_secs(30);

    struct Server {
        addr: std::net::SocketAddr,
        task: tokio::task::JoinHandle<()>,
    }

    impl Drop for Server {
        fn drop(&mut self) {
            self.task.abort();
        }
    }

    async fn server(watchdog: &Watchdog, config: ServeConfig) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        let task = tokio::spawn(serve_with(watchdog.clone(), listener, config));
        Server { addr, task }
    }

    fn config() -> ServeConfig {
        ServeConfig {
            timeout: Duration::from_millis(300),
            max_connections: 4,
            ..ServeConfig::default()
        }
    }

    /// Send `request`, read until the server closes; `(status line, headers, body)`.
    async fn exchange(addr: std::net::SocketAddr, request: &[u8]) -> (String, String, String) {
        tokio::time::timeout(BOUND, async {
            let mut s = TcpStream::connect(addr).await.unwrap();
            s.write_all(request).await.unwrap();
            let mut out = Vec::new();
            s.read_to_end(&mut out).await.unwrap();
            let out = String::from_utf8(out).unwrap();
            let (head, body) = out.split_once("\r\n\r\n").expect(&out);
            let (status, headers) = head.split_once("\r\n").unwrap_or((head, ""));
            (status.to_owned(), headers.to_owned(), body.to_owned())
        })
        .await
        .expect("the server answers within the bound")
    }

    async fn scrape(addr: std::net::SocketAddr) -> String {
        let req = b"GET /metrics HTTP/1.1\r\nHost: x\r\nAccept: text/plain\r\n\r\n";
        let (status, headers, body) = exchange(addr, req).await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(
            headers
                .lines()
                .any(|h| h.starts_with("Content-Type: text/plain; version=0.0.4")),
            "{headers}"
        );
        let len = format!("Content-Length: {}", body.len());
        assert!(
            headers.lines().any(|h| h == len),
            "{headers} vs {}",
            body.len()
        );
        body
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn a_scrape_parses_and_shows_the_kill() {
        let limits = limits().with_idle(Duration::from_millis(50)).unwrap();
        let watchdog = Watchdog::new(WatchdogConfig::new(limits));
        let srv = server(&watchdog, config()).await;
        let session = watchdog.register(SessionConfig::default());
        let body = scrape(srv.addr).await;
        check_exposition(&body);
        assert!(body.contains("agent_watchdog_sessions{agent_watchdog_source=\"run\"} 1\n"));

        session.observe_line(INIT);
        tokio::time::timeout(BOUND, session.killed()).await.unwrap();
        session.end();
        drop(session);
        let body = scrape(srv.addr).await;
        check_exposition(&body);
        assert_eq!(watchdog.metrics().kills(KillKind::Idle), 1);
        for line in [
            "agent_watchdog_sessions{agent_watchdog_source=\"run\"} 0",
            "agent_watchdog_kill_count_total{kill_kind=\"idle\",agent_watchdog_source=\"run\"} 1",
            "agent_watchdog_kill_lateness_seconds_count{agent_watchdog_source=\"run\"} 1",
        ] {
            assert!(body.lines().any(|l| l == line), "{line} missing in\n{body}");
        }

        let (status, headers, body) =
            exchange(srv.addr, b"HEAD /metrics?x=1 HTTP/1.0\r\n\r\n").await;
        assert_eq!(status, "HTTP/1.1 200 OK");
        assert!(headers.contains("Content-Length: "), "{headers}");
        assert_eq!(body, "", "HEAD has no body");
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn other_paths_methods_and_garbage_get_their_status() {
        let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
        let srv = server(&watchdog, config()).await;
        let (status, _, _) = exchange(srv.addr, b"GET / HTTP/1.1\r\n\r\n").await;
        assert_eq!(status, "HTTP/1.1 404 Not Found");
        let (status, headers, _) = exchange(
            srv.addr,
            b"POST /metrics HTTP/1.1\r\nContent-Length: 5\r\n\r\nhello",
        )
        .await;
        assert_eq!(status, "HTTP/1.1 405 Method Not Allowed");
        assert!(
            headers.lines().any(|h| h == "Allow: GET, HEAD"),
            "{headers}"
        );
        for garbage in [
            &b"\x00\x01\x02 nonsense\r\n\r\n"[..],
            b"\r\n\r\n",
            b"GET /metrics\r\n\r\n",
            b"GET /metrics HTTP/1.1 more\r\n\r\n",
            b"\xff\xfe\xfd\xfc /metrics HTTP/1.1\n\n",
        ] {
            let (status, _, _) = exchange(srv.addr, garbage).await;
            assert_eq!(status, "HTTP/1.1 400 Bad Request", "{garbage:?}");
        }
        // A client that connects and leaves at once, or half a head then leaves.
        drop(TcpStream::connect(srv.addr).await.unwrap());
        let mut half = TcpStream::connect(srv.addr).await.unwrap();
        half.write_all(b"GET /metr").await.unwrap();
        drop(half);
        check_exposition(&scrape(srv.addr).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn an_oversized_head_gets_431_or_a_closed_connection() {
        let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
        let srv = server(&watchdog, config()).await;
        let mut req = b"GET /metrics HTTP/1.1\r\nX-Big: ".to_vec();
        req.resize(req.len() + 16 * 1024, b'a');
        req.extend_from_slice(b"\r\n\r\n");
        let answer = tokio::time::timeout(BOUND, async {
            let mut s = TcpStream::connect(srv.addr).await.unwrap();
            // The server may close before it read all of it: a failed write is an answer too.
            let _ = s.write_all(&req).await;
            let mut out = Vec::new();
            let _ = s.read_to_end(&mut out).await;
            String::from_utf8_lossy(&out).into_owned()
        })
        .await
        .expect("answered or closed within the bound");
        assert!(
            answer.is_empty() || answer.starts_with("HTTP/1.1 431 "),
            "{answer}"
        );
        check_exposition(&scrape(srv.addr).await);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn silent_clients_time_out_and_the_endpoint_keeps_serving() {
        let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
        let config = ServeConfig {
            max_connections: 2,
            ..config()
        };
        let srv = server(&watchdog, config).await;
        // One silent client: others are served beside it.
        let mut silent = TcpStream::connect(srv.addr).await.unwrap();
        check_exposition(&scrape(srv.addr).await);
        // The silent one is dropped unanswered once its timeout passed.
        let mut out = Vec::new();
        let read = tokio::time::timeout(BOUND, silent.read_to_end(&mut out)).await;
        assert!(read.is_ok(), "the server closed the silent connection");
        assert!(out.is_empty(), "no answer to nothing: {out:?}");

        // As many silent clients as the endpoint serves at once: a scrape waits for a slot
        // (their timeouts) and is then served.
        let silent: Vec<_> = connect_silent(srv.addr, 2).await;
        check_exposition(&scrape(srv.addr).await);
        drop(silent);
    }

    #[tokio::test(flavor = "multi_thread", worker_threads = 2)]
    async fn random_bytes_get_a_status_or_a_close_and_never_stop_the_endpoint() {
        let watchdog = Watchdog::new(WatchdogConfig::new(limits()));
        let srv = server(&watchdog, config()).await;
        let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        let pieces: [&[u8]; 8] = [
            b"GET ",
            b"/metrics",
            b" HTTP/1.1",
            b"\r\n",
            b"\n",
            b" ",
            b"POST",
            b"\xff\x00",
        ];
        let mut answered = 0;
        for round in 0..300 {
            let mut req = Vec::new();
            for _ in 0..next() % 12 {
                match next() % 3 {
                    0 => req.push(next() as u8),
                    _ => req.extend_from_slice(pieces[(next() % 8) as usize]),
                }
            }
            if round % 2 == 0 {
                req.extend_from_slice(b"\r\n\r\n");
            }
            let out = tokio::time::timeout(BOUND, async {
                let mut s = TcpStream::connect(srv.addr).await.unwrap();
                s.write_all(&req).await.unwrap();
                // Half-close: the server sees the end of what we send, not a silent client.
                s.shutdown().await.unwrap();
                let mut out = Vec::new();
                let _ = s.read_to_end(&mut out).await;
                out
            })
            .await
            .expect("answered or closed within the bound");
            if out.is_empty() {
                continue;
            }
            let text = String::from_utf8_lossy(&out);
            let status = text.lines().next().unwrap_or_default();
            assert!(
                [
                    "HTTP/1.1 200 OK",
                    "HTTP/1.1 400 Bad Request",
                    "HTTP/1.1 404 Not Found",
                    "HTTP/1.1 405 Method Not Allowed",
                ]
                .contains(&status),
                "{req:?} -> {text}"
            );
            answered += 1;
        }
        // Every second request had a whole head: those were all answered.
        assert!(answered >= 150, "{answered} of 300 answered");
        check_exposition(&scrape(srv.addr).await);
    }

    async fn connect_silent(addr: std::net::SocketAddr, n: usize) -> Vec<TcpStream> {
        let mut v = Vec::new();
        for _ in 0..n {
            v.push(TcpStream::connect(addr).await.unwrap());
        }
        v
    }
}
