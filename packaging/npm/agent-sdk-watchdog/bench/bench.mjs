// Side by side, in one run: this package's createWatchdog (installed, on the Rust core) against
// a faithful minimal model of the reference agent-sdk-watchdog 0.2.0's tick-based design
// (reference.mjs beside this file; the reference package itself is not installable offline).
//
//   node bench.mjs CAPTURES_DIR        (run from a project where agent-sdk-watchdog is installed)
//
// AGENT_WATCHDOG_BENCH_REFERENCE=/abs/path/watchdog.js measures that module's createWatchdog as
// "reference" instead of the model: e.g. the reference package's own src/watchdog.ts, compiled
// by hand outside this repository. A path that does not load fails the bench.
//
// 1. observe() per message on the real captures, next to JSON.parse of the same line;
// 2. memory per registered query with 100,000 registered (child process, --expose-gc);
// 3. kill lateness: 200 queries with idleMs 2 s registered over 30 s, kill time − deadline.
import { spawnSync, spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = path.dirname(fileURLToPath(import.meta.url));
const mode = process.argv[2];

const referencePath = process.env.AGENT_WATCHDOG_BENCH_REFERENCE || path.join(here, 'reference.mjs');
const referenceName = process.env.AGENT_WATCHDOG_BENCH_REFERENCE
  ? `the reference package's own createWatchdog (${referencePath})`
  : 'the model of the reference (reference.mjs)';

async function lib(which) {
  if (which === 'ours') return import('agent-sdk-watchdog');
  const mod = await import(pathToFileURL(referencePath).href);
  if (typeof mod.createWatchdog !== 'function') throw new Error(`${referencePath} exports no createWatchdog`);
  return mod;
}

// ---------- 1. observe per message
function lines(dir) {
  const out = [];
  for (const f of fs.readdirSync(dir).filter((f) => f.endsWith('.capture.jsonl')).sort()) {
    for (const l of fs.readFileSync(path.join(dir, f), 'utf8').split('\n')) {
      if (!l.trim()) continue;
      const rec = JSON.parse(l);
      if (rec.line && typeof rec.line === 'object') out.push(JSON.stringify(rec.line));
    }
  }
  return out;
}

function timeNs(fn, reps) {
  for (let i = 0; i < Math.max(1, reps >> 3); i++) fn(); // warm up
  const runs = [];
  for (let r = 0; r < 7; r++) {
    const t = process.hrtime.bigint();
    for (let i = 0; i < reps; i++) fn();
    runs.push(Number(process.hrtime.bigint() - t) / reps);
  }
  runs.sort((a, b) => a - b);
  return runs[3]; // median of 7
}

async function observeBench(dir) {
  const raw = lines(dir);
  const messages = raw.map((l) => JSON.parse(l));
  const n = raw.length;
  const bytes = raw.reduce((s, l) => s + l.length, 0);
  let sink = 0;
  const parse = timeNs(() => { for (let i = 0; i < n; i++) sink += JSON.parse(raw[i]).type.length; }, 50) / n;
  const out = { lines: n, mean_bytes: Math.round(bytes / n), json_parse_ns: parse };
  for (const which of ['ours', 'reference']) {
    const { createWatchdog } = await lib(which);
    const w = createWatchdog();
    const h = w.register({ hardCeilingMs: 3_600_000, abortController: new AbortController() });
    out[`${which}_observe_ns`] = timeNs(() => { for (let i = 0; i < n; i++) h.observe(messages[i]); }, 2000) / n;
    out[`${which}_observe_at_ns`] = timeNs(() => { for (let i = 0; i < n; i++) h.observe(messages[i], 1e12); }, 2000) / n;
    h.unregister();
    w.close();
  }
  if (sink === 0) throw new Error('unreachable');
  return out;
}

// ---------- 2. memory per registered query (run in a child with --expose-gc)
async function memoryChild(which, count) {
  const { createWatchdog } = await lib(which);
  const w = createWatchdog();
  const ac = new AbortController();
  const regs = Array.from({ length: count }, () => ({ hardCeilingMs: 3_600_000, abortController: ac }));
  const handles = new Array(count);
  const used = () => { globalThis.gc(); globalThis.gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers; };
  const before = used();
  for (let i = 0; i < count; i++) handles[i] = w.register(regs[i]);
  const after = used();
  // `handles` is read after the measurement, so the collector cannot drop it before.
  process.stdout.write(JSON.stringify({ bytes_per_query: (after - before) / count, kept: handles.length }));
  w.close();
}

function memoryBench(which, count) {
  const r = spawnSync(process.execPath, ['--expose-gc', fileURLToPath(import.meta.url), 'memory', which, String(count)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout).bytes_per_query;
}

// ---------- 3. kill lateness (run in a child per side, in parallel, same schedule)
async function latenessChild(which, queries, spreadMs, idleMs) {
  const { createWatchdog } = await lib(which);
  const w = createWatchdog({ idleMs, extendFactor: 1 });
  const late = [];
  let seed = 42;
  const rand = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31);
  const starts = Array.from({ length: queries }, () => rand() * spreadMs).sort((a, b) => a - b);
  const hold = setInterval(() => {}, 1000);
  await new Promise((done) => {
    let left = queries;
    for (const s of starts) {
      setTimeout(() => {
        const at = Date.now();
        const deadline = at + idleMs;
        w.register({
          hardCeilingMs: 3_600_000,
          abortController: new AbortController(),
          onKill: () => { late.push(Date.now() - deadline); if (--left === 0) done(); },
        }, at).activity('Write', at);
      }, s);
    }
  });
  clearInterval(hold);
  late.sort((a, b) => a - b);
  const q = (p) => late[Math.min(late.length - 1, Math.floor(p * late.length))];
  process.stdout.write(JSON.stringify({ p50_ms: q(0.5), p99_ms: q(0.99), max_ms: late[late.length - 1], min_ms: late[0] }));
  w.close();
}

function latenessBench(queries, spreadMs, idleMs) {
  const run = (which) => new Promise((res, rej) => {
    const c = spawn(process.execPath, [fileURLToPath(import.meta.url), 'lateness', which, String(queries), String(spreadMs), String(idleMs)]);
    let out = '';
    let err = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.on('exit', (code) => (code === 0 ? res(JSON.parse(out)) : rej(new Error(err))));
  });
  return Promise.all([run('ours'), run('reference')]);
}

if (mode === 'memory') await memoryChild(process.argv[3], Number(process.argv[4]));
else if (mode === 'lateness') await latenessChild(process.argv[3], ...process.argv.slice(4).map(Number));
else {
  const dir = mode;
  if (!dir || !fs.existsSync(dir)) throw new Error(`usage: node bench.mjs CAPTURES_DIR (got ${dir})`);
  const o = await observeBench(dir);
  const f = (x) => x.toFixed(1);
  console.log(`node ${process.version}; ${o.lines} real messages from ${dir} (mean ${o.mean_bytes} bytes a line)`);
  console.log(`reference: ${referenceName}`);
  console.log(`1. per message: JSON.parse of the line ${f(o.json_parse_ns)} ns`);
  for (const which of ['ours', 'reference']) {
    console.log(`   ${which.padEnd(9)} observe(message) ${f(o[`${which}_observe_ns`])} ns ` +
      `(${f((100 * o[`${which}_observe_ns`]) / o.json_parse_ns)} % of JSON.parse); observe(message, at) ${f(o[`${which}_observe_at_ns`])} ns`);
  }
  const count = 100_000;
  const mo = memoryBench('ours', count);
  const mr = memoryBench('reference', count);
  console.log(`2. memory per registered query, ${count} registered (heap + array buffers, after gc):`);
  console.log(`   ours ${mo.toFixed(0)} B, reference ${mr.toFixed(0)} B (ours / reference = ${(mo / mr).toFixed(2)})`);
  const [lo, lr] = await latenessBench(200, 30_000, 2_000);
  console.log('3. kill lateness, 200 queries, idleMs 2 s, registered over 30 s (kill time − deadline):');
  for (const [name, l] of [['ours', lo], ['reference', lr]]) {
    console.log(`   ${name.padEnd(9)} p50 ${l.p50_ms} ms, p99 ${l.p99_ms} ms, max ${l.max_ms} ms (min ${l.min_ms} ms)`);
  }
}
