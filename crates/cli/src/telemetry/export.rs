//! The exporters: the OpenTelemetry SDK's meter and logger providers with OTLP/HTTP exporters
//! (or the [`super::console`] ones, to stderr), each exporting on its own background thread (the SDK's periodic reader and batch log
//! processor), and the bounded flush at exit.

use std::sync::mpsc;
use std::time::{Duration, Instant};

use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::{WithExportConfig, WithHttpConfig};
use opentelemetry_sdk::logs::{
    BatchConfigBuilder, BatchLogProcessor, SdkLogger, SdkLoggerProvider,
};
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::Resource;

use super::config::{Config, Kind, Protocol, Signal};
use super::console::{ConsoleLogs, ConsoleMetrics};

/// The instrumentation scope of our meter and logger.
const SCOPE: &str = "agent-watchdog";

/// How much the providers hold before the export: log records queued (beyond that the SDK
/// drops them). Metric series are the SDK's: [`SERIES`] attribute sets an instrument, the
/// rest folded into one overflow series (`otel.metric.overflow=true`).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Bounds {
    /// Log records queued.
    pub(crate) events: usize,
}

/// The SDK's series limit an instrument (its default cardinality limit).
pub(crate) const SERIES: usize = 2000;

impl Bounds {
    /// A live run: the SDK's default (a run has a few events).
    pub(crate) const RUN: Bounds = Bounds { events: 2048 };
    /// An audit back-fill: every session of the audit, a few events each.
    pub(crate) const AUDIT: Bounds = Bounds { events: 200_000 };
}

/// The running providers.
pub(crate) struct Exporter {
    meters: Option<SdkMeterProvider>,
    logs: Option<SdkLoggerProvider>,
    flush: Duration,
    /// Declared last: dropped after the providers (their shutdown needs it).
    #[cfg(feature = "telemetry-grpc")]
    _grpc: Option<GrpcRuntime>,
}

fn protocol(p: Protocol) -> opentelemetry_otlp::Protocol {
    match p {
        Protocol::HttpJson => opentelemetry_otlp::Protocol::HttpJson,
        // `Grpc` never reaches the HTTP builder (see `Exporter::start`).
        Protocol::HttpProtobuf | Protocol::Grpc => opentelemetry_otlp::Protocol::HttpBinary,
    }
}

/// The gRPC exporters' own runtime (tonic needs tokio): one worker thread, started only when
/// a signal uses `grpc`. Shut down in the background when dropped, so that neither a drop in
/// an async context nor a collector that never answers can block the exit.
#[cfg(feature = "telemetry-grpc")]
struct GrpcRuntime(Option<tokio::runtime::Runtime>);

#[cfg(feature = "telemetry-grpc")]
impl GrpcRuntime {
    fn start() -> Result<GrpcRuntime, String> {
        tokio::runtime::Builder::new_multi_thread()
            .worker_threads(1)
            .thread_name("telemetry-grpc")
            .enable_all()
            .build()
            .map(|rt| GrpcRuntime(Some(rt)))
            .map_err(|e| format!("grpc runtime: {e}"))
    }

    fn handle(&self) -> Option<&tokio::runtime::Handle> {
        self.0.as_ref().map(tokio::runtime::Runtime::handle)
    }
}

#[cfg(feature = "telemetry-grpc")]
impl Drop for GrpcRuntime {
    fn drop(&mut self) {
        if let Some(rt) = self.0.take() {
            rt.shutdown_background();
        }
    }
}

/// The runtime of the gRPC exporters, started by the first that needs it.
#[cfg(feature = "telemetry-grpc")]
fn grpc_rt(rt: &mut Option<GrpcRuntime>) -> Result<tokio::runtime::Handle, String> {
    if rt.is_none() {
        *rt = Some(GrpcRuntime::start()?);
    }
    rt.as_ref()
        .and_then(GrpcRuntime::handle)
        .cloned()
        .ok_or_else(|| "grpc runtime: not running".to_owned())
}

