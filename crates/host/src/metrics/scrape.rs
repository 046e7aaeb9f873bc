//! A scrape of `/metrics`, sans-IO: where a request head ends ([`head_end`]), what it asks for
//! ([`Request::classify`]) and the whole answer as bytes ([`Request::response`]). A host reads
//! at most [`MAX_HEAD`] bytes (or its own bound) with a deadline, writes the answer, closes:
//! the runtime's `prometheus::serve` and the Python API's `serve_metrics` do, so every host
//! answers every request alike.
//!
//! `GET` and `HEAD` of `/metrics` (any query string) answer 200; another path 404; another
//! method 405; a request that is not HTTP/1.x 400; a head over the host's bound 431
//! ([`Request::HeadTooLarge`], which the host decides). Every answer closes its connection.
//!
//! ```
//! use watchdog_host::metrics::scrape::{head_end, Request};
//!
//! let bytes = b"GET /metrics HTTP/1.1\r\nHost: x\r\n\r\n";
//! let end = head_end(bytes).unwrap();
//! let request = Request::classify(&bytes[..end]);
//! assert_eq!(request, Request::Metrics { head_only: false });
//! let answer = request.response(|| "agent_watchdog_sessions 0\n".into());
//! assert!(answer.starts_with(b"HTTP/1.1 200 OK\r\n"));
//! assert!(answer.ends_with(b"\r\n\r\nagent_watchdog_sessions 0\n"));
//! ```

/// The content type of the text exposition format 0.0.4.
pub const CONTENT_TYPE: &str = "text/plain; version=0.0.4; charset=utf-8";

/// The default bound on a request head (request line and headers): 8 KiB.
pub const MAX_HEAD: usize = 8 * 1024;

/// What a request asks for, as far as a `/metrics` endpoint cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Request {
    /// `GET` (or `HEAD`: `head_only`) of `/metrics`.
    Metrics {
        /// `HEAD`: the answer's head without its body.
        head_only: bool,
    },
    /// Another path.
    NotFound,
    /// Another method.
    MethodNotAllowed,
    /// Not an HTTP/1.x request line.
    BadRequest,
    /// The head did not end within the host's bound.
    HeadTooLarge,
}

/// Where the head ends in `bytes` (the index just after the blank line, `\r\n\r\n` or `\n\n`),
/// if it does.
pub fn head_end(bytes: &[u8]) -> Option<usize> {
    bytes.windows(2).enumerate().find_map(|(i, w)| match w {
        b"\n\n" => Some(i + 2),
        [b'\n', b'\r'] if bytes.get(i + 2) == Some(&b'\n') => Some(i + 3),
        _ => None,
    })
}

impl Request {
    /// What the request head `head` asks for (only its request line is read).
    pub fn classify(head: &[u8]) -> Request {
        let line = head.split(|&b| b == b'\n').next().unwrap_or_default();
        let line = line.strip_suffix(b"\r").unwrap_or(line);
        let mut parts = line.split(|&b| b == b' ');
        let (Some(method), Some(target), Some(version), None) =
            (parts.next(), parts.next(), parts.next(), parts.next())
        else {
            return Request::BadRequest;
        };
        let token = |s: &[u8]| !s.is_empty() && s.iter().all(|b| b.is_ascii_alphanumeric());
        if !token(method) || !version.starts_with(b"HTTP/1.") || target.is_empty() {
            return Request::BadRequest;
        }
        let path = target.split(|&b| b == b'?').next().unwrap_or_default();
        let head_only = match method {
            b"GET" => false,
            b"HEAD" => true,
            _ => return Request::MethodNotAllowed,
        };
        if path == b"/metrics" {
            Request::Metrics { head_only }
        } else {
            Request::NotFound
        }
    }

    /// What the request line `method target` asks for, for a host whose HTTP server has read
    /// the request itself (node:http): as [`Request::classify`] of that line.
    pub fn of(method: &str, target: &str) -> Request {
        Request::classify(format!("{method} {target} HTTP/1.1").as_bytes())
    }

    /// The answer's parts: its status, content type, `Allow` header and body (`None`: the
    /// metrics), for a host whose HTTP server writes the head itself.
    pub fn answer(&self) -> Answer {
        let (status, reason, body) = match self {
            Request::Metrics { .. } => (200, "OK", None),
            Request::NotFound => (404, "Not Found", Some("not found: try /metrics\n")),
            Request::MethodNotAllowed => (405, "Method Not Allowed", Some("method not allowed\n")),
            Request::BadRequest => (400, "Bad Request", Some("bad request\n")),
            Request::HeadTooLarge => (
                431,
                "Request Header Fields Too Large",
                Some("request head too large\n"),
            ),
        };
        Answer {
            status,
            reason,
            content_type: match self {
                Request::Metrics { .. } => CONTENT_TYPE,
                _ => "text/plain; charset=utf-8",
            },
            allow: matches!(self, Request::MethodNotAllowed).then_some("GET, HEAD"),
            body,
            head_only: matches!(self, Request::Metrics { head_only: true }),
        }
    }

