//! `OTEL_EXPORTER_OTLP_PROTOCOL=grpc` (docs/telemetry.md). With the cargo feature
//! `telemetry-grpc`: a kill arrives over OTLP/gRPC at a receiver on loopback (HTTP/2 from `h2`,
//! each message decoded with the official OpenTelemetry definitions), and a collector that is
//! down changes neither the exit code nor the summary. Without the feature (the released
//! binaries): `grpc` is refused with one stderr line per signal naming the feature, and the run
//! is the same. Each build checks what it has; nothing is skipped.
//!
//! Needs the binary built with the cargo feature `telemetry` at least (`scripts/test` builds
//! with `--all-features`): without it these tests fail and say so.

mod common;
#[path = "common/otlp.rs"]
mod otlp;

use std::path::Path;
use std::process::Output;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::{say, script, stderr, watchdog, INIT};
use otlp::Received;
use serde_json::Value;

struct Run {
    out: Output,
    summary: Value,
    took: Duration,
}

/// A child that prints `system/init` (session `s1`) and stays silent, under a 1 s idle limit,
/// with `env` added (and no `OTEL_*` variable of the test's environment).
fn run(dir: &Path, env: &[(&str, String)]) -> Run {
    let child = script(dir, "child.sh", &format!("{}\nexec sleep 60", say(INIT)));
    let summary = dir.join(format!("summary-{}.json", env.len()));
    let mut c = watchdog();
    for (k, _) in std::env::vars_os() {
        if k.to_string_lossy().starts_with("OTEL_") {
            c.env_remove(k);
        }
    }
    let t = Instant::now();
    let out = c
        .envs(env.iter().map(|(k, v)| (k, v)))
        .args([
            "run",
            "--idle",
            "1s",
            "--no-progress",
            "30s",
            "--grace",
            "1s",
        ])
        .arg("--summary")
        .arg(&summary)
        .arg("--")
        .arg(&child)
        .output()
        .unwrap();
    let took = t.elapsed();
    let summary: Value = serde_json::from_slice(&std::fs::read(&summary).unwrap_or_default())
        .unwrap_or_else(|e| panic!("no summary ({e}); stderr: {}", stderr(&out)));
    assert!(
        !stderr(&out).contains("this build has no telemetry"),
        "agent-watchdog was built without the cargo feature `telemetry`: run the tests with \
         --features telemetry-grpc (or --all-features, as scripts/test does)"
    );
    Run { out, summary, took }
}

fn grpc_env(endpoint: &str) -> Vec<(&'static str, String)> {
    vec![
        ("AGENT_WATCHDOG_TELEMETRY", "1".into()),
        ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc".into()),
        ("OTEL_EXPORTER_OTLP_ENDPOINT", endpoint.into()),
    ]
}

/// An OTLP/gRPC receiver on loopback: HTTP/2 (`h2`), every request's message decoded with the
/// official definitions, answered with an empty `Export*ServiceResponse` and `grpc-status: 0`.
struct GrpcReceiver {
    port: u16,
    got: Arc<Mutex<Received>>,
    _rt: tokio::runtime::Runtime,
}

impl GrpcReceiver {
    fn start() -> GrpcReceiver {
        let rt = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .enable_all()
            .build()
            .unwrap();
        let listener = rt
            .block_on(tokio::net::TcpListener::bind("127.0.0.1:0"))
            .expect("bind the receiver");
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Received::default()));
        let g = got.clone();
        rt.spawn(async move {
            while let Ok((sock, _)) = listener.accept().await {
                let g = g.clone();
                tokio::spawn(async move {
                    let Ok(mut conn) = h2::server::handshake(sock).await else {
                        return;
                    };
                    while let Some(Ok((req, respond))) = conn.accept().await {
                        tokio::spawn(answer(req, respond, g.clone()));
                    }
                });
            }
        });
        GrpcReceiver { port, got, _rt: rt }
    }
}

async fn answer(
    req: http::Request<h2::RecvStream>,
    mut respond: h2::server::SendResponse<bytes::Bytes>,
    got: Arc<Mutex<Received>>,
) {
    let path = req.uri().path().to_owned();
    let ctype = req
        .headers()
        .get("content-type")
        .and_then(|v| v.to_str().ok())
        .unwrap_or("")
        .to_owned();
    let mut body = req.into_body();
    let mut buf = Vec::new();
    while let Some(chunk) = body.data().await {
        let Ok(chunk) = chunk else { return };
        let _ = body.flow_control().release_capacity(chunk.len());
        buf.extend_from_slice(&chunk);
    }
    {
        let mut g = got.lock().unwrap();
        g.requests.push((path.clone(), ctype));
        otlp::decode_grpc(&path, &buf, &mut g);
    }
    let head = http::Response::builder()
        .status(200)
        .header("content-type", "application/grpc")
        .body(())
        .unwrap();
    let Ok(mut send) = respond.send_response(head, false) else {
        return;
    };
    // One message of zero bytes: the empty response (no partial success).
    let _ = send.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), false);
    let mut trailers = http::HeaderMap::new();
    trailers.insert("grpc-status", http::HeaderValue::from_static("0"));
    let _ = send.send_trailers(trailers);
}

