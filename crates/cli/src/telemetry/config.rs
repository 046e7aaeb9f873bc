//! The telemetry configuration: our switch and the standard `OTEL_*` variables, read from the
//! watchdog's own environment (the child's is never changed).
//!
//! Every variable is optional. A value we cannot use never stops the run: it gives one
//! warning line (in [`Config::warnings`]) and the documented fallback, which is the default for
//! an interval or a timeout and "this signal off" for an exporter or protocol we do not have.

use std::collections::BTreeMap;
use std::time::Duration;

/// Our switch: telemetry is on only when this is `1` or `true`.
pub const SWITCH: &str = crate::options::TELEMETRY.env;
/// The bound on the flush at exit, in milliseconds (default [`DEFAULT_FLUSH`]).
pub const FLUSH_VAR: &str = crate::options::TELEMETRY_FLUSH_MS.env;
/// The default bound on the flush at exit (the option table's).
pub use crate::options::TELEMETRY_FLUSH as DEFAULT_FLUSH;
/// The default of `OTEL_METRIC_EXPORT_INTERVAL`.
pub const DEFAULT_METRIC_INTERVAL: Duration = Duration::from_millis(60_000);
/// The default of `OTEL_LOGS_EXPORT_INTERVAL`.
pub const DEFAULT_LOGS_INTERVAL: Duration = Duration::from_millis(5_000);
/// The default OTLP/HTTP endpoint (the specification's).
pub const DEFAULT_ENDPOINT: &str = "http://localhost:4318";
/// Our `service.name`, unless `OTEL_SERVICE_NAME` or `OTEL_RESOURCE_ATTRIBUTES` names one.
pub const SERVICE_NAME: &str = "agent-watchdog";

/// The default OTLP/gRPC endpoint (the specification's), with the cargo feature
/// `telemetry-grpc`.
pub const DEFAULT_GRPC_ENDPOINT: &str = "http://localhost:4317";
/// The cargo feature that builds the gRPC exporter in.
pub const GRPC_FEATURE: &str = "telemetry-grpc";

/// The OTLP transport and encoding.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Protocol {
    /// `http/protobuf` (the default).
    HttpProtobuf,
    /// `http/json`.
    HttpJson,
    /// `grpc`: only in a build with the cargo feature [`GRPC_FEATURE`]; a build without it
    /// never produces this value (it refuses `grpc` with a warning).
    Grpc,
}

/// Which exporter a signal uses (`OTEL_METRICS_EXPORTER`, `OTEL_LOGS_EXPORTER`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// `otlp` (the default): OTLP over HTTP to [`Signal::endpoint`].
    Otlp,
    /// `console`: one readable line per metric point or log record, on **stderr** (our stdout
    /// is the session's stream and is never written to). The OTLP fields are unused.
    Console,
}

/// Where one signal goes, when it is exported.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Signal {
    /// The exporter.
    pub kind: Kind,
    /// The full URL posted to, e.g. `http://localhost:4318/v1/metrics` (for `grpc` the
    /// collector's base URL, e.g. `http://localhost:4317`; empty for the console).
    pub endpoint: String,
    /// The encoding.
    pub protocol: Protocol,
    /// The headers sent with each export (`OTEL_EXPORTER_OTLP_HEADERS` and the signal's own).
    pub headers: BTreeMap<String, String>,
    /// How often the batch is exported.
    pub interval: Duration,
}

/// The whole configuration, when telemetry is on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Config {
    /// Metrics, unless off.
    pub metrics: Option<Signal>,
    /// Log events, unless off.
    pub logs: Option<Signal>,
    /// The resource attributes (`OTEL_RESOURCE_ATTRIBUTES`, then `service.name`).
    pub resource: BTreeMap<String, String>,
    /// The bound on the flush at exit (and on each export request).
    pub flush: Duration,
    /// One line per value that could not be used, and what was done instead.
    pub warnings: Vec<String>,
}

/// Whether `value` of the switch turns telemetry on.
/// The switch, read by the one switch rule of every variable (anything else: off).
fn switched_on(value: Option<&str>) -> bool {
    value.and_then(crate::options::parse_switch) == Some(true)
}

