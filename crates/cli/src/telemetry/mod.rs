//! Fleet telemetry: every run's decisions as OpenTelemetry metrics and log events, joined to
//! Claude Code's own telemetry by `session.id` (docs/telemetry.md).
//!
//! Off unless `AGENT_WATCHDOG_TELEMETRY=1` (`config::SWITCH`); when off nothing is built and
//! nothing runs. When on, the providers are built before the runtime starts; a run records
//! each decision as the run loop handles it (`live`: spells, warnings, signals, the gauges; a
//! kill when its ladder ends) and, once it is over, how it ended (`Telemetry::record`),
//! both read from the typed end of the run (`crate::run_report`), never from its summary; the SDK exports on its own threads, and the flush at exit waits
//! at most the bound (`config::DEFAULT_FLUSH`). A collector that is down, slow or failing
//! costs one stderr line and never the exit code or the summary.
//!
//! One concern a file: `config` reads the variables, `export` runs the SDK, `console` is the
//! `console` exporter (to stderr: our stdout is the session's stream), [`table`] lists the
//! metrics, `instruments` builds them, `hooks` is what the run loop calls, `live`, `gauges`
//! and `stop` record a run as it goes, `finished` records its end, `backfill` an audit. Built
//! with the cargo feature `telemetry`; without it, switching telemetry on says once that this
//! build has none.

#[cfg(feature = "telemetry")]
mod backfill;
pub(crate) mod config;
#[cfg(feature = "telemetry")]
mod console;
#[cfg(feature = "telemetry")]
mod export;
#[cfg(feature = "telemetry")]
mod finished;
#[cfg(feature = "telemetry")]
mod gauges;
#[cfg(all(test, feature = "telemetry"))]
mod guide_names;
mod hooks;
#[cfg(feature = "telemetry")]
mod instruments;
#[cfg(feature = "telemetry")]
mod kill;
#[cfg(feature = "telemetry")]
mod live;
pub mod table;

pub(crate) use hooks::Live;

use crate::run_report::Report;

/// What the telemetry is for: its bounds differ.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Use {
    /// `run`: one session.
    Run,
    /// `audit`: a back-fill of many past sessions.
    Audit,
}

/// The telemetry of one invocation; `None` inside when off.
pub(crate) struct Telemetry {
    #[cfg(feature = "telemetry")]
    inner: Option<On>,
}

#[cfg(feature = "telemetry")]
struct On {
    exporter: export::Exporter,
    meter: Option<opentelemetry::metrics::Meter>,
    logger: Option<opentelemetry_sdk::logs::SdkLogger>,
}

impl Telemetry {
    /// From the environment; says on stderr what it could not use. Call outside an async
    /// context (the HTTP client owns a runtime of its own).
    pub(crate) fn from_env() -> Telemetry {
        Telemetry::from_env_for(Use::Run)
    }

    /// From the environment, for `use_`; as [`Telemetry::from_env`].
    pub(crate) fn from_env_for(use_: Use) -> Telemetry {
        let Some(cfg) = config::Config::from_env() else {
            let switch = std::env::var(config::SWITCH).ok();
            if let Some(w) = config::switch_warning(switch.as_deref()) {
                eprintln!("agent-watchdog: telemetry: {w}");
            }
            return Telemetry::off();
        };
        for w in &cfg.warnings {
            eprintln!("agent-watchdog: telemetry: {w}");
        }
        Telemetry::start(&cfg, use_)
    }

    /// Telemetry off.
    pub(crate) fn off() -> Telemetry {
        Telemetry {
            #[cfg(feature = "telemetry")]
            inner: None,
        }
    }

    #[cfg(feature = "telemetry")]
    fn start(cfg: &config::Config, use_: Use) -> Telemetry {
        if cfg.metrics.is_none() && cfg.logs.is_none() {
            return Telemetry::off();
        }
        let bounds = match use_ {
            Use::Run => export::Bounds::RUN,
            Use::Audit => export::Bounds::AUDIT,
        };
        match export::Exporter::start(cfg, bounds) {
            Ok(exporter) => Telemetry {
                inner: Some(On {
                    meter: exporter.meter(),
                    logger: exporter.logger(),
                    exporter,
                }),
            },
            Err(e) => {
                eprintln!("agent-watchdog: telemetry off: {e}");
                Telemetry::off()
            }
        }
    }

