//! A validating, allocation-free JSON scanner for the line view.
//!
//! It checks that a line is well-formed JSON (RFC 8259 grammar; the input is already valid UTF-8)
//! and walks the members of an object or the elements of an array as borrowed text spans,
//! without building anything. Nesting is tracked in a fixed 128-level bit stack, so no input can
//! make it allocate or recurse; deeper input is rejected, as serde_json's default limit does.
//!
//! A line is validated once, by [`members`]. Later lookups into its parts ([`find_member`],
//! [`for_each_member`], [`for_each_element`]) only ever see that validated text, so they skip
//! values without checking them again: a string runs to its closing quote, a container to its
//! matching bracket.

/// Why a text is not well-formed JSON (kept small; the view renders it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum ScanError {
    /// Input ended inside a value.
    Eof,
    /// An unexpected byte at this offset.
    Unexpected(usize),
    /// Nesting deeper than 128 levels.
    TooDeep,
    /// Bytes after the value.
    Trailing(usize),
}

impl std::fmt::Display for ScanError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ScanError::Eof => f.write_str("unexpected end of line"),
            ScanError::Unexpected(i) => write!(f, "unexpected character at byte {i}"),
            ScanError::TooDeep => f.write_str("nesting deeper than 128 levels"),
            ScanError::Trailing(i) => write!(f, "trailing characters at byte {i}"),
        }
    }
}

type R<T> = Result<T, ScanError>;

const MAX_DEPTH: u32 = 128;

/// Offset of the first quote, backslash or control byte, eight bytes at a time (SWAR).
///
/// Each word is tested with the has-zero-byte trick; its flags can be wrong only in bytes
/// above a real match (borrow propagation), so the lowest flag is exact and gives the offset
/// directly, without a byte-by-byte pass.
#[inline]
fn stop_offset(rest: &[u8]) -> Option<usize> {
    scan::<true>(rest)
}

/// Offset of the first quote or backslash: [`stop_offset`] for text validated before, where a
/// string cannot hold a control byte.
#[inline]
fn quote_offset(rest: &[u8]) -> Option<usize> {
    scan::<false>(rest)
}

#[inline]
fn scan<const CTRL: bool>(rest: &[u8]) -> Option<usize> {
    const LO: u64 = 0x0101_0101_0101_0101;
    const HI: u64 = 0x8080_8080_8080_8080;
    #[inline]
    fn stops<const CTRL: bool>(x: u64) -> u64 {
        let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
        let m = zero(x ^ (LO * b'"' as u64)) | zero(x ^ (LO * b'\\' as u64));
        if CTRL {
            m | (x.wrapping_sub(LO * 0x20) & !x & HI)
        } else {
            m
        }
    }
    let mut chunks = rest.chunks_exact(8);
    let mut i = 0;
    for chunk in &mut chunks {
        let x = u64::from_le_bytes(chunk.try_into().unwrap_or([0; 8]));
        let m = stops::<CTRL>(x);
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    // The last 0–7 bytes, padded with a byte that never stops.
    let tail = chunks.remainder();
    let mut word = [b'a'; 8];
    word[..tail.len()].copy_from_slice(tail);
    let m = stops::<CTRL>(u64::from_le_bytes(word));
    (m != 0).then(|| i + (m.trailing_zeros() / 8) as usize)
}

struct Cursor<'a> {
    b: &'a [u8],
    i: usize,
}

impl<'a> Cursor<'a> {
    #[inline]
    fn ws(&mut self) {
        while let Some(c) = self.b.get(self.i) {
            if matches!(c, b' ' | b'\t' | b'\n' | b'\r') {
                self.i += 1;
            } else {
                break;
            }
        }
    }

    #[inline]
    fn peek(&self) -> R<u8> {
        self.b.get(self.i).copied().ok_or(ScanError::Eof)
    }

    #[inline]
    fn expect(&mut self, c: u8) -> R<()> {
        if self.peek()? == c {
            self.i += 1;
            Ok(())
        } else {
            Err(ScanError::Unexpected(self.i))
        }
    }

