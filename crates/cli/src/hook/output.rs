//! The hook's stdout: the two decisions it ever makes.

use serde_json::json;

/// `PostToolUseFailure`: `text` reaches the parent's next model request.
pub fn additional_context(text: &str) -> String {
    json!({
        "hookSpecificOutput": {
            "hookEventName": "PostToolUseFailure",
            "additionalContext": text,
        }
    })
    .to_string()
}

/// `Stop`: block the stop; the parent takes one more turn with `reason`.
pub fn block(reason: &str) -> String {
    json!({"decision": "block", "reason": reason}).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_match_the_hooks_reference() {
        let v: serde_json::Value = serde_json::from_str(&additional_context("go")).unwrap();
        assert_eq!(
            v["hookSpecificOutput"]["hookEventName"],
            "PostToolUseFailure"
        );
        assert_eq!(v["hookSpecificOutput"]["additionalContext"], "go");
        let v: serde_json::Value = serde_json::from_str(&block("why \"quoted\"")).unwrap();
        assert_eq!(v["decision"], "block");
        assert_eq!(v["reason"], "why \"quoted\"");
    }
}
