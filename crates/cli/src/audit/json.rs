//! A minimal, allocation-free JSON skimmer for the few fields `audit` reads.
//!
//! Transcript lines are large (tool results, request parameters) and `audit` needs a handful of
//! small fields from each. This module walks one object's top-level keys, hands each key and the
//! raw bytes of its value to a callback, and skips every value it is not asked about with
//! `memchr` over string bodies. It checks structure (balanced brackets, terminated strings,
//! `key: value` pairs, nothing after the object) so a truncated or garbled line is rejected, but
//! it does not validate escapes, numbers or UTF-8 inside skipped strings: it is a skimmer, not a
//! validator. Strings that are read are decoded (escapes and UTF-8) by `serde_json`.

use std::borrow::Cow;

use memchr::memchr2;

#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `i` is at an opening quote; returns the index after the closing quote.
#[inline]
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = j + memchr2(b'"', b'\\', b.get(j..)?)?;
        if b[k] == b'\\' {
            j = k + 2;
        } else {
            return Some(k + 1);
        }
    }
}

/// Skip one JSON value starting at `i` (no leading whitespace); returns the index after it.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
        b'{' | b'[' => {
            // Brackets are counted without telling `{` from `[`; strings are skipped whole.
            let mut depth = 0usize;
            let mut j = i;
            loop {
                match *b.get(j)? {
                    b'"' => j = skip_string(b, j)?,
                    b'{' | b'[' => {
                        depth += 1;
                        j += 1;
                    }
                    b'}' | b']' => {
                        depth -= 1;
                        j += 1;
                        if depth == 0 {
                            return Some(j);
                        }
                    }
                    _ => j += 1,
                }
            }
        }
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

/// Walk the object at `b[i..]` (leading whitespace allowed), calling `f(key, raw_value)` for each
/// top-level member. `key` is the raw key text between the quotes. Returns the index after `}`,
/// or `None` if the object is malformed or truncated.
pub(crate) fn fields<'a>(
    b: &'a [u8],
    i: usize,
    mut f: impl FnMut(&'a [u8], &'a [u8]),
) -> Option<usize> {
    let mut i = ws(b, i);
    if b.get(i) != Some(&b'{') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b'}') {
        return Some(i + 1);
    }
    loop {
        if b.get(i) != Some(&b'"') {
            return None;
        }
        let ke = skip_string(b, i)?;
        let key = &b[i + 1..ke - 1];
        i = ws(b, ke);
        if b.get(i) != Some(&b':') {
            return None;
        }
        i = ws(b, i + 1);
        let ve = skip_value(b, i)?;
        f(key, &b[i..ve]);
        i = ws(b, ve);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Walk a whole line that must be exactly one JSON object (surrounding whitespace allowed).
pub(crate) fn line_fields<'a>(b: &'a [u8], f: impl FnMut(&'a [u8], &'a [u8])) -> bool {
    match fields(b, 0, f) {
        Some(end) => ws(b, end) == b.len(),
        None => false,
    }
}

/// Call `f` for each element of the array `v` (a raw value). Returns `false` if `v` is not a
/// well-formed array.
pub(crate) fn elements<'a>(v: &'a [u8], mut f: impl FnMut(&'a [u8])) -> bool {
    if v.first() != Some(&b'[') {
        return false;
    }
    let mut i = ws(v, 1);
    if v.get(i) == Some(&b']') {
        return true;
    }
    loop {
        let Some(e) = skip_value(v, i) else {
            return false;
        };
        f(&v[i..e]);
        i = ws(v, e);
        match v.get(i) {
            Some(b',') => i = ws(v, i + 1),
            Some(b']') => return true,
            _ => return false,
        }
    }
}

/// A raw value as a string (decoded), `None` if it is not a JSON string.
pub(crate) fn as_str(v: &[u8]) -> Option<Cow<'_, str>> {
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
pub(crate) fn as_bool(v: &[u8]) -> Option<bool> {
    match v {
        b"true" => Some(true),
        b"false" => Some(false),
        _ => None,
    }
}

/// A raw value as a non-negative integer (a float is truncated).
pub(crate) fn as_u64(v: &[u8]) -> Option<u64> {
    let s = std::str::from_utf8(v).ok()?;
    s.parse::<u64>().ok().or_else(|| {
        let f: f64 = s.parse().ok()?;
        (f.is_finite() && f >= 0.0).then_some(f as u64)
    })
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
        assert_eq!(as_u64(b"1500"), Some(1500));
        assert_eq!(as_u64(b"12.9"), Some(12));
        assert_eq!(as_u64(b"-3"), None);
        let mut n = 0;
        assert!(elements(br#"[1, {"a":[2]}, "x"]"#, |_| n += 1));
        assert_eq!(n, 3);
        assert!(!elements(b"[1,", |_| ()));
    }
}
