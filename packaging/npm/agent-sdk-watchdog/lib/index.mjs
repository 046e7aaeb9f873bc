// The ES module entry of agent-sdk-watchdog: the reference 0.2.0 API (createWatchdog,
// createRateLimitMonitor, installSdkWarningFilter and their helpers) on the Rust core, our
// serveMetrics (a /metrics endpoint for a watchdog), and the binary helpers of ../index.js
// (watchdogOptions & co.). `require()` gets the same module.
export * from '../index.js';
export { createWatchdog, evaluateWatchdog, makeWatchdogHook, WATCHDOG_DEFAULTS } from './watchdog.mjs';
export {
  createRateLimitMonitor,
  formatRateLimitReading,
  RATE_LIMIT_DEFAULTS,
  rateLimitResetIso,
} from './rate-limit.mjs';
export { installSdkWarningFilter, SHADOWED_CODE, WARNING_FILTER_DEFAULTS } from './warning-filter.mjs';
export { METRICS_CONTENT_TYPE, METRICS_SERVER_DEFAULTS, serveMetrics } from './metrics-server.mjs';
