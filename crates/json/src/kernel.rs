//! The byte kernel under both walkers: find the next byte of a set (quote, backslash, control
//! byte) eight bytes at a time (SWAR), and jump over a string's body from quote to quote.

/// A quote (`"`).
pub(super) const QUOTE: u8 = 1;
/// A backslash.
pub(super) const BACKSLASH: u8 = 2;
/// A control byte (below 0x20), which a JSON string may not hold.
pub(super) const CONTROL: u8 = 4;

const LO: u64 = 0x0101_0101_0101_0101;
const HI: u64 = 0x8080_8080_8080_8080;

/// High bit of each byte of `x` in the set `SET`. Each test is the has-zero-byte trick: a flag
/// can be wrong only in a byte above a real match (borrow propagation), so the lowest flag of
/// the word is exact and gives the offset directly, without a byte-by-byte pass.
#[inline]
fn mask<const SET: u8>(x: u64) -> u64 {
    let zero = |v: u64| v.wrapping_sub(LO) & !v & HI;
    let mut m = 0;
    if SET & QUOTE != 0 {
        m |= zero(x ^ (LO * u64::from(b'"')));
    }
    if SET & BACKSLASH != 0 {
        m |= zero(x ^ (LO * u64::from(b'\\')));
    }
    if SET & CONTROL != 0 {
        m |= x.wrapping_sub(LO * 0x20) & !x & HI;
    }
    m
}

#[inline]
fn word(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap_or([0; 8]))
}

/// Offset of the first byte of `SET` in `rest`, eight bytes at a time.
#[inline]
pub(super) fn find<const SET: u8>(rest: &[u8]) -> Option<usize> {
    let mut chunks = rest.chunks_exact(8);
    let mut i = 0;
    for chunk in &mut chunks {
        let m = mask::<SET>(word(chunk, 0));
        if m != 0 {
            return Some(i + (m.trailing_zeros() / 8) as usize);
        }
        i += 8;
    }
    // The last 0–7 bytes, padded with a byte in no set.
    let tail = chunks.remainder();
    let mut last = [b'a'; 8];
    last[..tail.len()].copy_from_slice(tail);
    let m = mask::<SET>(u64::from_le_bytes(last));
    (m != 0).then(|| i + (m.trailing_zeros() / 8) as usize)
}

/// The next `"` at or after `j`: sixteen bytes at a time for the first 128 bytes (most keys
/// and small values end there, and two word tests beat a call), then `memchr`.
#[inline]
pub(super) fn next_quote(b: &[u8], j: usize) -> Option<usize> {
    let end = b.len().min(j.saturating_add(128));
    let mut k = j;
    while k + 16 <= end {
        let lo = mask::<QUOTE>(word(b, k));
        let hi = mask::<QUOTE>(word(b, k + 8));
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
    Some(k + memchr::memchr(b'"', b.get(k..)?)?)
}

/// `i` is at an opening quote; the index after the closing quote, or `None` when the string
/// does not end. Jumps from quote to quote (a quote after an odd run of backslashes is
/// escaped), so escape-heavy text such as code with `\n` on every line costs no more than
/// plain text. Escapes are not checked: for text validated before, or skimmed.
#[inline]
pub(super) fn string_end(b: &[u8], i: usize) -> Option<usize> {
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

/// The index of the first byte at or after `i` that is not JSON whitespace.
#[inline]
pub(super) fn skip_ws(b: &[u8], mut i: usize) -> usize {
    while i < b.len() && matches!(b[i], b' ' | b'\t' | b'\n' | b'\r') {
        i += 1;
    }
    i
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn find_sees_every_stop_byte_at_every_offset() {
        for stop in [b'"', b'\\', 0x00, 0x1f, b'\n'] {
            for at in 0..40 {
                let mut text = vec![b'a'; 40];
                text[at] = stop;
                // Bytes that must not stop it: space, DEL, UTF-8 continuation bytes.
                if at > 0 {
                    text[at - 1] = 0x80;
                }
                let all = find::<{ QUOTE | BACKSLASH | CONTROL }>(&text);
                assert_eq!(all, Some(at), "stop {stop:#x} at {at}");
            }
        }
        assert_eq!(find::<{ QUOTE | BACKSLASH | CONTROL }>(&[b' '; 17]), None);
        let text = "héllo wörld ünïcode".as_bytes();
        assert_eq!(find::<{ QUOTE | BACKSLASH | CONTROL }>(text), None);
        assert_eq!(find::<QUOTE>(b"ab\\\ncd\"x"), Some(6));
    }

    #[test]
    fn next_quote_finds_a_quote_near_and_far() {
        for at in [0, 7, 8, 15, 16, 127, 128, 129, 1000] {
            let mut text = vec![b'\\'; 1200];
            text[at] = b'"';
            assert_eq!(next_quote(&text, 0), Some(at), "{at}");
            assert_eq!(next_quote(&text, at + 1), None);
        }
    }

    #[test]
    fn string_end_counts_the_backslashes_before_a_quote() {
        assert_eq!(string_end(br#""a\"b""#, 0), Some(6));
        assert_eq!(string_end(br#""a\\"b""#, 0), Some(5));
        assert_eq!(string_end(br#""\\\"" "#, 0), Some(6));
        assert_eq!(string_end(br#""open\""#, 0), None);
        assert_eq!(string_end(br#""""#, 0), Some(2));
    }
}
