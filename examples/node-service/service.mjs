// A small Node service that runs Claude Agent SDK queries under one in-process watchdog
// (agent-sdk-watchdog's createWatchdog: the reference package's API, on the Rust core).
//
//   npm install @anthropic-ai/claude-agent-sdk agent-sdk-watchdog
//   node service.mjs "Fix the failing test" "Update the changelog"
//
// Every prompt is a job; the jobs run at once and share one watchdog (one timer for all of
// them). Each job prints one JSON line: how it ended, and for a kill which rule stopped it and
// after how long. Then one line of the watchdog's own counts. The exit code is 1 when any job
// did not succeed, 2 for a bad command line or limit. WATCHDOG_IDLE_MS sets the idle patience
// (default 10 minutes).
import { query } from '@anthropic-ai/claude-agent-sdk'
import {
  createRateLimitMonitor,
  createWatchdog,
  formatRateLimitReading,
  makeWatchdogHook,
} from 'agent-sdk-watchdog'

const prompts = process.argv.slice(2)
if (prompts.length === 0) {
  console.error('usage: node service.mjs PROMPT [PROMPT…]')
  process.exit(2)
}

// One rate-limit monitor and one watchdog for the whole process, shared by every job.
const rateLimits = createRateLimitMonitor()
let watchdog
try {
  watchdog = createWatchdog({
    idleMs: Number(process.env.WATCHDOG_IDLE_MS ?? 10 * 60 * 1000),
    getUtilization: (now) => rateLimits.active(now)?.utilization ?? null,
  })
} catch (error) {
  // A RangeError names the option, its range and the value.
  console.error(`node-service: ${error.message}`)
  process.exit(2)
}

async function runJob(prompt) {
  const abortController = new AbortController()
  const handle = watchdog.register({ hardCeilingMs: 2 * 60 * 60 * 1000, abortController })
  // Every tool boundary of this query feeds its own handle.
  const feed = [{ hooks: [makeWatchdogHook(handle)] }]
  const options = {
    abortController,
    includePartialMessages: true, // stream events keep the idle clock moving
    hooks: { PreToolUse: feed, PostToolUse: feed, PostToolUseFailure: feed },
  }
  let result = null
  try {
    for await (const message of query({ prompt, options })) {
      handle.observe(message)
      const crossed = rateLimits.observe(message)
      if (crossed) console.error(`usage window high: ${formatRateLimitReading(crossed)}`)
      if (message.type === 'result') result = message
    }
    return { prompt, outcome: result?.subtype ?? 'no_result', result: result?.result ?? null }
  } catch (error) {
    // A kill reaches the loop as the abort's error; `handle.kill` says the watchdog caused it.
    const kill = handle.kill
    if (!kill) return { prompt, outcome: 'error', error: String(error?.message ?? error) }
    return { prompt, outcome: 'killed', kill: kill.kind, afterMs: kill.elapsedMs }
  } finally {
    handle.unregister() // the query ended: the watchdog counts it by its outcome
  }
}

const jobs = await Promise.all(prompts.map(runJob))
for (const job of jobs) console.log(JSON.stringify(job))
const m = watchdog.metrics()
console.log(`watchdog: ${m.ended.success} succeeded, ${m.kills.idle} killed idle, ${m.kills.ceiling} at the ceiling`)
watchdog.close()
process.exitCode = jobs.every((j) => j.outcome === 'success') ? 0 : 1
