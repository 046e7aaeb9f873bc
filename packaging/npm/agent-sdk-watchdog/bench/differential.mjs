// This package's in-process API against the reference agent-sdk-watchdog 0.2.0's own code, on
// random call sequences: every kill, extension and reading must be the same.
//
//   node differential.mjs REFERENCE [SEQUENCES]     (or AGENT_WATCHDOG_BENCH_REFERENCE; from a project
//                                                    where agent-sdk-watchdog is installed)
//
// REFERENCE: the reference package's compiled code (its directory, or its index.js). Without it
// this says so and fails: there is nothing to compare with.
//
// Watchdog sequences: 1-3 queries, 30 calls each drawn from register, activity (a write or not),
// stream, heartbeat, settle, observe (work, signs of life, results, messages either ignores),
// tick, unregister, close and a changed utilization; each call given its time or reading the
// configured clock (a virtual one, or Date.now made deterministic), times going back as well as
// forward, under several option sets. Monitor sequences: frames of every shape the reading
// reads (top-level and window utilizations, named and fallback windows, overage fields given,
// absent or null), with resets and expiry checks. Messages only this package reads (background
// tasks, announced back-offs) are not drawn: there the two differ by design.
import path from 'node:path';
import { pathToFileURL } from 'node:url';
import fs from 'node:fs';
import * as ours from 'agent-sdk-watchdog';

const given = process.argv[2] || process.env.AGENT_WATCHDOG_BENCH_REFERENCE;
if (!given) {
  console.error('differential: NO REFERENCE GIVEN: pass the reference package\'s compiled code (its directory or index.js)');
  process.exit(2);
}
const abs = path.resolve(given);
const ref = await import(pathToFileURL(fs.statSync(abs).isDirectory() ? path.join(abs, 'index.js') : abs).href);
const N = Number(process.argv[3] || 2000);

