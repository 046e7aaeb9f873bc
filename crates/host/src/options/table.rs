//! The rows of the option table ([`OPTIONS`]): one a user-facing option. Each default is
//! rendered from the typed value the program uses when the option is not given.

use std::time::Duration;

use watchdog_core::config::{format_bytes, HumanDuration};
use watchdog_core::recovery::Recovery;
use watchdog_core::Limits;

use super::spec::{OptionDefault, OptionSpec, Reader, ValueKind};

/// A duration as its option's parser reads it (`10m`).
fn dur(d: Duration) -> Option<String> {
    Some(HumanDuration(d).to_string())
}

/// The default bound on the telemetry flush at exit (and on each export request):
/// [`TELEMETRY_FLUSH_MS`]'s typed value, which the telemetry reads.
pub const TELEMETRY_FLUSH: Duration = Duration::from_secs(2);

/// The time the child gets after SIGTERM before SIGKILL (`--grace`): the supervisor's default.
pub const TERM_GRACE: Duration = Duration::from_secs(5);

/// The core's default limits.
fn limits() -> Limits {
    Limits::default()
}

const POLICY: &[Reader] = &[Reader::Run, Reader::ReplayAudit, Reader::DropIn];
const REPORT: &[Reader] = &[Reader::Run, Reader::DropIn];
const RUN: &[Reader] = &[Reader::Run];
const RUN_AND_HOOK: &[Reader] = &[Reader::Run, Reader::Hook];

