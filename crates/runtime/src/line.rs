//! What an in-process session is fed: a line as bytes or a message the SDK already parsed.

use serde_json::Value;

/// A line or an already parsed message, as fed to a [`Session`](crate::Session).
#[derive(Debug, Clone, Copy)]
pub enum LineRef<'a> {
    /// One stream-json line, without its newline.
    Bytes(&'a [u8]),
    /// One parsed message.
    Value(&'a Value),
}

/// Items of a supervised stream that carry a line (or a message).
pub trait AsLine {
    /// The line, or `None` if this item is not one (e.g. an error item).
    fn as_line(&self) -> Option<LineRef<'_>>;
}

impl AsLine for str {
    fn as_line(&self) -> Option<LineRef<'_>> {
        Some(LineRef::Bytes(self.as_bytes()))
    }
}
impl AsLine for String {
    fn as_line(&self) -> Option<LineRef<'_>> {
        Some(LineRef::Bytes(self.as_bytes()))
    }
}
impl AsLine for [u8] {
    fn as_line(&self) -> Option<LineRef<'_>> {
        Some(LineRef::Bytes(self))
    }
}
impl AsLine for Vec<u8> {
    fn as_line(&self) -> Option<LineRef<'_>> {
        Some(LineRef::Bytes(self))
    }
}
impl AsLine for Value {
    fn as_line(&self) -> Option<LineRef<'_>> {
        Some(LineRef::Value(self))
    }
}
impl<T: AsLine + ?Sized> AsLine for &T {
    fn as_line(&self) -> Option<LineRef<'_>> {
        (**self).as_line()
    }
}
impl<T: AsLine + ?Sized> AsLine for Box<T> {
    fn as_line(&self) -> Option<LineRef<'_>> {
        (**self).as_line()
    }
}
/// `Ok` items are lines; `Err` items pass through without being observed.
impl<T: AsLine, E> AsLine for Result<T, E> {
    fn as_line(&self) -> Option<LineRef<'_>> {
        self.as_ref().ok()?.as_line()
    }
}