    #[cfg(not(feature = "telemetry"))]
    fn start(_cfg: &config::Config, _use: Use) -> Telemetry {
        eprintln!(
            "agent-watchdog: telemetry: this build has no telemetry (cargo feature \
             `telemetry`); {} is ignored",
            config::SWITCH
        );
        Telemetry::off()
    }

    /// Whether anything is recorded.
    pub(crate) fn is_on(&self) -> bool {
        #[cfg(feature = "telemetry")]
        return self.inner.is_some();
        #[cfg(not(feature = "telemetry"))]
        false
    }

    /// What the run loop records into as a run goes (empty when off).
    pub(crate) fn live(&self) -> Live {
        #[cfg(feature = "telemetry")]
        if let Some(on) = &self.inner {
            return Live {
                inner: live::Live::new(on.meter.as_ref(), on.logger.clone()),
            };
        }
        Live::off()
    }

    /// Record how the invocation's runs ended: the first with the invocation's exit code and
    /// what recovery did, a continuation as a run of its own (its kill, its outcome, its code),
    /// under the same session id. What each decided while it ran was recorded then
    /// ([`Telemetry::live`]). Only records into the SDK's instruments and queue: no I/O here.
    pub(crate) fn record(&self, report: &Report) {
        #[cfg(feature = "telemetry")]
        if let Some(on) = &self.inner {
            let now = std::time::SystemTime::now();
            let recovery = report.recovery.as_ref().map(|r| &r.result);
            let (meter, logger) = (on.meter.as_ref(), on.logger.as_ref());
            finished::record_run(meter, logger, &report.first, report.code, recovery, now);
            if let Some(cont) = &report.continuation {
                finished::record_run(meter, logger, cont, cont.code, None, now);
            }
        }
        #[cfg(not(feature = "telemetry"))]
        let _ = report;
    }

    /// Back-fill the sessions of an audit (docs/telemetry.md): the same names as a live run,
    /// with `agent_watchdog.source = "audit"`. Only records into the SDK's instruments and
    /// queue: no I/O here. Returns the one line to say when the back-fill was larger than the
    /// telemetry holds (with [`Use::Audit`]), so part of it is dropped or folded.
    pub(crate) fn record_audit(&self, report: &watchdog_audit::AuditReport) -> Option<String> {
        #[cfg(feature = "telemetry")]
        if let Some(on) = &self.inner {
            let done = backfill::record_audit(on.meter.as_ref(), on.logger.as_ref(), report);
            let events = export::Bounds::AUDIT.events;
            let mut over = Vec::new();
            if on.logger.is_some() && done.events > events as u64 {
                over.push(format!(
                    "{} events, over the {events} one audit exports: the rest is dropped",
                    done.events
                ));
            }
            if on.meter.is_some() && done.sessions > export::SERIES as u64 {
                over.push(format!(
                    "{} sessions, over the {} series a metric holds: the rest is summed in \
                     one series marked otel.metric.overflow=true",
                    done.sessions,
                    export::SERIES
                ));
            }
            return (!over.is_empty()).then(|| {
                format!(
                    "telemetry: back-fill of {}; audit fewer files at a time for all of it",
                    over.join("; ")
                )
            });
        }
        #[cfg(not(feature = "telemetry"))]
        let _ = report;
        None
    }

    /// The bounded flush at exit; says on stderr, in one line, what was lost.
    pub(crate) fn shutdown(self) {
        #[cfg(feature = "telemetry")]
        if let Some(on) = self.inner {
            drop(on.meter);
            drop(on.logger);
            if let Some(line) = on.exporter.shutdown() {
                eprintln!("agent-watchdog: {line}");
            }
        }
    }
}
