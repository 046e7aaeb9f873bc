// serveMetrics(): a Prometheus scrape endpoint for a createWatchdog() watchdog, on node:http,
// for a host that has no server of its own (one that has can answer with
// watchdog.renderPrometheus() itself). Bounded like the Rust runtime's endpoint: the request
// head within timeoutMs and maxHeaderBytes, a connection cap, every answer closes its
// connection. Prints nothing. node:http is loaded on the first call, not at import (it is the
// largest part of importing this package, and most hosts never serve).

export const METRICS_CONTENT_TYPE = 'text/plain; version=0.0.4; charset=utf-8';

export const METRICS_SERVER_DEFAULTS = Object.freeze({
  port: 9464,
  host: '127.0.0.1',
  timeoutMs: 5000,
  maxHeaderBytes: 8 * 1024,
  maxConnections: 64,
});

const positiveInteger = (v) => Number.isInteger(v) && v >= 1;

function check(name, value, what, ok) {
  if (!ok(value)) throw new RangeError(`${name} must be ${what}, got ${String(value)}`);
}

function answer(res, status, body, extra = {}) {
  res.writeHead(status, {
    'Content-Type': status === 200 ? METRICS_CONTENT_TYPE : 'text/plain; charset=utf-8',
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
    ...extra,
  });
  res.end(body); // node:http sends no body for HEAD
}

/**
 * Serve `watchdog.renderPrometheus()` at `GET /metrics` on `host:port` until `close()`.
 * Resolves once listening; rejects with a clear Error when the port is in use.
 */
export async function serveMetrics(watchdog, options = {}) {
  if (typeof watchdog?.renderPrometheus !== 'function') {
    throw new TypeError('serveMetrics: expected a watchdog from createWatchdog() (it has renderPrometheus())');
  }
  const o = { ...METRICS_SERVER_DEFAULTS };
  for (const [k, v] of Object.entries(options ?? {})) if (v !== undefined) o[k] = v;
  check('port', o.port, 'an integer in [0, 65535]', (v) => Number.isInteger(v) && v >= 0 && v <= 65535);
  check('host', o.host, 'a non-empty string', (v) => typeof v === 'string' && v.length > 0);
  check('timeoutMs', o.timeoutMs, 'a number > 0', (v) => typeof v === 'number' && v > 0 && Number.isFinite(v));
  check('maxHeaderBytes', o.maxHeaderBytes, 'an integer >= 1', positiveInteger);
  check('maxConnections', o.maxConnections, 'an integer >= 1', positiveInteger);

  const { default: http } = await import('node:http');
  const server = http.createServer(
    {
      // A head over the bound: 431 (node's own answer); one not in time: 408, then closed.
      maxHeaderSize: o.maxHeaderBytes,
      headersTimeout: o.timeoutMs,
      requestTimeout: o.timeoutMs,
      connectionsCheckingInterval: Math.min(1000, o.timeoutMs),
    },
    (req, res) => {
      // As the Rust side classifies (watchdog_host::metrics::scrape): the method first, then the path.
      const path = (req.url ?? '').split('?')[0];
      if (req.method !== 'GET' && req.method !== 'HEAD') {
        answer(res, 405, 'method not allowed\n', { Allow: 'GET, HEAD' });
      } else if (path !== '/metrics') {
        answer(res, 404, 'not found: try /metrics\n');
      } else {
        let body;
        try {
          body = watchdog.renderPrometheus();
        } catch {
          return answer(res, 500, 'the watchdog could not be read\n');
        }
        answer(res, 200, body);
      }
      // A body we do not read is drained, so the close does not reset the connection.
      req.resume();
    },
  );
  server.maxConnections = o.maxConnections;
  // A client that sends nothing at all (no request begins) is dropped after the timeout too.
  server.setTimeout(o.timeoutMs, (socket) => socket.destroy());

  await new Promise((resolve, reject) => {
    const onError = (e) => {
      const why = e.code === 'EADDRINUSE' ? 'the address is in use' : e.message;
      const error = new Error(`serveMetrics: cannot listen on ${o.host}:${o.port}: ${why} (${e.code ?? 'error'})`);
      error.code = e.code;
      error.cause = e;
      reject(error);
    };
    server.once('error', onError);
    server.listen(o.port, o.host, () => {
      server.off('error', onError);
      resolve();
    });
  });
  // Later errors (a failed accept) must not crash the host: the server goes on.
  server.on('error', () => {});
  server.unref();

  const address = server.address();
  const hostForUrl = address.family === 'IPv6' || address.family === 6 ? `[${address.address}]` : address.address;
  return {
    server,
    host: address.address,
    port: address.port,
    url: `http://${hostForUrl}:${address.port}/metrics`,
    close() {
      return new Promise((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections?.();
      });
    },
  };
}
