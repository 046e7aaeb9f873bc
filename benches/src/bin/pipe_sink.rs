//! Bench helper: copies its stdin to its stdout with large reads and writes and looks at
//! nothing: the floor any observer that reads a child's stream through a pipe must pay.
//!
//! Usage: `stream_gen <lines> | pipe_sink > /dev/null`

use std::io::{Read, Write};

fn main() {
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
