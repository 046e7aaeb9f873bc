export * from '../index.js';
export * from './api.js';
// Both modules name a `WatchdogKill`: here it is the reference API's (what `onKill`, `tick()`
// and `handle.kill` carry). The helper's result-kill type is `ReturnType<typeof watchdogKill>`.
export type { WatchdogKill } from './api.js';