/// An OTLP/gRPC exporter builder (metrics or logs) set up for `signal`: its endpoint and
/// metadata (the headers), each request bounded by the flush limit. A header that cannot be
/// gRPC metadata is left out, and its name added to `left_out` (said once at the end).
#[cfg(feature = "telemetry-grpc")]
fn grpc<B: WithExportConfig + opentelemetry_otlp::WithTonicConfig>(
    builder: B,
    signal: &Signal,
    cfg: &Config,
    left_out: &mut std::collections::BTreeSet<String>,
) -> B {
    let mut metadata = tonic::metadata::MetadataMap::new();
    for (k, v) in &signal.headers {
        // gRPC metadata keys are lowercase ASCII; a header that cannot be one is left out.
        match (
            tonic::metadata::MetadataKey::from_bytes(k.to_ascii_lowercase().as_bytes()),
            tonic::metadata::MetadataValue::try_from(v.as_str()),
        ) {
            (Ok(k), Ok(v)) => {
                metadata.insert(k, v);
            }
            _ => {
                left_out.insert(k.clone());
            }
        }
    }
    builder
        .with_endpoint(signal.endpoint.clone())
        .with_timeout(cfg.flush)
        .with_metadata(metadata)
}

/// An OTLP/HTTP exporter builder (metrics or logs) set up for `signal`: its endpoint, encoding
/// and headers, each request bounded by the flush limit.
fn http<B: WithExportConfig + WithHttpConfig>(builder: B, signal: &Signal, cfg: &Config) -> B {
    builder
        .with_endpoint(signal.endpoint.clone())
        .with_protocol(protocol(signal.protocol))
        .with_timeout(cfg.flush)
        .with_headers(headers(signal))
}

impl Exporter {
    /// Build the providers of `cfg`; nothing is sent yet. Call outside an async context.
    pub(crate) fn start(cfg: &Config, bounds: Bounds) -> Result<Exporter, String> {
        let resource = Resource::builder_empty()
            .with_attributes(
                cfg.resource
                    .iter()
                    .map(|(k, v)| KeyValue::new(k.clone(), v.clone())),
            )
            .build();
        #[cfg(feature = "telemetry-grpc")]
        let mut grpc_runtime: Option<GrpcRuntime> = None;
        #[cfg(feature = "telemetry-grpc")]
        let mut left_out = std::collections::BTreeSet::new();
        // The OTLP exporter of signal `$s` from `$builder` (the metric or the log exporter's
        // builder: their types share no trait that builds, hence a macro): gRPC on the
        // runtime, or HTTP. Returns from `start` when it cannot be built.
        macro_rules! otlp_exporter {
            ($builder:expr, $what:literal, $s:expr) => {
                match $s.protocol {
                    #[cfg(feature = "telemetry-grpc")]
                    Protocol::Grpc => {
                        let rt = grpc_rt(&mut grpc_runtime)?;
                        // tonic's channel spawns its worker on the runtime entered.
                        let _entered = rt.enter();
                        grpc($builder.with_tonic(), $s, cfg, &mut left_out).build()
                    }
                    _ => http($builder.with_http(), $s, cfg).build(),
                }
                .map_err(|e| format!("{} exporter: {e}", $what))?
            };
        }
        let meters = match &cfg.metrics {
            Some(s) => {
                let builder = SdkMeterProvider::builder().with_resource(resource.clone());
                let builder = match s.kind {
                    Kind::Otlp => {
                        let exporter = otlp_exporter!(
                            opentelemetry_otlp::MetricExporter::builder(),
                            "metrics",
                            s
                        );
                        builder.with_reader(
                            PeriodicReader::builder(exporter)
                                .with_interval(s.interval)
                                .build(),
                        )
                    }
                    Kind::Console => builder.with_reader(
                        PeriodicReader::builder(ConsoleMetrics)
                            .with_interval(s.interval)
                            .build(),
                    ),
                };
                Some(builder.build())
            }
            None => None,
        };
        let logs = match &cfg.logs {
            Some(s) => {
                let batch = BatchConfigBuilder::default()
                    .with_scheduled_delay(s.interval)
                    .with_max_queue_size(bounds.events)
                    .build();
                let processor = match s.kind {
                    Kind::Otlp => {
                        let exporter =
                            otlp_exporter!(opentelemetry_otlp::LogExporter::builder(), "logs", s);
                        BatchLogProcessor::builder(exporter)
                            .with_batch_config(batch)
                            .build()
                    }
                    Kind::Console => BatchLogProcessor::builder(ConsoleLogs)
                        .with_batch_config(batch)
                        .build(),
                };
                Some(
                    SdkLoggerProvider::builder()
                        .with_resource(resource)
                        .with_log_processor(processor)
                        .build(),
                )
            }
            None => None,
        };
        #[cfg(feature = "telemetry-grpc")]
        for k in left_out {
            eprintln!(
                "agent-watchdog: telemetry: OTLP header {k:?} cannot be gRPC metadata; left out"
            );
        }
        Ok(Exporter {
            meters,
            logs,
            flush: cfg.flush,
            #[cfg(feature = "telemetry-grpc")]
            _grpc: grpc_runtime,
        })
    }

