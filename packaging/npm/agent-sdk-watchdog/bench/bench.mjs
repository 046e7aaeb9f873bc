// Side by side, in one run: this package's in-process API (installed, on the Rust core) against
// the reference agent-sdk-watchdog 0.2.0's own code, on the real recorded messages.
//
//   node bench.mjs CAPTURES_DIR [REFERENCE]     (run from a project where agent-sdk-watchdog is installed)
//
// REFERENCE (or AGENT_WATCHDOG_BENCH_REFERENCE): the reference package's compiled code, its
// directory or its index.js / watchdog.js (the rate-limit monitor is read from
// rate-limit-monitor.js beside a watchdog.js). Without it the bench says so and measures this
// package alone: no ratios. A path that does not load fails the bench.
//
// A machine shared with other work is noisy, so every timing interleaves the two sides in short
// rounds, repeats them, and reports the median and the minimum of each side and of the ratio
// (the median of the rounds' ratios, and min / min); the load average is printed before and after.
//
// 1. per message over the recorded messages: observe(m, at), observe(m) (the default clock),
//    each pass over them ending with a check (tick), which tells the core what the messages did;
//    rateLimits.observe(m) (frames included); JSON.parse of the line beside them;
// 2. the live loop: a child prints the messages, readline, JSON.parse, observe, against the same
//    loop without observe (the floor);
// 3. memory per registered query with 100,000 registered (child process, --expose-gc);
// 4. a tick over 100,000 registered queries with nothing due;
// 5. import + createWatchdog() in a fresh process; the installed package's size;
// 6. kill lateness: 200 queries with idleMs 2 s registered over 30 s, kill time − deadline.
import { spawnSync, spawn } from 'node:child_process';
import readline from 'node:readline';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const here = fileURLToPath(import.meta.url);
const [mode, ...args] = process.argv.slice(2);
const given = (mode === 'memory' || mode === 'lateness' ? process.env.AGENT_WATCHDOG_BENCH_REFERENCE : args[0])
  || process.env.AGENT_WATCHDOG_BENCH_REFERENCE;

/** The reference's modules: `{ watchdog, rate }` file URLs, or null when no path was given. */
function referenceModules(p) {
  if (!p) return null;
  const abs = path.resolve(p);
  const file = fs.statSync(abs).isDirectory() ? path.join(abs, 'index.js') : abs;
  const rate = path.basename(file) === 'watchdog.js' ? path.join(path.dirname(file), 'rate-limit-monitor.js') : file;
  return { watchdog: pathToFileURL(file).href, rate: pathToFileURL(rate).href };
}
const reference = referenceModules(given);
if (given) process.env.AGENT_WATCHDOG_BENCH_REFERENCE = given; // for the children
const SIDES = reference ? ['ours', 'reference'] : ['ours'];

