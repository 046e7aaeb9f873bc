//! The skimming walker: hands out one object's members (or one array's elements) as raw byte
//! spans, and skips every value it is not asked about, jumping over string bodies from quote
//! to quote.
//!
//! It checks structure (balanced brackets, terminated strings, `key: value` pairs, nothing
//! after the object), so a truncated or garbled line is rejected, but it does not validate
//! escapes, numbers or UTF-8 inside what it skips: it is a skimmer, not a validator. The audit
//! reads a handful of small fields from each large transcript line with it; the line view uses
//! it for lookups into text the validating walker has already checked. Strings that are read
//! are decoded (escapes and UTF-8) by [`as_str`].

use std::borrow::Cow;

use super::kernel::{next_quote, skip_ws as ws, string_end};

/// Skip one JSON value starting at `i` (no leading whitespace); returns the index after it.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => string_end(b, i),
        b'{' | b'[' => skip_container(b, i),
        b'-' | b'0'..=b'9' | b't' | b'f' | b'n' => {
            let mut j = i + 1;
            while j < b.len() && !matches!(b[j], b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r')
            {
                j += 1;
            }
            Some(j)
        }
        _ => None,
    }
}

/// Skip the object or array at `b[i]`. Strings are jumped over from quote to quote, and only
/// the few bytes between strings are looked at for brackets. Brackets are counted without
/// telling `{` from `[` (a mismatch inside a line is not detected; a truncated line is).
fn skip_container(b: &[u8], i: usize) -> Option<usize> {
    let mut depth = 0usize;
    let mut j = i;
    loop {
        let open = next_quote(b, j);
        for (k, &c) in b[j..open.unwrap_or(b.len())].iter().enumerate() {
            match c {
                b'{' | b'[' => depth += 1,
                b'}' | b']' => {
                    depth = depth.checked_sub(1)?;
                    if depth == 0 {
                        return Some(j + k + 1);
                    }
                }
                _ => {}
            }
        }
        j = string_end(b, open?)?;
    }
}

/// What an [`object`] or [`array()`] callback did with a value.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Val {
    /// Nothing: the walker skips the value.
    Skip,
    /// It read the value in place; the value ends at this index.
    End(usize),
    /// Stop the walk here: the rest is not needed (the walk returns [`STOPPED`]).
    Stop,
}

/// What [`object`] and [`array()`] return when their callback stopped the walk.
pub const STOPPED: usize = usize::MAX;

/// Walk the object at `b[i..]` (leading whitespace allowed), calling `f(key, value_start)` for
/// each member; `key` is the raw key text between the quotes. The callback may read the value
/// in place (returning [`Val::End`], so big values are scanned once), skip it, stop, or fail
/// (`None`). Returns the index after `}`, [`STOPPED`], or `None` if the object is malformed or
/// truncated.
pub fn object<'a>(
    b: &'a [u8],
    i: usize,
    mut f: impl FnMut(&'a [u8], usize) -> Option<Val>,
) -> Option<usize> {
    let mut i = match enter(b, i, b'{', b'}')? {
        Next::More(first) => first,
        Next::Done(end) => return Some(end),
    };
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let ke = string_end(b, i)?;
        let key = &b[i + 1..ke - 1];
        i = ws(b, ke);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        i = match after(b, i, f(key, i)?, b'}')? {
            Next::More(j) => j,
            Next::Done(end) => return Some(end),
        };
    }
}

/// Walk the array at `b[i..]`, calling `f(element_start)` for each element (as [`object`]).
pub fn array(b: &[u8], i: usize, mut f: impl FnMut(usize) -> Option<Val>) -> Option<usize> {
    let mut i = match enter(b, i, b'[', b']')? {
        Next::More(first) => first,
        Next::Done(end) => return Some(end),
    };
    loop {
        i = match after(b, i, f(i)?, b']')? {
            Next::More(j) => j,
            Next::Done(end) => return Some(end),
        };
    }
}

enum Next {
    /// The next member or element starts here.
    More(usize),
    /// The container (or the walk) ended here.
    Done(usize),
}

