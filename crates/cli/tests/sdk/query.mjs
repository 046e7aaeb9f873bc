// Drives the real TypeScript Agent SDK's query() with pathToClaudeCodeExecutable set to the
// claude-watchdog drop-in, and reports every message it yields as one JSON line on stdout:
//   {"event":"message","t_ms":…,"type":…,"subtype":…,"terminal_reason":…,"result":…}
//   {"event":"done","t_ms":…,"error":null|"…","count":n}
//
// Environment: SDK_NODE_MODULES (the node_modules holding @anthropic-ai/claude-agent-sdk),
// DROP_IN (path of claude-watchdog), PROMPT, WORK_DIR; everything else (ANTHROPIC_BASE_URL,
// AGENT_WATCHDOG_*, …) is passed to the executable unchanged.
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.SDK_NODE_MODULES;
const dropIn = process.env.DROP_IN;
if (!modules || !dropIn) {
  console.error('SDK_NODE_MODULES and DROP_IN must be set');
  process.exit(2);
}
const sdk = await import(
  pathToFileURL(path.join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href
);

const t0 = Date.now();
const emit = (o) => process.stdout.write(JSON.stringify({ t_ms: Date.now() - t0, ...o }) + '\n');
let count = 0;
let error = null;
try {
  const q = sdk.query({
    prompt: process.env.PROMPT || 'Say hello.',
    options: {
      pathToClaudeCodeExecutable: dropIn,
      cwd: process.env.WORK_DIR || process.cwd(),
      env: { ...process.env },
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      includePartialMessages: true,
      stderr: (data) => process.stderr.write(data),
    },
  });
  for await (const m of q) {
    count += 1;
    emit({
      event: 'message',
      type: m.type,
      subtype: m.subtype ?? null,
      terminal_reason: m.terminal_reason ?? null,
      result: typeof m.result === 'string' ? m.result : null,
      is_error: m.is_error ?? null,
      session_id: m.session_id ?? null,
    });
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
emit({ event: 'done', error, count });