    /// Skip a string starting at `"`; returns whether it contained an escape.
    fn string(&mut self) -> R<bool> {
        self.expect(b'"')?;
        let mut escaped = false;
        loop {
            // Fast path: run to the next quote, backslash or control byte.
            self.i += stop_offset(&self.b[self.i..]).ok_or(ScanError::Eof)?;
            match self.b[self.i] {
                b'"' => {
                    self.i += 1;
                    return Ok(escaped);
                }
                b'\\' => {
                    escaped = true;
                    self.i += 1;
                    match self.peek()? {
                        b'"' | b'\\' | b'/' | b'b' | b'f' | b'n' | b'r' | b't' => self.i += 1,
                        b'u' => {
                            self.i += 1;
                            for _ in 0..4 {
                                if !self.peek()?.is_ascii_hexdigit() {
                                    return Err(ScanError::Unexpected(self.i));
                                }
                                self.i += 1;
                            }
                        }
                        _ => return Err(ScanError::Unexpected(self.i)),
                    }
                }
                _ => return Err(ScanError::Unexpected(self.i)),
            }
        }
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while self.b.get(self.i).is_some_and(u8::is_ascii_digit) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> R<()> {
        if self.peek()? == b'-' {
            self.i += 1;
        }
        match self.peek()? {
            b'0' => self.i += 1,
            b'1'..=b'9' => {
                self.digits();
            }
            _ => return Err(ScanError::Unexpected(self.i)),
        }
        if self.b.get(self.i) == Some(&b'.') {
            self.i += 1;
            if self.digits() == 0 {
                return Err(ScanError::Unexpected(self.i));
            }
        }
        if matches!(self.b.get(self.i), Some(b'e' | b'E')) {
            self.i += 1;
            if matches!(self.b.get(self.i), Some(b'+' | b'-')) {
                self.i += 1;
            }
            if self.digits() == 0 {
                return Err(ScanError::Unexpected(self.i));
            }
        }
        Ok(())
    }

    fn literal(&mut self, word: &[u8]) -> R<()> {
        if self.b[self.i..].starts_with(word) {
            self.i += word.len();
            Ok(())
        } else if self.b.len() - self.i < word.len() && word.starts_with(&self.b[self.i..]) {
            Err(ScanError::Eof)
        } else {
            Err(ScanError::Unexpected(self.i))
        }
    }

    /// Skip one complete value (after leading whitespace), validating it.
    fn value(&mut self) -> R<()> {
        self.ws();
        match self.peek()? {
            b'{' | b'[' => self.container(),
            b'"' => self.string().map(drop),
            b't' => self.literal(b"true"),
            b'f' => self.literal(b"false"),
            b'n' => self.literal(b"null"),
            b'-' | b'0'..=b'9' => self.number(),
            _ => Err(ScanError::Unexpected(self.i)),
        }
    }

    /// The next member of an object in text validated before, after its `{` or a member:
    /// `(key between the quotes, key has escapes, raw value)`; `None` at its `}`.
    fn next_member<'t>(&mut self, text: &'t str) -> Option<(&'t str, bool, &'t str)> {
        self.ws();
        if self.b.get(self.i) == Some(&b',') {
            self.i += 1;
            self.ws();
        }
        if self.b.get(self.i) != Some(&b'"') {
            return None;
        }
        let k0 = self.i;
        let esc = self.skip_string();
        let key = text.get(k0 + 1..self.i.saturating_sub(1))?;
        self.ws();
        if self.b.get(self.i) != Some(&b':') {
            return None;
        }
        self.i += 1;
        self.ws();
        let v0 = self.i;
        self.skip();
        Some((key, esc, text.get(v0..self.i)?))
    }

