//! The bounds of a `/metrics` endpoint, every host's (the runtime's `prometheus::serve`, the
//! Python API's `serve_metrics`, the Node API's `serveMetrics`): where it listens by default,
//! how long a client has for its request head, the largest head, the connections served at
//! once, and the rule each value is checked by ([`ServeBounds`]).

use std::time::Duration;

use watchdog_core::config::InvalidValue;

use super::scrape::MAX_HEAD;

/// The bounds of a `/metrics` endpoint.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ServeBounds {
    /// The address it listens on. Default `127.0.0.1`.
    pub host: String,
    /// The port. Default 9464 (0: the system picks one).
    pub port: u16,
    /// The time a client has for its whole request head (then it is dropped unanswered), and
    /// again to take the answer. Default 5 s.
    pub timeout: Duration,
    /// The largest request head read (request line and headers); over it: 431. Default 8 KiB.
    pub max_head: usize,
    /// Connections served at once (more wait in the listen backlog). Default 64.
    pub max_connections: usize,
}

impl Default for ServeBounds {
    fn default() -> Self {
        ServeBounds {
            host: "127.0.0.1".into(),
            port: 9464,
            timeout: Duration::from_secs(5),
            max_head: MAX_HEAD,
            max_connections: 64,
        }
    }
}

fn bad(allowed: &'static str, value: String) -> InvalidValue {
    InvalidValue { allowed, value }
}

fn render(n: f64) -> String {
    if n.fract() == 0.0 && n.abs() < 1e15 {
        format!("{}", n as i64)
    } else {
        format!("{n}")
    }
}

impl ServeBounds {
    /// A port: an integer in [0, 65535].
    pub fn port(n: f64) -> Result<u16, InvalidValue> {
        (n.fract() == 0.0 && (0.0..=65535.0).contains(&n))
            .then_some(n as u16)
            .ok_or_else(|| bad("an integer in [0, 65535]", render(n)))
    }

    /// An address: a non-empty string.
    pub fn host(s: &str) -> Result<String, InvalidValue> {
        (!s.is_empty())
            .then(|| s.to_owned())
            .ok_or_else(|| bad("a non-empty string", format!("{s:?}")))
    }

    /// A timeout of `n` seconds: a finite number > 0.
    pub fn timeout_secs(n: f64) -> Result<Duration, InvalidValue> {
        Duration::try_from_secs_f64(n)
            .ok()
            .filter(|d| !d.is_zero() && n.is_finite())
            .ok_or_else(|| bad("a number > 0", render(n)))
    }

    /// A count (the head's bytes, the connections): an integer >= 1.
    pub fn count(n: f64) -> Result<usize, InvalidValue> {
        (n.fract() == 0.0 && n >= 1.0 && n <= usize::MAX as f64)
            .then_some(n as usize)
            .ok_or_else(|| bad("an integer >= 1", render(n)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_bound_has_its_rule() {
        assert_eq!(ServeBounds::port(0.0), Ok(0));
        assert_eq!(ServeBounds::port(65535.0), Ok(65535));
        for bad in [-1.0, 65536.0, 1.5, f64::NAN] {
            assert!(ServeBounds::port(bad).is_err(), "{bad}");
        }
        assert_eq!(
            ServeBounds::port(70000.0).unwrap_err().to_string(),
            "must be an integer in [0, 65535], got 70000"
        );
        assert!(ServeBounds::host("").is_err());
        assert_eq!(
            ServeBounds::timeout_secs(0.5),
            Ok(Duration::from_millis(500))
        );
        for bad in [0.0, -1.0, f64::INFINITY, f64::NAN] {
            assert!(ServeBounds::timeout_secs(bad).is_err(), "{bad}");
        }
        assert_eq!(ServeBounds::count(1.0), Ok(1));
        for bad in [0.0, 1.5, -3.0] {
            assert!(ServeBounds::count(bad).is_err(), "{bad}");
        }
        let d = ServeBounds::default();
        assert_eq!((d.port, d.max_head, d.max_connections), (9464, 8192, 64));
    }
}
