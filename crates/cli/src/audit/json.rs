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

use memchr::memchr;

#[inline]
fn ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

/// `i` is at an opening quote; returns the index after the closing quote. Jumps from quote to
/// quote (a quote preceded by an odd number of backslashes is escaped), so escape-heavy text
/// such as code with `\n` every line costs no more than plain text.
#[inline]
fn skip_string(b: &[u8], i: usize) -> Option<usize> {
    let mut j = i + 1;
    loop {
        let k = next_quote(b, j)?;
        let mut n = 0;
        while k - n > i + 1 && b[k - 1 - n] == b'\\' {
            n += 1;
        }
        if n.is_multiple_of(2) {
            return Some(k + 1);
        }
        j = k + 1;
    }
}

/// High bit of each byte of `w` that equals `"` (exact, no false positives).
#[inline]
fn quote_mask(w: u64) -> u64 {
    const LO7: u64 = 0x7f7f_7f7f_7f7f_7f7f;
    let x = w ^ 0x2222_2222_2222_2222;
    !(((x & LO7) + LO7) | x | LO7)
}

/// The next `"` at or after `j`: sixteen bytes at a time for the first 128 bytes (most keys
/// and small values end there, and two word compares beat a call), then `memchr`.
#[inline]
fn next_quote(b: &[u8], j: usize) -> Option<usize> {
    let end = b.len().min(j + 128);
    let mut k = j;
    while k + 16 <= end {
        let lo = quote_mask(u64::from_le_bytes(b[k..k + 8].try_into().ok()?));
        let hi = quote_mask(u64::from_le_bytes(b[k + 8..k + 16].try_into().ok()?));
        if lo | hi != 0 {
            let off = if lo != 0 {
                lo.trailing_zeros() / 8
            } else {
                8 + hi.trailing_zeros() / 8
            };
            return Some(k + off as usize);
        }
        k += 16;
    }
    Some(k + memchr(b'"', b.get(k..)?)?)
}

/// Skip one JSON value starting at `i` (no leading whitespace); returns the index after it.
fn skip_value(b: &[u8], i: usize) -> Option<usize> {
    match *b.get(i)? {
        b'"' => skip_string(b, i),
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

/// Skip the object or array at `b[i]`. Strings are jumped over from quote to quote, and only the few bytes between strings are looked at for
/// brackets. Brackets are counted without telling `{` from `[` (a mismatch inside a line is
/// not detected; a truncated line is).
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
        j = skip_string(b, open?)?;
    }
}

/// What an [`object`] or [`array`] callback did with a value.
pub(crate) enum Val {
    /// Nothing: the walker skips the value.
    Skip,
    /// It read the value in place; the value ends at this index.
    End(usize),
    /// Stop the walk here: the rest of the object is not needed ([`object`] returns
    /// [`STOPPED`]).
    Stop,
}

/// What [`object`] returns when its callback stopped the walk.
pub(crate) const STOPPED: usize = usize::MAX;

/// Walk the object at `b[i..]` (leading whitespace allowed), calling `f(key, value_start)` for
/// each member; `key` is the raw key text between the quotes. The callback may read the value
/// in place (returning [`Val::End`], so big values are scanned once), skip it, or fail (`None`).
/// Returns the index after `}`, or `None` if the object is malformed or truncated.
pub(crate) fn object<'a>(
    b: &'a [u8],
    i: usize,
    mut f: impl FnMut(&'a [u8], usize) -> Option<Val>,
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
        let ve = match f(key, i)? {
            Val::Skip => skip_value(b, i)?,
            Val::End(e) => e,
            Val::Stop => return Some(STOPPED),
        };
        i = ws(b, ve);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b'}' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// Walk the array at `b[i..]`, calling `f(element_start)` for each element (as [`object`]).
pub(crate) fn array(b: &[u8], i: usize, mut f: impl FnMut(usize) -> Option<Val>) -> Option<usize> {
    let mut i = ws(b, i);
    if b.get(i) != Some(&b'[') {
        return None;
    }
    i = ws(b, i + 1);
    if b.get(i) == Some(&b']') {
        return Some(i + 1);
    }
    loop {
        let e = match f(i)? {
            Val::Skip => skip_value(b, i)?,
            Val::End(e) => e,
            Val::Stop => return Some(STOPPED),
        };
        i = ws(b, e);
        match *b.get(i)? {
            b',' => i = ws(b, i + 1),
            b']' => return Some(i + 1),
            _ => return None,
        }
    }
}

/// The raw value starting at `b[i]` and its end.
pub(crate) fn value_at(b: &[u8], i: usize) -> Option<(&[u8], usize)> {
    let e = skip_value(b, i)?;
    Some((&b[i..e], e))
}

/// Walk the object at `b[i..]`, calling `f(key, raw_value)` for each top-level member.
/// Returns the index after `}`, or `None` if the object is malformed or truncated.
pub(crate) fn fields<'a>(
    b: &'a [u8],
    i: usize,
    mut f: impl FnMut(&'a [u8], &'a [u8]),
) -> Option<usize> {
    object(b, i, |k, vi| {
        let (v, e) = value_at(b, vi)?;
        f(k, v);
        Some(Val::End(e))
    })
}

/// Whether `b[end..]` is only whitespace (nothing after the line's object).
pub(crate) fn only_ws_after(b: &[u8], end: usize) -> bool {
    ws(b, end) == b.len()
}

/// Walk a whole line that must be exactly one JSON object (surrounding whitespace allowed).
pub(crate) fn line_fields<'a>(b: &'a [u8], f: impl FnMut(&'a [u8], &'a [u8])) -> bool {
    match fields(b, 0, f) {
        Some(end) => only_ws_after(b, end),
        None => false,
    }
}

/// Call `f` for each element of the array `v` (a raw value). Returns `false` if `v` is not a
/// well-formed array.
#[cfg(test)]
pub(crate) fn elements<'a>(v: &'a [u8], mut f: impl FnMut(&'a [u8])) -> bool {
    array(v, 0, |i| {
        let (e, end) = value_at(v, i)?;
        f(e);
        Some(Val::End(end))
    })
    .is_some_and(|end| end == v.len())
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
        let mut n = 0;
        assert!(elements(br#"[1, {"a":[2]}, "x"]"#, |_| n += 1));
        assert_eq!(n, 3);
        assert!(!elements(b"[1,", |_| ()));
    }
}