/// The one warning for a value of [`SWITCH`] that is no switch word (telemetry then stays
/// off, the documented fallback); `None` for a switch word, an empty or unset variable.
pub fn switch_warning(value: Option<&str>) -> Option<String> {
    let v = value.filter(|v| !v.trim().is_empty())?;
    crate::options::parse_switch(v).is_none().then(|| {
        format!(
            "{SWITCH}={v:?} is not {}: telemetry stays off",
            crate::options::TELEMETRY.range()
        )
    })
}

impl Config {
    /// The configuration from the process environment; `None` when the switch is off.
    pub fn from_env() -> Option<Config> {
        Config::from_lookup(|k| std::env::var(k).ok())
    }

    /// The configuration from `get` (a variable's value, `None` when unset or not UTF-8);
    /// `None` when the switch is off. Never panics, whatever the values.
    pub fn from_lookup(get: impl Fn(&str) -> Option<String>) -> Option<Config> {
        if !switched_on(get(SWITCH).as_deref()) {
            return None;
        }
        // An empty variable counts as unset (as the specification says).
        let get = |k: &str| get(k).filter(|v| !v.trim().is_empty());
        let mut warnings = Vec::new();
        let flush = millis(&get, FLUSH_VAR, DEFAULT_FLUSH, &mut warnings);
        let headers = headers(get("OTEL_EXPORTER_OTLP_HEADERS").as_deref(), &mut warnings);
        let metric_interval = millis(
            &get,
            "OTEL_METRIC_EXPORT_INTERVAL",
            DEFAULT_METRIC_INTERVAL,
            &mut warnings,
        );
        let logs_interval = millis(
            &get,
            "OTEL_LOGS_EXPORT_INTERVAL",
            DEFAULT_LOGS_INTERVAL,
            &mut warnings,
        );
        let base = get("OTEL_EXPORTER_OTLP_ENDPOINT");
        let protocol = get("OTEL_EXPORTER_OTLP_PROTOCOL");
        let mut signal = |name: &str, exporter_var: &str, upper: &str, interval: Duration| {
            let exporter = get(exporter_var).unwrap_or_else(|| "otlp".into());
            match exporter.trim() {
                "otlp" => {}
                "none" => return None,
                // To stderr: our stdout is the session's stream.
                "console" => {
                    return Some(Signal {
                        kind: Kind::Console,
                        endpoint: String::new(),
                        protocol: Protocol::HttpProtobuf,
                        headers: BTreeMap::new(),
                        interval,
                    })
                }
                other => {
                    warnings.push(format!(
                        "{exporter_var}={other:?} is not supported (otlp, console or none); \
                         {name} off"
                    ));
                    return None;
                }
            }
            let proto_var = format!("OTEL_EXPORTER_OTLP_{upper}_PROTOCOL");
            let protocol = match get(&proto_var)
                .or(protocol.clone())
                .as_deref()
                .map(str::trim)
            {
                None | Some("http/protobuf") => Protocol::HttpProtobuf,
                Some("http/json") => Protocol::HttpJson,
                Some("grpc") if cfg!(feature = "telemetry-grpc") => Protocol::Grpc,
                Some("grpc") => {
                    warnings.push(format!(
                        "OTLP protocol \"grpc\": this build has no grpc exporter (cargo \
                         feature `{GRPC_FEATURE}`); use http/protobuf; {name} off"
                    ));
                    return None;
                }
                Some(other) => {
                    let known = if cfg!(feature = "telemetry-grpc") {
                        "http/protobuf, http/json or grpc"
                    } else {
                        "http/protobuf or http/json"
                    };
                    warnings.push(format!(
                        "OTLP protocol {other:?} is not supported ({known}); {name} off"
                    ));
                    return None;
                }
            };
            let own = format!("OTEL_EXPORTER_OTLP_{upper}_ENDPOINT");
            let endpoint = match get(&own) {
                // A signal's own endpoint is used as it is.
                Some(e) => e.trim().to_owned(),
                // gRPC: the base endpoint as it is (the service path is the RPC's).
                None if protocol == Protocol::Grpc => base
                    .as_deref()
                    .map(str::trim)
                    .unwrap_or(DEFAULT_GRPC_ENDPOINT)
                    .to_owned(),
                None => {
                    let base = base.as_deref().map(str::trim).unwrap_or(DEFAULT_ENDPOINT);
                    format!("{}/v1/{name}", base.trim_end_matches('/'))
                }
            };
            if endpoint.starts_with("https://") {
                // The exporters are built without TLS (docs/telemetry.md).
                warnings.push(format!(
                    "OTLP endpoint {endpoint:?}: https is not built in (use a local collector \
                     on http://); {name} off"
                ));
                return None;
            }
            if !endpoint.starts_with("http://") {
                warnings.push(format!(
                    "OTLP endpoint {endpoint:?} is not an http:// URL; {name} off"
                ));
                return None;
            }
            let mut h = headers.clone();
            let own_headers = format!("OTEL_EXPORTER_OTLP_{upper}_HEADERS");
            h.extend(self::headers(get(&own_headers).as_deref(), &mut warnings));
            Some(Signal {
                kind: Kind::Otlp,
                endpoint,
                protocol,
                headers: h,
                interval,
            })
        };
        let metrics = signal(
            "metrics",
            "OTEL_METRICS_EXPORTER",
            "METRICS",
            metric_interval,
        );
        let logs = signal("logs", "OTEL_LOGS_EXPORTER", "LOGS", logs_interval);
        let mut resource = pairs(
            get("OTEL_RESOURCE_ATTRIBUTES").as_deref(),
            "OTEL_RESOURCE_ATTRIBUTES",
            &mut warnings,
        );
        match get("OTEL_SERVICE_NAME") {
            Some(n) => {
                resource.insert("service.name".into(), n.trim().to_owned());
            }
            None => {
                resource
                    .entry("service.name".into())
                    .or_insert_with(|| SERVICE_NAME.into());
            }
        }
        Some(Config {
            metrics,
            logs,
            resource,
            flush,
            warnings,
        })
    }
}