    /// Skip the string at `"` in text validated before; returns whether it had an escape.
    /// Never fails and never panics: on text that is not valid it stops at the end.
    fn skip_string(&mut self) -> bool {
        self.i += 1;
        let mut escaped = false;
        loop {
            let rest = self.b.get(self.i..).unwrap_or_default();
            let Some(n) = quote_offset(rest) else {
                self.i = self.b.len();
                return escaped;
            };
            self.i += n;
            if rest[n] == b'"' {
                self.i += 1;
                return escaped;
            }
            // A backslash and the byte it escapes (`\uXXXX` continues with plain hex digits).
            escaped = true;
            self.i += 2;
        }
    }

    /// Skip one value (after leading whitespace) in text validated before, without checking
    /// it again: strings to their closing quote, containers by counting brackets outside
    /// strings, scalars to the next delimiter.
    fn skip(&mut self) {
        self.ws();
        match self.b.get(self.i) {
            Some(b'"') => {
                self.skip_string();
            }
            Some(b'{' | b'[') => {
                let mut depth = 0usize;
                while let Some(&c) = self.b.get(self.i) {
                    match c {
                        b'"' => {
                            self.skip_string();
                            continue;
                        }
                        b'{' | b'[' => depth += 1,
                        b'}' | b']' => {
                            depth = depth.saturating_sub(1);
                            if depth == 0 {
                                self.i += 1;
                                return;
                            }
                        }
                        _ => {}
                    }
                    self.i += 1;
                }
            }
            Some(_) => {
                while let Some(c) = self.b.get(self.i) {
                    if matches!(c, b',' | b'}' | b']' | b' ' | b'\t' | b'\n' | b'\r') {
                        break;
                    }
                    self.i += 1;
                }
            }
            None => {}
        }
    }

    /// Skip an object or array iteratively; the stack of open containers is a bit set.
    fn container(&mut self) -> R<()> {
        // bit d of `stack` = 1 when the container at depth d is an object.
        let mut stack: u128 = 0;
        let mut depth: u32 = 0;
        let open = |c: &mut Self, stack: &mut u128, depth: &mut u32| -> R<()> {
            if *depth >= MAX_DEPTH {
                return Err(ScanError::TooDeep);
            }
            let is_obj = c.peek()? == b'{';
            c.i += 1;
            if is_obj {
                *stack |= 1 << *depth;
            } else {
                *stack &= !(1 << *depth);
            }
            *depth += 1;
            Ok(())
        };
        open(self, &mut stack, &mut depth)?;
        // After an open bracket: either a close or the first element.
        let mut first = true;
        loop {
            self.ws();
            let is_obj = stack & (1 << (depth - 1)) != 0;
            let c = self.peek()?;
            if c == if is_obj { b'}' } else { b']' } {
                self.i += 1;
                depth -= 1;
                if depth == 0 {
                    return Ok(());
                }
                first = false;
                continue;
            }
            if !first {
                self.expect(b',')?;
                self.ws();
            }
            if is_obj {
                self.string()?;
                self.ws();
                self.expect(b':')?;
            }
            self.ws();
            match self.peek()? {
                b'{' | b'[' => {
                    open(self, &mut stack, &mut depth)?;
                    first = true;
                }
                _ => {
                    self.value()?;
                    first = false;
                }
            }
        }
    }
}

/// Check that `text` is exactly one well-formed JSON value (surrounding whitespace allowed).
#[cfg(test)]
pub(crate) fn validate(text: &str) -> R<()> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.value()?;
    c.ws();
    if c.i != c.b.len() {
        return Err(ScanError::Trailing(c.i));
    }
    Ok(())
}

/// Walk the object `text` strictly in one pass: validate all of it (surrounding whitespace
/// allowed, nothing after it) and call `f(key, key_has_escapes, value)` for every member. `key`
/// is the raw text between the quotes; `value` the member value's raw text.
pub(crate) fn members<'a>(text: &'a str, mut f: impl FnMut(&'a str, bool, &'a str)) -> R<()> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.ws();
    c.expect(b'{')?;
    c.ws();
    if c.peek()? == b'}' {
        c.i += 1;
    } else {
        loop {
            c.ws();
            let k0 = c.i;
            let esc = c.string()?;
            let key = &text[k0 + 1..c.i - 1];
            c.ws();
            c.expect(b':')?;
            c.ws();
            let v0 = c.i;
            c.value()?;
            f(key, esc, &text[v0..c.i]);
            c.ws();
            match c.peek()? {
                b',' => c.i += 1,
                b'}' => {
                    c.i += 1;
                    break;
                }
                _ => return Err(ScanError::Unexpected(c.i)),
            }
        }
    }
    c.ws();
    if c.i != c.b.len() {
        return Err(ScanError::Trailing(c.i));
    }
    Ok(())
}