/// Into the container opened by `open` at `b[i..]` (leading whitespace allowed): where its
/// first member or element starts, or where it ends when it is empty.
#[inline]
fn enter(b: &[u8], i: usize, open: u8, close: u8) -> Option<Next> {
    let i = ws(b, i);
    if b.get(i) != Some(&open) {
        return None;
    }
    let i = ws(b, i + 1);
    Some(if b.get(i) == Some(&close) {
        Next::Done(i + 1)
    } else {
        Next::More(i)
    })
}

/// After a callback's verdict on the value at `i`: where the walk goes on, or where it ended
/// (at `close`, the container's closing bracket).
#[inline]
fn after(b: &[u8], i: usize, verdict: Val, close: u8) -> Option<Next> {
    let e = match verdict {
        Val::Skip => skip_value(b, i)?,
        Val::End(e) => e,
        Val::Stop => return Some(Next::Done(STOPPED)),
    };
    let i = ws(b, e);
    match *b.get(i)? {
        b',' => Some(Next::More(ws(b, i + 1))),
        c if c == close => Some(Next::Done(i + 1)),
        _ => None,
    }
}

/// The raw value starting at `b[i]` and its end.
pub fn value_at(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let e = skip_value(b, i)?;
    Some((&b[i..e], e))
}

/// Walk the object at `b[i..]`, calling `f(key, raw_value)` for each top-level member.
/// Returns the index after `}`, or `None` if the object is malformed or truncated.
pub fn fields<'a>(b: &'a [u8], i: usize, mut f: impl FnMut(&'a [u8], &'a [u8])) -> Option<usize> {
    object(b, i, |k, vi| {
        let (v, e) = value_at(b, vi)?;
        f(k, v);
        Some(Val::End(e))
    })
}

/// Whether `b[end..]` is only whitespace (nothing after the line's object).
pub fn only_ws_after(b: &[u8], end: usize) -> bool {
    ws(b, end) == b.len()
}

/// Walk a whole line that must be exactly one JSON object (surrounding whitespace allowed).
pub fn line_fields<'a>(b: &'a [u8], f: impl FnMut(&'a [u8], &'a [u8])) -> bool {
    match fields(b, 0, f) {
        Some(end) => only_ws_after(b, end),
        None => false,
    }
}

/// A raw value as a string (decoded), `None` if it is not a JSON string.
pub fn as_str(v: &[u8]) -> Option<Cow<'_, str>> {
    if v.len() < 2 || v[0] != b'"' || v[v.len() - 1] != b'"' {
        return None;
    }
    let inner = &v[1..v.len() - 1];
    if inner.contains(&b'\\') {
        serde_json::from_slice::<String>(v).ok().map(Cow::Owned)
    } else {
        std::str::from_utf8(inner).ok().map(Cow::Borrowed)
    }
}

/// A raw value as a boolean.
pub fn as_bool(v: &[u8]) -> Option<bool> {
    match v {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}

/// A span of `text` as `&str` (the walkers only cut at ASCII bytes, so this is always some).
fn span(text: &str, from: usize, to: usize) -> Option<&str> {
    text.get(from..to)
}

/// Call `f(key, key_has_escapes, value)` for every member of the object `text`, which must
/// already be validated. Returns `false` when `text` is not an object.
pub fn for_each_member<'a>(text: &'a str, mut f: impl FnMut(&'a str, bool, &'a str)) -> bool {
    let b = text.as_bytes();
    object(b, 0, |k, vi| {
        let (v, e) = value_at(b, vi)?;
        let k0 = k.as_ptr() as usize - b.as_ptr() as usize;
        f(
            span(text, k0, k0 + k.len())?,
            k.contains(&b'\\'),
            span(text, vi, vi + v.len())?,
        );
        Some(Val::End(e))
    })
    .is_some()
}