/// A duration in milliseconds from `var`; `default` (and a warning) when it is not a whole
/// number of milliseconds.
fn millis(
    get: &impl Fn(&str) -> Option<String>,
    var: &str,
    default: Duration,
    warnings: &mut Vec<String>,
) -> Duration {
    let Some(v) = get(var) else {
        return default;
    };
    match v.trim().parse::<u64>() {
        Ok(n) if n > 0 => Duration::from_millis(n),
        _ => {
            warnings.push(format!(
                "{var}={v:?} is not a positive number of milliseconds; using {}",
                default.as_millis()
            ));
            default
        }
    }
}

/// `key=value,key=value` (values percent-decoded), as in `OTEL_EXPORTER_OTLP_HEADERS` and
/// `OTEL_RESOURCE_ATTRIBUTES`; a member without `=` or with an empty key is left out, with a
/// warning.
fn pairs(value: Option<&str>, var: &str, warnings: &mut Vec<String>) -> BTreeMap<String, String> {
    let mut out = BTreeMap::new();
    for member in value
        .unwrap_or("")
        .split(',')
        .filter(|m| !m.trim().is_empty())
    {
        match member.split_once('=') {
            Some((k, v)) if !k.trim().is_empty() => {
                out.insert(k.trim().to_owned(), percent_decode(v.trim()));
            }
            _ => warnings.push(format!("{var}: left out {member:?} (not key=value)")),
        }
    }
    out
}

fn headers(value: Option<&str>, warnings: &mut Vec<String>) -> BTreeMap<String, String> {
    pairs(value, "OTLP headers", warnings)
}