    /// Our meter, when metrics are exported.
    pub(crate) fn meter(&self) -> Option<opentelemetry::metrics::Meter> {
        self.meters.as_ref().map(|p| p.meter(SCOPE))
    }

    /// Our logger, when log events are exported.
    pub(crate) fn logger(&self) -> Option<SdkLogger> {
        use opentelemetry::logs::LoggerProvider as _;
        self.logs.as_ref().map(|p| p.logger(SCOPE))
    }

    /// Export what is left and stop, waiting at most the flush bound; what could not be sent
    /// by then is dropped. Returns the one line to say when something was lost.
    pub(crate) fn shutdown(self) -> Option<String> {
        let deadline = Instant::now() + self.flush;
        let (tx, rx) = mpsc::channel::<(&'static str, Result<(), String>)>();
        let mut pending = 0;
        // Each provider on a thread of its own, so a slow collector costs the bound once.
        if let Some(p) = self.meters {
            let tx = tx.clone();
            pending += std::thread::Builder::new()
                .name("telemetry-flush".into())
                .spawn(move || {
                    let _ = tx.send(("metrics", p.shutdown().map_err(|e| e.to_string())));
                })
                .map(|_| 1)
                .unwrap_or(0);
        }
        if let Some(p) = self.logs {
            let tx = tx.clone();
            pending += std::thread::Builder::new()
                .name("telemetry-flush".into())
                .spawn(move || {
                    let _ = tx.send(("logs", p.shutdown().map_err(|e| e.to_string())));
                })
                .map(|_| 1)
                .unwrap_or(0);
        }
        drop(tx);
        let mut failed = Vec::new();
        for _ in 0..pending {
            let left = deadline.saturating_duration_since(Instant::now());
            match rx.recv_timeout(left) {
                Ok((_, Ok(()))) => {}
                Ok((what, Err(e))) => failed.push(format!("{what}: {e}")),
                Err(_) => {
                    // The threads left behind end with the process.
                    return Some(format!(
                        "telemetry: the collector did not take the export within {} ms; the \
                         rest is dropped",
                        self.flush.as_millis()
                    ));
                }
            }
        }
        (!failed.is_empty()).then(|| {
            format!(
                "telemetry: export failed, what was not sent is lost ({})",
                failed.join("; ")
            )
        })
    }
}

fn headers(s: &Signal) -> std::collections::HashMap<String, String> {
    s.headers
        .iter()
        .map(|(k, v)| (k.clone(), v.clone()))
        .collect()
}
