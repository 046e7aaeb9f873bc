// The workflow of driver.mjs: one activity (runClaude) with the timeouts and retries it is given.
import { proxyActivities } from '@temporalio/workflow';

export async function claudeSession(prompt, heartbeatMs, startToCloseMs, attempts) {
  const { runClaude } = proxyActivities({
    heartbeatTimeout: heartbeatMs,
    startToCloseTimeout: startToCloseMs,
    retry: { maximumAttempts: attempts, initialInterval: 200, backoffCoefficient: 1 },
  });
  return await runClaude(prompt);
}