/// `%XX` decoded; anything that is not a valid escape (or not UTF-8 after decoding) is kept
/// as it is.
fn percent_decode(s: &str) -> String {
    let b = s.as_bytes();
    let mut out = Vec::with_capacity(b.len());
    let mut i = 0;
    while i < b.len() {
        if b[i] == b'%' && i + 2 < b.len() {
            if let (Some(h), Some(l)) = (hex(b[i + 1]), hex(b[i + 2])) {
                out.push(h * 16 + l);
                i += 3;
                continue;
            }
        }
        out.push(b[i]);
        i += 1;
    }
    String::from_utf8(out).unwrap_or_else(|_| s.to_owned())
}

fn hex(b: u8) -> Option<u8> {
    (b as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cfg(vars: &[(&str, &str)]) -> Option<Config> {
        let vars: Vec<(String, String)> = vars
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect();
        Config::from_lookup(move |k| vars.iter().find(|(n, _)| n == k).map(|(_, v)| v.clone()))
    }

    #[test]
    fn off_unless_switched_on() {
        assert_eq!(cfg(&[]), None);
        assert_eq!(cfg(&[(SWITCH, "0")]), None);
        assert_eq!(cfg(&[(SWITCH, "")]), None);
        // Claude Code's own switch is the child's, not ours.
        assert_eq!(cfg(&[("CLAUDE_CODE_ENABLE_TELEMETRY", "1")]), None);
        assert!(cfg(&[(SWITCH, "1")]).is_some());
        assert!(cfg(&[(SWITCH, " TRUE ")]).is_some());
    }

    #[test]
    fn the_option_table_states_our_switch() {
        use crate::options;
        assert_eq!(options::TELEMETRY.default_text(), "off");
        // Every switch word of the table, and only those, turns it on.
        for on in options::SWITCH_ON {
            assert!(cfg(&[(SWITCH, &on.to_uppercase())]).is_some(), "{on}");
        }
        for off in options::SWITCH_OFF.iter().chain(&["maybe", "2"]) {
            assert_eq!(cfg(&[(SWITCH, off)]), None, "{off}");
        }
    }

    #[test]
    fn defaults_follow_the_specification() {
        let c = cfg(&[(SWITCH, "1")]).unwrap();
        let m = c.metrics.unwrap();
        assert_eq!(m.kind, Kind::Otlp);
        assert_eq!(m.endpoint, "http://localhost:4318/v1/metrics");
        assert_eq!(m.protocol, Protocol::HttpProtobuf);
        assert_eq!(m.interval, DEFAULT_METRIC_INTERVAL);
        let l = c.logs.unwrap();
        assert_eq!(l.endpoint, "http://localhost:4318/v1/logs");
        assert_eq!(l.interval, DEFAULT_LOGS_INTERVAL);
        assert_eq!(c.flush, DEFAULT_FLUSH);
        assert_eq!(c.resource["service.name"], SERVICE_NAME);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn reads_every_variable() {
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9/"),
            (
                "OTEL_EXPORTER_OTLP_LOGS_ENDPOINT",
                "http://10.0.0.1:4318/custom",
            ),
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "http/json"),
            ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "http/protobuf"),
            (
                "OTEL_EXPORTER_OTLP_HEADERS",
                "Authorization=Bearer%20x, a=b",
            ),
            ("OTEL_EXPORTER_OTLP_METRICS_HEADERS", "a=c"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "1000"),
            ("OTEL_LOGS_EXPORT_INTERVAL", "250"),
            ("OTEL_RESOURCE_ATTRIBUTES", "team=infra,service.name=fleet"),
            (FLUSH_VAR, "500"),
        ])
        .unwrap();
        let m = c.metrics.unwrap();
        assert_eq!(m.endpoint, "http://127.0.0.1:9/v1/metrics");
        assert_eq!(m.protocol, Protocol::HttpJson);
        assert_eq!(m.interval, Duration::from_secs(1));
        assert_eq!(m.headers["Authorization"], "Bearer x");
        assert_eq!(m.headers["a"], "c");
        let l = c.logs.unwrap();
        assert_eq!(l.endpoint, "http://10.0.0.1:4318/custom");
        assert_eq!(l.protocol, Protocol::HttpProtobuf);
        assert_eq!(l.interval, Duration::from_millis(250));
        assert_eq!(l.headers["a"], "b");
        assert_eq!(c.resource["team"], "infra");
        assert_eq!(c.resource["service.name"], "fleet");
        assert_eq!(c.flush, Duration::from_millis(500));
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
    }

    #[test]
    fn bad_values_fall_back_with_one_warning_each() {
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_METRIC_EXPORT_INTERVAL", "soon"),
            ("OTEL_LOGS_EXPORT_INTERVAL", "-5"),
            (FLUSH_VAR, "0"),
            ("OTEL_EXPORTER_OTLP_HEADERS", "novalue,=x,k=v"),
            ("OTEL_RESOURCE_ATTRIBUTES", "broken"),
        ])
        .unwrap();
        assert_eq!(
            c.metrics.as_ref().unwrap().interval,
            DEFAULT_METRIC_INTERVAL
        );
        assert_eq!(c.logs.as_ref().unwrap().interval, DEFAULT_LOGS_INTERVAL);
        assert_eq!(c.flush, DEFAULT_FLUSH);
        assert_eq!(c.metrics.as_ref().unwrap().headers.len(), 1);
        let w = c.warnings.join("\n");
        for needle in [
            "OTEL_METRIC_EXPORT_INTERVAL=\"soon\"",
            "OTEL_LOGS_EXPORT_INTERVAL=\"-5\"",
            "AGENT_WATCHDOG_TELEMETRY_FLUSH_MS=\"0\"",
            "\"novalue\"",
            "\"=x\"",
            "OTEL_RESOURCE_ATTRIBUTES: left out \"broken\"",
        ] {
            assert_eq!(w.matches(needle).count(), 1, "{needle} in {w}");
        }
    }

    #[test]
    fn unsupported_exporters_and_protocols_turn_that_signal_off() {
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_METRICS_EXPORTER", "prometheus"),
            ("OTEL_LOGS_EXPORTER", "zipkin"),
        ])
        .unwrap();
        assert_eq!((c.metrics, c.logs), (None, None));
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        let c = cfg(&[(SWITCH, "1"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "spdy")]).unwrap();
        assert_eq!((c.metrics, c.logs), (None, None));
        assert!(c.warnings[0].contains("\"spdy\""), "{:?}", c.warnings);
        let c = cfg(&[(SWITCH, "1"), ("OTEL_LOGS_EXPORTER", "none")]).unwrap();
        assert!(c.metrics.is_some() && c.logs.is_none() && c.warnings.is_empty());
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "localhost:4318"),
        ])
        .unwrap();
        assert_eq!((c.metrics, c.logs), (None, None));
        assert_eq!(c.warnings.len(), 2);
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"),
        ])
        .unwrap();
        assert_eq!((c.metrics, c.logs), (None, None));
        assert_eq!(c.warnings.len(), 2);
        assert!(c
            .warnings
            .iter()
            .all(|w| w.contains("https is not built in")));
    }

    /// Without the cargo feature `telemetry-grpc`, `grpc` turns the signal off with one line
    /// that says what to do instead.
    #[cfg(not(feature = "telemetry-grpc"))]
    #[test]
    fn grpc_is_refused_by_a_build_without_it() {
        let c = cfg(&[(SWITCH, "1"), ("OTEL_EXPORTER_OTLP_PROTOCOL", " grpc ")]).unwrap();
        assert_eq!((c.metrics, c.logs), (None, None));
        assert_eq!(c.warnings.len(), 2, "{:?}", c.warnings);
        for (w, name) in c.warnings.iter().zip(["metrics", "logs"]) {
            assert_eq!(
                w,
                &format!(
                    "OTLP protocol \"grpc\": this build has no grpc exporter (cargo feature \
                     `telemetry-grpc`); use http/protobuf; {name} off"
                )
            );
        }
        // One signal's own protocol refuses only that signal.
        let c = cfg(&[(SWITCH, "1"), ("OTEL_EXPORTER_OTLP_LOGS_PROTOCOL", "grpc")]).unwrap();
        assert!(c.metrics.is_some() && c.logs.is_none());
        assert_eq!(c.warnings.len(), 1, "{:?}", c.warnings);
    }

    /// With the cargo feature `telemetry-grpc`, `grpc` is an OTLP protocol whose endpoint is
    /// the base URL as it is (default `http://localhost:4317`).
    #[cfg(feature = "telemetry-grpc")]
    #[test]
    fn grpc_uses_the_base_endpoint_as_it_is() {
        let c = cfg(&[(SWITCH, "1"), ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc")]).unwrap();
        let (m, l) = (c.metrics.unwrap(), c.logs.unwrap());
        assert_eq!((m.protocol, l.protocol), (Protocol::Grpc, Protocol::Grpc));
        assert_eq!(m.endpoint, DEFAULT_GRPC_ENDPOINT);
        assert_eq!(l.endpoint, DEFAULT_GRPC_ENDPOINT);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:9"),
            ("OTEL_EXPORTER_OTLP_METRICS_PROTOCOL", "grpc"),
        ])
        .unwrap();
        assert_eq!(c.metrics.unwrap().endpoint, "http://127.0.0.1:9");
        assert_eq!(c.logs.unwrap().endpoint, "http://127.0.0.1:9/v1/logs");
    }

    #[test]
    fn console_goes_to_stderr_whatever_the_otlp_variables_say() {
        let c = cfg(&[
            (SWITCH, "1"),
            ("OTEL_METRICS_EXPORTER", " console "),
            ("OTEL_LOGS_EXPORTER", "console"),
            // Would turn an OTLP signal off; unused by the console.
            ("OTEL_EXPORTER_OTLP_PROTOCOL", "grpc"),
            ("OTEL_EXPORTER_OTLP_ENDPOINT", "https://collector:4318"),
            ("OTEL_LOGS_EXPORT_INTERVAL", "250"),
        ])
        .unwrap();
        let (m, l) = (c.metrics.unwrap(), c.logs.unwrap());
        assert_eq!((m.kind, l.kind), (Kind::Console, Kind::Console));
        assert_eq!(l.interval, Duration::from_millis(250));
        assert_eq!(m.interval, DEFAULT_METRIC_INTERVAL);
        assert!(c.warnings.is_empty(), "{:?}", c.warnings);
        // One console, one OTLP.
        let c = cfg(&[(SWITCH, "1"), ("OTEL_LOGS_EXPORTER", "console")]).unwrap();
        assert_eq!(c.metrics.unwrap().kind, Kind::Otlp);
        assert_eq!(c.logs.unwrap().kind, Kind::Console);
    }

    #[test]
    fn no_value_panics() {
        let odd = [
            "",
            " ",
            "%",
            "%zz",
            "%e2%82",
            "=",
            ",,,",
            "\u{0}",
            "99999999999999999999",
            "é=ü",
            "a=%",
            "http://",
            "\n",
        ];
        let vars = [
            "OTEL_METRICS_EXPORTER",
            "OTEL_LOGS_EXPORTER",
            "OTEL_EXPORTER_OTLP_PROTOCOL",
            "OTEL_EXPORTER_OTLP_ENDPOINT",
            "OTEL_EXPORTER_OTLP_METRICS_ENDPOINT",
            "OTEL_EXPORTER_OTLP_HEADERS",
            "OTEL_METRIC_EXPORT_INTERVAL",
            "OTEL_LOGS_EXPORT_INTERVAL",
            "OTEL_RESOURCE_ATTRIBUTES",
            "OTEL_SERVICE_NAME",
            FLUSH_VAR,
        ];
        for var in vars {
            for v in odd {
                let c = cfg(&[(SWITCH, "1"), (var, v)]).unwrap();
                assert!(c.resource.contains_key("service.name"));
            }
        }
    }

    #[test]
    fn percent_decoding_keeps_what_is_not_an_escape() {
        assert_eq!(percent_decode("a%20b"), "a b");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%e2%82%ac"), "€");
        assert_eq!(percent_decode("%ff"), "%ff");
    }
}
