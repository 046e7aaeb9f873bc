//! An OTLP/HTTP receiver on loopback for the telemetry tests. It decodes what it receives with
//! the official OpenTelemetry definitions (`opentelemetry-proto`: `prost` for
//! `application/x-protobuf`, its serde mapping for `application/json`), so a test reads what a
//! collector would read, never our own rendering of our output.
#![allow(dead_code)]

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use opentelemetry_proto::tonic::collector::logs::v1::ExportLogsServiceRequest;
use opentelemetry_proto::tonic::collector::metrics::v1::ExportMetricsServiceRequest;
use opentelemetry_proto::tonic::common::v1::{any_value, AnyValue, KeyValue};
use opentelemetry_proto::tonic::metrics::v1::metric::Data;
use prost::Message;

/// How the receiver answers.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Answer {
    /// 200 at once.
    Ok,
    /// 200 after this long.
    Slow(Duration),
    /// 500 at once.
    Error,
}

/// One metric data point or log record, flattened.
#[derive(Debug, Clone)]
pub struct Item {
    /// `metrics` or `logs`.
    pub signal: &'static str,
    /// The resource's `service.name`.
    pub service: String,
    /// The metric name, or the log record's event name.
    pub name: String,
    /// The point's or record's attributes, rendered as strings.
    pub attrs: BTreeMap<String, String>,
    /// A sum's or gauge's value, a histogram's count.
    pub value: f64,
    /// Log records: `time_unix_nano` (when it happened; 0 when unset). Metrics: 0.
    pub time_ns: u64,
    /// Log records: `observed_time_unix_nano`. Metrics: 0.
    pub observed_ns: u64,
    /// Histograms: the bucket boundaries. Else empty.
    pub bounds: Vec<f64>,
}

impl Item {
    /// An attribute.
    pub fn attr(&self, k: &str) -> Option<&str> {
        self.attrs.get(k).map(String::as_str)
    }
}

/// What the receiver got.
#[derive(Debug, Default)]
pub struct Received {
    /// Every decoded item.
    pub items: Vec<Item>,
    /// `(path, content type)` of every request.
    pub requests: Vec<(String, String)>,
    /// Bodies the official definitions could not decode, with the error.
    pub undecoded: Vec<String>,
}

/// The receiver; stops accepting when dropped.
pub struct Receiver {
    pub port: u16,
    pub got: Arc<Mutex<Received>>,
}

impl Receiver {
    /// Listen on a free loopback port.
    pub fn start(answer: Answer) -> Receiver {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind the receiver");
        let port = listener.local_addr().unwrap().port();
        let got = Arc::new(Mutex::new(Received::default()));
        let g = got.clone();
        std::thread::spawn(move || {
            for conn in listener.incoming().flatten() {
                let g = g.clone();
                std::thread::spawn(move || serve(conn, answer, &g));
            }
        });
        Receiver { port, got }
    }

    /// `http://127.0.0.1:PORT`.
    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// A snapshot of the items.
    pub fn items(&self) -> Vec<Item> {
        self.got.lock().unwrap().items.clone()
    }

