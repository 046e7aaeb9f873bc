//! What the Messages API checks of a request's conversation before it answers, as a scenario
//! that validates applies it ([`Scenario::validating`](crate::Scenario::validating)): a request
//! that breaks a rule gets the API's `400 invalid_request_error` (a transcript poisoned by a
//! kill fails every request of a resumed session this way).
//!
//! The rules, in the API's words where it has them:
//!
//! - `tool_use` ids must be unique (across the conversation);
//! - every `tool_use` is answered by exactly one `tool_result`, in the message right after it;
//!   a `tool_result` answers a `tool_use` of the message right before it;
//! - roles alternate between `user` and `assistant`, starting with `user` (entries of another
//!   role, which Claude Code may send, are not counted).

use std::collections::HashSet;

use serde_json::Value;

/// Why a conversation is not valid: the API's error message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Invalid(pub String);

impl std::fmt::Display for Invalid {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn blocks(m: &Value) -> Vec<&Value> {
    match m.get("content") {
        Some(Value::Array(a)) => a.iter().collect(),
        _ => Vec::new(),
    }
}

fn of_type<'a>(m: &'a Value, ty: &str, id_key: &str) -> Vec<(usize, &'a str)> {
    blocks(m)
        .into_iter()
        .enumerate()
        .filter(|(_, b)| b.get("type").and_then(Value::as_str) == Some(ty))
        .filter_map(|(i, b)| Some((i, b.get(id_key)?.as_str()?)))
        .collect()
}

/// Check the `messages` of a request body as the Messages API does.
///
/// ```
/// use mock_api::validate_messages;
/// use serde_json::json;
/// let ok = json!({"messages": [
///     {"role": "user", "content": "go"},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
///     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1", "content": "ok"}]},
/// ]});
/// assert!(validate_messages(&ok).is_ok());
/// let twice = json!({"messages": [
///     {"role": "user", "content": "go"},
///     {"role": "assistant", "content": [{"type": "tool_use", "id": "t1", "name": "Bash", "input": {}}]},
///     {"role": "user", "content": [{"type": "tool_result", "tool_use_id": "t1"}, {"type": "tool_result", "tool_use_id": "t1"}]},
/// ]});
/// assert!(validate_messages(&twice).unwrap_err().0.contains("single result"));
/// ```
pub fn validate_messages(body: &Value) -> Result<(), Invalid> {
    let all = body
        .get("messages")
        .and_then(Value::as_array)
        .ok_or_else(|| Invalid("messages: Field required".into()))?;
    // Indexes into `all` of the user and assistant messages, in order.
    let turns: Vec<(usize, &Value)> = all
        .iter()
        .enumerate()
        .filter(|(_, m)| matches!(role(m), "user" | "assistant"))
        .collect();
    let mut seen_ids = HashSet::new();
    let mut expected_role = "user";
    for (k, (i, m)) in turns.iter().enumerate() {
        let r = role(m);
        if r != expected_role {
            return Err(Invalid(if k == 0 {
                format!("messages.{i}.role: the first message must use the \"user\" role")
            } else {
                format!(
                    "messages: roles must alternate between \"user\" and \"assistant\", but \
                     found multiple \"{r}\" roles in a row"
                )
            }));
        }
        expected_role = if r == "user" { "assistant" } else { "user" };
        if r == "assistant" {
            let uses = of_type(m, "tool_use", "id");
            for (j, id) in &uses {
                if !seen_ids.insert(id.to_string()) {
                    return Err(Invalid(format!(
                        "messages.{i}.content.{j}: `tool_use` ids must be unique"
                    )));
                }
            }
            if uses.is_empty() {
                continue;
            }
            let Some((ni, next)) = turns.get(k + 1) else {
                return Err(Invalid(format!(
                    "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                     immediately after: {}",
                    uses.iter().map(|u| u.1).collect::<Vec<_>>().join(", ")
                )));
            };
            let results = of_type(next, "tool_result", "tool_use_id");
            for (_, id) in &uses {
                let n = results.iter().filter(|r| r.1 == *id).count();
                if n == 0 {
                    return Err(Invalid(format!(
                        "messages.{i}: `tool_use` ids were found without `tool_result` blocks \
                         immediately after: {id}. Each `tool_use` block must have a \
                         corresponding `tool_result` block in the next message."
                    )));
                }
                if n > 1 {
                    return Err(Invalid(format!(
                        "messages.{ni}: each tool_use must have a single result. Found \
                         multiple `tool_result` blocks with id: {id}"
                    )));
                }
            }
        } else {
            // A result must answer a call of the message right before it.
            let before: Vec<&str> = match k.checked_sub(1).and_then(|p| turns.get(p)) {
                Some((_, prev)) => of_type(prev, "tool_use", "id")
                    .into_iter()
                    .map(|u| u.1)
                    .collect(),
                None => Vec::new(),
            };
            for (j, id) in of_type(m, "tool_result", "tool_use_id") {
                if !before.contains(&id) {
                    return Err(Invalid(format!(
                        "messages.{i}.content.{j}: unexpected `tool_use_id` found in \
                         `tool_result` blocks: {id}. Each `tool_result` block must have a \
                         corresponding `tool_use` block in the previous message."
                    )));
                }
            }
        }
    }
    Ok(())
}

