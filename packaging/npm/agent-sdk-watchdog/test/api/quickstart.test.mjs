// End to end: the reference README's Quick start (quickstart.mts, verbatim; scripts/test-node-api
// compiles it with tsc) against the real TypeScript SDK, the real Claude Code CLI and the mock
// Messages API, with this package installed from its tarball.
//
// Needs MOCK_SERVE (the mock-api `serve` example), CLAUDE_BIN (the real claude) and the compiled
// build/quickstart.mjs and build/quickstart-idle.mjs (the same Quick start with one added
// option, `idleMs: 1500`, so a stall is killed in seconds rather than the default 10 minutes).
import { test } from 'node:test';
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import readline from 'node:readline';

const MOCK = process.env.MOCK_SERVE;
const CLAUDE = process.env.CLAUDE_BIN;
if (!MOCK || !fs.existsSync(MOCK)) throw new Error(`MOCK_SERVE must name the mock's serve binary, got ${MOCK}`);
if (!CLAUDE || !fs.existsSync(CLAUDE)) throw new Error(`CLAUDE_BIN must name the real claude, got ${CLAUDE}`);

async function mock(scenario) {
  // Pings every second (in `ping_only_stall`); the first stdout line is one JSON object.
  const child = spawn(MOCK, [scenario, '--ping-every', '1'], { stdio: ['pipe', 'pipe', 'inherit'] });
  const lines = readline.createInterface({ input: child.stdout });
  const [first] = await Promise.race([
    new Promise((r) => lines.once('line', (l) => r([l]))),
    new Promise((_, j) => child.once('exit', (c) => j(new Error(`mock exited ${c}`)))),
  ]);
  const url = JSON.parse(first).base_url;
  return { url, stop: () => child.stdin.end() };
}

function options(baseUrl) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'quickstart-'));
  const home = path.join(dir, 'home');
  const cwd = path.join(dir, 'cwd');
  const tmp = path.join(dir, 'tmp');
  for (const d of [home, cwd, tmp]) fs.mkdirSync(d);
  return {
    cwd,
    dir,
    options: {
      pathToClaudeCodeExecutable: CLAUDE,
      cwd,
      env: {
        PATH: process.env.PATH,
        HOME: home,
        TMPDIR: tmp,
        ANTHROPIC_BASE_URL: baseUrl,
        ANTHROPIC_API_KEY: 'sk-test',
        CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC: '1',
        DISABLE_AUTOUPDATER: '1',
        DISABLE_TELEMETRY: '1',
        DISABLE_ERROR_REPORTING: '1',
        CLAUDE_CODE_ENABLE_TELEMETRY: '0',
        IS_SANDBOX: '1',
      },
      permissionMode: 'bypassPermissions',
      allowDangerouslySkipPermissions: true,
      stderr: () => {},
    },
  };
}

test('Quick start: a healthy query (a Write, then an answer) completes', async () => {
  const { run } = await import('./build/quickstart.mjs');
  const m = await mock('tool_then_answer');
  const o = options(m.url);
  try {
    await run('Write hello.txt, then say hello.', o.options, 'healthy');
    assert.ok(fs.existsSync(path.join(o.cwd, 'hello.txt')), 'the Write tool ran');
  } finally {
    m.stop();
    fs.rmSync(o.dir, { recursive: true, force: true });
  }
});

test('Quick start: a query that goes silent after its tool result is aborted at its idle deadline', async () => {
  const { run } = await import('./build/quickstart-idle.mjs');
  const m = await mock('silent_after_tool_result');
  const o = options(m.url);
  const warned = [];
  const warn = console.warn;
  console.warn = (...a) => warned.push([Date.now(), a.join(' ')]);
  const t0 = Date.now();
  try {
    await assert.rejects(
      run('Write hello.txt, then say hello.', o.options, 'stalled'),
      (e) => e.message === 'stalled: stopped by the watchdog (watchdog_idle)',
    );
  } finally {
    console.warn = warn;
    m.stop();
    fs.rmSync(o.dir, { recursive: true, force: true });
  }
  const kill = warned.find(([, text]) => text === 'stalled: watchdog watchdog_idle');
  assert.ok(kill, `onKill ran: ${JSON.stringify(warned)}`);
  // At least idleMs after the start (the deadline), and nowhere near a 30 s tick or the default 10 min.
  const elapsed = kill[0] - t0;
  assert.ok(elapsed >= 1500 && elapsed < 30_000, `killed ${elapsed} ms after the start`);
});
