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
// 1. observe() per message on the real captures, next to JSON.parse of the same line, with the
//    default clock and with an explicit time; rateLimits.observe() of a message that is not a
//    rate-limit frame;
// 2. the live loop: a child prints the capture lines, readline, JSON.parse, observe, against
//    the same loop without observe (the floor), rounds interleaved;
// 3. memory per registered query with 100,000 registered (child process, --expose-gc);
// 4. a tick over 100,000 registered queries with nothing due;
// 5. import + createWatchdog() in a fresh process; the installed package's size;
// 6. kill lateness: 200 queries with idleMs 2 s registered over 30 s, kill time − deadline.
import { spawnSync, spawn } from 'node:child_process';
import readline from 'node:readline';
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
  const others = messages.filter((m) => m.type !== 'rate_limit_event');
  for (const which of ['ours', 'reference']) {
    const { createWatchdog, createRateLimitMonitor } = await lib(which);
    const w = createWatchdog();
    const h = w.register({ hardCeilingMs: 3_600_000, abortController: new AbortController() });
    out[`${which}_observe_ns`] = timeNs(() => { for (let i = 0; i < n; i++) h.observe(messages[i]); }, 2000) / n;
    let at = 1e12;
    out[`${which}_observe_at_ns`] = timeNs(() => { for (let i = 0; i < n; i++) h.observe(messages[i], (at += 1)); }, 2000) / n;
    h.unregister();
    w.close();
    const m = createRateLimitMonitor();
    out[`${which}_rate_observe_ns`] = timeNs(() => { for (let i = 0; i < others.length; i++) sink += m.observe(others[i]) === null ? 1 : 0; }, 2000) / others.length;
  }
  if (sink === 0) throw new Error('unreachable');
  return out;
}

// ---------- 2. the live loop: spawn, readline, JSON.parse (, observe)
async function loopOnce(file, observe) {
  const child = spawn('cat', [file], { stdio: ['ignore', 'pipe', 'inherit'] });
  const t = process.hrtime.bigint();
  let n = 0;
  for await (const line of readline.createInterface({ input: child.stdout, crlfDelay: Infinity })) {
    const m = JSON.parse(line);
    if (observe) observe(m);
    n += 1;
  }
  return { ns: Number(process.hrtime.bigint() - t), n };
}

async function liveLoopBench(raw, workDir) {
  // About 200,000 lines of real messages, so a run takes long enough to time.
  const file = path.join(workDir, 'live-loop.jsonl');
  const copies = Math.max(1, Math.ceil(200_000 / raw.length));
  fs.writeFileSync(file, Array.from({ length: copies }, () => raw.join('\n')).join('\n') + '\n');
  const sides = { floor: null };
  for (const which of ['ours', 'reference']) {
    const { createWatchdog } = await lib(which);
    const w = createWatchdog();
    const h = w.register({ hardCeilingMs: 3_600_000, abortController: new AbortController() });
    sides[which] = (m) => h.observe(m);
  }
  const runs = { floor: [], ours: [], reference: [] };
  let lines = 0;
  await loopOnce(file, null); // warm up
  for (let round = 0; round < 9; round++) {
    for (const side of ['floor', 'ours', 'reference']) {
      const r = await loopOnce(file, sides[side]);
      runs[side].push(r.ns);
      lines = r.n;
    }
  }
  fs.rmSync(file);
  const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
  return { lines, floor: median(runs.floor), ours: median(runs.ours), reference: median(runs.reference) };
}

// ---------- 4. a tick over many registered queries, nothing due
async function tickBench(which, count) {
  const { createWatchdog } = await lib(which);
  const now = 1e12;
  const w = createWatchdog({ now: () => now });
  const ac = new AbortController();
  for (let i = 0; i < count; i++) w.register({ hardCeilingMs: 3_600_000, abortController: ac }, now);
  const ms = timeNs(() => w.tick(now + 1000), 20) / 1e6;
  w.close();
  return ms;
}

// ---------- 5. import + createWatchdog() in a fresh process; the package on disk
function importMs(which) {
  const spec = which === 'ours' ? 'agent-sdk-watchdog' : pathToFileURL(referencePath).href;
  const script = `const t = performance.now(); const m = await import(${JSON.stringify(spec)}); ` +
    'm.createWatchdog().close(); process.stdout.write(String(performance.now() - t));';
  const times = [];
  for (let i = 0; i < 7; i++) {
    const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
    if (r.status !== 0) throw new Error(r.stderr);
    times.push(Number(r.stdout));
  }
  times.sort((a, b) => a - b);
  return times[3];
}

function diskBytes(dir) {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? diskBytes(p) : fs.statSync(p).size;
  }
  return total;
}

