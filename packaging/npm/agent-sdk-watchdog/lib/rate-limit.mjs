// createRateLimitMonitor(): one reading merged from every rate_limit_event, the reference
// 0.2.0 rules. Plain JavaScript: a reading is the SDK's own object (a shallow copy of it, every
// field kept), and frames are rare (one per API call at most), so nothing here is hot.
import { checkOption, resolveOptions } from './options.mjs';

export const RATE_LIMIT_DEFAULTS = Object.freeze({
  warnAt: 0.85,
  fallbackWindow: 'five_hour',
  now: () => Date.now(),
});

// One window's utilization from the undeclared `unifiedWindows` map, or undefined.
function windowUtilization(info, key) {
  const windows = info.unifiedWindows;
  if (typeof windows !== 'object' || windows === null) return undefined;
  const entry = windows[key];
  if (typeof entry !== 'object' || entry === null || !('utilization' in entry)) return undefined;
  return typeof entry.utilization === 'number' ? entry.utilization : undefined;
}

export function createRateLimitMonitor(config = {}) {
  const c = resolveOptions(RATE_LIMIT_DEFAULTS, config);
  checkOption('warnAt', c.warnAt, 'a number in [0, 1]', (v) => v >= 0 && v <= 1);
  let held = null;
  let warned = false;

  function note(info) {
    const derived =
      info.utilization ??
      (info.rateLimitType !== undefined ? windowUtilization(info, info.rateLimitType) : undefined) ??
      windowUtilization(info, c.fallbackWindow);
    const next = { ...info };
    if (derived !== undefined) next.utilization = derived;
    if (info.overageStatus === undefined && held?.overageStatus !== undefined) {
      next.overageStatus = held.overageStatus;
    }
    if (info.overageDisabledReason === undefined && held?.overageDisabledReason !== undefined) {
      next.overageDisabledReason = held.overageDisabledReason;
    }
    held = next;
    if (!warned && typeof held.utilization === 'number' && held.utilization >= c.warnAt) {
      warned = true;
      return held;
    }
    return null;
  }

  return {
    note,
    observe: (message) => (message.type === 'rate_limit_event' ? note(message.rate_limit_info) : null),
    latest: () => held,
    active(now = c.now()) {
      if (held && typeof held.resetsAt === 'number' && held.resetsAt * 1000 <= now) return null;
      return held;
    },
    reset() {
      held = null;
      warned = false;
    },
  };
}

/** The reset time as an ISO string, or null without a numeric `resetsAt`. */
export function rateLimitResetIso(reading) {
  return typeof reading.resetsAt === 'number' ? new Date(reading.resetsAt * 1000).toISOString() : null;
}

/** One line: status, utilization, overage, reset. */
export function formatRateLimitReading(reading) {
  const reset = rateLimitResetIso(reading);
  let out = String(reading.status);
  if (reading.utilization !== undefined) out += ` at ${(reading.utilization * 100).toFixed(0)}%`;
  if (reading.overageStatus) out += `, overage ${reading.overageStatus}`;
  if (reading.overageDisabledReason) out += ` (${reading.overageDisabledReason})`;
  if (reset) out += `, resets at ${reset}`;
  return out;
}
