//! Numbers in sentences: a count with its noun in the right number ("1 topic", "3
//! topics"), and a number kept with its unit ("4.7 s" with a non-breaking space) so that
//! no wrapping or cutting puts them on two lines or keeps one without the other. Here so
//! that the console, the scenarios and the commands say them alike.

use std::fmt::Display;

/// The non-breaking space: a space that wrapping never breaks at (ratatui's included).
pub const NBSP: char = '\u{a0}';

/// `n` and `noun`, plural unless `n` is one: `count(1, "topic")` is "1 topic",
/// `count(0, "topic")` "0 topics", `count(2, "entry")` "2 entries". The one plural rule:
/// a count in another language ([`Msg::count`](super::lang::Msg::count)) takes its id from
/// it.
pub fn count<N: Display>(n: N, noun: &str) -> String {
    let n = n.to_string();
    if n == "1" {
        format!("{n} {noun}")
    } else {
        format!("{n} {}", plural(noun))
    }
}

/// The plural of an English noun, by the regular rules (the nouns kdeck counts are
/// regular): "topic" -> "topics", "entry" -> "entries", "batch" -> "batches".
pub fn plural(noun: &str) -> String {
    let vowel_before = |s: &str| s.chars().rev().nth(1).is_some_and(|c| "aeiou".contains(c));
    if noun.ends_with('y') && !vowel_before(noun) {
        format!("{}ies", &noun[..noun.len() - 1])
    } else if ["s", "x", "z", "ch", "sh"].iter().any(|e| noun.ends_with(e)) {
        format!("{noun}es")
    } else {
        format!("{noun}s")
    }
}

/// A number and its unit as one unbreakable token: `unit("4.7", "s")` is "4.7\u{a0}s".
pub fn unit<N: Display>(n: N, unit: &str) -> String {
    format!("{n}{NBSP}{unit}")
}

/// Units that follow a number in kdeck's sentences.
const UNITS: &[&str] = &[
    "s",
    "ms",
    "min",
    "h",
    "B",
    "KiB",
    "MiB",
    "GiB",
    "KB",
    "MB",
    "GB",
    "%",
    "s.",
    "ms.",
    "s,",
    "ms,",
    "s)",
    "ms)",
    "s;",
    "ms;",
    "records/s",
    "MB/s",
];

/// `text` with each space between a number and a unit after it made non-breaking, so a
/// line is never broken (nor cut) between "4.7" and "s"; the same before CJK words, whose
/// number comes with a measure word or unit ("3 个", "4.7 秒").
pub fn keep_units(text: &str) -> String {
    let words: Vec<&str> = text.split(' ').collect();
    let mut out = String::with_capacity(text.len());
    for (i, word) in words.iter().enumerate() {
        if i > 0 {
            let number_before = words[i - 1]
                .trim_start_matches(['(', '['])
                .chars()
                .last()
                .is_some_and(|c| c.is_ascii_digit());
            let cjk = word
                .chars()
                .next()
                .is_some_and(|c| unicode_width::UnicodeWidthChar::width(c) == Some(2));
            out.push(if number_before && (UNITS.contains(word) || cjk) {
                NBSP
            } else {
                ' '
            });
        }
        out.push_str(word);
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_is_singular_and_every_other_count_plural() {
        assert_eq!(count(1, "topic"), "1 topic");
        assert_eq!(count(0, "topic"), "0 topics");
        assert_eq!(count(2usize, "group"), "2 groups");
        assert_eq!(count(1, "event"), "1 event");
        assert_eq!(count(3, "entry"), "3 entries");
        assert_eq!(count(2, "key"), "2 keys");
        assert_eq!(count(2, "batch"), "2 batches");
        assert_eq!(count(-1, "check"), "-1 checks");
    }

    #[test]
    fn a_number_keeps_its_unit() {
        assert_eq!(unit(4.7, "s"), "4.7\u{a0}s");
        assert_eq!(
            keep_units("broker 1 fenced after 4.7 s (3000 ms) at 5 brokers"),
            "broker 1 fenced after 4.7\u{a0}s (3000\u{a0}ms) at 5 brokers"
        );
        assert_eq!(
            keep_units("back after 36.5 s, 8 ISRs"),
            "back after 36.5\u{a0}s, 8 ISRs"
        );
        assert_eq!(keep_units("s is not a number"), "s is not a number");
        assert_eq!(
            keep_units("3.0 秒后被隔离 → 1 个领导者转移"),
            "3.0\u{a0}秒后被隔离 → 1\u{a0}个领导者转移"
        );
    }
}
