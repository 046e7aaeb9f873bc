// The fleet metrics of createWatchdog() (metrics(), renderPrometheus()) and serveMetrics(),
// against the INSTALLED package (scripts/test-node-api): counted at kills, extensions and ends
// in virtual time and on the real timer; the exposition checked line by line; the endpoint on
// loopback scraped while sessions are killed, and given wrong paths and methods, garbage, a
// silent client, an oversized head, a port in use.
import { test } from 'node:test';
import assert from 'node:assert/strict';
import http from 'node:http';
import net from 'node:net';
import { setTimeout as sleep } from 'node:timers/promises';
import { createWatchdog, METRICS_CONTENT_TYPE, serveMetrics } from 'agent-sdk-watchdog';

const T0 = 1e9;
const MIN = 60_000;
const at = (m) => T0 + m * MIN;
const SRC = 'agent_watchdog_source="run"';

function virtual(config = {}) {
  const clock = { t: T0 };
  const w = createWatchdog({ now: () => clock.t, ...config });
  return { clock, w };
}

function reg(w, extra = {}) {
  return w.register({ hardCeilingMs: 70 * MIN, abortController: new AbortController(), ...extra }, T0);
}

const result = (subtype, isError, stopReason) => ({
  type: 'result',
  subtype,
  is_error: isError,
  stop_reason: stopReason,
  session_id: 's',
});

/**
 * The exposition, checked line by line (format 0.0.4: `# HELP`, `# TYPE` once per family before
 * its samples, samples `name{labels} value` of the family declared last, every sample with the
 * source label, counters named `_total` with non-negative values, histogram buckets cumulative
 * and ending with `+Inf` = `_count`); returns `Map(series -> value)`.
 */