async function lib(which) {
  if (which === 'ours') return import('agent-sdk-watchdog');
  const { createWatchdog } = await import(reference.watchdog);
  const { createRateLimitMonitor } = await import(reference.rate);
  if (typeof createWatchdog !== 'function' || typeof createRateLimitMonitor !== 'function') {
    throw new Error(`${given}: no createWatchdog / createRateLimitMonitor there`);
  }
  return { createWatchdog, createRateLimitMonitor };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const min = (xs) => Math.min(...xs);
const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');

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

// ---------- 1. per message, the sides interleaved round by round
/** One side's loops; each its own function (its own type feedback), made per side. */
function loops(api, messages, raw) {
  const w = api.createWatchdog();
  const h = w.register({ hardCeilingMs: 3_600_000, abortController: new AbortController() });
  const m = api.createRateLimitMonitor();
  const make = new Function('h', 'w', 'm', 'ms', 'raw', 'process', `
    let at = 1e12, sink = 0;
    return {
      at() { for (let i = 0; i < ms.length; i++) h.observe(ms[i], (at += 1)); w.tick(at); return ms.length; },
      // The same pass, its two halves timed apart: [ns in observe, ns in the check].
      split() {
        const t0 = process.hrtime.bigint();
        for (let i = 0; i < ms.length; i++) h.observe(ms[i], (at += 1));
        const t1 = process.hrtime.bigint();
        w.tick(at);
        return [Number(t1 - t0), Number(process.hrtime.bigint() - t1)];
      },
      now() { for (let i = 0; i < ms.length; i++) h.observe(ms[i]); w.tick(); return ms.length; },
      rate() { for (let i = 0; i < ms.length; i++) sink += m.observe(ms[i]) === null ? 1 : 0; return ms.length; },
      parse() { for (let i = 0; i < raw.length; i++) sink += JSON.parse(raw[i]).type.length; return raw.length; },
      sink: () => sink,
    };`);
  return make(h, w, m, messages, raw, process);
}

function timed(f, passes) {
  const t = process.hrtime.bigint();
  let n = 0;
  for (let i = 0; i < passes; i++) n += f();
  return Number(process.hrtime.bigint() - t) / n;
}

async function perMessage(raw) {
  const messages = raw.map((l) => JSON.parse(l));
  const sides = {};
  for (const which of SIDES) sides[which] = loops(await lib(which), messages, raw);
  const out = {};
  for (const what of ['at', 'now', 'rate', 'parse']) {
    const who = what === 'parse' ? ['ours'] : SIDES;
    for (const s of who) for (let i = 0; i < 300; i++) sides[s][what](); // warm up
    const runs = Object.fromEntries(who.map((s) => [s, []]));
    const ratios = [];
    for (let round = 0; round < 41; round++) {
      for (const s of who) runs[s].push(timed(sides[s][what], 40));
      if (who.length === 2) ratios.push(runs.ours[round] / runs.reference[round]);
    }
    out[what] = { runs, ratios };
  }
  // observe(m, at)'s pass again, split: what observe costs per message, and what the check
  // that ends the pass costs (where the core reads the messages it keeps, and is asked).
  for (const s of SIDES) for (let i = 0; i < 300; i++) sides[s].split(); // warm up
  out.alone = { runs: Object.fromEntries(SIDES.map((s) => [s, []])), ratios: [] };
  out.check = { runs: Object.fromEntries(SIDES.map((s) => [s, []])), ratios: [] };
  for (let round = 0; round < 41; round++) {
    for (const s of SIDES) {
      let observe = 0;
      let check = 0;
      for (let i = 0; i < 40; i++) {
        const [o, c] = sides[s].split();
        observe += o;
        check += c;
      }
      out.alone.runs[s].push(observe / 40 / messages.length);
      out.check.runs[s].push(check / 40 / 1000);
    }
    if (SIDES.length === 2) {
      out.alone.ratios.push(out.alone.runs.ours[round] / out.alone.runs.reference[round]);
      out.check.ratios.push(out.check.runs.ours[round] / out.check.runs.reference[round]);
    }
  }
  return out;
}

// ---------- 2. the live loop: cat, readline, JSON.parse (, observe)
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

async function liveLoop(raw, workDir) {
  // About 200,000 lines of real messages, so a run takes long enough to time.
  const file = path.join(workDir, 'live-loop.jsonl');
  const copies = Math.max(1, Math.ceil(200_000 / raw.length));
  fs.writeFileSync(file, Array.from({ length: copies }, () => raw.join('\n')).join('\n') + '\n');
  const sides = { floor: null };
  for (const which of SIDES) {
    const w = (await lib(which)).createWatchdog();
    const h = w.register({ hardCeilingMs: 3_600_000, abortController: new AbortController() });
    sides[which] = (m) => h.observe(m);
  }
  const runs = Object.fromEntries(Object.keys(sides).map((s) => [s, []]));
  let count = 0;
  await loopOnce(file, null); // warm up
  for (let round = 0; round < 9; round++) {
    for (const side of Object.keys(sides)) {
      const r = await loopOnce(file, sides[side]);
      runs[side].push(r.ns);
      count = r.n;
    }
  }
  fs.rmSync(file);
  return { lines: count, runs };
}

// ---------- 3. memory per registered query (a child with --expose-gc)
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
  const used = () => {
    globalThis.gc();
    globalThis.gc();
    const m = process.memoryUsage();
    return m.heapUsed + m.arrayBuffers + wasmBytes();
  };
  const before = used();
  for (let i = 0; i < count; i++) handles[i] = w.register(regs[i]);
  const after = used();
  // `handles` is read after the measurement, so the collector cannot drop it before.
  process.stdout.write(JSON.stringify({ bytes_per_query: (after - before) / count, kept: handles.length }));
  w.close();
}

