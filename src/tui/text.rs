//! Text helpers: display width (unicode-width, so CJK text and emoji keep columns aligned),
//! numbers and sparklines.

use unicode_width::UnicodeWidthChar;

/// `text` cut to `width` display columns, with `…` when cut. Control characters become `·`
/// so a record value cannot move the cursor.
pub fn fit(text: &str, width: usize) -> String {
    if cleaned_width(text) <= width {
        return text.chars().map(clean).collect();
    }
    let room = width.saturating_sub(1);
    let mut out = String::new();
    let mut used = 0;
    for c in text.chars().map(clean) {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        out.push(c);
    }
    if width > 0 {
        out.push('…');
    }
    out
}

/// A control character as `·`, so it takes one column and moves no cursor.
fn clean(c: char) -> char {
    if c.is_control() { '·' } else { c }
}

/// Display columns of `text` once cleaned.
fn cleaned_width(text: &str) -> usize {
    text.chars().map(|c| clean(c).width().unwrap_or(0)).sum()
}

/// `text` cut to its last `width` display columns, with `…` in front when cut: for ids
/// whose end tells them apart (group member ids share the group's prefix).
pub fn fit_end(text: &str, width: usize) -> String {
    if cleaned_width(text) <= width {
        return text.chars().map(clean).collect();
    }
    if width == 0 {
        return String::new();
    }
    let room = width - 1;
    let mut kept = Vec::new();
    let mut used = 0;
    for c in text.chars().rev().map(clean) {
        let w = c.width().unwrap_or(0);
        if used + w > room {
            break;
        }
        used += w;
        kept.push(c);
    }
    std::iter::once('…').chain(kept.into_iter().rev()).collect()
}

/// Bytes as `12.3 KiB`.
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = n.max(0.0);
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{v:.0} B")
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// A count per second as `950/s`, `12.3k/s`.
pub fn rate(n: f64) -> String {
    if n >= 1_000_000.0 {
        format!("{:.1}M/s", n / 1_000_000.0)
    } else if n >= 10_000.0 {
        format!("{:.1}k/s", n / 1000.0)
    } else {
        format!("{n:.0}/s")
    }
}

/// The last `width` samples as block characters scaled to their maximum.
pub fn sparkline(samples: &[u64], width: usize) -> String {
    const BARS: [char; 8] = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];
    let tail = &samples[samples.len().saturating_sub(width)..];
    let max = tail.iter().copied().max().unwrap_or(0);
    tail.iter()
        .map(|&v| {
            if max == 0 {
                BARS[0]
            } else {
                BARS[((v as u128 * 7) / max as u128) as usize]
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn fit_counts_display_columns_not_bytes() {
        assert_eq!(fit("abc", 5), "abc");
        assert_eq!(fit("首页商品", 5), "首页…");
        assert_eq!(fit("首页商品", 5).width(), 5);
        assert_eq!(fit("a\nb", 5), "a·b");
        assert_eq!(fit("abcdef", 4), "abc…");
    }

    #[test]
    fn fit_end_keeps_the_end_that_tells_ids_apart() {
        assert_eq!(fit_end("abc", 5), "abc");
        assert_eq!(fit_end("1000000000001", 6), "…00001");
        assert_eq!(fit_end("商品首页", 5), "…首页");
        assert_eq!(fit_end("abc", 0), "");
    }

    #[test]
    fn sparkline_scales_to_the_maximum() {
        assert_eq!(sparkline(&[0, 5, 10], 3), "▁▄█");
        assert_eq!(sparkline(&[0, 0], 5), "▁▁");
    }
}
