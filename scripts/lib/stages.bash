# Stages with a time table, for scripts/test and .ci/run (sourced, not run).
#
#   stages_begin NAME              # a private work dir ($STAGES_WORK), the table printed on exit
#   stage TITLE COMMAND...         # runs COMMAND; a failure fails the script, naming the stage
#   background TITLE COMMAND...    # starts COMMAND beside the next stages (its output to a log)
#   join TITLE                     # waits for it, prints its output, fails the script if it failed
#
# Every row has the stage's wall seconds and its CPU seconds (user + system of every process it
# waited for, from bash's `time`), so where the time goes reads the same on a loaded machine:
# the CPU total over the machine's cores is the floor no ordering of the stages can beat.

stages_begin() {
    STAGES_NAME="$1"
    STAGES_WORK="$(mktemp -d "${TMPDIR:-/tmp}/agent-watchdog-stages.XXXXXX")"
    STAGES_TABLE="$STAGES_WORK/timings"
    STAGES_PIDS=()
    : >"$STAGES_TABLE"
    TIMEFORMAT='%R %U %S'
    exec 3>&2
    trap stages_end EXIT
}

# _stages_kill_tree PID: TERM to PID and every descendant, the leaves first (a background job
# is a subshell around its command: killing the subshell alone would leave its compilers).
_stages_kill_tree() {
    local child
    for child in $(pgrep -P "$1" 2>/dev/null); do
        _stages_kill_tree "$child"
    done
    kill "$1" 2>/dev/null || true
}

stages_end() {
    local rc=$? p
    for p in "${STAGES_PIDS[@]}"; do _stages_kill_tree "$p"; done
    if [[ -s "$STAGES_TABLE" ]]; then
        echo "== $STAGES_NAME: where the time went (a stage marked & ran beside the ones after it)" >&2
        printf '   %7s %7s  %-6s %s\n' wall CPU start stage >&2
        sort -t'|' -k1,1n "$STAGES_TABLE" | awk -F'|' -v total="$SECONDS" -v cores="$(nproc)" '
            { printf "   %6.0fs %6.0fs  +%-5d %s\n", $2, $3, $1, $4; cpu += $3 }
            END { printf "   total: %d s wall, %.0f s CPU (the CPU alone needs %.0f s on %d cores)\n", total, cpu, cpu / cores, cores }' >&2
    fi
    rm -rf "$STAGES_WORK"
    exit "$rc"
}

# _stages_record START TITLE TIMEFILE: one row from bash's `time` report in TIMEFILE.
_stages_record() {
    local t real user sys
    t="$(tail -1 "$3" 2>/dev/null)"
    read -r real user sys <<<"${t:-0 0 0}"
    echo "$1|$real|$(awk -v u="$user" -v s="$sys" 'BEGIN { print u + s }')|$2" >>"$STAGES_TABLE"
}

# stage TITLE CMD...: runs CMD in the foreground, records its row, ends the run if it fails. A
# shell function given as CMD runs where errexit is off (inside the `||` that keeps its status),
# so a function of several steps chains them with `|| return`, or its first failure is lost.
stage() {
    local title="$1" t0=$SECONDS rc=0
    shift
    echo "== $STAGES_NAME: [+${t0}s] $title" >&2
    { time "$@" 2>&3; } 2>"$STAGES_WORK/stage.time" || rc=$?
    if [[ $rc != 0 ]]; then
        _stages_record "$t0" "$title (FAILED)" "$STAGES_WORK/stage.time"
        echo "$STAGES_NAME: FAILED: $title (exit $rc)" >&2
        exit 1
    fi
    _stages_record "$t0" "$title" "$STAGES_WORK/stage.time"
}

declare -A _stages_bg_pid=() _stages_bg_log=() _stages_bg_start=()
background() {
    local title="$1" log
    shift
    log="$STAGES_WORK/bg.${#_stages_bg_pid[@]}.log"
    echo "== $STAGES_NAME: [+${SECONDS}s] $title (in the background; its output comes when it is joined)" >&2
    { { time "$@" >"$log" 2>&1; } 2>"$log.time"; } &
    _stages_bg_pid[$title]=$!
    _stages_bg_log[$title]=$log
    _stages_bg_start[$title]=$SECONDS
    STAGES_PIDS+=($!)
}

join() {
    local title="$1" rc=0
    wait "${_stages_bg_pid[$title]}" || rc=$?
    cat "${_stages_bg_log[$title]}" >&2
    if [[ $rc != 0 ]]; then
        _stages_record "${_stages_bg_start[$title]}" "$title & (FAILED)" "${_stages_bg_log[$title]}.time"
        echo "$STAGES_NAME: FAILED: $title (exit $rc; its output is above)" >&2
        exit 1
    fi
    _stages_record "${_stages_bg_start[$title]}" "$title &" "${_stages_bg_log[$title]}.time"
}
