//! Bench helper: copies its stdin to its stdout with large reads and writes and looks at
//! nothing: the floor any observer that reads a child's stream through a pipe must pay.
//!
//! Usage: `stream_gen <lines> | pipe_sink > /dev/null`
//!
//! It asks for the same 1 MiB pipe the watchdog's supervisor asks for, so that the floor is the
//! best any pipe reader can do here, not a reader held back by a 64 KiB pipe.

use std::io::{Read, Write};

fn main() {
    #[cfg(target_os = "linux")]
    let _ = rustix::pipe::fcntl_setpipe_size(std::io::stdin(), 1 << 20);
    let mut input = std::io::stdin().lock();
    let mut out = std::io::stdout().lock();
    let mut buf = vec![0u8; 1 << 20];
    loop {
        match input.read(&mut buf) {
            Ok(0) => break,
            Ok(n) => out.write_all(&buf[..n]).expect("write"),
            Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
            Err(e) => panic!("read: {e}"),
        }
    }
    out.flush().expect("flush");
}
