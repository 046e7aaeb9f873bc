// The reference agent-sdk-watchdog README's Quick start, verbatim (its import already names
// this package). Type-checked by scripts/test-node-api and run by quickstart.test.mjs.
import { query, type Options } from '@anthropic-ai/claude-agent-sdk'
import {
  createRateLimitMonitor,
  createWatchdog,
  formatRateLimitReading,
  installSdkWarningFilter,
  makeWatchdogHook,
} from 'agent-sdk-watchdog'

// One of each for the whole process, shared by every query.
const rateLimits = createRateLimitMonitor()
const watchdog = createWatchdog({
  getUtilization: (now) => rateLimits.active(now)?.utilization ?? null,
})
installSdkWarningFilter({
  onFirst: (_warning, code) => console.warn(`${code}: expected, shown once`),
})

export async function run(prompt: string, options: Options, label: string): Promise<void> {
  const abortController = new AbortController()
  const handle = watchdog.register({
    hardCeilingMs: 60 * 60 * 1000,
    abortController,
    onKill: (kill) => console.warn(`${label}: watchdog ${kill.kind}`),
  })
  // Every tool boundary of this query feeds its own handle.
  const feed = { hooks: [makeWatchdogHook(handle)] }
  const hooks = options.hooks ?? {}
  try {
    const q = query({
      prompt,
      options: {
        ...options,
        abortController,
        includePartialMessages: true, // stream events keep the idle clock moving
        hooks: {
          ...hooks,
          PreToolUse: [...(hooks.PreToolUse ?? []), feed],
          PostToolUse: [...(hooks.PostToolUse ?? []), feed],
          PostToolUseFailure: [...(hooks.PostToolUseFailure ?? []), feed],
        },
      },
    })
    for await (const message of q) {
      handle.observe(message)
      const crossed = rateLimits.observe(message)
      if (crossed) console.warn(`usage window high: ${formatRateLimitReading(crossed)}`)
    }
  } catch (err) {
    // A kill reaches the loop as the abort's error; `kill` says the watchdog caused it.
    const kill = handle.kill
    if (kill) throw new Error(`${label}: stopped by the watchdog (${kill.kind})`, { cause: err })
    throw err
  } finally {
    handle.unregister()
  }
}
