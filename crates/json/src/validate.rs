//! The validating walker: checks that a line is well-formed JSON (RFC 8259 grammar; the input
//! is already valid UTF-8) and hands out an object's members as borrowed text spans in the same
//! pass. Nesting is tracked in a fixed 128-level bit stack, so no input can make it allocate
//! or recurse; deeper input is rejected, as serde_json's default limit does.

use super::kernel::{find, BACKSLASH, CONTROL, QUOTE};

/// Why a text is not well-formed JSON (kept small; the view renders it).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ScanError {
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

/// A walk's result.
pub type R<T> = Result<T, ScanError>;

const MAX_DEPTH: u32 = 128;

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
            let rest = &self.b[self.i..];
            self.i += find::<{ QUOTE | BACKSLASH | CONTROL }>(rest).ok_or(ScanError::Eof)?;
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

impl<'a> Cursor<'a> {
    /// Validate the object at `{`, calling `member(self, key, key_has_escapes)` with the cursor
    /// at each member's value; `member` must move the cursor past the value, validating it.
    fn object(
        &mut self,
        text: &'a str,
        mut member: impl FnMut(&mut Self, &'a str, bool) -> R<()>,
    ) -> R<()> {
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
            member(self, key, esc)?;
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

    /// Validate one value and return its raw text.
    fn raw_value(&mut self, text: &'a str) -> R<&'a str> {
        let v0 = self.i;
        self.value()?;
        Ok(&text[v0..self.i])
    }
}

/// `walk` over the whole of `text`: surrounding whitespace allowed, nothing after it.
fn whole<'a>(text: &'a str, walk: impl FnOnce(&mut Cursor<'a>) -> R<()>) -> R<()> {
    let mut c = Cursor {
        b: text.as_bytes(),
        i: 0,
    };
    c.ws();
    walk(&mut c)?;
    c.ws();
    if c.i != c.b.len() {
        return Err(ScanError::Trailing(c.i));
    }
    Ok(())
}

/// Check that `text` is exactly one well-formed JSON value (surrounding whitespace allowed).
#[cfg(test)]
pub fn validate(text: &str) -> R<()> {
    whole(text, |c| c.value())
}

/// Walk the object `text` strictly in one pass: validate all of it (surrounding whitespace
/// allowed, nothing after it) and call `f(key, key_has_escapes, value)` for every member. `key`
/// is the raw text between the quotes; `value` the member value's raw text.
pub fn members<'a>(text: &'a str, mut f: impl FnMut(&'a str, bool, &'a str)) -> R<()> {
    whole(text, |c| {
        c.object(text, |c, key, esc| {
            f(key, esc, c.raw_value(text)?);
            Ok(())
        })
    })
}

/// A member seen by [`members_nested`].
pub enum Member<'a> {
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
pub fn members_nested<'a>(text: &'a str, inner: &str, mut f: impl FnMut(Member<'a>)) -> R<()> {
    whole(text, |c| {
        c.object(text, |c, key, esc| {
            let v0 = c.i;
            if !esc && key == inner && c.peek()? == b'{' {
                f(Member::InnerStart);
                c.object(text, |c, k, e| {
                    f(Member::Inner(k, e, c.raw_value(text)?));
                    Ok(())
                })?;
            } else {
                c.value()?;
            }
            f(Member::Outer(key, esc, &text[v0..c.i]));
            Ok(())
        })
    })
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
            let theirs = serde_json::from_str::<serde_json::Value>(c).is_ok();
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
    fn depth_is_bounded_without_recursion() {
        let deep = "[".repeat(100_000);
        assert_eq!(validate(&deep), Err(ScanError::TooDeep));
        let ok = format!("{}{}", "[".repeat(128), "]".repeat(128));
        assert!(validate(&ok).is_ok());
    }
}