const MIN = 60_000;
const T0 = 1e9;
let seed = 1;
const rnd = () => (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31;
const pick = (a) => a[Math.floor(rnd() * a.length)];
const MESSAGES = [
  { type: 'stream_event', event: { type: 'ping' } },
  { type: 'stream_event', event: { type: 'content_block_delta' } },
  { type: 'system', subtype: 'thinking_tokens' },
  { type: 'rate_limit_event', rate_limit_info: { status: 'allowed' } },
  { type: 'tool_progress' },
  { type: 'result', subtype: 'success', is_error: false },
  { type: 'result', subtype: 'error_max_turns', is_error: true },
  { type: 'assistant', message: { content: [] } },
  { type: 'user', message: { content: [] } },
  { type: 'system', subtype: 'init' },
];
const CALLS = ['activity', 'write', 'stream', 'heartbeat', 'settle', 'observe', 'observe', 'tick', 'tick',
  'clock', 'utilization', 'unregister', 'register', 'close'];

function sequence(v) {
  const ops = [];
  let t = T0;
  const queries = 1 + Math.floor(rnd() * 3);
  for (let q = 0; q < queries; q++) ops.push({ call: 'register', q, timed: rnd() < v.timed, at: t, ceiling: pick([70 * MIN, 30 * MIN, undefined]) });
  for (let i = 0; i < 30; i++) {
    t += v.back && rnd() < 0.15 ? -Math.floor(rnd() * 10 * MIN) : Math.floor(rnd() * 6 * MIN);
    ops.push({ call: pick(CALLS), q: Math.floor(rnd() * queries), timed: rnd() < v.timed, at: t, message: pick(MESSAGES),
      utilization: pick([null, 0.95, 0.3]), close: rnd() < 0.2 });
  }
  ops.push({ call: 'tick', timed: true, at: t + 200 * MIN });
  return ops;
}

const realNow = Date.now;
function runWatchdog(api, ops, v) {
  let fake = 1.7e12;
  Date.now = () => (fake += 7); // the default clock, made the same for both sides
  const clock = { t: T0 };
  const util = { u: null };
  const log = [];
  const w = api.createWatchdog({ ...(v.virtual ? { now: () => clock.t } : {}), getUtilization: () => util.u, ...v.options });
  const hs = [];
  const reg = (q, ceiling) => ({ hardCeilingMs: ceiling, abortController: new AbortController(),
    onKill: (k) => log.push(['kill', q, k]), onExtend: (r, u) => log.push(['extend', q, r, u]) });
  try {
    for (const o of ops) {
      const at = o.timed ? [o.at] : [];
      const h = hs[o.q];
      switch (o.call) {
        case 'register': hs[o.q] = w.register(reg(o.q, o.ceiling ?? 50 * MIN), ...at); break;
        case 'activity': h.activity('Read', ...at); break;
        case 'write': h.activity('Write', ...at); break;
        case 'stream': h.stream(...at); break;
        case 'heartbeat': h.heartbeat(...at); break;
        case 'settle': h.settle(); break;
        case 'observe': h.observe(o.message, ...at); break;
        case 'tick': log.push(['tick', w.tick(...at)]); break;
        case 'clock': clock.t = o.at; break;
        case 'utilization': util.u = o.utilization; break;
        case 'unregister': h.unregister(); log.push(['unregistered', o.q, h.kill]); break;
        case 'close': if (o.close) { w.close(); log.push(['closed']); } break;
      }
    }
    w.close();
  } finally {
    Date.now = realNow;
  }
  return JSON.stringify(log);
}

const U = [undefined, null, 0, 0.1, 0.5, 0.85, 0.86, 0.99, NaN, 50, '0.9'];
const OVERAGE = [undefined, null, 'rejected', 'allowed'];
function frames() {
  return Array.from({ length: 6 }, () => {
    const f = { status: pick(['allowed', 'allowed_warning', 'rejected']) };
    const u = pick(U);
    if (u !== undefined || rnd() < 0.3) f.utilization = u;
    const type = pick([undefined, 'five_hour', 'seven_day', 'opus', '', 5]);
    if (type !== undefined) f.rateLimitType = type;
    if (rnd() < 0.7) {
      f.unifiedWindows = {};
      for (const name of ['five_hour', 'seven_day']) if (rnd() < 0.7) f.unifiedWindows[name] = pick([{ utilization: pick([0.2, 0.9, 0.5, undefined, 50, -1, NaN, '0.9', null]) }, null, 7]);
    }
    for (const key of ['overageStatus', 'overageDisabledReason']) {
      const value = pick(OVERAGE);
      if (value !== undefined || rnd() < 0.2) f[key] = value;
    }
    if (rnd() < 0.5) f.resetsAt = pick([1.9e9, 1e9, 2e9]);
    return f;
  });
}

function runMonitor(api, fs_, config, resets) {
  const m = api.createRateLimitMonitor(config);
  return JSON.stringify(fs_.map((f, i) => {
    const warned = m.note(f);
    const out = [warned === null ? null : 'warned', m.latest(), m.active(1.95e12) === null];
    if (resets[i]) m.reset();
    return out;
  }));
}

const variants = [
  { timed: 1, virtual: true },
  { timed: 0, virtual: true },
  { timed: 0.5, virtual: true, back: true },
  { timed: 0.5, virtual: false, back: true },
  { timed: 0.7, virtual: true, options: { toolHeartbeats: false, writeTools: ['Read'], highUtilization: 0.5, idleMs: 5 * MIN } },
  { timed: 1, virtual: true, options: { extendFactor: 1 } },
  { timed: 1, virtual: true, options: { extendFactor: 3 } },
];
let differ = 0;
for (const v of variants) {
  let bad = 0;
  for (let i = 0; i < N; i++) {
    const ops = sequence(v);
    const [a, b] = [runWatchdog(ours, ops, v), runWatchdog(ref, ops, v)];
    if (a !== b && bad++ === 0) console.log(`first difference, ${JSON.stringify(v)}:\n${JSON.stringify(ops)}\nours      ${a}\nreference ${b}`);
  }
  console.log(`createWatchdog ${JSON.stringify(v)}: ${N} sequences, ${bad} differ`);
  differ += bad;
}
let bad = 0;
for (let i = 0; i < N; i++) {
  const fs_ = frames();
  const config = { warnAt: pick([0.85, 0.5]), fallbackWindow: pick(['five_hour', 'seven_day']) };
  const resets = fs_.map(() => rnd() < 0.1);
  const [a, b] = [runMonitor(ours, fs_, config, resets), runMonitor(ref, fs_, config, resets)];
  if (a !== b && bad++ === 0) console.log(`first difference:\n${JSON.stringify(fs_)}\nours      ${a}\nreference ${b}`);
}
console.log(`createRateLimitMonitor: ${N} sequences, ${bad} differ`);
differ += bad;
process.exit(differ === 0 ? 0 : 1);
