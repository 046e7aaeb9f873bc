//! The plot: a hand-written SVG histogram of quiet spells on a log time axis, stacked by kind,
//! with the idle and no-progress thresholds as labelled vertical lines (recommended: solid;
//! current settings: dashed). One `<rect class="bar">` per non-empty (bin, kind) pair.

use std::fmt::Write as _;

use super::report::AuditReport;
use super::spells::SpellKind;
use watchdog_core::config::HumanDuration;

/// Histogram bins: 4 per decade from 10 ms to 10⁸ ms (about 28 h); shorter spells go in the
/// first bin, longer ones in the last.
pub const BINS_PER_DECADE: u32 = 4;
/// Lower edge of the first bin, as a power of ten (ms).
pub const MIN_EXP: u32 = 1;
/// Upper edge of the last bin, as a power of ten (ms).
pub const MAX_EXP: u32 = 8;

/// Number of bins.
pub fn bin_count() -> usize {
    ((MAX_EXP - MIN_EXP) * BINS_PER_DECADE) as usize
}

/// Edge `k` of the bins, in ms.
pub fn edge(k: usize) -> u64 {
    10f64
        .powf(f64::from(MIN_EXP) + k as f64 / f64::from(BINS_PER_DECADE))
        .round() as u64
}

/// The bin of a spell length.
pub fn bin_of(ms: u64) -> usize {
    if ms == 0 {
        return 0;
    }
    let x = ((ms as f64).log10() - f64::from(MIN_EXP)) * f64::from(BINS_PER_DECADE);
    (x.floor().max(0.0) as usize).min(bin_count() - 1)
}

fn escape(s: &str) -> String {
    let mut o = String::with_capacity(s.len());
    for c in s.chars() {
        match c {
            '&' => o.push_str("&amp;"),
            '<' => o.push_str("&lt;"),
            '>' => o.push_str("&gt;"),
            '"' => o.push_str("&quot;"),
            '\'' => o.push_str("&apos;"),
            c if (c as u32) < 0x20 && c != '\n' && c != '\t' => {}
            c => o.push(c),
        }
    }
    o
}

/// Axis ticks: round durations rather than powers of ten.
const TICKS_MS: [u64; 8] = [
    10, 100, 1_000, 10_000, 60_000, 600_000, 3_600_000, 86_400_000,
];

const COLORS: [&str; 4] = ["#4e79a7", "#f28e2b", "#9c9c9c", "#59a14f"];

fn range(k: usize, lo: u64, hi: u64, n: usize) -> String {
    let d = |ms| HumanDuration(std::time::Duration::from_millis(ms)).to_string();
    if k == 0 {
        format!("under {}", d(hi))
    } else if k + 1 == n {
        format!("of {} or more", d(lo))
    } else {
        format!("from {} to {}", d(lo), d(hi))
    }
}

