//! Text helpers: display width (unicode-width, so CJK text and emoji keep columns aligned),
//! numbers and sparklines.

use ratatui::text::Span;
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

/// [`fit`] for a sentence: a number and its unit stay together, so a cut never leaves
/// "4.7…" of "4.7 s" (the whole "4.7 s" goes instead).
pub fn fit_sentence(text: &str, width: usize) -> String {
    use crate::view::words::{NBSP, keep_units};
    let glued = keep_units(text);
    let cut = fit(&glued, width);
    let Some(body) = cut.strip_suffix('…') else {
        return cut.replace(NBSP, " ");
    };
    // The word the cut falls in, whole, as the sentence has it.
    let start = body.rfind(' ').map_or(0, |i| i + 1);
    let end = glued
        .get(body.len()..)
        .map_or(body.len(), |rest| body.len() + rest.find(' ').unwrap_or(rest.len()));
    let split = glued.get(start..end).is_some_and(|word| word.contains(NBSP));
    let kept = if split && start > 0 {
        format!("{}…", body[..start].trim_end())
    } else {
        cut
    };
    kept.replace(NBSP, " ")
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

/// One item of a legend or a row of key hints: its spans, a shorter form, and how much it
/// matters (the higher, the longer it stays on a narrow screen).
pub struct Item<'a> {
    pub long: Vec<Span<'a>>,
    pub short: Vec<Span<'a>>,
    pub rank: u8,
}

