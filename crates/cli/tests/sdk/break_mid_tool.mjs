// The real TypeScript Agent SDK through the claude-watchdog drop-in: a consumer that `break`s
// out of the message loop while a Bash tool runs (the tool started a `setsid` daemon that
// ignores SIGTERM and wrote its pid to PID_FILE). The SDK then closes the CLI its own way
// (end of stdin, SIGTERM about 2 s later, SIGKILL 5 s after that); this script stays alive for
// STAY_MS so the SDK's timers can fire, as in a long-lived host.
//
// Environment: SDK_NODE_MODULES, DROP_IN, WORK_DIR, PROMPT, PID_FILE, STAY_MS.
import fs from 'node:fs';
import path from 'node:path';
import { pathToFileURL } from 'node:url';

const modules = process.env.SDK_NODE_MODULES;
const dropIn = process.env.DROP_IN;
const pidFile = process.env.PID_FILE;
if (!modules || !dropIn || !pidFile) {
  console.error('SDK_NODE_MODULES, DROP_IN and PID_FILE must be set');
  process.exit(2);
}
const sdk = await import(
  pathToFileURL(path.join(modules, '@anthropic-ai/claude-agent-sdk/sdk.mjs')).href
);
const t0 = Date.now();
const emit = (o) => process.stdout.write(JSON.stringify({ t_ms: Date.now() - t0, ...o }) + '\n');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

let error = null;
try {
  const q = sdk.query({
    prompt: process.env.PROMPT || 'Run the command.',
    options: {
      pathToClaudeCodeExecutable: dropIn,
      cwd: process.env.WORK_DIR || process.cwd(),
      env: { ...process.env },
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      stderr: (data) => process.stderr.write(data),
    },
  });
  for await (const m of q) {
    emit({ event: 'message', type: m.type, subtype: m.subtype ?? null });
    const toolUse =
      m.type === 'assistant' &&
      (m.message?.content ?? []).some((b) => b.type === 'tool_use' && b.name === 'Bash');
    if (toolUse) {
      // Wait until the tool's daemon runs, then walk away mid-tool.
      for (let i = 0; i < 400 && !fs.existsSync(pidFile); i++) await sleep(50);
      emit({ event: 'break', daemon: fs.existsSync(pidFile) });
      break;
    }
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
emit({ event: 'broke', error });
await sleep(Number(process.env.STAY_MS || '9000'));
emit({ event: 'done' });