function parseExposition(text) {
  assert.ok(text.endsWith('\n'), 'ends with a newline');
  const families = new Map();
  const series = new Map();
  let current = null;
  let lastBucket = -1;
  for (const line of text.slice(0, -1).split('\n')) {
    let m;
    if ((m = /^# HELP ([a-zA-Z_:][a-zA-Z0-9_:]*) (\S.*)$/.exec(line))) continue;
    if ((m = /^# TYPE ([a-zA-Z_:][a-zA-Z0-9_:]*) (counter|gauge|histogram)$/.exec(line))) {
      assert.ok(!families.has(m[1]), `family twice: ${line}`);
      families.set(m[1], m[2]);
      current = { name: m[1], type: m[2] };
      lastBucket = -1;
      continue;
    }
    m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)\{((?:[a-zA-Z_][a-zA-Z0-9_]*="[^"\\\n]*",)*agent_watchdog_source="run")\} (\S+)$/.exec(line);
    assert.ok(m, `not a sample line with the source label: ${JSON.stringify(line)}`);
    const [, name, , raw] = m;
    assert.ok(current, `a sample before any # TYPE: ${line}`);
    const value = raw === '+Inf' ? Infinity : Number(raw);
    assert.ok(!Number.isNaN(value), line);
    if (current.type === 'histogram') {
      assert.ok([`${current.name}_bucket`, `${current.name}_sum`, `${current.name}_count`].includes(name), line);
      if (name.endsWith('_bucket')) {
        assert.ok(value >= lastBucket, `buckets are cumulative: ${line}`);
        lastBucket = value;
      }
      if (name.endsWith('_count')) {
        assert.equal(series.get(`${current.name}_bucket{le="+Inf",${SRC}}`), value, 'the +Inf bucket is the count');
      }
    } else {
      assert.equal(name, current.name, line);
    }
    if (current.type === 'counter') {
      assert.ok(name.endsWith('_total') && value >= 0, line);
    }
    series.set(line.slice(0, line.lastIndexOf(' ')), value);
  }
  return series;
}

test('a fresh watchdog: every series at 0, no utilization sample, no per-session label', () => {
  const { w } = virtual();
  const m = w.metrics();
  assert.equal(m.sessions, 0);
  assert.equal(m.utilization, null);
  assert.deepEqual(m.kills, { ceiling: 0, startup: 0, linger: 0, idle: 0, no_progress: 0, output_blocked: 0, memory: 0,
    task_silent: 0, wakeup_missed: 0, unanswered: 0 });
  assert.deepEqual(m.ended, { success: 0, error_result: 0, killed: 0, no_result: 0, incomplete: 0 });
  assert.deepEqual(m.stallingWarnings, { idle: 0, no_progress: 0 });
  assert.deepEqual(m.extensions, { high_utilization: 0, pre_write: 0 });
  assert.equal(m.killLateness.buckets.length, 11);
  assert.deepEqual(m.killLateness.buckets.at(-1), [Infinity, 0]);
  const text = w.renderPrometheus();
  const series = parseExposition(text);
  assert.equal(series.get(`agent_watchdog_kill_count_total{kill_kind="idle",${SRC}}`), 0);
  assert.ok(text.includes('# TYPE agent_watchdog_rate_limit_utilization_ratio gauge\n'));
  assert.ok(![...series.keys()].some((k) => k.startsWith('agent_watchdog_rate_limit_utilization_ratio')));
  assert.ok(!text.includes('session_id'));
  w.close();
});

test('kills, extensions and ends are counted at their deadlines in virtual time', () => {
  const { w } = virtual({ idleMs: 10 * MIN, startupMs: 3 * MIN });
  const idle = reg(w);
  idle.observe({ type: 'stream_event', event: { type: 'content_block_delta' } }, T0);
  const quiet = reg(w); // never says anything: startup at 3 minutes
  const done = reg(w);
  done.observe(result('success', false, 'end_turn'), T0);
  const failed = reg(w);
  failed.observe(result('error_max_turns', true, null), T0);
  const midTask = reg(w);
  midTask.observe(result('success', false, 'tool_use'), T0);
  assert.equal(w.metrics().sessions, 5);

  assert.deepEqual(w.tick(at(3)).map((k) => k.kind), ['startup']); // exactly at the deadline
  w.tick(at(10)); // the base idle passed before any write: the pre-write extension, once
  assert.deepEqual(w.tick(at(20) + 2000).map((k) => k.kind), ['watchdog_idle']); // 2 s late

  let m = w.metrics();
  assert.equal(m.kills.startup, 1);
  assert.equal(m.kills.idle, 1, 'watchdog_idle is counted as idle');
  assert.equal(m.kills.ceiling, 0);
  assert.equal(m.extensions.pre_write, 1);
  assert.equal(m.killLateness.count, 2);
  assert.equal(m.killLateness.sumSeconds, 2);
  const buckets = new Map(m.killLateness.buckets);
  assert.equal(buckets.get(0.0001), 1, 'the startup kill at its deadline');
  assert.equal(buckets.get(1), 1);
  assert.equal(buckets.get(Infinity), 2, 'the idle kill 2 s late');
  assert.equal(Object.values(m.ended).reduce((a, b) => a + b), 0, 'nothing ended yet');

  for (const h of [idle, quiet, done, failed, midTask]) h.unregister();
  idle.unregister(); // idempotent: counted once
  m = w.metrics();
  assert.deepEqual(m.ended, { success: 1, error_result: 1, killed: 2, no_result: 0, incomplete: 1 });
  assert.equal(m.endedKilled.idle, 1);
  assert.equal(m.endedKilled.startup, 1);
  assert.equal(m.sessions, 0);

  const series = parseExposition(w.renderPrometheus());
  for (const [key, value] of [
    [`agent_watchdog_sessions{${SRC}}`, 0],
    [`agent_watchdog_kill_count_total{kill_kind="idle",${SRC}}`, 1],
    [`agent_watchdog_kill_count_total{kill_kind="startup",${SRC}}`, 1],
    [`agent_watchdog_session_count_total{outcome="killed",kill_kind="idle",${SRC}}`, 1],
    [`agent_watchdog_session_count_total{outcome="success",${SRC}}`, 1],
    [`agent_watchdog_session_count_total{outcome="incomplete",${SRC}}`, 1],
    [`agent_watchdog_extension_count_total{reason="pre_write",${SRC}}`, 1],
    [`agent_watchdog_kill_lateness_seconds_bucket{le="0.0001",${SRC}}`, 1],
    [`agent_watchdog_kill_lateness_seconds_count{${SRC}}`, 2],
    [`agent_watchdog_kill_lateness_seconds_sum{${SRC}}`, 2],
  ]) {
    assert.equal(series.get(key), value, key);
  }
  w.close();
});

test('a query settled by hand and closed queries: no_result, and close() counts nothing', () => {
  const { w } = virtual();
  const byHand = reg(w);
  byHand.settle(); // no result message: the outcome cannot say success
  byHand.unregister();
  reg(w);
  w.close(); // forgets without ending
  const m = w.metrics();
  assert.equal(m.ended.no_result, 1);
  assert.equal(Object.values(m.ended).reduce((a, b) => a + b), 1);
  assert.equal(m.sessions, 0);
});

test('utilization: the gauge is the last reading, and a kill a drop of it made is not late', () => {
  let reading = null;
  const { w } = virtual({ idleMs: 10 * MIN, getUtilization: () => reading });
  const h = reg(w);
  h.activity('Write', T0); // written: only high utilization extends
  reading = 0.95;
  w.tick(at(10));
  let m = w.metrics();
  assert.equal(m.utilization, 0.95);
  assert.equal(m.extensions.high_utilization, 1);
  assert.equal(parseExposition(w.renderPrometheus()).get(`agent_watchdog_rate_limit_utilization_ratio{${SRC}}`), 0.95);
  reading = 0.1; // the extension is withdrawn at the next check: the kill is due there
  assert.deepEqual(w.tick(at(15)).map((k) => k.kind), ['watchdog_idle']);
  m = w.metrics();
  assert.equal(m.killLateness.sumSeconds, 0);
  assert.equal(m.utilization, 0.1);
  reading = null;
  w.tick(at(16));
  assert.equal(w.metrics().utilization, null);
  w.close();
});

test('the real timer: a kill is counted soon after its deadline, before onKill runs', async () => {
  const w = createWatchdog({ idleMs: 150, extendFactor: 1 });
  let seen = null;
  const killed = new Promise((resolve) => {
    w.register({
      hardCeilingMs: Infinity,
      abortController: new AbortController(),
      onKill: () => {
        seen = w.metrics().kills.idle;
        resolve();
      },
    });
  });
  const keepAlive = setInterval(() => {}, 50); // the watchdog's timer is unref'd
  await killed;
  clearInterval(keepAlive);
  assert.equal(seen, 1, 'counted before the callback');
  const m = w.metrics();
  assert.equal(m.killLateness.count, 1);
  assert.ok(m.killLateness.sumSeconds < 0.5, `late by ${m.killLateness.sumSeconds} s`);
  w.close();
});

// --- the endpoint

function get(port, path = '/metrics', method = 'GET') {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, path, method, agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (body += d));
      res.on('end', () => resolve({ status: res.statusCode, headers: res.headers, body }));
    });
    req.on('error', reject);
    req.end();
  });
}