macro_rules! options {
    ($(
        $(#[$doc:meta])*
        $id:ident = {
            name: $name:literal,
            flag: $flag:expr,
            value_name: $value_name:expr,
            kind: $kind:ident,
            default: $default:expr,
            read_by: $read_by:expr,
            help: $help:expr $(,)?
        }
    )*) => {
        $(
            $(#[$doc])*
            pub const $id: OptionSpec = OptionSpec {
                name: $name,
                flag: $flag,
                env: concat!("AGENT_WATCHDOG_", stringify!($id)),
                value_name: $value_name,
                kind: ValueKind::$kind,
                default: $default,
                help: $help,
                read_by: $read_by,
            };
        )*
        /// Every user-facing option, in the order of `run --help` (the variables without a
        /// flag last).
        pub const OPTIONS: &[OptionSpec] = &[$($id),*];
    };
}

use OptionDefault::{Described, Unset, Value};

options! {
    /// `--idle`: the base idle patience.
    IDLE = {
        name: "idle", flag: Some("idle"), value_name: Some("DURATION"), kind: PositiveDuration,
        default: Value(|| dur(limits().idle())), read_by: POLICY,
        help: "Idle patience: no stdout line for this long → kill `idle`. Until the first \
               completed write tool and while rate-limit utilization is high, patience is \
               idle × extend-factor. Every duration is at most 365d",
    }
    /// `--extend-factor`: the patience multiplier.
    EXTEND_FACTOR = {
        name: "extend_factor", flag: Some("extend-factor"), value_name: Some("FACTOR"),
        kind: Factor, default: Value(|| Some(limits().extend_factor().to_string())),
        read_by: POLICY,
        help: "Patience multiplier before the first completed write and at high utilization",
    }
    /// `--startup`: the limit before the first line.
    STARTUP = {
        name: "startup", flag: Some("startup"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value(|| dur(limits().startup())), read_by: POLICY,
        help: "No line at all since start → kill `startup`",
    }
    /// `--no-progress`: the limit on keep-alives without progress.
    NO_PROGRESS = {
        name: "no_progress", flag: Some("no-progress"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value(|| dur(limits().no_progress())), read_by: POLICY,
        help: "Keep-alives only (pings, heartbeats) for this long → kill `no_progress`; an \
               outstanding MCP call gets until Claude Code's own abort plus one heartbeat tick",
    }
    /// `--linger`: the wait after a `result`.
    LINGER = {
        name: "linger", flag: Some("linger"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value(|| dur(limits().linger())), read_by: POLICY,
        help: "After a result, nothing new and the stream still open → kill `linger`",
    }
    /// `--ceiling`: the total age limit.
    CEILING = {
        name: "ceiling", flag: Some("ceiling"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value(|| limits().ceiling().and_then(dur)),
        read_by: POLICY,
        help: "Total age limit → kill `ceiling` (none unless given)",
    }
    /// `--write-tools`: the tools that end the pre-write extension.
    WRITE_TOOLS = {
        name: "write_tools", flag: Some("write-tools"), value_name: Some("TOOLS"), kind: List,
        default: Value(|| Some(limits().write_tools().join(","))), read_by: POLICY,
        help: "Comma-separated tools whose first completed call ends the pre-write extension",
    }
    /// `--high-utilization`: the utilization that extends patience.
    HIGH_UTILIZATION = {
        name: "high_utilization", flag: Some("high-utilization"), value_name: Some("FRACTION"),
        kind: Fraction, default: Value(|| Some(limits().high_utilization().to_string())),
        read_by: POLICY,
        help: "Rate-limit utilization (0–1) at or above which patience is extended",
    }
    /// `--warn-at`: the fraction of a limit that warns.
    WARN_AT = {
        name: "warn_at", flag: Some("warn-at"), value_name: Some("FRACTION"),
        kind: NonZeroFraction, default: Value(|| Some(limits().warn_at().to_string())),
        read_by: POLICY,
        help: "Fraction of a limit at which a stalling warning is shown",
    }
    /// `--output-blocked`: the bound on continuous blocked output.
    OUTPUT_BLOCKED = {
        name: "output_blocked", flag: Some("output-blocked"), value_name: Some("DURATION"),
        kind: Duration,
        // No bound is off, which the parser reads as 0.
        default: Value(|| dur(limits().output_blocked().unwrap_or_default())),
        read_by: POLICY,
        help: "Our stdout accepted no byte for this long while output waited for it (any byte \
               restarts it; time the watchdog itself was stopped does not count) → stop \
               `output_blocked`, exit 75; 0 turns it off. The idle and no-progress clocks stand \
               still while the child waits on our output",
    }
    /// `--max-backoff`: the most an announced back-off storm holds the clocks.
    MAX_BACKOFF = {
        name: "max_backoff", flag: Some("max-backoff"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value(|| dur(limits().max_backoff())), read_by: POLICY,
        help: "An announced API back-off (system/api_retry) is not idleness: the idle and \
               no-progress clocks start at its end, for at most this long after the first \
               retry of a storm",
    }
    /// `--grace`: SIGTERM to SIGKILL (the drop-in caps it at 2 s).
    GRACE = {
        name: "grace", flag: Some("grace"), value_name: Some("DURATION"), kind: Duration,
        default: Value(|| dur(TERM_GRACE)), read_by: POLICY,
        help: "Time the child gets after SIGTERM before SIGKILL, also after a signal we forwarded",
    }
    /// `--busy-cap`: how long a busy tool holds the no-progress kill.
    BUSY_CAP = {
        name: "busy_cap", flag: Some("busy-cap"), value_name: Some("DURATION"), kind: Duration,
        default: Value(|| dur(limits().busy_cap())), read_by: POLICY,
        help: "While a tool call is outstanding and its processes use CPU or move bytes on \
               their sockets, no progress is no hang, for at most this long after the last \
               progress (0: the process tree never holds the no_progress kill)",
    }
    /// `--max-rss`: the memory guard.
    MAX_RSS = {
        name: "max_rss", flag: Some("max-rss"), value_name: Some("SIZE"), kind: Size,
        default: Value(|| limits().max_rss().map(format_bytes)), read_by: POLICY,
        help: "The process tree's resident memory above SIZE (512M, 2G) for 5s → kill `memory` \
               (off unless given)",
    }
    /// `--task-silence`: a background task's own deadline.
    TASK_SILENCE = {
        name: "task_silence", flag: Some("task-silence"), value_name: Some("DURATION"),
        kind: Duration,
        // Unset is the idle patience in force, which the parser reads as 0.
        default: Value(|| dur(limits().task_silence().unwrap_or_default())),
        read_by: POLICY,
        help: "A background task (subagent, shell, monitor) that printed nothing of its own \
               for this long since its last sign of life is silent (a notice); the idle kill \
               waits for every task's deadline and, with tasks outstanding, is `task_silent`, \
               naming them; 0: the idle patience in force",
    }
    /// `--control-timeout`: the bound on the host's unanswered control requests.
    CONTROL_TIMEOUT = {
        name: "control_timeout", flag: Some("control-timeout"), value_name: Some("DURATION"),
        kind: Duration, default: Value(|| dur(limits().control_timeout().unwrap_or_default())),
        read_by: POLICY,
        help: "A control request of the host on stdin (interrupt, get_context_usage, …; not \
               initialize) that claude does not answer for this long → kill `unanswered`, \
               naming it (with --emit-result and in claude-watchdog, the request gets an error \
               answer first); 0 turns it off",
    }
    /// `--summary`: the summary file.
    SUMMARY = {
        name: "summary", flag: Some("summary"), value_name: Some("FILE"), kind: Path,
        default: Unset, read_by: REPORT,
        help: "Write one JSON summary of the run to FILE when it ends (`-` for stderr). FILE is \
               checked before the command starts and replaced at the end in one step",
    }
    /// `--record`: the capture file.
    RECORD = {
        name: "record", flag: Some("record"), value_name: Some("FILE"), kind: Path,
        default: Unset, read_by: REPORT,
        help: "Record the run as a capture (JSON Lines, flushed line by line) to FILE",
    }
    /// `--strict`: exit 3 for every ending without a usable `result`.
    STRICT = {
        name: "strict", flag: Some("strict"), value_name: None, kind: Switch, default: Unset,
        read_by: REPORT,
        help: "Exit 3 for every ending without a usable `result` (no_result, incomplete), \
               whatever the command's own exit code (by default only a stream-json command \
               that exits 0 without one does)",
    }
    /// `--no-command-lines`: record no command line of the process tree.
    NO_COMMAND_LINES = {
        name: "no_command_lines", flag: Some("no-command-lines"), value_name: None,
        kind: Switch, default: Unset, read_by: REPORT,
        help: "Record no command line of the child's process tree (kill receipts, the \
               capture's samples, telemetry, stderr: each process's program name only) and \
               only the program of the command in the summary. By default they are recorded \
               with what looks like a secret redacted, at most 200 bytes each",
    }
    /// `--emit-result`: the synthetic `result` on a kill (the drop-in always writes it).
    EMIT_RESULT = {
        name: "emit_result", flag: Some("emit-result"), value_name: None, kind: Switch,
        default: Unset, read_by: RUN,
        help: "On a kill, first write one synthetic final `result` line to stdout (what the \
               Agent SDKs read as an error result), and exit 1 like the CLI after an error \
               result",
    }
    /// `--no-status`: no live status line.
    NO_STATUS = {
        name: "no_status", flag: Some("no-status"), value_name: None, kind: Switch,
        default: Unset, read_by: RUN,
        help: "Never show the live status line, even on a terminal",
    }
    /// `--no-recover-output-limit`: no continuation after the output limit (also the hook's).
    NO_RECOVER_OUTPUT_LIMIT = {
        name: "no_recover_output_limit", flag: Some("no-recover-output-limit"),
        value_name: None, kind: Switch, default: Unset, read_by: RUN_AND_HOOK,
        help: "Do not continue a session cut off by the output token limit (continued once by \
               default)",
    }
    /// `--resume-after-kill`: continue once after our own kill.
    RESUME_AFTER_KILL = {
        name: "resume_after_kill", flag: Some("resume-after-kill"), value_name: None,
        kind: Switch, default: Unset, read_by: RUN,
        help: "Continue the session once after our own idle, no_progress or linger kill",
    }
    /// `--wait-for-reset`: wait for a rate limit's reset, then continue once.
    WAIT_FOR_RESET = {
        name: "wait_for_reset", flag: Some("wait-for-reset"), value_name: None, kind: Switch,
        default: Unset, read_by: RUN,
        help: "After a rejected rate limit with a known reset time, wait for the reset, then \
               continue the session once",
    }
    /// `--max-wait`: the longest rate-limit wait.
    MAX_WAIT = {
        name: "max_wait", flag: Some("max-wait"), value_name: Some("DURATION"),
        kind: PositiveDuration, default: Value(|| dur(Recovery::default().max_wait())),
        read_by: RUN,
        help: "The longest rate-limit wait",
    }
    /// `--reset-margin`: added to a reset time.
    RESET_MARGIN = {
        name: "reset_margin", flag: Some("reset-margin"), value_name: Some("DURATION"),
        kind: Duration, default: Value(|| dur(Recovery::default().reset_margin())),
        read_by: RUN,
        help: "Added to the reset time before continuing",
    }
    /// `--state-dir`: where the continuation markers live (also the hook's).
    STATE_DIR = {
        name: "state_dir", flag: Some("state-dir"), value_name: Some("DIR"), kind: Path,
        default: Described("$XDG_STATE_HOME/agent-watchdog, else ~/.local/state/agent-watchdog"),
        read_by: RUN_AND_HOOK,
        help: "Where the continuation markers live",
    }
    /// `--ledger`: a shared Redis or PostgreSQL ledger for the markers (also the hook's).
    LEDGER = {
        name: "ledger", flag: Some("ledger"), value_name: Some("URL"), kind: LedgerUrl,
        default: Described("the state directory"), read_by: RUN_AND_HOOK,
        help: "Keep the continuation markers in a shared ledger, redis://… or postgres://… \
               (every machine that may continue a session must name the same one); shown \
               without its password",
    }
    /// The real `claude` the drop-in runs.
    CLAUDE = {
        name: "claude", flag: None, value_name: None, kind: Path,
        default: Described("the first claude on PATH that is not the drop-in"),
        read_by: &[Reader::DropIn],
        help: "The real claude the drop-in runs",
    }
    /// The `agent-watchdog` the plugin's hook command runs.
    BIN = {
        name: "bin", flag: None, value_name: None, kind: Path,
        default: Described("agent-watchdog on PATH"), read_by: &[Reader::Hook],
        help: "The agent-watchdog the subagent plugin's hook command runs",
    }
    /// The switch of our OpenTelemetry export.
    TELEMETRY = {
        name: "telemetry", flag: None, value_name: None, kind: Switch,
        default: Unset, read_by: &[Reader::Telemetry],
        help: "Export every watchdog decision as OpenTelemetry metrics and events (OTEL_* variables)",
    }
    /// The bound on the telemetry flush at exit.
    TELEMETRY_FLUSH_MS = {
        name: "telemetry_flush_ms", flag: None, value_name: None, kind: Milliseconds,
        default: Value(|| {
            Some(TELEMETRY_FLUSH.as_millis().to_string())
        }), read_by: &[Reader::Telemetry],
        help: "The bound on the telemetry flush at exit (and on each export request), in ms",
    }
}