function memory(which, count) {
  const r = spawnSync(process.execPath, ['--expose-gc', here, 'memory', which, String(count)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return JSON.parse(r.stdout).bytes_per_query;
}

// ---------- 4. a tick over many registered queries, nothing due
async function tickMs(which, count) {
  const { createWatchdog } = await lib(which);
  const now = 1e12;
  const w = createWatchdog({ now: () => now });
  const ac = new AbortController();
  for (let i = 0; i < count; i++) w.register({ hardCeilingMs: 3_600_000, abortController: ac }, now);
  for (let i = 0; i < 5; i++) w.tick(now + 1000);
  const runs = [];
  for (let i = 0; i < 21; i++) runs.push(timed(() => (w.tick(now + 1000), 1), 1) / 1e6);
  w.close();
  return median(runs);
}

// ---------- 5. import + createWatchdog() in a fresh process; the package on disk
function importMs(which) {
  const spec = which === 'ours' ? 'agent-sdk-watchdog' : reference.watchdog;
  const script = `const t = performance.now(); const m = await import(${JSON.stringify(spec)}); ` +
    'm.createWatchdog().close(); process.stdout.write(String(performance.now() - t));';
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(r.stderr);
  return Number(r.stdout);
}

function diskBytes(dir) {
  let total = 0;
  for (const e of fs.readdirSync(dir, { withFileTypes: true })) {
    const p = path.join(dir, e.name);
    total += e.isDirectory() ? diskBytes(p) : fs.statSync(p).size;
  }
  return total;
}

// ---------- 6. kill lateness (a child per side, in parallel, same schedule)
async function latenessChild(which, queries, spreadMs, idleMs) {
  const { createWatchdog } = await lib(which);
  const w = createWatchdog({ idleMs, extendFactor: 1 });
  const late = [];
  let seed = 42;
  const rand = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
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
          onKill: () => {
            late.push(Date.now() - deadline);
            if (--left === 0) done();
          },
        }, at).activity('Write', at);
      }, s);
    }
  });
  clearInterval(hold);
  late.sort((a, b) => a - b);
  const q = (p) => late[Math.min(late.length - 1, Math.floor(p * late.length))];
  process.stdout.write(JSON.stringify({ p50_ms: q(0.5), p99_ms: q(0.99), max_ms: late[late.length - 1] }));
  w.close();
}

function lateness(queries, spreadMs, idleMs) {
  const run = (which) => new Promise((res, rej) => {
    const c = spawn(process.execPath, [here, 'lateness', which, String(queries), String(spreadMs), String(idleMs)]);
    let out = '';
    let err = '';
    c.stdout.on('data', (d) => (out += d));
    c.stderr.on('data', (d) => (err += d));
    c.on('exit', (code) => (code === 0 ? res(JSON.parse(out)) : rej(new Error(err))));
  });
  return Promise.all(SIDES.map(run));
}

// ---------- the report
const f1 = (x) => x.toFixed(1);
const f2 = (x) => x.toFixed(2);
function row(label, ours, ref, unit, ratio) {
  const side = (xs) => `${f1(median(xs))} ${unit} (min ${f1(min(xs))})`;
  let text = `   ${label.padEnd(34)} ours ${side(ours)}`;
  if (ref) text += `; reference ${side(ref)}; ours / reference ${ratio}`;
  console.log(text);
}