impl<'a> Item<'a> {
    /// An item with no shorter form.
    pub fn new(spans: Vec<Span<'a>>, rank: u8) -> Item<'a> {
        Item {
            short: spans.clone(),
            long: spans,
            rank,
        }
    }

    /// The same item with `short` as its shorter form.
    pub fn or_short(self, short: Vec<Span<'a>>) -> Item<'a> {
        Item { short, ..self }
    }
}

/// `items` in `width` columns, in their order: in their long forms when all fit, else in
/// their short forms, the least important dropped whole (of equal rank, the later first)
/// until the rest fit. A legend or a footer shortens so; it is never cut mid-word.
pub fn by_priority<'a>(items: Vec<Item<'a>>, width: usize) -> Vec<Span<'a>> {
    let width_of = |spans: &[&Vec<Span<'a>>]| -> usize { spans.iter().flat_map(|s| s.iter()).map(Span::width).sum() };
    let long: Vec<&Vec<Span<'a>>> = items.iter().map(|i| &i.long).collect();
    if width_of(&long) <= width {
        return long.into_iter().flatten().cloned().collect();
    }
    let mut keep = vec![true; items.len()];
    loop {
        let chosen: Vec<&Vec<Span<'a>>> = items
            .iter()
            .zip(&keep)
            .filter(|(_, k)| **k)
            .map(|(i, _)| &i.short)
            .collect();
        if width_of(&chosen) <= width {
            return chosen.into_iter().flatten().cloned().collect();
        }
        let least = (0..items.len())
            .filter(|&i| keep[i])
            .min_by_key(|&i| (items[i].rank, std::cmp::Reverse(i)));
        match least {
            Some(i) => keep[i] = false,
            None => return Vec::new(),
        }
    }
}

/// Bytes in at most three significant digits and 8 columns: `512 B`, `12.3 KiB`,
/// `119 KiB`, `1.0 MiB` (a value that would print as 1000 or more moves to the next unit, so
/// no column ever cuts a leading digit).
pub fn bytes(n: f64) -> String {
    const UNITS: [&str; 5] = ["B", "KiB", "MiB", "GiB", "TiB"];
    let mut v = if n.is_finite() { n.max(0.0) } else { 0.0 };
    let mut unit = 0;
    while v.round() >= 1000.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    if unit == 0 || v.round() >= 100.0 {
        format!("{v:.0} {}", UNITS[unit])
    } else {
        format!("{v:.1} {}", UNITS[unit])
    }
}

/// `n` in the largest of `units` (largest first) it reaches, whole or with one decimal;
/// in `base` when it reaches none.
fn in_largest_unit(n: i64, units: &[(i64, &str)], base: &str) -> String {
    for &(size, unit) in units {
        if n >= size {
            return if n % size == 0 {
                format!("{}{unit}", n / size)
            } else {
                format!("{:.1}{unit}", n as f64 / size as f64)
            };
        }
    }
    format!("{}{base}", n.max(0))
}

/// A duration in ms as its largest whole unit: `500ms`, `30s`, `15m`, `12h`, `7d`
/// (one decimal when it is not whole: `1.5h`).
pub fn duration_ms(ms: i64) -> String {
    in_largest_unit(
        ms,
        &[(86_400_000, "d"), (3_600_000, "h"), (60_000, "m"), (1_000, "s")],
        "ms",
    )
}

/// Bytes as a short limit: `512B`, `8M`, `1G`, `1.5G` (binary units).
fn bytes_limit(n: i64) -> String {
    in_largest_unit(n, &[(1 << 30, "G"), (1 << 20, "M"), (1 << 10, "K")], "B")
}

/// What a topic keeps, in a Topics column: `7d`, `1h/8M` (time and size, whichever comes
/// first), `compact`, `cmp+7d` (compact,delete), `forever` (delete with no limit).
pub fn retention(r: &crate::view::Retention) -> String {
    let mut limits = Vec::new();
    if r.delete && r.ms >= 0 {
        limits.push(duration_ms(r.ms));
    }
    if r.delete && r.bytes >= 0 {
        limits.push(bytes_limit(r.bytes));
    }
    match (r.compact, limits.is_empty()) {
        (true, true) => "compact".into(),
        (true, false) => format!("cmp+{}", limits.join("/")),
        (false, true) => "forever".into(),
        (false, false) => limits.join("/"),
    }
}

/// A count per second as `950/s`, `12.3k/s`.
pub fn rate(n: f64) -> String {
    let n = if n.is_finite() { n.max(0.0) } else { 0.0 };
    if n >= 999_950_000.0 {
        format!("{:.1}G/s", n / 1e9)
    } else if n >= 999_950.0 {
        format!("{:.1}M/s", n / 1_000_000.0)
    } else if n >= 9_999.5 {
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

/// Characters that must not begin a line: closing punctuation stays with what it closes.
const NO_LINE_START: &[char] = &[
    '，', '。', '、', '；', '：', '！', '？', '）', '」', '』', '》', '】', ',', '.', ';', ':', '!', '?', ')',
];

/// The units a line breaks between: a word (letters, digits, a non-breaking space keeps a
/// number with its unit, a wide one too), one wide character (CJK text breaks between any
/// two), each with the closing punctuation that follows it; and runs of spaces.
fn break_units(line: &str) -> Vec<(String, bool)> {
    let mut units: Vec<(String, bool)> = Vec::new();
    for c in line.chars() {
        let wide = c.width().unwrap_or(0) > 1;
        let space = c == ' ';
        match units.last_mut() {
            Some((u, true)) if space => u.push(c),
            Some((u, false)) if !space && NO_LINE_START.contains(&c) => u.push(c),
            // A non-breaking space glues what follows, a wide unit too ("3.0\u{a0}秒").
            Some((u, false)) if !space && u.ends_with(crate::view::words::NBSP) => u.push(c),
            Some((u, false)) if !space && !wide && u.chars().last().is_some_and(|l| l.width().unwrap_or(0) <= 1) => {
                u.push(c)
            }
            _ => units.push((c.to_string(), space)),
        }
    }
    units
}

/// `line` wrapped to `width` display columns (unicode-width: a CJK character takes two):
/// breaks at spaces and between wide characters, never before closing punctuation, never
/// between a number and its unit ("4.7 s"), nor inside a word unless the word alone is
/// wider than the line. Continuation lines keep the line's indentation. Control characters
/// become `·`.
pub fn wrap(line: &str, width: usize) -> Vec<String> {
    wrap_hanging(line, width, 0)
}

/// [`wrap`] with continuation lines indented `hang` columns more than the first, so that a
/// wrapped sentence reads as one among others (the explanations).
pub fn wrap_hanging(line: &str, width: usize, hang: usize) -> Vec<String> {
    use crate::view::words::{NBSP, keep_units};
    let width = width.max(1);
    let line: String = keep_units(line).chars().map(clean).collect();
    let indent = line.chars().take_while(|c| *c == ' ').count().min(width / 2);
    let first = " ".repeat(indent);
    let mut used = indent;
    let indent = (indent + hang).min(width / 2);
    let pad = " ".repeat(indent);
    let mut out = Vec::new();
    let mut current = first;
    let mut gap = String::new();
    let mut fresh = true;
    for (unit, space) in break_units(line.trim_start_matches(' ')) {
        if space {
            if !fresh {
                gap = unit;
            }
            continue;
        }
        let w = cleaned_width(&unit);
        let gap_w = gap.chars().count();
        if !fresh && used + gap_w + w > width {
            out.push(std::mem::replace(&mut current, pad.clone()));
            used = indent;
            gap.clear();
        }
        current.push_str(&gap);
        used += gap.chars().count();
        gap.clear();
        if used + w <= width {
            current.push_str(&unit);
            used += w;
        } else {
            // A word wider than the line: cut it where the line ends.
            for c in unit.chars() {
                let cw = c.width().unwrap_or(0);
                if used + cw > width && used > indent {
                    out.push(std::mem::replace(&mut current, pad.clone()));
                    used = indent;
                }
                current.push(c);
                used += cw;
            }
        }
        fresh = false;
    }
    out.push(current);
    // Kept together while wrapping; shown as the plain space it was.
    out.into_iter().map(|l| l.replace(NBSP, " ")).collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use unicode_width::UnicodeWidthStr;

    #[test]
    fn wrap_breaks_at_spaces_and_keeps_words_whole() {
        assert_eq!(wrap("the leader moves on", 10), vec!["the leader", "moves on"]);
        assert_eq!(wrap("short", 10), vec!["short"]);
        // Indentation stays on every line.
        assert_eq!(wrap("  a b c d e", 5), vec!["  a b", "  c d", "  e"]);
        // A word wider than the line is cut where the line ends.
        assert_eq!(wrap("abcdefghij", 4), vec!["abcd", "efgh", "ij"]);
        // A non-breaking space keeps a number with its unit.
        assert_eq!(wrap("after 4.7 s", 9), vec!["after", "4.7 s"]);
        assert_eq!(wrap("after 4.7\u{a0}s", 8), vec!["after", "4.7 s"]);
        assert_eq!(wrap("隔离于 3.0\u{a0}秒后", 8), vec!["隔离于", "3.0 秒后"]);
    }

    #[test]
    fn wrap_fills_lines_of_cjk_text_by_display_width() {
        let text = "生产者以 acks=all 每秒写入 20 条消息，领导者要等所有同步副本都拿到消息。";
        let lines = wrap(text, 20);
        for l in &lines {
            assert!(l.width() <= 20, "{l:?} is {} wide", l.width());
        }
        // No half-empty lines: each line but the last is within 2 columns of full.
        for l in &lines[..lines.len() - 1] {
            assert!(l.width() >= 17, "{l:?} is only {} wide in {lines:?}", l.width());
        }
        // Closing punctuation never starts a line.
        assert!(lines.iter().all(|l| !l.starts_with(['，', '。'])), "{lines:?}");
        assert_eq!(lines.concat().replace(' ', ""), text.replace(' ', ""));
    }

    #[test]
    fn a_sentence_is_never_cut_between_a_number_and_its_unit() {
        assert_eq!(
            fit_sentence("broker 1 fenced after 4.7 s", 27),
            "broker 1 fenced after 4.7 s"
        );
        assert_eq!(
            fit_sentence("broker 1 fenced after 4.7 s", 26),
            "broker 1 fenced after…"
        );
        assert_eq!(
            fit_sentence("broker 1 fenced after 4.7 s", 25),
            "broker 1 fenced after…"
        );
        assert_eq!(fit_sentence("broker 1 fenced after 4.7 s", 12), "broker 1 fe…");
    }

    /// The number a formatted value stands for, from its digits and unit, and half its last
    /// digit (how far off a correct rounding may be).
    fn value_of(text: &str, units: &[(&str, f64)]) -> (f64, f64) {
        let (digits, unit) = text
            .find(|c: char| !(c.is_ascii_digit() || c == '.'))
            .map_or((text, ""), |i| text.split_at(i));
        let number: f64 = digits
            .parse()
            .unwrap_or_else(|_| panic!("{text:?} starts with a number"));
        let scale = units
            .iter()
            .find(|(u, _)| unit.trim() == *u)
            .unwrap_or_else(|| panic!("{text:?}: unknown unit {unit:?}"))
            .1;
        let last_digit = if digits.contains('.') { 0.1 } else { 1.0 };
        (number * scale, last_digit * scale / 2.0 + 1e-9 * number * scale)
    }

    proptest::proptest! {
        #[test]
        fn byte_figures_keep_every_digit_and_fit_eight_columns(exponent in 0.0f64..50.0, per_sec in proptest::bool::ANY) {
            let n = 2f64.powf(exponent).floor();
            let text = if per_sec { format!("{}/s", bytes(n)) } else { bytes(n) };
            let width = if per_sec { 10 } else { 8 };
            proptest::prop_assert!(text.width() <= width, "{n} -> {text:?}");
            let units = [("B", 1.0), ("KiB", 1024.0), ("MiB", 1024f64.powi(2)), ("GiB", 1024f64.powi(3)), ("TiB", 1024f64.powi(4)),
                ("B/s", 1.0), ("KiB/s", 1024.0), ("MiB/s", 1024f64.powi(2)), ("GiB/s", 1024f64.powi(3)), ("TiB/s", 1024f64.powi(4))];
            let (shown, tolerance) = value_of(&text, &units);
            proptest::prop_assert!((shown - n).abs() <= tolerance, "{n} -> {text:?} = {shown}");
            proptest::prop_assert!(shown >= n * 0.9, "no leading digit lost: {n} -> {text:?}");
        }

        /// Up to 2^39 (550 billion) a second; nothing counts faster.
        #[test]
        fn counts_per_second_keep_every_digit_and_fit_the_column(exponent in 0.0f64..39.0) {
            let n = 2f64.powf(exponent);
            let text = rate(n);
            proptest::prop_assert!(text.width() <= 8, "{n} -> {text:?}");
            let (shown, tolerance) = value_of(&text, &[("/s", 1.0), ("k/s", 1e3), ("M/s", 1e6), ("G/s", 1e9)]);
            proptest::prop_assert!((shown - n).abs() <= tolerance, "{n} -> {text:?} = {shown}");
        }
    }

    #[test]
    fn figures_of_a_hundred_and_more_are_whole() {
        assert_eq!(bytes(101.9 * 1024.0), "102 KiB");
        assert_eq!(bytes(1019.2 * 1024.0), "1.0 MiB");
        assert_eq!(bytes(999.0), "999 B");
        assert_eq!(bytes(1000.0), "1.0 KiB");
        assert_eq!(bytes(12.34 * 1024.0), "12.3 KiB");
        assert_eq!(rate(999_999.0), "1.0M/s");
        assert_eq!(rate(9_999.4), "9999/s");
        assert_eq!(rate(123_456.0), "123.5k/s");
    }

    #[test]
    fn retention_names_what_the_topic_keeps() {
        use crate::view::Retention;
        let r = |compact, delete, ms, bytes| {
            retention(&Retention {
                compact,
                delete,
                ms,
                bytes,
            })
        };
        assert_eq!(r(false, true, 604_800_000, -1), "7d");
        assert_eq!(r(false, true, 3_600_000, 8 << 20), "1h/8M");
        assert_eq!(r(false, true, 5_400_000, -1), "1.5h");
        assert_eq!(r(false, true, -1, -1), "forever");
        assert_eq!(
            r(true, false, 604_800_000, -1),
            "compact",
            "time applies only to delete"
        );
        assert_eq!(r(true, true, 86_400_000, 1 << 30), "cmp+1d/1G");
        assert_eq!(duration_ms(250), "250ms");
        assert_eq!(duration_ms(90_000), "1.5m");
    }

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
