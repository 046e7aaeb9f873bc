// A minimal, faithful model of the reference agent-sdk-watchdog 0.2.0 createWatchdog, written
// from its documented design (docs: the reference checks): one entry object per query in an
// insertion-ordered Set, closures per handle, one setInterval(tick, tickMs) unref'd, and the
// policy evaluated in JavaScript at each tick. For the bench only: not shipped.
const DEFAULTS = {
  idleMs: 600_000, extendFactor: 2, highUtilization: 0.9, tickMs: 30_000,
  writeTools: ['Write', 'Edit'], toolHeartbeats: true, getUtilization: () => null,
  now: () => Date.now(), onError: () => {},
};

function evaluate(t, now, u, c) {
  if (now - t.startedAt >= t.hardCeilingMs) return { verdict: 'kill', kind: 'hard_ceiling' };
  if (t.settled) return { verdict: 'ok' };
  const last = Math.max(t.lastToolAt, t.lastActivityAt ?? t.lastToolAt);
  const idle = now - last;
  const high = u !== null && u >= c.highUtilization;
  const patience = high || t.firstWriteAt === null ? c.idleMs * c.extendFactor : c.idleMs;
  if (idle >= patience) return { verdict: 'kill', kind: 'watchdog_idle' };
  if (idle >= c.idleMs) return { verdict: 'extend', reason: high ? 'high_utilization' : 'pre_write' };
  return { verdict: 'ok' };
}

export function createWatchdog(config = {}) {
  const c = { ...DEFAULTS };
  for (const [k, v] of Object.entries(config)) if (v !== undefined) c[k] = v;
  const active = new Set();
  let ticker = null;
  const notify = (f) => { try { f(); } catch (e) { try { c.onError(e); } catch { /* dropped */ } } };
  const tick = (now = c.now()) => {
    let u = null;
    try { u = c.getUtilization(now); } catch (e) { notify(() => { throw e; }); }
    const kills = [];
    for (const e of active) {
      if (e.kill) continue;
      const v = evaluate(e, now, u, c);
      if (v.verdict === 'kill') {
        const kill = { kind: v.kind, elapsedMs: now - e.startedAt, sinceToolMs: now - e.lastToolAt };
        e.kill = kill;
        notify(() => e.reg.onKill?.(kill));
        e.reg.abortController.abort();
        kills.push(kill);
      } else if (v.verdict === 'extend' && !e.extendNoted) {
        e.extendNoted = true;
        notify(() => e.reg.onExtend?.(v.reason, u));
      }
    }
    return kills;
  };
  const register = (reg, now = c.now()) => {
    const e = { reg, hardCeilingMs: reg.hardCeilingMs, startedAt: now, lastToolAt: now, lastActivityAt: now,
      firstWriteAt: null, settled: false, kill: null, extendNoted: false };
    active.add(e);
    if (!ticker) { ticker = setInterval(() => tick(), c.tickMs); ticker.unref?.(); }
    const alive = (at) => { e.lastActivityAt = at; };
    const working = (at) => { e.settled = false; alive(at); };
    return {
      activity(tool, at = c.now()) {
        e.lastToolAt = at;
        working(at);
        if (e.firstWriteAt === null && tool && c.writeTools.includes(tool)) e.firstWriteAt = at;
      },
      stream: (at = c.now()) => working(at),
      heartbeat: (at = c.now()) => alive(at),
      settle() { e.settled = true; },
      observe(m, at = c.now()) {
        if (m.type === 'result') e.settled = true;
        else if (m.type === 'rate_limit_event') alive(at);
        else if (m.type === 'stream_event' || (m.type === 'system' && m.subtype === 'thinking_tokens')
          || (m.type === 'tool_progress' && c.toolHeartbeats)) working(at);
      },
      get kill() { return e.kill; },
      unregister() {
        active.delete(e);
        if (active.size === 0 && ticker) { clearInterval(ticker); ticker = null; }
      },
    };
  };
  return { register, tick, close() { active.clear(); if (ticker) { clearInterval(ticker); ticker = null; } }, config: c };
}

// The reference's createRateLimitMonitor().observe(): a type check, then the merge for a
// rate_limit_event (only the path a non-rate-limit message takes is measured).
export function createRateLimitMonitor() {
  let held = null;
  const note = (info) => {
    held = { ...info };
    return null;
  };
  return {
    note,
    observe: (message) => (message.type === 'rate_limit_event' ? note(message.rate_limit_info) : null),
    latest: () => held,
  };
}