/** Raw bytes in, everything until the server closes out (or what came before an error). */
function raw(port, bytes, { end = true } = {}) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    let out = '';
    s.setEncoding('latin1');
    s.on('data', (d) => (out += d));
    s.on('close', () => resolve(out));
    s.on('error', () => {});
    s.write(bytes);
    if (end) s.end();
  });
}

test('a scrape is the rendering and parses; HEAD has no body', async () => {
  const { w } = virtual({ startupMs: 1000 });
  const h = reg(w);
  w.tick(T0 + 1000);
  h.unregister();
  const server = await serveMetrics(w, { port: 0 });
  try {
    assert.equal(server.url, `http://127.0.0.1:${server.port}/metrics`);
    const r = await get(server.port);
    assert.equal(r.status, 200);
    assert.equal(r.headers['content-type'], METRICS_CONTENT_TYPE);
    assert.equal(r.body, w.renderPrometheus());
    const series = parseExposition(r.body);
    assert.equal(series.get(`agent_watchdog_kill_count_total{kill_kind="startup",${SRC}}`), 1);
    assert.equal(series.get(`agent_watchdog_session_count_total{outcome="killed",kill_kind="startup",${SRC}}`), 1);
    const head = await get(server.port, '/metrics', 'HEAD');
    assert.equal(head.status, 200);
    assert.equal(head.body, '');
    assert.equal(Number(head.headers['content-length']), Buffer.byteLength(r.body));
    assert.equal((await get(server.port, '/metrics?x=1')).status, 200);
  } finally {
    await server.close();
    w.close();
  }
});

test('another path 404, another method 405, garbage 400, an oversized head 431', async () => {
  const { w } = virtual();
  const server = await serveMetrics(w, { port: 0 });
  try {
    const nf = await get(server.port, '/nope');
    assert.equal(nf.status, 404);
    assert.equal(nf.body, 'not found: try /metrics\n');
    const post = await get(server.port, '/metrics', 'POST');
    assert.equal(post.status, 405);
    assert.equal(post.headers.allow, 'GET, HEAD');
    assert.equal((await get(server.port, '/nope', 'DELETE')).status, 405, 'the method first, as the core');
    for (const garbage of ['\x00\xff\xfe garbage\r\n\r\n', 'GET /metrics SPDY/3\r\n\r\n']) {
      const out = await raw(server.port, garbage);
      assert.match(out, /^HTTP\/1\.1 400 Bad Request\r\n/, JSON.stringify(garbage));
    }
    const big = await raw(server.port, `GET /metrics HTTP/1.1\r\nX: ${'a'.repeat(9000)}\r\n\r\n`);
    assert.match(big, /^HTTP\/1\.1 431 /);
    parseExposition((await get(server.port)).body); // still serving
  } finally {
    await server.close();
    w.close();
  }
});

