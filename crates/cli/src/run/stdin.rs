//! The host's stdin: forwarded line by line to the first run's child, or not piped at all.
//!
//! On a terminal, a command that does not read stream-json input gets `/dev/null` (in its own
//! process group it could not read the terminal anyway, and `claude -p` would wait 3 s for
//! input that never comes): a supervised start is as fast as a direct one.

use std::ffi::OsString;
use std::io::IsTerminal;

use tokio::sync::mpsc;

/// Whether the command line asks `claude` to read stream-json on stdin.
/// (The core's rule, which a replay applies to the capture's `start` too.)
pub(crate) fn has_stream_json_input(argv: &[OsString]) -> bool {
    watchdog_core::facts::reads_stream_json_input(argv.iter().map(|a| a.to_string_lossy()))
}

/// Whether the host's stdin is worth piping to the child: not when it is a terminal and the
/// command does not read stream-json input.
pub(crate) fn should_pipe(argv: &[OsString]) -> bool {
    has_stream_json_input(argv) || !std::io::stdin().is_terminal()
}

/// Read the host's stdin line by line on a thread (`None` at its end).
pub(crate) fn spawn_reader() -> mpsc::Receiver<Option<Vec<u8>>> {
    let (tx, rx) = mpsc::channel(64);
    std::thread::spawn(move || {
        use std::io::BufRead;
        let stdin = std::io::stdin();
        let mut lock = stdin.lock();
        loop {
            let mut buf = Vec::new();
            match lock.read_until(b'\n', &mut buf) {
                Ok(0) | Err(_) => {
                    let _ = tx.blocking_send(None);
                    return;
                }
                Ok(_) => {
                    if tx.blocking_send(Some(buf)).is_err() {
                        return;
                    }
                }
            }
        }
    });
    rx
}

/// Forward the host's stdin to the child (in order; its end closes the child's stdin) and
/// report what was written, for the capture.
pub(crate) fn forward(
    mut host_stdin: mpsc::Receiver<Option<Vec<u8>>>,
    writer: agent_sdk_watchdog::StdinWriter,
) -> mpsc::UnboundedReceiver<Option<Vec<u8>>> {
    let (tx, rx) = mpsc::unbounded_channel();
    tokio::spawn(async move {
        while let Some(Some(line)) = host_stdin.recv().await {
            if writer.write_line(&line).await.is_err() {
                break;
            }
            if tx.send(Some(line)).is_err() {
                return;
            }
        }
        writer.close().await;
        let _ = tx.send(None);
    });
    rx
}

/// The next line forwarded (pending forever once there are no more).
pub(crate) async fn recv_written(
    rx: &mut Option<mpsc::UnboundedReceiver<Option<Vec<u8>>>>,
) -> Option<Vec<u8>> {
    match rx {
        Some(rx) => rx.recv().await.flatten(),
        None => std::future::pending().await,
    }
}