/// Render the plot as a standalone SVG document.
pub fn render_svg(r: &AuditReport) -> String {
    let (w, h) = (900.0f64, 420.0f64);
    let (left, right, top, bottom) = (60.0, 20.0, 40.0, 70.0);
    let pw = w - left - right;
    let ph = h - top - bottom;
    let n = bin_count();
    let lo = f64::from(MIN_EXP);
    let hi = f64::from(MAX_EXP);
    let x_of = |ms: f64| left + ((ms.max(1.0).log10() - lo) / (hi - lo)).clamp(0.0, 1.0) * pw;
    let max_total = r
        .histogram
        .iter()
        .map(|b| b.counts.iter().sum::<u64>())
        .max()
        .unwrap_or(0)
        .max(1);
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<?xml version="1.0" encoding="UTF-8"?>
<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" viewBox="0 0 {w} {h}" font-family="sans-serif" font-size="12">"#
    );
    let _ = writeln!(
        s,
        r#"<rect x="0" y="0" width="{w}" height="{h}" fill="white"/>"#
    );
    let title = format!(
        "Quiet spells in {} sessions ({} spells)",
        r.sessions_scanned,
        r.quiet_spells.iter().map(|(_, d)| d.count).sum::<u64>()
    );
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="22" font-size="15" font-weight="bold">{}</text>"#,
        escape(&title)
    );
    // Axes.
    let y0 = top + ph;
    let _ = writeln!(
        s,
        r#"<line x1="{left}" y1="{y0}" x2="{}" y2="{y0}" stroke="black"/><line x1="{left}" y1="{top}" x2="{left}" y2="{y0}" stroke="black"/>"#,
        left + pw
    );
    for ms in TICKS_MS {
        let x = x_of(ms as f64);
        let label = HumanDuration(std::time::Duration::from_millis(ms)).to_string();
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{:.1}" stroke="black"/><text x="{x:.1}" y="{:.1}" text-anchor="middle">{}</text>"#,
            y0 + 5.0,
            y0 + 18.0,
            escape(&label)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" text-anchor="middle">spell length (log scale)</text>"#,
        left + pw / 2.0,
        y0 + 36.0
    );
    // Counts on a log scale (1 + count), so the long, rare spells that decide thresholds stay
    // visible next to thousands of sub-second ones.
    let y_scale = |count: f64| (1.0 + count).log10() / (1.0 + max_total as f64).log10() * ph;
    let mut tick = 1u64;
    while tick <= max_total {
        let y = y0 - y_scale(tick as f64);
        let _ = writeln!(
            s,
            r##"<line x1="{left}" y1="{y:.1}" x2="{:.1}" y2="{y:.1}" stroke="#ddd"/><text x="{left}" y="{:.1}" text-anchor="end" dx="-6">{tick}</text>"##,
            left + pw,
            y + 4.0
        );
        tick *= 10;
    }
    let _ = writeln!(
        s,
        r#"<text x="{left}" y="{y0}" text-anchor="end" dx="-6">0</text><text transform="translate(14,{:.1}) rotate(-90)" text-anchor="middle">spells (log scale)</text>"#,
        top + ph / 2.0
    );
    // Bars, stacked by kind.
    for (k, bin) in r.histogram.iter().enumerate().take(n) {
        let x1 = x_of(edge(k) as f64);
        let x2 = x_of(edge(k + 1) as f64);
        let mut y = y0;
        let total: u64 = bin.counts.iter().sum();
        let full = y_scale(total as f64);
        for (i, kind) in SpellKind::ALL.iter().enumerate() {
            let c = bin.counts[i];
            if c == 0 {
                continue;
            }
            // The stack's height is the log of the bin's total; kinds share it in proportion.
            let bh = full * c as f64 / total as f64;
            y -= bh;
            let _ = writeln!(
                s,
                r#"<rect class="bar" x="{:.1}" y="{y:.1}" width="{:.1}" height="{bh:.1}" fill="{}"><title>{}</title></rect>"#,
                x1 + 0.5,
                (x2 - x1 - 1.0).max(0.5),
                COLORS[i],
                escape(&format!(
                    "{}: {c} spell(s) {}",
                    kind.as_str(),
                    range(k, bin.lo_ms, bin.hi_ms, n)
                ))
            );
        }
    }
    // Thresholds.
    let rec = &r.recommended;
    let set = &r.settings;
    let lines = [
        (rec.idle_ms, "recommended --idle", "#d62728", ""),
        (
            rec.no_progress_ms,
            "recommended --no-progress",
            "#9467bd",
            "",
        ),
        (
            set.idle_ms,
            "current --idle",
            "#d62728",
            r#" stroke-dasharray="5,4""#,
        ),
        (
            set.no_progress_ms,
            "current --no-progress",
            "#9467bd",
            r#" stroke-dasharray="5,4""#,
        ),
    ];
    for (i, (ms, label, color, dash)) in lines.iter().enumerate() {
        let x = x_of(*ms as f64);
        let ty = top + 12.0 + 14.0 * i as f64;
        // Labels of lines near the right edge go on their left.
        let (tx, anchor) = if x > left + pw * 0.75 {
            (x - 4.0, "end")
        } else {
            (x + 4.0, "start")
        };
        let text = format!(
            "{label} {}",
            HumanDuration(std::time::Duration::from_millis(*ms))
        );
        let _ = writeln!(
            s,
            r#"<line class="threshold" x1="{x:.1}" y1="{top}" x2="{x:.1}" y2="{y0}" stroke="{color}" stroke-width="2"{dash}/><text x="{tx:.1}" y="{ty:.1}" fill="{color}" text-anchor="{anchor}">{}</text>"#,
            escape(&text)
        );
    }
    // Legend.
    for (i, kind) in SpellKind::ALL.iter().enumerate() {
        let x = left + 130.0 * i as f64;
        let y = h - 14.0;
        let _ = writeln!(
            s,
            r#"<rect x="{x}" y="{:.1}" width="10" height="10" fill="{}"/><text x="{:.1}" y="{y}">{}</text>"#,
            y - 9.0,
            COLORS[i],
            x + 14.0,
            escape(kind.as_str())
        );
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bins_cover_the_range() {
        assert_eq!(bin_count(), 28);
        assert_eq!(bin_of(0), 0);
        assert_eq!(bin_of(5), 0);
        assert_eq!(bin_of(10), 0);
        assert_eq!(bin_of(18), 1);
        assert_eq!(bin_of(100), 4);
        assert_eq!(bin_of(75_087), 15);
        assert_eq!(bin_of(u64::MAX), 27);
        assert_eq!(edge(0), 10);
        assert_eq!(edge(4), 100);
        assert_eq!(escape("a<b & \"c\""), "a&lt;b &amp; &quot;c&quot;");
    }
}