    /// The whole answer (status line, headers, `Connection: close`, body); `render` is called
    /// only for a scrape of `/metrics` (with [`Metrics::render_prometheus`](super::Metrics::render_prometheus)).
    pub fn response(&self, render: impl FnOnce() -> String) -> Vec<u8> {
        let a = self.answer();
        let body = a.body.map_or_else(render, str::to_owned);
        let extra = a
            .allow
            .map_or_else(String::new, |v| format!("Allow: {v}\r\n"));
        let mut out = format!(
            "HTTP/1.1 {} {}\r\nContent-Type: {}\r\nContent-Length: {}\r\n{extra}Connection: close\r\n\r\n",
            a.status,
            a.reason,
            a.content_type,
            body.len()
        )
        .into_bytes();
        if !a.head_only {
            out.extend_from_slice(body.as_bytes());
        }
        out
    }
}

/// The parts of an answer ([`Request::answer`]); every answer closes its connection.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answer {
    /// The status code.
    pub status: u16,
    /// The status's reason phrase.
    pub reason: &'static str,
    /// The `Content-Type`.
    pub content_type: &'static str,
    /// The `Allow` header, if any.
    pub allow: Option<&'static str>,
    /// The body; `None`: the metrics, rendered by the host.
    pub body: Option<&'static str>,
    /// A `HEAD`: the head without the body.
    pub head_only: bool,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn heads_are_classified() {
        let classify = Request::classify;
        let m = Request::Metrics { head_only: false };
        assert_eq!(classify(b"GET /metrics HTTP/1.1\r\nHost: x\r\n"), m);
        assert_eq!(classify(b"GET /metrics?x=1 HTTP/1.0\n"), m);
        let h = Request::Metrics { head_only: true };
        assert_eq!(classify(b"HEAD /metrics HTTP/1.1\r\n"), h);
        assert_eq!(classify(b"GET / HTTP/1.1\r\n"), Request::NotFound);
        assert_eq!(classify(b"GET /metricsx HTTP/1.1\r\n"), Request::NotFound);
        let post = classify(b"POST /metrics HTTP/1.1\r\n");
        assert_eq!(post, Request::MethodNotAllowed);
        for bad in [
            &b""[..],
            b"\r\n",
            b"GET /metrics\r\n",
            b"GET  /metrics HTTP/1.1\r\n",
            b"GET /metrics HTTP/1.1 extra\r\n",
            b"GET /metrics SPDY/3\r\n",
            b"G\xffT /metrics HTTP/1.1\r\n",
        ] {
            assert_eq!(classify(bad), Request::BadRequest, "{bad:?}");
        }
    }

    #[test]
    fn a_request_read_by_the_hosts_server_gets_the_same_answer() {
        assert_eq!(
            Request::of("GET", "/metrics?x=1"),
            Request::Metrics { head_only: false }
        );
        assert_eq!(Request::of("DELETE", "/metrics"), Request::MethodNotAllowed);
        assert_eq!(Request::of("GET", "/"), Request::NotFound);
        assert_eq!(Request::of("GET", ""), Request::BadRequest);
        let a = Request::of("HEAD", "/metrics").answer();
        assert_eq!((a.status, a.body, a.head_only), (200, None, true));
        assert_eq!(Request::MethodNotAllowed.answer().allow, Some("GET, HEAD"));
    }

    #[test]
    fn the_end_of_a_head_is_found_in_either_spelling() {
        assert_eq!(head_end(b"GET / HTTP/1.1\r\n\r\n"), Some(18));
        assert_eq!(head_end(b"GET / HTTP/1.1\n\nrest"), Some(16));
        assert_eq!(head_end(b"GET / HTTP/1.1\r\nHost: x\r\n"), None);
        assert_eq!(head_end(b"\n\r"), None);
        assert_eq!(head_end(b""), None);
    }

    #[test]
    fn answers_have_their_status_length_and_close_and_head_has_no_body() {
        let text = |r: Request| String::from_utf8(r.response(|| "body\n".into())).unwrap();
        let get = text(Request::Metrics { head_only: false });
        assert!(get.starts_with("HTTP/1.1 200 OK\r\n"), "{get}");
        assert!(
            get.contains(&format!("Content-Type: {CONTENT_TYPE}\r\n")),
            "{get}"
        );
        assert!(get.contains("Content-Length: 5\r\nConnection: close\r\n\r\nbody\n"));
        let head = text(Request::Metrics { head_only: true });
        assert!(
            head.ends_with("Content-Length: 5\r\nConnection: close\r\n\r\n"),
            "{head}"
        );
        let post = text(Request::MethodNotAllowed);
        assert!(post.starts_with("HTTP/1.1 405 "), "{post}");
        assert!(post.contains("Allow: GET, HEAD\r\n"), "{post}");
        for (r, status) in [
            (Request::NotFound, "404"),
            (Request::BadRequest, "400"),
            (Request::HeadTooLarge, "431"),
        ] {
            let t = Request::response(&r, || unreachable!("rendered for {r:?}"));
            let t = String::from_utf8(t).unwrap();
            assert!(t.starts_with(&format!("HTTP/1.1 {status} ")), "{t}");
        }
    }
}