/// A member seen by [`members_nested`].
pub(crate) enum Member<'a> {
    /// A member of the outer object: `(key, key_has_escapes, raw value)`.
    Outer(&'a str, bool, &'a str),
    /// The nested object begins (it may come more than once: a duplicate key).
    InnerStart,
    /// A member of the nested object: `(key, key_has_escapes, raw value)`.
    Inner(&'a str, bool, &'a str),
}

/// [`members`], walking in the same single pass the members of one nested object too: when
/// the value of the outer key `inner` (written without escapes) is an object, its members come
/// as [`Member::Inner`] after a [`Member::InnerStart`], each validated once, before the outer
/// member itself. A capture line's `line` is read this way, with no second pass over it.
pub(crate) fn members_nested<'a>(
    text: &'a str,
    inner: &str,
    mut f: impl FnMut(Member<'a>),
) -> R<()> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.ws();
    c.expect(b'{')?;
    c.ws();
    if c.peek()? == b'}' {
        c.i += 1;
    } else {
        loop {
            c.ws();
            let k0 = c.i;
            let esc = c.string()?;
            let key = &text[k0 + 1..c.i - 1];
            c.ws();
            c.expect(b':')?;
            c.ws();
            let v0 = c.i;
            if !esc && key == inner && c.peek()? == b'{' {
                f(Member::InnerStart);
                c.nested_members(text, &mut f)?;
            } else {
                c.value()?;
            }
            f(Member::Outer(key, esc, &text[v0..c.i]));
            c.ws();
            match c.peek()? {
                b',' => c.i += 1,
                b'}' => {
                    c.i += 1;
                    break;
                }
                _ => return Err(ScanError::Unexpected(c.i)),
            }
        }
    }
    c.ws();
    if c.i != c.b.len() {
        return Err(ScanError::Trailing(c.i));
    }
    Ok(())
}

impl<'a> Cursor<'a> {
    /// Validate the object at `{`, calling `f(Member::Inner(..))` for each of its members.
    fn nested_members(&mut self, text: &'a str, f: &mut impl FnMut(Member<'a>)) -> R<()> {
        self.expect(b'{')?;
        self.ws();
        if self.peek()? == b'}' {
            self.i += 1;
            return Ok(());
        }
        loop {
            self.ws();
            let k0 = self.i;
            let esc = self.string()?;
            let key = &text[k0 + 1..self.i - 1];
            self.ws();
            self.expect(b':')?;
            self.ws();
            let v0 = self.i;
            self.value()?;
            f(Member::Inner(key, esc, &text[v0..self.i]));
            self.ws();
            match self.peek()? {
                b',' => self.i += 1,
                b'}' => {
                    self.i += 1;
                    return Ok(());
                }
                _ => return Err(ScanError::Unexpected(self.i)),
            }
        }
    }
}

/// Call `f(key, key_has_escapes, value)` for every member of the object `text`, which must
/// already be validated. Returns `false` when `text` is not an object.
pub(crate) fn for_each_member<'a>(
    text: &'a str,
    mut f: impl FnMut(&'a str, bool, &'a str),
) -> bool {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.ws();
    if c.expect(b'{').is_err() {
        return false;
    }
    while let Some((key, esc, value)) = c.next_member(text) {
        f(key, esc, value);
    }
    true
}

