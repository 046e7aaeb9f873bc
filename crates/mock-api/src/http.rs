//! A minimal HTTP/1.1 request reader and response writer.
//!
//! Enough for a loopback test server: request line, headers, a body framed by
//! `Content-Length` or chunked transfer encoding, keep-alive. Anything else is a
//! [`ReadError::Malformed`] that the server answers with `400` and a close.

use std::io;

use tokio::io::{AsyncBufRead, AsyncBufReadExt, AsyncReadExt, AsyncWrite, AsyncWriteExt};

const MAX_LINE: u64 = 16 * 1024;
const MAX_HEADERS: usize = 200;
const MAX_BODY: usize = 64 * 1024 * 1024;

/// A parsed request.
#[derive(Debug)]
pub(crate) struct Request {
    pub method: String,
    pub target: String,
    pub http10: bool,
    /// Lower-cased names, in order.
    pub headers: Vec<(String, String)>,
    pub body: Vec<u8>,
}

impl Request {
    pub fn header(&self, name: &str) -> Option<&str> {
        self.headers
            .iter()
            .find(|(n, _)| n == name)
            .map(|(_, v)| v.as_str())
    }

    /// The target's path (without its query).
    pub fn path(&self) -> &str {
        self.target.split('?').next().unwrap_or("")
    }

    /// Whether the connection may serve another request afterwards.
    pub fn keep_alive(&self) -> bool {
        let conn = self.header("connection").map(|v| v.to_ascii_lowercase());
        match conn.as_deref() {
            Some(v) if v.split(',').any(|t| t.trim() == "close") => false,
            Some(v) if v.split(',').any(|t| t.trim() == "keep-alive") => true,
            _ => !self.http10,
        }
    }
}

#[derive(Debug)]
pub(crate) enum ReadError {
    /// Clean EOF before a request started.
    Closed,
    Malformed(&'static str),
    /// The socket failed.
    Io,
}

impl From<io::Error> for ReadError {
    fn from(_: io::Error) -> Self {
        ReadError::Io
    }
}

/// Reads one line (with its `\n`), bounded. Returns an empty vec on EOF.
async fn read_line<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut line = Vec::new();
    (&mut *r)
        .take(MAX_LINE)
        .read_until(b'\n', &mut line)
        .await?;
    if !line.is_empty() && !line.ends_with(b"\n") {
        if line.len() as u64 >= MAX_LINE {
            return Err(ReadError::Malformed("line too long"));
        }
        return Err(ReadError::Malformed("unexpected end of stream"));
    }
    Ok(line)
}

fn trim_crlf(line: &[u8]) -> &[u8] {
    let line = line.strip_suffix(b"\n").unwrap_or(line);
    line.strip_suffix(b"\r").unwrap_or(line)
}

/// Reads one request head (the body is left unread: see [`read_body`]);
/// [`ReadError::Closed`] on a clean EOF between requests.
pub(crate) async fn read_head<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Request, ReadError> {
    // Tolerate stray empty lines between requests (RFC 9112 §2.2).
    let mut line;
    loop {
        line = read_line(r).await?;
        if line.is_empty() {
            return Err(ReadError::Closed);
        }
        if !trim_crlf(&line).is_empty() {
            break;
        }
    }
    let request_line = std::str::from_utf8(trim_crlf(&line))
        .map_err(|_| ReadError::Malformed("request line is not UTF-8"))?;
    let mut parts = request_line.split(' ');
    let (Some(method), Some(target), Some(version), None) =
        (parts.next(), parts.next(), parts.next(), parts.next())
    else {
        return Err(ReadError::Malformed("bad request line"));
    };
    let http10 = match version {
        "HTTP/1.1" => false,
        "HTTP/1.0" => true,
        _ => return Err(ReadError::Malformed("unsupported HTTP version")),
    };
    if method.is_empty()
        || !method.bytes().all(|b| b.is_ascii_uppercase())
        || !target.starts_with('/')
    {
        return Err(ReadError::Malformed("bad request line"));
    }

    let mut headers = Vec::new();
    loop {
        let line = read_line(r).await?;
        if line.is_empty() {
            return Err(ReadError::Malformed("unexpected end of headers"));
        }
        let line = trim_crlf(&line);
        if line.is_empty() {
            break;
        }
        if headers.len() >= MAX_HEADERS {
            return Err(ReadError::Malformed("too many headers"));
        }
        let line =
            std::str::from_utf8(line).map_err(|_| ReadError::Malformed("header is not UTF-8"))?;
        let (name, value) = line
            .split_once(':')
            .ok_or(ReadError::Malformed("header without colon"))?;
        if name.is_empty() || name.contains(char::is_whitespace) {
            return Err(ReadError::Malformed("bad header name"));
        }
        headers.push((name.to_ascii_lowercase(), value.trim().to_string()));
    }

    Ok(Request {
        method: method.to_string(),
        target: target.to_string(),
        http10,
        headers,
        body: Vec::new(),
    })
}

/// Reads the body announced by the head into `req.body`.
pub(crate) async fn read_body<R: AsyncBufRead + Unpin>(
    r: &mut R,
    req: &mut Request,
) -> Result<(), ReadError> {
    let chunked = req
        .header("transfer-encoding")
        .is_some_and(|v| v.to_ascii_lowercase().contains("chunked"));
    if chunked {
        req.body = read_chunked(r).await?;
    } else if let Some(len) = req.header("content-length") {
        let len: usize = len
            .parse()
            .map_err(|_| ReadError::Malformed("bad content-length"))?;
        if len > MAX_BODY {
            return Err(ReadError::Malformed("body too large"));
        }
        let mut body = vec![0; len];
        r.read_exact(&mut body).await.map_err(|e| match e.kind() {
            io::ErrorKind::UnexpectedEof => {
                ReadError::Malformed("body shorter than content-length")
            }
            _ => ReadError::Io,
        })?;
        req.body = body;
    }
    Ok(())
}

