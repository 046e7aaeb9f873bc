//! Bench helper: a small `claude`-like child for the many-children bench. Prints an init line,
//! then one assistant line every `period_ms` for `lines` lines, then goes silent (it sleeps
//! until it is killed): the watchdog's idle kill then lands on every child.
//!
//! Usage: `ticker <lines> <period_ms>`

use std::io::Write;
use std::time::Duration;

fn main() {
    let mut args = std::env::args().skip(1).map(|a| a.parse::<u64>().ok());
    let (Some(Some(lines)), Some(Some(period))) = (args.next(), args.next()) else {
        eprintln!("usage: ticker <lines> <period_ms>");
        std::process::exit(2);
    };
    let mut out = std::io::stdout().lock();
    let _ = writeln!(
        out,
        r#"{{"type":"system","subtype":"init","session_id":"t"}}"#
    );
    let _ = out.flush();
    for _ in 0..lines {
        std::thread::sleep(Duration::from_millis(period));
        let _ = writeln!(
            out,
            r#"{{"type":"assistant","message":{{"content":[{{"type":"text","text":"tick"}}]}},"session_id":"t"}}"#
        );
        let _ = out.flush();
    }
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}