#[cfg(feature = "telemetry-grpc")]
#[test]
fn a_kill_is_exported_over_grpc() {
    let dir = tempfile::tempdir().unwrap();
    let rx = GrpcReceiver::start();
    let r = run(
        dir.path(),
        &grpc_env(&format!("http://127.0.0.1:{}", rx.port)),
    );
    assert_eq!(r.out.status.code(), Some(124), "{}", stderr(&r.out));
    assert_eq!(r.summary["kill"]["kind"], "idle");
    let g = rx.got.lock().unwrap();
    let what = format!("{:?}; undecoded {:?}", g.requests, g.undecoded);
    assert!(g.undecoded.is_empty(), "{what}");
    let paths: Vec<&str> = g.requests.iter().map(|(p, _)| p.as_str()).collect();
    for rpc in [
        "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export",
        "/opentelemetry.proto.collector.logs.v1.LogsService/Export",
    ] {
        assert!(paths.contains(&rpc), "{what}");
    }
    assert!(
        g.requests
            .iter()
            .all(|(_, c)| c.starts_with("application/grpc")),
        "{what}"
    );
    for i in &g.items {
        assert_eq!(i.service, "agent-watchdog", "{i:?}");
        assert_eq!(i.attr("session.id"), Some("s1"), "{i:?}");
    }
    let kills: Vec<_> = g
        .items
        .iter()
        .filter(|i| i.signal == "metrics" && i.name == "agent_watchdog.kill.count")
        .collect();
    assert_eq!(kills.len(), 1, "{what}");
    assert_eq!(kills[0].attr("kill.kind"), Some("idle"));
    assert_eq!(kills[0].value, 1.0);
    let events: Vec<_> = g
        .items
        .iter()
        .filter(|i| i.signal == "logs" && i.name == "agent_watchdog.kill")
        .collect();
    assert_eq!(events.len(), 1, "{what}");
    assert_eq!(events[0].attr("kill.kind"), Some("idle"));
    // No complaint: the collector took everything.
    assert!(!stderr(&r.out).contains("telemetry"), "{}", stderr(&r.out));
}

#[cfg(feature = "telemetry-grpc")]
#[test]
fn a_grpc_collector_that_is_down_changes_nothing() {
    let dir = tempfile::tempdir().unwrap();
    let base = run(dir.path(), &[]);
    let mut env = grpc_env(&format!("http://127.0.0.1:{}", otlp::closed_port()));
    env.push(("AGENT_WATCHDOG_TELEMETRY_FLUSH_MS", "1000".into()));
    let r = run(dir.path(), &env);
    assert_eq!(r.out.status.code(), base.out.status.code());
    for field in ["outcome", "exit_code", "session_id", "exit", "lines"] {
        assert_eq!(r.summary[field], base.summary[field], "{field}");
    }
    assert_eq!(r.summary["kill"]["kind"], base.summary["kill"]["kind"]);
    let err = stderr(&r.out);
    assert_eq!(
        err.lines().filter(|l| l.contains("telemetry")).count(),
        1,
        "{err}"
    );
    let extra = r.took.saturating_sub(base.took);
    assert!(
        extra < Duration::from_millis(1000) + Duration::from_secs(5),
        "telemetry cost {extra:?} (flush bound 1000 ms): {err}"
    );
}

/// A build without the feature: `grpc` turns both signals off with one line each, naming the
/// feature; nothing reaches a receiver that is there, and the run is as without telemetry.
#[cfg(not(feature = "telemetry-grpc"))]
#[test]
fn grpc_is_refused_with_one_line_per_signal() {
    let dir = tempfile::tempdir().unwrap();
    let base = run(dir.path(), &[]);
    let rx = GrpcReceiver::start();
    let r = run(
        dir.path(),
        &grpc_env(&format!("http://127.0.0.1:{}", rx.port)),
    );
    assert!(rx.got.lock().unwrap().requests.is_empty());
    assert!(
        r.took < base.took + Duration::from_secs(5),
        "{:?} against {:?}",
        r.took,
        base.took
    );
    assert_eq!(r.out.status.code(), base.out.status.code());
    assert_eq!(r.summary["outcome"], base.summary["outcome"]);
    assert_eq!(r.summary["kill"]["kind"], base.summary["kill"]["kind"]);
    let err = stderr(&r.out);
    let lines: Vec<&str> = err.lines().filter(|l| l.contains("telemetry")).collect();
    assert_eq!(
        lines,
        ["metrics", "logs"].map(|s| format!(
            "agent-watchdog: telemetry: OTLP protocol \"grpc\": this build has no grpc exporter \
             (cargo feature `telemetry-grpc`); use http/protobuf; {s} off"
        )),
        "{err}"
    );
}

/// The receiver itself, so that a build without the feature still checks it: a request that
/// is not one gRPC message is reported as undecoded, never taken for an empty export.
#[test]
fn the_receiver_decodes_only_grpc_messages() {
    let mut g = Received::default();
    let rpc = "/opentelemetry.proto.collector.metrics.v1.MetricsService/Export";
    otlp::decode_grpc(rpc, &[0, 0, 0, 0, 0], &mut g);
    assert!(g.undecoded.is_empty() && g.items.is_empty(), "{g:?}");
    otlp::decode_grpc(rpc, &[1, 0, 0, 0, 0], &mut g);
    otlp::decode_grpc(rpc, &[0, 0, 0, 0, 9, 1], &mut g);
    otlp::decode_grpc("/other.Service/Export", &[0, 0, 0, 0, 0], &mut g);
    assert_eq!(g.undecoded.len(), 3, "{g:?}");
}