async fn read_chunked<R: AsyncBufRead + Unpin>(r: &mut R) -> Result<Vec<u8>, ReadError> {
    let mut body = Vec::new();
    loop {
        let line = read_line(r).await?;
        let line = std::str::from_utf8(trim_crlf(&line))
            .map_err(|_| ReadError::Malformed("bad chunk size"))?;
        let size = line.split(';').next().unwrap_or("").trim();
        let size =
            usize::from_str_radix(size, 16).map_err(|_| ReadError::Malformed("bad chunk size"))?;
        if size == 0 {
            // Trailers, up to the empty line.
            loop {
                let t = read_line(r).await?;
                if t.is_empty() {
                    return Err(ReadError::Malformed("unexpected end of trailers"));
                }
                if trim_crlf(&t).is_empty() {
                    return Ok(body);
                }
            }
        }
        if body.len() + size > MAX_BODY {
            return Err(ReadError::Malformed("body too large"));
        }
        let start = body.len();
        body.resize(start + size, 0);
        r.read_exact(&mut body[start..])
            .await
            .map_err(|_| ReadError::Malformed("truncated chunk"))?;
        let crlf = read_line(r).await?;
        if !trim_crlf(&crlf).is_empty() {
            return Err(ReadError::Malformed("chunk not followed by CRLF"));
        }
    }
}

fn reason(status: u16) -> &'static str {
    match status {
        100 => "Continue",
        200 => "OK",
        400 => "Bad Request",
        401 => "Unauthorized",
        403 => "Forbidden",
        404 => "Not Found",
        405 => "Method Not Allowed",
        413 => "Payload Too Large",
        429 => "Too Many Requests",
        500 => "Internal Server Error",
        503 => "Service Unavailable",
        529 => "Overloaded",
        _ => "Status",
    }
}

fn head(status: u16, headers: &[(String, String)]) -> Vec<u8> {
    let mut out = format!("HTTP/1.1 {status} {}\r\n", reason(status));
    for (n, v) in headers {
        // Never let a header value break the framing.
        if n.contains(['\r', '\n', ':']) || v.contains(['\r', '\n']) {
            continue;
        }
        out.push_str(n);
        out.push_str(": ");
        out.push_str(v);
        out.push_str("\r\n");
    }
    out.push_str("\r\n");
    out.into_bytes()
}

/// Writes a complete response with a `Content-Length` body (omitted for `HEAD`).
pub(crate) async fn write_full<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
    body: &[u8],
    keep_alive: bool,
    head_only: bool,
) -> io::Result<()> {
    let mut h = headers.to_vec();
    h.push(("content-length".into(), body.len().to_string()));
    if !keep_alive {
        h.push(("connection".into(), "close".into()));
    }
    let mut out = head(status, &h);
    if !head_only {
        out.extend_from_slice(body);
    }
    w.write_all(&out).await?;
    w.flush().await
}

/// Writes the head of a chunked response.
pub(crate) async fn write_chunked_head<W: AsyncWrite + Unpin>(
    w: &mut W,
    status: u16,
    headers: &[(String, String)],
    keep_alive: bool,
) -> io::Result<()> {
    let mut h = headers.to_vec();
    h.push(("transfer-encoding".into(), "chunked".into()));
    if !keep_alive {
        h.push(("connection".into(), "close".into()));
    }
    w.write_all(&head(status, &h)).await?;
    w.flush().await
}

/// Writes one chunk of a chunked body (empty data is skipped: it would end the body).
pub(crate) async fn write_chunk<W: AsyncWrite + Unpin>(w: &mut W, data: &[u8]) -> io::Result<()> {
    if data.is_empty() {
        return Ok(());
    }
    let mut out = format!("{:x}\r\n", data.len()).into_bytes();
    out.extend_from_slice(data);
    out.extend_from_slice(b"\r\n");
    w.write_all(&out).await?;
    w.flush().await
}

/// Ends a chunked body.
pub(crate) async fn write_last_chunk<W: AsyncWrite + Unpin>(w: &mut W) -> io::Result<()> {
    w.write_all(b"0\r\n\r\n").await?;
    w.flush().await
}

/// Writes `100 Continue`.
pub(crate) async fn write_continue<W: AsyncWrite + Unpin>(w: &mut W) -> io::Result<()> {
    w.write_all(b"HTTP/1.1 100 Continue\r\n\r\n").await?;
    w.flush().await
}

/// Accept connections on `listener` until `stopped` fires, each served by `serve` in a task of
/// its own; then stop every connection still served. An accept error (e.g. out of file
/// descriptors) backs off instead of spinning. Both mocks' servers run on it.
pub(crate) async fn accept_loop<F, Fut>(
    listener: tokio::net::TcpListener,
    mut stopped: tokio::sync::oneshot::Receiver<()>,
    serve: F,
) where
    F: Fn(tokio::net::TcpStream) -> Fut,
    Fut: std::future::Future<Output = ()> + Send + 'static,
{
    let mut conns = tokio::task::JoinSet::new();
    loop {
        tokio::select! {
            _ = &mut stopped => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => {
                    conns.spawn(serve(stream));
                }
                Err(_) => tokio::time::sleep(std::time::Duration::from_millis(20)).await,
            },
            Some(_) = conns.join_next(), if !conns.is_empty() => {}
        }
    }
    conns.shutdown().await;
}
