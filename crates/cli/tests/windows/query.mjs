// A Windows user's query(): the TypeScript Agent SDK installed for win32-x64, routed through
// the watchdog by agent-sdk-watchdog's watchdogOptions() (its claude-watchdog.exe, the SDK's
// own claude.exe behind it). Run by Windows' node.exe under wine, from the project's folder
// (crates/cli/tests/windows_wine.rs). Every message goes as one JSON line to OUT_FILE (node.exe
// under wine cannot write to a Linux pipe):
//   {"event":"options","path":…,"claude":…}
//   {"event":"message","t_ms":…,"type":…,"subtype":…,"terminal_reason":…,"result":…}
//   {"event":"done","t_ms":…,"error":null|"…","kill":null|{kind,reason}}
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';

const out = process.env.OUT_FILE;
const project = process.env.PROJECT_DIR;
const emit = (o) => fs.appendFileSync(out, JSON.stringify(o) + '\n');
const require = createRequire(path.join(project, 'package.json'));
const { watchdogOptions, watchdogKill } = require('agent-sdk-watchdog');
const sdk = await import(pathToFileURL(require.resolve('@anthropic-ai/claude-agent-sdk')).href);

const t0 = Date.now();
const options = watchdogOptions({ plugin: false });
emit({ event: 'options', path: options.pathToClaudeCodeExecutable, claude: options.env.AGENT_WATCHDOG_CLAUDE });
let error = null;
let kill = null;
try {
  for await (const m of sdk.query({
    prompt: process.env.PROMPT || 'Say hello.',
    options: {
      ...options,
      cwd: process.env.WORK_DIR || process.cwd(),
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      includePartialMessages: true,
      stderr: (data) => fs.appendFileSync(out + '.stderr', data),
    },
  })) {
    if (m.type === 'result') kill = watchdogKill(m) ?? kill;
    if (m.type === 'stream_event') continue;
    emit({
      event: 'message',
      t_ms: Date.now() - t0,
      type: m.type,
      subtype: m.subtype ?? null,
      terminal_reason: m.terminal_reason ?? null,
      result: typeof m.result === 'string' ? m.result : null,
    });
  }
} catch (e) {
  error = String(e && e.message ? e.message : e);
}
emit({ event: 'done', t_ms: Date.now() - t0, error, kill });
