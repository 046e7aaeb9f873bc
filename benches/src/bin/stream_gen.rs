//! Bench helper: prints N stream-json lines as fast as it can (the real captures' stdout lines,
//! in order, over and over), like a `claude` process that never waits for the model.
//!
//! Usage: `stream_gen <lines>`

use std::io::Write;

fn main() {
    let n: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .expect("usage: stream_gen <lines>");
    let lines = watchdog_benches::capture_lines();
    let stdout = std::io::stdout();
    let mut out = std::io::BufWriter::with_capacity(1 << 16, stdout.lock());
    for line in lines.iter().cycle().take(n as usize) {
        out.write_all(line.as_bytes()).expect("write");
        out.write_all(b"\n").expect("write");
    }
    out.flush().expect("flush");
}