test('a client that sends nothing, or half a head, is dropped after the timeout; others are served', async () => {
  const { w } = virtual();
  const server = await serveMetrics(w, { port: 0, timeoutMs: 500 });
  try {
    const t0 = Date.now();
    const silent = raw(server.port, '', { end: false });
    const half = raw(server.port, 'GET /met', { end: false });
    assert.equal((await get(server.port)).status, 200, 'served meanwhile');
    const [a, b] = await Promise.all([silent, half]);
    // Dropped either way: by the socket's timeout (nothing sent), or by node's head timeout
    // when its check comes first (a 408, then closed). Which timer wins is the scheduler's.
    assert.ok(a === '' || /^HTTP\/1\.1 408 /.test(a), `the silent client: ${JSON.stringify(a)}`);
    assert.ok(b === '' || /^HTTP\/1\.1 408 /.test(b), `half a head: ${JSON.stringify(b)}`);
    assert.ok(Date.now() - t0 < 4000, 'dropped by the timeout');
    assert.equal((await get(server.port)).status, 200);
  } finally {
    await server.close();
    w.close();
  }
});

test('scrapes while sessions are killed on the real timer see the counters grow to the total', async () => {
  const n = 40;
  const w = createWatchdog({ idleMs: 150, extendFactor: 1 });
  const server = await serveMetrics(w, { port: 0 });
  const key = `agent_watchdog_kill_count_total{kill_kind="idle",${SRC}}`;
  try {
    const handles = [];
    let stop = false;
    const scraper = async () => {
      const seen = [];
      while (!stop) {
        const r = await get(server.port);
        assert.equal(r.status, 200);
        seen.push(parseExposition(r.body).get(key));
      }
      return seen;
    };
    const scrapers = [scraper(), scraper(), scraper()];
    for (let i = 0; i < n; i++) {
      handles.push(w.register({ hardCeilingMs: Infinity, abortController: new AbortController() }));
      await sleep(5);
    }
    const deadline = Date.now() + 10_000;
    while (w.metrics().kills.idle < n && Date.now() < deadline) await sleep(20);
    for (const h of handles) {
      assert.ok(h.kill, 'killed');
      h.unregister();
    }
    stop = true;
    for (const seen of await Promise.all(scrapers)) {
      assert.ok(seen.length > 0);
      assert.deepEqual(seen, [...seen].sort((a, b) => a - b), 'a counter never goes down');
      assert.ok(seen.every((v) => v >= 0 && v <= n));
    }
    const series = parseExposition((await get(server.port)).body);
    assert.equal(series.get(key), n);
    assert.equal(series.get(`agent_watchdog_session_count_total{outcome="killed",kill_kind="idle",${SRC}}`), n);
    assert.equal(series.get(`agent_watchdog_kill_lateness_seconds_count{${SRC}}`), n);
    assert.equal(series.get(`agent_watchdog_sessions{${SRC}}`), 0);
  } finally {
    await server.close();
    w.close();
  }
});

test('a port in use is a clear error; bad options are RangeErrors; close is idempotent', async () => {
  const { w } = virtual();
  const server = await serveMetrics(w, { port: 0 });
  await assert.rejects(
    serveMetrics(w, { port: server.port }),
    (e) => e.code === 'EADDRINUSE' && e.message === `serveMetrics: cannot listen on 127.0.0.1:${server.port}: the address is in use (EADDRINUSE)`,
  );
  await server.close();
  await server.close();
  await assert.rejects(get(server.port), (e) => e.code === 'ECONNREFUSED');
  await assert.rejects(serveMetrics({}), TypeError);
  for (const [options, message] of [
    [{ port: -1 }, 'port must be an integer in [0, 65535], got -1'],
    [{ port: '80' }, 'port must be an integer in [0, 65535], got 80'],
    [{ timeoutMs: 0 }, 'timeoutMs must be a number > 0, got 0'],
    [{ maxHeaderBytes: 1.5 }, 'maxHeaderBytes must be an integer >= 1, got 1.5'],
    [{ maxConnections: 0 }, 'maxConnections must be an integer >= 1, got 0'],
  ]) {
    await assert.rejects(serveMetrics(w, options), (e) => e instanceof RangeError && e.message === message);
  }
  w.close();
});