// ---------- 3. memory per registered query (run in a child with --expose-gc)
async function memoryChild(which, count) {
  const { createWatchdog } = await lib(which);
  const w = createWatchdog();
  const ac = new AbortController();
  const regs = Array.from({ length: count }, () => ({ hardCeilingMs: 3_600_000, abortController: ac }));
  const handles = new Array(count);
  // Ours keeps its queries in the WebAssembly module's memory too: counted as it grows.
  let wasmBytes = () => 0;
  if (which === 'ours') {
    const dir = path.dirname(fileURLToPath(import.meta.resolve('agent-sdk-watchdog/package.json')));
    const { core } = await import(pathToFileURL(path.join(dir, 'lib', 'core.mjs')).href);
    wasmBytes = () => core.memory.buffer.byteLength;
  }
  const used = () => { globalThis.gc(); globalThis.gc(); const m = process.memoryUsage(); return m.heapUsed + m.arrayBuffers + wasmBytes(); };
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

// ---------- 6. kill lateness (run in a child per side, in parallel, same schedule)
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
  const ratio = (a, b) => (a / b).toFixed(2);
  console.log(`node ${process.version}; ${o.lines} real messages from ${dir} (mean ${o.mean_bytes} bytes a line)`);
  console.log(`reference: ${referenceName}`);
  console.log(`1. per message: JSON.parse of the line ${f(o.json_parse_ns)} ns`);
  for (const which of ['ours', 'reference']) {
    console.log(`   ${which.padEnd(9)} observe(message) ${f(o[`${which}_observe_ns`])} ns ` +
      `(${f((100 * o[`${which}_observe_ns`]) / o.json_parse_ns)} % of JSON.parse); observe(message, at) ${f(o[`${which}_observe_at_ns`])} ns; ` +
      `rateLimits.observe(not a frame) ${f(o[`${which}_rate_observe_ns`])} ns`);
  }
  console.log(`   ours / reference: observe ${ratio(o.ours_observe_ns, o.reference_observe_ns)}, observe(at) ` +
    `${ratio(o.ours_observe_at_ns, o.reference_observe_at_ns)}, rateLimits.observe ${ratio(o.ours_rate_observe_ns, o.reference_rate_observe_ns)}`);
  const raw = lines(dir);
  const loop = await liveLoopBench(raw, fs.mkdtempSync(path.join(process.env.TMPDIR || '/tmp', 'bench-')));
  console.log(`2. live loop, ${loop.lines} lines (cat | readline | JSON.parse | observe), median of 9 interleaved rounds:`);
  console.log(`   floor (no observe) ${(loop.floor / 1e6).toFixed(0)} ms; ours ${(loop.ours / 1e6).toFixed(0)} ms ` +
    `(${ratio(loop.ours, loop.floor)} of the floor); reference ${(loop.reference / 1e6).toFixed(0)} ms (${ratio(loop.reference, loop.floor)})`);
  const count = 100_000;
  const mo = memoryBench('ours', count);
  const mr = memoryBench('reference', count);
  console.log(`3. memory per registered query, ${count} registered (heap + array buffers + WebAssembly memory, after gc):`);
  console.log(`   ours ${mo.toFixed(0)} B, reference ${mr.toFixed(0)} B (ours / reference = ${ratio(mo, mr)})`);
  const to = await tickBench('ours', count);
  const tr = await tickBench('reference', count);
  console.log(`4. tick() over ${count} registered queries, nothing due: ours ${to.toFixed(3)} ms, reference ${tr.toFixed(3)} ms (${ratio(to, tr)})`);
  const io = importMs('ours');
  const ir = importMs('reference');
  const installed = path.dirname(fileURLToPath(import.meta.resolve('agent-sdk-watchdog/package.json')));
  const wasm = fs.statSync(path.join(installed, 'lib', 'watchdog.wasm')).size;
  console.log(`5. import + createWatchdog() in a fresh process: ours ${io.toFixed(1)} ms, reference ${ir.toFixed(1)} ms; ` +
    `installed package ${(diskBytes(installed) / 1024).toFixed(0)} KiB (lib/watchdog.wasm ${(wasm / 1024).toFixed(0)} KiB)`);
  const [lo, lr] = await latenessBench(200, 30_000, 2_000);
  console.log('6. kill lateness, 200 queries, idleMs 2 s, registered over 30 s (kill time − deadline):');
  for (const [name, l] of [['ours', lo], ['reference', lr]]) {
    console.log(`   ${name.padEnd(9)} p50 ${l.p50_ms} ms, p99 ${l.p99_ms} ms, max ${l.max_ms} ms (min ${l.min_ms} ms)`);
  }
}