/// The raw text of member `key` of the object `text` (already validated), scanning only as far
/// as the first member with that key. Keys with escapes are compared after unescaping.
pub fn find_member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let b = text.as_bytes();
    let mut found = None;
    object(b, 0, |k, vi| {
        let hit = if k.contains(&b'\\') {
            // The key with its quotes, as a JSON string to unescape (rare; allocates).
            let k0 = k.as_ptr() as usize - b.as_ptr() as usize;
            as_str(&b[k0 - 1..k0 + k.len() + 1]).is_some_and(|k| k == key)
        } else {
            k == key.as_bytes()
        };
        if !hit {
            return Some(Val::Skip);
        }
        let (v, _) = value_at(b, vi)?;
        found = span(text, vi, vi + v.len());
        Some(Val::Stop)
    })?;
    found
}

/// Call `f(element)` for every element of the array `text`, which must already be validated.
/// Returns `false` when `text` is not an array.
pub fn for_each_element<'a>(text: &'a str, mut f: impl FnMut(&'a str)) -> bool {
    let b = text.as_bytes();
    array(b, 0, |i| {
        let (v, e) = value_at(b, i)?;
        f(span(text, i, i + v.len())?);
        Some(Val::End(e))
    })
    .is_some()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn keys(line: &str) -> Option<Vec<(String, String)>> {
        let mut out = Vec::new();
        line_fields(line.as_bytes(), |k, v| {
            out.push((
                String::from_utf8_lossy(k).into_owned(),
                String::from_utf8_lossy(v).into_owned(),
            ))
        })
        .then_some(out)
    }

    #[test]
    fn walks_top_level_members_and_skips_nested_values() {
        let got = keys(r#" {"a":1, "b":{"x":[1,"]}",{"y":"\"}"}]},"c":"s\"q","d":null,"e":[]} "#)
            .unwrap();
        let want = [
            ("a", "1"),
            ("b", r#"{"x":[1,"]}",{"y":"\"}"}]}"#),
            ("c", r#""s\"q""#),
            ("d", "null"),
            ("e", "[]"),
        ];
        assert_eq!(got.len(), want.len());
        for ((k, v), (wk, wv)) in got.iter().zip(want) {
            assert_eq!((k.as_str(), v.as_str()), (wk, wv));
        }
        assert_eq!(keys("{}").unwrap().len(), 0);
    }

    #[test]
    fn rejects_malformed_and_truncated_lines() {
        for bad in [
            "",
            "x",
            "[1]",
            r#"{"a":1"#,
            r#"{"a":"unterminated}"#,
            r#"{"a":{"b":1}"#,
            r#"{"a" 1}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} extra"#,
            r#"{a:1}"#,
            r#"{"a":1}}"#,
            r#"{"a":1]"#,
        ] {
            assert!(keys(bad).is_none(), "{bad}");
        }
    }

    #[test]
    fn decodes_strings_and_scalars() {
        assert_eq!(as_str(br#""plain""#).as_deref(), Some("plain"));
        assert_eq!(as_str(br#""a\u00e9\n""#).as_deref(), Some("a\u{e9}\n"));
        assert_eq!(as_str(b"12"), None);
        assert_eq!(as_bool(b"true"), Some(true));
        let mut n = 0;
        let end = array(br#"[1, {"a":[2]}, "x"]"#, 0, |_| {
            n += 1;
            Some(Val::Skip)
        });
        assert_eq!((end, n), (Some(19), 3));
        assert_eq!(array(b"[1,", 0, |_| Some(Val::Skip)), None);
        assert_eq!(array(b"[1,2]", 0, |_| Some(Val::Stop)), Some(STOPPED));
    }

    #[test]
    fn find_member_stops_at_the_first_match_and_unescapes_keys() {
        let obj = r#"{"type":"a","x":{"type":"nested"},"t\u0079pe2":"b","type":"dup"}"#;
        assert_eq!(find_member(obj, "type"), Some(r#""a""#));
        assert_eq!(find_member(obj, "x"), Some(r#"{"type":"nested"}"#));
        assert_eq!(find_member(obj, "type2"), Some(r#""b""#));
        assert_eq!(find_member(obj, "missing"), None);
        assert_eq!(find_member("[1]", "type"), None);
        assert_eq!(find_member("{}", "type"), None);
    }

    #[test]
    fn walks_members_and_elements() {
        let mut seen = Vec::new();
        assert!(for_each_member(
            r#"{"a":1, "b\n":{"x":[1]}, "c":"s"}"#,
            |k, e, v| { seen.push((k, e, v)) }
        ));
        assert_eq!(
            seen,
            vec![
                ("a", false, "1"),
                ("b\\n", true, r#"{"x":[1]}"#),
                ("c", false, r#""s""#)
            ]
        );
        let mut els = Vec::new();
        assert!(for_each_element(r#"[1, {"a":2} ,"x"]"#, |v| els.push(v)));
        assert_eq!(els, vec!["1", r#"{"a":2}"#, r#""x""#]);
        assert!(!for_each_element("{}", |_| {}));
        assert!(!for_each_member("[]", |_, _, _| {}));
    }

    mod walkers_agree_with_serde {
        use super::super::*;
        use crate::validate::validate;
        use proptest::prelude::*;
        use serde_json::Value;

        /// Any JSON value, with strings that need escapes (quotes, backslashes, control bytes,
        /// non-ASCII) and keys that need them too.
        fn arb_json() -> impl Strategy<Value = Value> {
            let text = "[a-z\\\\\"\\n\\t\\u{1}\\u{1f}é😀 ]{0,12}";
            let leaf = prop_oneof![
                Just(Value::Null),
                any::<bool>().prop_map(Value::from),
                any::<i64>().prop_map(Value::from),
                // Binary fractions: they survive serde_json's own text round trip exactly.
                (-4_000_000i64..4_000_000).prop_map(|n| Value::from(n as f64 / 4.0)),
                text.prop_map(Value::from),
            ];
            leaf.prop_recursive(4, 48, 6, move |inner| {
                prop_oneof![
                    prop::collection::vec(inner.clone(), 0..5).prop_map(Value::from),
                    prop::collection::btree_map(text, inner, 0..5)
                        .prop_map(|m| Value::Object(m.into_iter().collect())),
                ]
            })
        }

        fn parse(raw: &str) -> Value {
            serde_json::from_str(raw).expect("a walker returned a whole value")
        }

        proptest! {
            #![proptest_config(ProptestConfig::with_cases(1000))]

            /// On validated text, the fast walkers see exactly what serde_json sees, compact
            /// or pretty-printed.
            #[test]
            fn on_valid_json(v in arb_json(), pretty in any::<bool>()) {
                let text = if pretty {
                    serde_json::to_string_pretty(&v).unwrap()
                } else {
                    serde_json::to_string(&v).unwrap()
                };
                prop_assert!(validate(&text).is_ok());
                match &v {
                    Value::Object(map) => {
                        let mut seen = Vec::new();
                        let object = for_each_member(&text, |k, esc, raw| {
                            let key = if esc {
                                serde_json::from_str::<String>(&format!("\"{k}\"")).unwrap()
                            } else {
                                k.to_owned()
                            };
                            seen.push((key, parse(raw)));
                        });
                        prop_assert!(object);
                        let want: Vec<_> = map.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
                        prop_assert_eq!(seen, want);
                        for (k, want) in map {
                            let found = find_member(&text, k).map(parse);
                            prop_assert_eq!(found.as_ref(), Some(want));
                        }
                        prop_assert_eq!(find_member(&text, "\u{0}absent"), None);
                    }
                    Value::Array(items) => {
                        let mut seen = Vec::new();
                        let array = for_each_element(&text, |raw| seen.push(parse(raw)));
                        prop_assert!(array);
                        prop_assert_eq!(&seen, items);
                    }
                    _ => {
                        let object = for_each_member(&text, |_, _, _| {});
                        let array = for_each_element(&text, |_| {});
                        prop_assert!(!object && !array);
                    }
                }
            }

            /// They are only ever given validated text, but no text can make them panic or
            /// loop.
            #[test]
            fn on_any_text(text in "[{}\\[\\],:\"\\\\a-z0-9 .eE+-]{0,40}") {
                for_each_member(&text, |_, _, _| {});
                for_each_element(&text, |_| {});
                let _ = find_member(&text, "a");
            }
        }
    }
}