    /// Wait up to `limit` for an item `pred` accepts.
    pub fn wait_for(&self, limit: Duration, pred: impl Fn(&Item) -> bool) -> Option<Item> {
        let end = std::time::Instant::now() + limit;
        loop {
            if let Some(i) = self.items().into_iter().find(|i| pred(i)) {
                return Some(i);
            }
            if std::time::Instant::now() > end {
                return None;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    }

    /// What was received, for a failure message.
    pub fn describe(&self) -> String {
        let g = self.got.lock().unwrap();
        let names: std::collections::BTreeSet<String> = g
            .items
            .iter()
            .map(|i| format!("{} {} {}", i.service, i.signal, i.name))
            .collect();
        format!(
            "requests {:?}; undecoded {:?}; items {names:#?}",
            g.requests, g.undecoded
        )
    }
}

/// A port nothing listens on (bound, then closed).
pub fn closed_port() -> u16 {
    let l = TcpListener::bind("127.0.0.1:0").unwrap();
    l.local_addr().unwrap().port()
}

fn serve(conn: TcpStream, answer: Answer, got: &Mutex<Received>) {
    let mut out = conn.try_clone().unwrap();
    let mut r = BufReader::new(conn);
    loop {
        let mut line = String::new();
        if r.read_line(&mut line).unwrap_or(0) == 0 {
            return;
        }
        let path = line.split_whitespace().nth(1).unwrap_or("").to_owned();
        let (mut len, mut ctype, mut chunked, mut gzip) = (0usize, String::new(), false, false);
        loop {
            let mut h = String::new();
            if r.read_line(&mut h).unwrap_or(0) == 0 {
                return;
            }
            let h = h.trim_end();
            if h.is_empty() {
                break;
            }
            let (k, v) = h.split_once(':').unwrap_or((h, ""));
            let v = v.trim();
            match k.to_ascii_lowercase().as_str() {
                "content-length" => len = v.parse().unwrap_or(0),
                "content-type" => ctype = v.to_ascii_lowercase(),
                "transfer-encoding" => chunked = v.eq_ignore_ascii_case("chunked"),
                "content-encoding" => gzip = v.eq_ignore_ascii_case("gzip"),
                _ => {}
            }
        }
        let mut body = Vec::new();
        if chunked {
            loop {
                let mut size = String::new();
                if r.read_line(&mut size).unwrap_or(0) == 0 {
                    return;
                }
                let n = usize::from_str_radix(size.trim(), 16).unwrap_or(0);
                let mut chunk = vec![0; n + 2];
                if r.read_exact(&mut chunk).is_err() {
                    return;
                }
                body.extend_from_slice(&chunk[..n]);
                if n == 0 {
                    break;
                }
            }
        } else {
            body.resize(len, 0);
            if r.read_exact(&mut body).is_err() {
                return;
            }
        }
        {
            let mut g = got.lock().unwrap();
            g.requests.push((path.clone(), ctype.clone()));
            if gzip {
                g.undecoded.push(format!("{path}: gzip body (not decoded)"));
            } else {
                decode(&path, &ctype, &body, &mut g);
            }
        }
        let status = match answer {
            Answer::Ok => "200 OK",
            Answer::Slow(d) => {
                std::thread::sleep(d);
                "200 OK"
            }
            Answer::Error => "500 Internal Server Error",
        };
        let (rtype, rbody): (&str, &[u8]) = if ctype.contains("json") {
            ("application/json", b"{}")
        } else {
            ("application/x-protobuf", b"")
        };
        let head = format!(
            "HTTP/1.1 {status}\r\ncontent-type: {rtype}\r\ncontent-length: {}\r\n\r\n",
            rbody.len()
        );
        if out.write_all(head.as_bytes()).is_err() || out.write_all(rbody).is_err() {
            return;
        }
    }
}

/// A gRPC request of the OTLP collector services (`path` is the RPC's, e.g.
/// `/opentelemetry.proto.collector.metrics.v1.MetricsService/Export`): its one length-prefixed
/// message (gRPC framing), decoded as [`decode`] does a protobuf body.
pub fn decode_grpc(path: &str, body: &[u8], g: &mut Received) {
    let signal = if path.contains(".metrics.v1.MetricsService/") {
        "/v1/metrics"
    } else if path.contains(".logs.v1.LogsService/") {
        "/v1/logs"
    } else {
        g.undecoded
            .push(format!("{path}: not an OTLP metrics or logs RPC"));
        return;
    };
    match body {
        [0, a, b, c, d, msg @ ..] if u32::from_be_bytes([*a, *b, *c, *d]) as usize == msg.len() => {
            decode(signal, "application/x-protobuf", msg, g)
        }
        _ => g.undecoded.push(format!(
            "{path}: not one uncompressed gRPC message ({} bytes)",
            body.len()
        )),
    }
}

fn decode(path: &str, ctype: &str, body: &[u8], g: &mut Received) {
    let json = ctype.contains("json");
    if path.ends_with("/v1/metrics") {
        let req: Result<ExportMetricsServiceRequest, String> = if json {
            serde_json::from_slice(body).map_err(|e| e.to_string())
        } else {
            ExportMetricsServiceRequest::decode(body).map_err(|e| e.to_string())
        };
        match req {
            Ok(req) => metrics(req, &mut g.items),
            Err(e) => g.undecoded.push(format!("{path} ({ctype}): {e}")),
        }
    } else if path.ends_with("/v1/logs") {
        let req: Result<ExportLogsServiceRequest, String> = if json {
            serde_json::from_slice(body).map_err(|e| e.to_string())
        } else {
            ExportLogsServiceRequest::decode(body).map_err(|e| e.to_string())
        };
        match req {
            Ok(req) => logs(req, &mut g.items),
            Err(e) => g.undecoded.push(format!("{path} ({ctype}): {e}")),
        }
    }
}

fn text(v: &Option<AnyValue>) -> String {
    match v.as_ref().and_then(|v| v.value.as_ref()) {
        Some(any_value::Value::StringValue(s)) => s.clone(),
        Some(any_value::Value::BoolValue(b)) => b.to_string(),
        Some(any_value::Value::IntValue(i)) => i.to_string(),
        Some(any_value::Value::DoubleValue(d)) => d.to_string(),
        Some(other) => format!("{other:?}"),
        None => String::new(),
    }
}

fn attrs(kvs: &[KeyValue]) -> BTreeMap<String, String> {
    kvs.iter()
        .map(|kv| (kv.key.clone(), text(&kv.value)))
        .collect()
}

fn service(r: &Option<opentelemetry_proto::tonic::resource::v1::Resource>) -> String {
    r.as_ref()
        .map(|r| attrs(&r.attributes))
        .and_then(|a| a.get("service.name").cloned())
        .unwrap_or_default()
}

fn metrics(req: ExportMetricsServiceRequest, items: &mut Vec<Item>) {
    for rm in req.resource_metrics {
        let service = service(&rm.resource);
        for sm in rm.scope_metrics {
            for m in sm.metrics {
                let mut push = |a: &[KeyValue], value: f64, bounds: &[f64]| {
                    items.push(Item {
                        signal: "metrics",
                        service: service.clone(),
                        name: m.name.clone(),
                        attrs: attrs(a),
                        value,
                        time_ns: 0,
                        observed_ns: 0,
                        bounds: bounds.to_vec(),
                    })
                };
                use opentelemetry_proto::tonic::metrics::v1::number_data_point::Value as N;
                let num = |v: &Option<N>| match v {
                    Some(N::AsDouble(d)) => *d,
                    Some(N::AsInt(i)) => *i as f64,
                    None => f64::NAN,
                };
                match &m.data {
                    Some(Data::Sum(s)) => {
                        for p in &s.data_points {
                            push(&p.attributes, num(&p.value), &[]);
                        }
                    }
                    Some(Data::Gauge(s)) => {
                        for p in &s.data_points {
                            push(&p.attributes, num(&p.value), &[]);
                        }
                    }
                    Some(Data::Histogram(h)) => {
                        for p in &h.data_points {
                            push(&p.attributes, p.count as f64, &p.explicit_bounds);
                        }
                    }
                    _ => push(&[], f64::NAN, &[]),
                }
            }
        }
    }
}

fn logs(req: ExportLogsServiceRequest, items: &mut Vec<Item>) {
    for rl in req.resource_logs {
        let service = service(&rl.resource);
        for sl in rl.scope_logs {
            for rec in sl.log_records {
                let a = attrs(&rec.attributes);
                // Claude Code names its events in the attribute `event.name` (and the body).
                let name = if rec.event_name.is_empty() {
                    a.get("event.name")
                        .cloned()
                        .unwrap_or_else(|| text(&rec.body))
                } else {
                    rec.event_name.clone()
                };
                items.push(Item {
                    signal: "logs",
                    service: service.clone(),
                    name,
                    attrs: a,
                    value: 1.0,
                    time_ns: rec.time_unix_nano,
                    observed_ns: rec.observed_time_unix_nano,
                    bounds: Vec::new(),
                });
            }
        }
    }
}
