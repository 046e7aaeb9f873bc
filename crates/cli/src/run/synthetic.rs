//! The synthetic final `result` line written on a kill by `claude-watchdog` and
//! `run --emit-result`: a message every Agent SDK already reads as an error result. Its shape
//! and its reader are the core's ([`watchdog_core::synthetic`]); the ids are made here.

use std::io::Read;

use serde_json::Value;
use watchdog_core::synthetic::SyntheticResult;
use watchdog_core::{facts::ClaudeSessionId, Kill};

/// A random (version 4) UUID, from the OS's random source; time-based if that is unavailable.
pub fn uuid_v4() -> String {
    let mut b = [0u8; 16];
    let ok = std::fs::File::open("/dev/urandom")
        .and_then(|mut f| f.read_exact(&mut b))
        .is_ok();
    if !ok {
        let n = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map(|d| d.as_nanos())
            .unwrap_or(0)
            ^ (u128::from(std::process::id()) << 64);
        b = n.to_le_bytes();
    }
    b[6] = (b[6] & 0x0f) | 0x40;
    b[8] = (b[8] & 0x3f) | 0x80;
    let h: String = b.iter().map(|x| format!("{x:02x}")).collect();
    format!(
        "{}-{}-{}-{}-{}",
        &h[0..8],
        &h[8..12],
        &h[12..16],
        &h[16..20],
        &h[20..32]
    )
}

/// The synthetic `result` for `kill` (the core's shape, [`SyntheticResult`]): `subtype:
/// error_during_execution`, `is_error: true`, `terminal_reason: watchdog_<kind>`, `result`: one
/// sentence saying what was killed and why.
pub fn result_line(
    kill: &Kill,
    sentence: &str,
    session_id: Option<&ClaudeSessionId>,
    duration_ms: u64,
    num_turns: u64,
) -> Value {
    let session_id = session_id.map_or_else(uuid_v4, |id| id.as_str().to_owned());
    SyntheticResult {
        kind: kill.kind.as_str(),
        sentence,
        session_id: &session_id,
        uuid: &uuid_v4(),
        duration_ms,
        num_turns,
    }
    .to_json()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn uuids_look_like_uuids() {
        let u = uuid_v4();
        assert_eq!(u.len(), 36);
        assert_eq!(&u[14..15], "4");
        assert_ne!(u, uuid_v4());
    }
}
