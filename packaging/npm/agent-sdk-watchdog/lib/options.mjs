// Option resolution and range checks shared by createWatchdog and createRateLimitMonitor.

/** `defaults` with every key of `config` whose value is not `undefined` over it, frozen. */
export function resolveOptions(defaults, config) {
  const out = { ...defaults };
  for (const [key, value] of Object.entries(config ?? {})) {
    if (value !== undefined) out[key] = value;
  }
  return Object.freeze(out);
}

/** Throws `RangeError("<name> must be <range>, got <value>")` unless `value` is a finite number passing `ok`. */
export function checkOption(name, value, range, ok) {
  if (typeof value === 'number' && Number.isFinite(value) && ok(value)) return value;
  throw new RangeError(`${name} must be ${range}, got ${String(value)}`);
}