fn role(m: &Value) -> &str {
    m.get("role").and_then(Value::as_str).unwrap_or("")
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn tool_use(id: &str) -> Value {
        json!({"type": "tool_use", "id": id, "name": "Bash", "input": {}})
    }

    fn result(id: &str) -> Value {
        json!({"type": "tool_result", "tool_use_id": id, "content": "ok"})
    }

    fn check(messages: Value) -> Result<(), String> {
        validate_messages(&json!({ "messages": messages })).map_err(|e| e.0)
    }

    #[test]
    fn each_rule_rejects_its_kind_of_poisoned_transcript() {
        let user = |c: Value| json!({"role": "user", "content": c});
        let asst = |c: Value| json!({"role": "assistant", "content": c});
        let go = user(json!("go"));
        let cases: Vec<(&str, Value, &str)> = vec![
            (
                "a repeated id",
                json!([
                    go,
                    asst(json!([tool_use("t1")])),
                    user(json!([result("t1")])),
                    asst(json!([tool_use("t1")])),
                    user(json!([result("t1")]))
                ]),
                "ids must be unique",
            ),
            (
                "an unanswered call",
                json!([
                    go,
                    asst(json!([tool_use("t1"), tool_use("t2")])),
                    user(json!([result("t1")]))
                ]),
                "without `tool_result` blocks immediately after: t2",
            ),
            (
                "a call answered later, not right after",
                json!([
                    go,
                    asst(json!([tool_use("t1")])),
                    user(json!("wait")),
                    asst(json!("ok")),
                    user(json!([result("t1")]))
                ]),
                "without `tool_result`",
            ),
            (
                "a call answered twice",
                json!([
                    go,
                    asst(json!([tool_use("t1")])),
                    user(json!([result("t1"), result("t1")]))
                ]),
                "single result",
            ),
            (
                "a result without its call",
                json!([go, asst(json!("hi")), user(json!([result("t9")]))]),
                "unexpected `tool_use_id`",
            ),
            (
                "two user turns in a row",
                json!([go, user(json!("again"))]),
                "roles must alternate",
            ),
            (
                "an assistant first",
                json!([asst(json!("hi")), user(json!("go"))]),
                "first message",
            ),
            (
                "a call with nothing after",
                json!([go, asst(json!([tool_use("t1")]))]),
                "without `tool_result`",
            ),
        ];
        for (what, messages, says) in cases {
            let e = check(messages).expect_err(what);
            assert!(e.contains(says), "{what}: {e}");
        }
        // Valid: calls answered right after, text around them, other roles not counted.
        check(
            json!([go, asst(json!([tool_use("t1")])), user(json!([result("t1")])),
                     {"role": "system", "content": "note"},
                     asst(json!("done")), user(json!("and now"))]),
        )
        .unwrap();
    }
}
