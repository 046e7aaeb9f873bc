//! One frame's worth of rate-limit data, read leniently from `rate_limit_info`.

use serde_json::{Map, Value};

use crate::wall::WallMs;

/// The largest utilization accepted (1000 %). A larger value is taken for a unit mistake
/// (a percentage, say) and ignored, as are negative, NaN and infinite values.
pub const MAX_UTILIZATION: f64 = 10.0;

/// Largest instant JavaScript's `Date` can hold (±8.64e15 ms); later reset times are ignored.
const MAX_DATE_MS: f64 = 8.64e15;

/// A `resetsAt` above this is already in milliseconds (1e11 s is the year 5138).
const MS_THRESHOLD: f64 = 1e11;

/// The `status` of a frame or a window.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Status {
    /// `allowed`.
    Allowed,
    /// `allowed_warning`: allowed, but close to the limit.
    AllowedWarning,
    /// `rejected`: requests are refused until the window resets.
    Rejected,
    /// Any other value, kept verbatim.
    Other(String),
}

impl Status {
    /// Read a status string.
    pub fn parse(s: &str) -> Status {
        match s {
            "allowed" => Status::Allowed,
            "allowed_warning" => Status::AllowedWarning,
            "rejected" => Status::Rejected,
            other => Status::Other(other.to_owned()),
        }
    }

    /// The wire name, e.g. `allowed_warning`.
    pub fn as_str(&self) -> &str {
        match self {
            Status::Allowed => "allowed",
            Status::AllowedWarning => "allowed_warning",
            Status::Rejected => "rejected",
            Status::Other(s) => s,
        }
    }

    /// Whether requests go through (`allowed` or `allowed_warning`).
    pub fn is_allowed(&self) -> bool {
        matches!(self, Status::Allowed | Status::AllowedWarning)
    }
}

/// The merged reading of the latest frame: what the reference package calls the reading, for
/// display (see its [`Display`](std::fmt::Display) form).
///
/// Every field comes from the latest frame, except: `utilization` is derived (top-level value,
/// else the frame's own window in `unifiedWindows`, else the fallback window, else the last
/// known utilization of the frame's window), and an absent `overageStatus` /
/// `overageDisabledReason` carries forward from the previous reading.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Reading {
    /// `status`, if the frame had a string one.
    pub status: Option<Status>,
    /// Derived utilization, a fraction (0.91 is 91 %).
    pub utilization: Option<f64>,
    /// `resetsAt`, normalised to epoch milliseconds.
    pub resets_at_ms: Option<WallMs>,
    /// `rateLimitType`, the window the frame is about, e.g. `five_hour`.
    pub rate_limit_type: Option<String>,
    /// `overageStatus` (carried forward when absent).
    pub overage_status: Option<String>,
    /// `overageDisabledReason` (carried forward when absent).
    pub overage_disabled_reason: Option<String>,
    /// `overageResetsAt`, normalised to epoch milliseconds.
    pub overage_resets_at_ms: Option<WallMs>,
    /// `isUsingOverage`.
    pub is_using_overage: Option<bool>,
    /// `errorCode`, e.g. `credits_required`.
    pub error_code: Option<String>,
    /// When the monitor received the frame.
    pub observed_at_ms: WallMs,
}

impl Reading {
    /// The reset time as ISO-8601 UTC with milliseconds, e.g. `2030-03-17T18:46:40.000Z`.
    pub fn resets_at_iso(&self) -> Option<String> {
        self.resets_at_ms.map(crate::wall::format_iso_ms)
    }

    /// Whether the reading is still current at `now`: it has no reset time, or the reset is
    /// later than `now` (a reading expires **at** its reset instant).
    pub fn is_active(&self, now: WallMs) -> bool {
        !matches!(self.resets_at_ms, Some(r) if r <= now)
    }
}

/// What is known about one rate-limit window.
#[derive(Debug, Clone, PartialEq)]
pub struct Window {
    /// The window name as the CLI spells it, e.g. `five_hour`, `seven_day`, `seven_day_opus`.
    pub name: String,
    /// Utilization, a fraction; kept from an earlier frame when a frame does not give one.
    pub utilization: Option<f64>,
    /// When the window resets, epoch milliseconds.
    pub resets_at_ms: Option<WallMs>,
    /// Its status.
    pub status: Option<Status>,
    /// When a frame last mentioned it.
    pub updated_at_ms: WallMs,
}

impl Window {
    /// Whether the window is still current at `now` (no reset time, or one later than `now`).
    pub fn is_active(&self, now: WallMs) -> bool {
        !matches!(self.resets_at_ms, Some(r) if r <= now)
    }

    /// Whether requests in this window are being rejected.
    pub fn is_rejected(&self) -> bool {
        self.status == Some(Status::Rejected)
    }

