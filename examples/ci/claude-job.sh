#!/usr/bin/env bash
# A CI job that runs Claude Code unattended and branches on how the run ended.
#
#   examples/ci/claude-job.sh PROMPT [claude arguments…]
#
# The session's stream goes to transcript.jsonl and the watchdog's account of the run to
# summary.json, both in $OUT_DIR (default: the working directory). The exit code is
# agent-watchdog's (docs/cli.md, "Exit codes"): the job passes it on, so the pipeline fails the way
# the run did. AGENT_WATCHDOG and CLAUDE name the two programs (default: on PATH); IDLE and
# NO_PROGRESS the watchdog's limits.
set -uo pipefail
watchdog="${AGENT_WATCHDOG:-agent-watchdog}"
claude="${CLAUDE:-claude}"
prompt="${1:?usage: claude-job.sh PROMPT [claude arguments…]}"
shift
out="${OUT_DIR:-.}"

"$watchdog" run --idle "${IDLE:-5m}" --no-progress "${NO_PROGRESS:-20m}" \
    --summary "$out/summary.json" -- \
    "$claude" -p "$prompt" --output-format stream-json --verbose "$@" \
    >"$out/transcript.jsonl"
code=$?

case "$code" in
0) echo "claude-job: done" ;;
3) echo "claude-job: claude exited without finishing (no result, or stopped mid-task)" ;;
124) echo "claude-job: the watchdog stopped a stalled session (idle, no progress, or open after its result)" ;;
125) echo "claude-job: claude never printed a line (startup)" ;;
137) echo "claude-job: the session reached its ceiling" ;;
74 | 141) echo "claude-job: the transcript could not be written; the session was stopped" ;;
2) echo "claude-job: a bad flag or value for agent-watchdog" ;;
*) echo "claude-job: the run failed with exit code $code (claude's own, or see summary.json)" ;;
esac
exit "$code"
