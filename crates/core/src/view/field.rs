//! Raw JSON values borrowed from a checked line ([`RawJson`]), or parts of a parsed
//! [`Value`]: what a view reads a field from ([`Field`]).

use std::borrow::Cow;
use std::fmt;

use serde_json::Value;

use watchdog_json::skim;

/// The raw JSON text of one value, borrowed from a line that was checked to be well-formed.
#[derive(Clone, Copy, PartialEq, Eq)]
pub struct RawJson<'a>(pub(super) &'a str);

impl<'a> RawJson<'a> {
    /// The JSON text, exactly as it appeared in the line.
    pub fn get(&self) -> &'a str {
        self.0
    }
}

impl fmt::Debug for RawJson<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.0)
    }
}

/// A JSON field borrowed either from raw line text or from an already parsed [`Value`].
#[derive(Clone, Copy)]
pub enum Field<'a> {
    /// Raw JSON text of the field, borrowed from the line.
    Raw(RawJson<'a>),
    /// A field of a caller's [`Value`].
    Value(&'a Value),
}

impl fmt::Debug for Field<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Field::Raw(r) => write!(f, "{}", r.get()),
            Field::Value(v) => write!(f, "{v}"),
        }
    }
}

impl<'a> Field<'a> {
    /// The field as a string, borrowed when it has no escapes. `None` for any other JSON type.
    pub fn as_str(&self) -> Option<Cow<'a, str>> {
        match *self {
            Field::Value(Value::String(s)) => Some(Cow::Borrowed(s.as_str())),
            Field::Value(_) => None,
            Field::Raw(r) => raw_str(r.get()),
        }
    }

    /// The field as a number (`f64`). `None` for any other JSON type.
    pub fn as_f64(&self) -> Option<f64> {
        match *self {
            Field::Value(v) => v.as_f64(),
            Field::Raw(r) => {
                let t = r.get();
                let first = t.as_bytes().first()?;
                if first.is_ascii_digit() || *first == b'-' {
                    t.parse().ok()
                } else {
                    None
                }
            }
        }
    }

    /// The field as a boolean. `None` for any other JSON type.
    pub fn as_bool(&self) -> Option<bool> {
        match *self {
            Field::Value(v) => v.as_bool(),
            Field::Raw(r) => match r.get() {
                "true" => Some(true),
                "false" => Some(false),
                _ => None,
            },
        }
    }

    /// Whether the field is JSON `null`.
    pub fn is_null(&self) -> bool {
        match *self {
            Field::Value(v) => v.is_null(),
            Field::Raw(r) => r.get() == "null",
        }
    }

    /// The field as an owned [`Value`] (allocates; for rare, small fields such as
    /// `rate_limit_info`).
    pub fn to_value(&self) -> Option<Value> {
        match *self {
            Field::Value(v) => Some(v.clone()),
            Field::Raw(r) => serde_json::from_str(r.get()).ok(),
        }
    }

    /// Call `f(key, value)` for every member when the field is an object (keys unescaped only
    /// when they contain escapes, which allocates).
    pub fn for_each_member(&self, mut f: impl FnMut(&str, Field<'a>)) {
        match *self {
            Field::Value(Value::Object(m)) => {
                for (k, v) in m {
                    f(k, Field::Value(v));
                }
            }
            Field::Value(_) => {}
            Field::Raw(r) => {
                skim::for_each_member(r.get(), |k, esc, v| {
                    let v = Field::Raw(RawJson(v));
                    if esc {
                        if let Some(k) = unescape_key(k) {
                            f(&k, v);
                        }
                    } else {
                        f(k, v);
                    }
                });
            }
        }
    }

    /// Call `f(element)` for every element when the field is an array.
    pub fn for_each_element(&self, mut f: impl FnMut(Field<'a>)) {
        match *self {
            Field::Value(Value::Array(a)) => a.iter().for_each(|v| f(Field::Value(v))),
            Field::Value(_) => {}
            Field::Raw(r) => {
                skim::for_each_element(r.get(), |v| f(Field::Raw(RawJson(v))));
            }
        }
    }

    /// Member `key` of this field when it is an object; for raw text, scans only as far as the
    /// first member with that key.
    pub fn member(&self, key: &str) -> Option<Field<'a>> {
        match *self {
            Field::Value(v) => v.get(key).map(Field::Value),
            Field::Raw(r) => skim::find_member(r.get(), key).map(|t| Field::Raw(RawJson(t))),
        }
    }

    /// Read this field as an object with the lenient wire shape `T`.
    pub(super) fn object<T: FromFields<'a>>(&self) -> Option<T> {
        match *self {
            Field::Raw(r) => T::from_raw(r.get()),
            Field::Value(v @ Value::Object(_)) => Some(T::from_value(v)),
            Field::Value(_) => None,
        }
    }
}

/// Unescape an object key given as the raw text between its quotes (allocates; rare).
pub(super) fn unescape_key(inner: &str) -> Option<Cow<'static, str>> {
    serde_json::from_str::<String>(&format!("\"{inner}\""))
        .ok()
        .map(Cow::Owned)
}

/// Read a raw JSON token as a string: borrowed if it has no escapes.
fn raw_str(t: &str) -> Option<Cow<'_, str>> {
    let inner = t.strip_prefix('"')?.strip_suffix('"')?;
    if inner.contains('\\') {
        serde_json::from_str::<String>(t).ok().map(Cow::Owned)
    } else {
        Some(Cow::Borrowed(inner))
    }
}

/// A shape that can be read leniently from raw JSON object text or from a [`Value`].
pub(super) trait FromFields<'a>: Sized {
    fn from_raw(raw: &'a str) -> Option<Self>;
    fn from_value(v: &'a Value) -> Self;
}