    /// The reset time as ISO-8601 UTC with milliseconds.
    pub fn resets_at_iso(&self) -> Option<String> {
        self.resets_at_ms.map(crate::wall::format_iso_ms)
    }

    /// A short label: `5h`, `7d`, `7d_opus`, …, or the name itself.
    pub fn short_name(&self) -> String {
        short_name(&self.name)
    }
}

/// `five_hour` → `5h`, `seven_day` → `7d`, `seven_day_opus` → `7d_opus`; others unchanged.
pub(crate) fn short_name(name: &str) -> String {
    if name == "five_hour" {
        "5h".into()
    } else if let Some(rest) = name.strip_prefix("seven_day") {
        format!("7d{rest}")
    } else {
        name.to_owned()
    }
}

/// How a frame sets an optional string field: absent (carry forward) or given (maybe cleared).
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Given<T> {
    Absent,
    Set(Option<T>),
}

/// One window as a frame reports it (from `unifiedWindows`, or the top-level fields for the
/// frame's own window).
#[derive(Debug, Clone, Default, PartialEq)]
pub(crate) struct WindowFrame {
    pub utilization: Option<f64>,
    pub resets_at_ms: Option<WallMs>,
    pub status: Option<Status>,
}

/// One `rate_limit_info`, read leniently: every bad field reads as absent.
#[derive(Debug, Clone)]
pub(crate) struct Frame {
    pub status: Option<Status>,
    pub utilization: Option<f64>,
    pub resets_at_ms: Option<WallMs>,
    pub rate_limit_type: Option<String>,
    pub overage_status: Given<String>,
    pub overage_disabled_reason: Given<String>,
    pub overage_resets_at_ms: Option<WallMs>,
    pub is_using_overage: Option<bool>,
    pub error_code: Option<String>,
    /// `unifiedWindows`, in name order.
    pub windows: Vec<(String, WindowFrame)>,
}

/// A finite number.
fn num(v: Option<&Value>) -> Option<f64> {
    v.and_then(Value::as_f64).filter(|n| n.is_finite())
}

/// A utilization in `[0, MAX_UTILIZATION]`.
pub(crate) fn utilization(v: Option<&Value>) -> Option<f64> {
    num(v).filter(|u| (0.0..=MAX_UTILIZATION).contains(u))
}

/// A reset time: epoch seconds (fractions kept), or milliseconds when above 1e11.
pub(crate) fn reset_ms(v: Option<&Value>) -> Option<WallMs> {
    let x = num(v).filter(|x| *x >= 0.0)?;
    let ms = if x > MS_THRESHOLD { x } else { x * 1000.0 };
    // Truncation toward zero, as JavaScript's Date does.
    (ms <= MAX_DATE_MS).then_some(ms.trunc() as WallMs)
}

fn string(v: Option<&Value>) -> Option<String> {
    v.and_then(Value::as_str).map(str::to_owned)
}

fn given(m: &Map<String, Value>, key: &str) -> Given<String> {
    match m.get(key) {
        None => Given::Absent,
        Some(v) => Given::Set(v.as_str().filter(|s| !s.is_empty()).map(str::to_owned)),
    }
}

impl Frame {
    /// Read a `rate_limit_info`; `None` when it is not a JSON object.
    pub(crate) fn read(info: &Value) -> Option<Frame> {
        let m = info.as_object()?;
        let mut windows = Vec::new();
        if let Some(Value::Object(w)) = m.get("unifiedWindows") {
            for (name, entry) in w {
                if let Value::Object(e) = entry {
                    windows.push((
                        name.clone(),
                        WindowFrame {
                            utilization: utilization(e.get("utilization")),
                            resets_at_ms: reset_ms(e.get("resetsAt")),
                            status: e.get("status").and_then(Value::as_str).map(Status::parse),
                        },
                    ));
                }
            }
            windows.sort_by(|a, b| a.0.cmp(&b.0));
        }
        Some(Frame {
            status: m.get("status").and_then(Value::as_str).map(Status::parse),
            utilization: utilization(m.get("utilization")),
            resets_at_ms: reset_ms(m.get("resetsAt")),
            rate_limit_type: string(m.get("rateLimitType")).filter(|s| !s.is_empty()),
            overage_status: given(m, "overageStatus"),
            overage_disabled_reason: given(m, "overageDisabledReason"),
            overage_resets_at_ms: reset_ms(m.get("overageResetsAt")),
            is_using_overage: m.get("isUsingOverage").and_then(Value::as_bool),
            error_code: string(m.get("errorCode")),
            windows,
        })
    }

    /// The `unifiedWindows` entry of `name`.
    pub(crate) fn window(&self, name: &str) -> Option<&WindowFrame> {
        self.windows.iter().find(|(n, _)| n == name).map(|(_, w)| w)
    }
}