/// The raw text of member `key` of the object `text` (already validated), scanning only as far
/// as the first member with that key. Keys with escapes are compared after unescaping.
pub(crate) fn find_member<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.ws();
    c.expect(b'{').ok()?;
    while let Some((k, esc, value)) = c.next_member(text) {
        let hit = if esc {
            // The key with its quotes, as a JSON string to unescape (rare; allocates).
            let at = k.as_ptr() as usize - text.as_ptr() as usize;
            text.get(at - 1..at + k.len() + 1)
                .and_then(|quoted| serde_json::from_str::<String>(quoted).ok())
                .is_some_and(|k| k == key)
        } else {
            k == key
        };
        if hit {
            return Some(value);
        }
    }
    None
}

/// Call `f(element)` for every element of the array `text`, which must already be validated.
/// Returns `false` when `text` is not an array.
pub(crate) fn for_each_element<'a>(text: &'a str, mut f: impl FnMut(&'a str)) -> bool {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.ws();
    if c.expect(b'[').is_err() {
        return false;
    }
    loop {
        c.ws();
        match c.b.get(c.i) {
            Some(b']') | None => return true,
            Some(b',') => {
                c.i += 1;
                c.ws();
            }
            Some(_) => {}
        }
        let v0 = c.i;
        c.skip();
        match text.get(v0..c.i) {
            Some(v) if !v.is_empty() => f(v),
            _ => return true,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn accepts_what_serde_json_accepts_and_rejects_what_it_rejects() {
        let cases = [
            r#"{}"#,
            r#"[]"#,
            r#"{"a":[1,2,{"b":null}],"c":"x\"y\u00e9","d":-0.5e+3,"e":true,"f":false}"#,
            r#"  {"a" : 1 }  "#,
            r#"[[[[[]]]]]"#,
            r#""just a string""#,
            r#"12"#,
            r#"{"a":1,}"#,
            r#"{"a":1"#,
            r#"{"a":01}"#,
            r#"{"a":1.}"#,
            r#"{"a":.5}"#,
            r#"{"a":tru}"#,
            r#"{"a":"\x"}"#,
            r#"{"a":"\u12"}"#,
            "{\"a\":\"tab\there\"}",
            r#"{"a" 1}"#,
            r#"{1:2}"#,
            r#"[1 2]"#,
            r#"[1,]"#,
            r#"{"a":[}"#,
            r#"{"a":1} x"#,
            r#"{"a":1}}"#,
            r#"nul"#,
            r#"-"#,
            r#""#,
            r#"{"a":1e}"#,
            r#"{"a":-}"#,
        ];
        for c in cases {
            let ours = validate(c).is_ok();
            let theirs = serde_json::from_str::<serde::de::IgnoredAny>(c).is_ok();
            assert_eq!(ours, theirs, "{c:?}");
        }
    }

    #[test]
    fn members_validates_in_one_pass() {
        for c in [
            r#"{"a":1 "b":2}"#,
            r#"{"a":1,}"#,
            r#"{"a":1} x"#,
            r#"{"a":[}"#,
            "{",
            r#"{,"a":1}"#,
        ] {
            assert!(members(c, |_, _, _| {}).is_err(), "{c:?}");
        }
        assert!(members(r#" {"a":[1,{"b":2}], "c":null} "#, |_, _, _| {}).is_ok());
        assert!(members("{}", |_, _, _| {}).is_ok());
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
    fn the_wide_string_scan_finds_every_stop_byte_at_every_offset() {
        for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for at in 0..40 {
                let mut text = vec![b'a'; 40];
                text[at] = stop;
                // Bytes that must not stop it: space, DEL, UTF-8 continuation bytes.
                if at > 0 {
                    text[at - 1] = 0x80;
                }
                assert_eq!(stop_offset(&text), Some(at), "stop {stop:#x} at {at}");
            }
        }
        assert_eq!(stop_offset(&[b' '; 17]), None);
        assert_eq!(stop_offset("héllo wörld ünïcode".as_bytes()), None);
    }

    #[test]
    fn depth_is_bounded_without_recursion() {
        let deep = "[".repeat(100_000);
        assert_eq!(validate(&deep), Err(ScanError::TooDeep));
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(validate(&ok).is_ok());
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
