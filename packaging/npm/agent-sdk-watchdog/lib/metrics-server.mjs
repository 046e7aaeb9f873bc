// serveMetrics(): a Prometheus scrape endpoint for a createWatchdog() watchdog, on node:http,
// for a host that has no server of its own (one that has can answer with
// watchdog.renderPrometheus() itself). Bounded like the Rust runtime's endpoint: the request
// head within timeoutMs and maxHeaderBytes, a connection cap, every answer closes its
// connection. Prints nothing. node:http is loaded on the first call, not at import (it is the
// largest part of importing this package, and most hosts never serve).

import { createRequire } from 'node:module';

import { core } from './core.mjs';

const { bind, ok } = createRequire(import.meta.url)('./rules.cjs');
const { call, metricsAnswer, tables } = bind(() => core);

// The endpoint's content type, defaults, bounds and answers are every host's (the Rust core's:
// watchdog_host::metrics).
export const METRICS_CONTENT_TYPE = tables().metrics.contentType;

export const METRICS_SERVER_DEFAULTS = Object.freeze({ ...tables().metrics.defaults });

function answer(res, status, body, type, allow) {
  res.writeHead(status, {
    'Content-Type': type,
    'Content-Length': Buffer.byteLength(body),
    Connection: 'close',
    ...(allow ? { Allow: allow } : {}),
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
  const given = Object.fromEntries(Object.entries(options ?? {}).filter(([, v]) => v !== undefined));
  const o = ok(call('rules_metrics_options', given)).options;

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
      const a = metricsAnswer(req.method, req.url ?? '');
      if (a.body !== null) answer(res, a.status, a.body, a.contentType, a.allow);
      else {
        let body;
        try {
          body = watchdog.renderPrometheus();
        } catch {
          return answer(res, 500, 'the watchdog could not be read\n', 'text/plain; charset=utf-8');
        }
        answer(res, 200, body, a.contentType);
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