if (mode === 'memory') await memoryChild(args[0], Number(args[1]));
else if (mode === 'lateness') await latenessChild(args[0], ...args.slice(1).map(Number));
else {
  const dir = mode;
  if (!dir || !fs.existsSync(dir)) throw new Error(`usage: node bench.mjs CAPTURES_DIR [REFERENCE] (got ${dir})`);
  const raw = lines(dir);
  console.log(`node ${process.version}, ${os.cpus().length} CPUs; load average ${load()} (1, 5, 15 min)`);
  if (reference) {
    console.log(`reference: the reference package's own code, ${given}`);
  } else {
    console.log('reference: NOT GIVEN. Pass its path (the reference package\'s compiled code: its directory, index.js or');
    console.log('watchdog.js) as the second argument or AGENT_WATCHDOG_BENCH_REFERENCE: this package alone, no ratios.');
  }
  const bytes = raw.reduce((s, l) => s + l.length, 0);
  console.log(`1. per message, ${raw.length} recorded messages from ${dir} (mean ${Math.round(bytes / raw.length)} bytes), ` +
    '41 interleaved rounds of 40 passes; each pass of observe ends with a check (tick):');
  const pm = await perMessage(raw);
  console.log(`   JSON.parse of the line              ${f1(median(pm.parse.runs.ours))} ns (min ${f1(min(pm.parse.runs.ours))})`);
  const ratio = (r) => (reference ? `${f2(median(r.ratios))} (min / min ${f2(min(r.runs.ours) / min(r.runs.reference))})` : '');
  for (const [what, label] of [['at', 'observe(m, at)'], ['now', 'observe(m), the default clock'], ['rate', 'rateLimits.observe(m)']]) {
    row(label, pm[what].runs.ours, pm[what].runs.reference, 'ns', ratio(pm[what]));
  }
  console.log('   observe(m, at)\'s pass split in two:');
  row('  observe(m, at) alone', pm.alone.runs.ours, pm.alone.runs.reference, 'ns', ratio(pm.alone));
  row('  the check ending a pass (tick)', pm.check.runs.ours, pm.check.runs.reference, 'µs', ratio(pm.check));
  const loop = await liveLoop(raw, fs.mkdtempSync(path.join(os.tmpdir(), 'bench-')));
  console.log(`2. the live loop, ${loop.lines} lines (cat | readline | JSON.parse | observe), 9 interleaved rounds:`);
  const ms = (xs) => xs.map((x) => x / 1e6);
  row('floor (no observe)', ms(loop.runs.floor), null, 'ms');
  for (const side of SIDES) {
    const over = loop.runs[side].map((x, i) => x / loop.runs.floor[i]);
    row(side, ms(loop.runs[side]), null, 'ms');
    console.log(`   ${''.padEnd(34)} ${side} / floor ${f2(median(over))} (min / min ${f2(min(loop.runs[side]) / min(loop.runs.floor))})`);
  }
  const count = 100_000;
  const mem = Object.fromEntries(SIDES.map((s) => [s, [memory(s, count), memory(s, count), memory(s, count)]]));
  console.log(`3. memory per registered query, ${count} registered (heap + array buffers + WebAssembly memory, after gc), 3 runs:`);
  row('bytes per query', mem.ours, mem.reference, 'B', reference ? f2(median(mem.ours) / median(mem.reference)) : '');
  const ticks = Object.fromEntries(SIDES.map((s) => [s, []]));
  for (const s of SIDES) ticks[s].push(await tickMs(s, count));
  console.log(`4. tick() over ${count} registered queries, nothing due:`);
  row('one tick', ticks.ours, ticks.reference, 'ms', reference ? f2(ticks.ours[0] / ticks.reference[0]) : '');
  const imports = Object.fromEntries(SIDES.map((s) => [s, []]));
  for (let i = 0; i < 7; i++) for (const s of SIDES) imports[s].push(importMs(s));
  const installed = path.dirname(fileURLToPath(import.meta.resolve('agent-sdk-watchdog/package.json')));
  const wasm = fs.statSync(path.join(installed, 'lib', 'watchdog.wasm')).size;
  console.log('5. import + createWatchdog() in a fresh process, 7 interleaved runs:');
  row('import', imports.ours, imports.reference, 'ms', reference ? f2(median(imports.ours) / median(imports.reference)) : '');
  console.log(`   installed package ${(diskBytes(installed) / 1024).toFixed(0)} KiB (lib/watchdog.wasm ${(wasm / 1024).toFixed(0)} KiB)`);
  const late = await lateness(200, 30_000, 2_000);
  console.log('6. kill lateness, 200 queries, idleMs 2 s, registered over 30 s (kill time − deadline):');
  SIDES.forEach((s, i) => console.log(`   ${s.padEnd(9)} p50 ${late[i].p50_ms} ms, p99 ${late[i].p99_ms} ms, max ${late[i].max_ms} ms`));
  console.log(`load average after: ${load()}`);
}
