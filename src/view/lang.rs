//! The words of the console and of trainer mode in other languages: one message catalogue
//! per language in `assets/lang/` (compiled in), gettext style. A message's id is its
//! English text, so English needs no file and an untranslated message shows in English;
//! a template names its values (`"{partition} has a new leader"`), and a translation uses
//! the same names in its own order.
//!
//! What the view says without choosing a language (a timeline event, an incident's steps)
//! is a [`Msg`]: its template and its values. Its English text is [`Msg::english`], the same
//! bytes a recording or a golden trace keeps; a console in another language shows
//! [`Lang::say`].
//!
//! [`Lang::missing`] lists the ids a translation was asked for and lacks: the tests render
//! every screen of trainer mode in Chinese and require it empty, so the catalogue stays
//! complete as the console grows.

use std::borrow::Cow;
use std::collections::{BTreeMap, BTreeSet};
use std::fmt::Display;
use std::sync::{LazyLock, Mutex};

/// The languages kdeck speaks besides English: (code, catalogue text).
const CATALOGUES: &[(&str, &str)] = &[("zh", include_str!("../../assets/lang/zh.toml"))];

/// One language's messages.
#[derive(Debug)]
pub struct Lang {
    code: &'static str,
    messages: BTreeMap<String, String>,
    missing: Mutex<BTreeSet<String>>,
}

static ENGLISH: LazyLock<Lang> = LazyLock::new(|| Lang {
    code: "en",
    messages: BTreeMap::new(),
    missing: Mutex::new(BTreeSet::new()),
});

static OTHERS: LazyLock<Vec<Lang>> = LazyLock::new(|| {
    CATALOGUES
        .iter()
        .map(|(code, text)| Lang {
            code,
            // A broken shipped catalogue is a bug the tests catch (`catalogue_errors`);
            // the console then shows English rather than nothing.
            messages: parse(text).unwrap_or_default(),
            missing: Mutex::new(BTreeSet::new()),
        })
        .collect()
});

impl Lang {
    /// English: every message as written in the code.
    pub fn english() -> &'static Lang {
        &ENGLISH
    }

    /// The language `code` (`"zh"`), English for `None`, "en" or a language kdeck lacks.
    pub fn get(code: Option<&str>) -> &'static Lang {
        code.and_then(|c| OTHERS.iter().find(|l| l.code == c))
            .unwrap_or(&ENGLISH)
    }

    /// The language codes with a catalogue, English first.
    pub fn codes() -> Vec<&'static str> {
        std::iter::once("en")
            .chain(CATALOGUES.iter().map(|(c, _)| *c))
            .collect()
    }

    pub fn code(&self) -> &'static str {
        self.code
    }

    pub fn is_english(&self) -> bool {
        self.code == "en"
    }

    /// `english` in this language (itself when untranslated, which [`Lang::missing`]
    /// remembers).
    pub fn tr<'a>(&'a self, english: &'a str) -> &'a str {
        if self.is_english() {
            return english;
        }
        match self.messages.get(english) {
            Some(t) => t,
            None => {
                if let Ok(mut m) = self.missing.lock() {
                    m.insert(english.to_string());
                }
                english
            }
        }
    }

    /// The template `english` in this language with its `{name}`s filled from `args`.
    pub fn fmt(&self, english: &str, args: &[(&str, &dyn Display)]) -> String {
        fill(self.tr(english), |name| {
            args.iter().find(|(n, _)| *n == name).map(|(_, v)| v.to_string())
        })
    }

    /// `msg` in this language: its template translated, its values filled in (a value that
    /// is a message of its own translated too).
    pub fn say(&self, msg: &Msg) -> String {
        fill(self.tr(&msg.id), |name| {
            msg.args.iter().find(|(n, _)| *n == name).map(|(_, arg)| match arg {
                Arg::Value(v) => v.clone(),
                Arg::Msg(m) => self.say(m),
                Arg::Sentence(english) => self.sentence(english),
            })
        })
    }

    /// A sentence made in English elsewhere (a command and its outcome, which sources
    /// answer as text) in this language: the catalogue's message it is, else the message
    /// whose template it fits, with the values read back from the sentence (of several
    /// that fit, the one with the most fixed words). Untranslated, and remembered by
    /// [`Lang::missing`], when none fits.
    pub fn sentence(&self, english: &str) -> String {
        if self.is_english() {
            return english.to_string();
        }
        if let Some(t) = self.messages.get(english) {
            return t.clone();
        }
        let best = self
            .messages
            .iter()
            .filter(|(id, _)| id.contains('{') && fixed_letters(id) >= SENTENCE_LETTERS)
            .filter_map(|(id, t)| Some((fixed_len(id), read_back(id, english)?, t)))
            .max_by_key(|(fixed, _, _)| *fixed);
        match best {
            Some((_, values, translation)) => fill(translation, |name| {
                values.iter().find(|(n, _)| n == name).map(|(_, v)| v.to_string())
            }),
            None => {
                if let Ok(mut m) = self.missing.lock() {
                    m.insert(english.to_string());
                }
                english.to_string()
            }
        }
    }

    /// A count with its noun, singular or plural ("1 topic", "3 topics"), in this language
    /// (see [`Msg::count`]).
    pub fn count<N: Display>(&self, n: N, noun: &str) -> String {
        self.say(&Msg::count(n, noun))
    }

    /// The messages asked for that this language lacks, since the start.
    pub fn missing(&self) -> Vec<String> {
        self.missing
            .lock()
            .map(|m| m.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The messages of this language's catalogue (English: none).
    pub fn messages(&self) -> &BTreeMap<String, String> {
        &self.messages
    }
}

/// A catalogue: TOML whose tables group messages (`[header]`, `[checks]`...); each key is
/// an English message, each value its translation.
fn parse(text: &str) -> Result<BTreeMap<String, String>, String> {
    let table: toml::Table = text.parse().map_err(|e: toml::de::Error| e.to_string())?;
    let mut out = BTreeMap::new();
    for (section, v) in table {
        let toml::Value::Table(entries) = v else {
            return Err(format!("{section}: a catalogue holds only [tables] of messages"));
        };
        for (english, t) in entries {
            let toml::Value::String(t) = t else {
                return Err(format!("[{section}] \"{english}\": a translation is a string"));
            };
            if out.contains_key(&english) {
                // One id, one translation: a second would silently win.
                return Err(format!("\"{english}\" is in the catalogue twice"));
            }
            out.insert(english, t);
        }
    }
    Ok(out)
}

/// A message of the catalogue with its values, in no language yet: what the view says of
/// a happening so that each console can say it in its own words.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Msg {
    /// The English template, which is the catalogue's id: `"broker {broker} down: {how}"`.
    pub id: Cow<'static, str>,
    /// The value of each `{name}` of the template.
    pub args: Vec<(&'static str, Arg)>,
}

/// The value of a message's `{name}`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Arg {
    /// Shown as it is in every language: a number, a name, an id, a Kafka error code.
    Value(String),
    /// Words of their own, translated too (a reason, a broker's state).
    Msg(Msg),
    /// A sentence made in English elsewhere (a command, a source's answer), said by
    /// [`Lang::sentence`].
    Sentence(String),
}

impl Msg {
    /// The message `id` (its English template), its values still to add.
    pub fn new(id: &'static str) -> Msg {
        Msg {
            id: Cow::Borrowed(id),
            args: Vec::new(),
        }
    }

    /// English words that are a message of their own, with no values: a reason the engine
    /// gives ("missed heartbeats for the session timeout"), a broker's state ("killed").
    pub fn words(text: impl Into<String>) -> Msg {
        Msg {
            id: Cow::Owned(text.into()),
            args: Vec::new(),
        }
    }

    /// `n` and `noun` in the right number, by [`words::count`]'s rule: in English "1
    /// member", "3 members"; the ids are that text with `{n}` for the number ("{n} member",
    /// "{n} members").
    pub fn count<N: Display>(n: N, noun: &str) -> Msg {
        let n = n.to_string();
        let english = super::words::count(&n, noun);
        let rest = english.get(n.len()..).unwrap_or_default();
        Msg {
            id: Cow::Owned(format!("{{n}}{rest}")),
            args: vec![("n", Arg::Value(n))],
        }
    }

    /// The message with `{name}` shown as `value` in every language.
    pub fn with(mut self, name: &'static str, value: impl Display) -> Msg {
        self.args.push((name, Arg::Value(value.to_string())));
        self
    }

    /// The message with `{name}` filled by the message `words`, translated too.
    pub fn with_msg(mut self, name: &'static str, words: Msg) -> Msg {
        self.args.push((name, Arg::Msg(words)));
        self
    }

    /// The message with `{name}` filled by a sentence made in English elsewhere (a
    /// command, a source's answer), read back into the catalogue by [`Lang::sentence`].
    pub fn with_sentence(mut self, name: &'static str, english: impl Into<String>) -> Msg {
        self.args.push((name, Arg::Sentence(english.into())));
        self
    }

    /// The message in English: the text the view keeps (recordings and traces compare it).
    pub fn english(&self) -> String {
        Lang::english().say(self)
    }
}

/// `template` with each `{name}` that `value` knows replaced by its value, in one pass (a
/// value is never searched for placeholders itself); other braces are kept as they are.
fn fill(template: &str, value: impl Fn(&str) -> Option<String>) -> String {
    let mut out = String::with_capacity(template.len());
    let mut rest = template;
    while let Some(start) = rest.find('{') {
        out.push_str(&rest[..start]);
        let after = &rest[start + 1..];
        let name = after.find('}').map(|end| &after[..end]).filter(|n| is_name(n));
        match name.and_then(|n| Some((n.len(), value(n)?))) {
            Some((len, v)) => {
                out.push_str(&v);
                rest = &after[len + 1..];
            }
            None => {
                out.push('{');
                rest = after;
            }
        }
    }
    out.push_str(rest);
    out
}

/// A template's pieces: the fixed text before each `{name}`, and the name (`None` after
/// the last fixed text).
fn pieces(template: &str) -> Vec<(&str, Option<&str>)> {
    let mut out = Vec::new();
    let mut rest = template;
    let mut fixed_from = 0;
    let mut at = 0;
    while let Some(start) = rest[at..].find('{').map(|s| s + at) {
        let after = &rest[start + 1..];
        match after.find('}').map(|end| &after[..end]).filter(|n| is_name(n)) {
            Some(name) => {
                out.push((&rest[fixed_from..start], Some(name)));
                rest = &after[name.len() + 1..];
                fixed_from = 0;
                at = 0;
            }
            None => at = start + 1,
        }
    }
    out.push((&rest[fixed_from..], None));
    out
}

/// The fixed letters a template needs before a sentence is read back into it: fewer, and
/// a template such as `{group} {state}` would fit any sentence at all.
const SENTENCE_LETTERS: usize = 6;

fn fixed_letters(template: &str) -> usize {
    pieces(template)
        .iter()
        .map(|(fixed, _)| fixed.chars().filter(|c| c.is_alphabetic()).count())
        .sum()
}

/// How much of a template is fixed text: of two that fit a sentence, the longer is the
/// closer.
fn fixed_len(template: &str) -> usize {
    pieces(template).iter().map(|(fixed, _)| fixed.len()).sum()
}

/// The values of `template`'s names in `text` when `text` is that template filled in
/// (each value not empty; a name used twice has one value), else `None`.
fn read_back<'t>(template: &str, text: &'t str) -> Option<Vec<(String, &'t str)>> {
    let pieces = pieces(template);
    let mut values: Vec<(String, &'t str)> = Vec::new();
    let (first, _) = pieces.first()?;
    let mut rest = text.strip_prefix(first)?;
    for window in pieces.windows(2) {
        let (_, Some(name)) = window[0] else {
            return None;
        };
        let (next, after) = window[1];
        let value = if after.is_none() {
            // The last fixed text ends the sentence.
            let value = rest.strip_suffix(next)?;
            rest = "";
            value
        } else if next.is_empty() {
            // Two names side by side: no fixed text tells where one ends.
            return None;
        } else {
            let end = rest.find(next)?;
            let value = &rest[..end];
            rest = &rest[end + next.len()..];
            value
        };
        if value.is_empty() {
            return None;
        }
        match values.iter().find(|(n, _)| n == name) {
            Some((_, v)) if *v != value => return None,
            Some(_) => {}
            None => values.push((name.to_string(), value)),
        }
    }
    rest.is_empty().then_some(values)
}

/// Whether `text` can be a placeholder's name: letters, digits and `_`.
fn is_name(text: &str) -> bool {
    !text.is_empty() && text.chars().all(|c| c.is_ascii_alphanumeric() || c == '_')
}

/// Names between braces in a template: what a translation must keep.
pub fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if is_name(&after[..end]) => {
                out.insert(after[..end].to_string());
                rest = &after[end + 1..];
            }
            _ => rest = after,
        }
    }
    out
}

/// What is wrong with the shipped catalogues: one that does not parse, or a translation
/// whose placeholders differ from its English message's.
pub fn catalogue_errors() -> Vec<String> {
    let mut out = Vec::new();
    for (code, text) in CATALOGUES {
        match parse(text) {
            Err(e) => out.push(format!("assets/lang/{code}.toml: {e}")),
            Ok(messages) => {
                for (english, t) in &messages {
                    if placeholders(english) != placeholders(t) {
                        out.push(format!(
                            "assets/lang/{code}.toml: \"{english}\" -> \"{t}\": the placeholders differ"
                        ));
                    }
                }
            }
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shipped_catalogues_parse_and_keep_their_placeholders() {
        assert_eq!(catalogue_errors(), Vec::<String>::new());
        assert!(Lang::get(Some("zh")).messages().len() > 50);
    }

    #[test]
    fn english_is_the_id_and_a_missing_translation_falls_back_to_it() {
        let en = Lang::get(None);
        assert_eq!(en.tr("next"), "next");
        assert_eq!(Lang::get(Some("fr")).code(), "en");
        let zh = Lang::get(Some("zh"));
        assert_eq!(zh.tr("no such message, ever"), "no such message, ever");
        assert!(zh.missing().contains(&"no such message, ever".to_string()));
        assert_eq!(
            zh.fmt("{partition} has a new leader", &[("partition", &"orders-0")]),
            "orders-0 有了新的领导者"
        );
    }

    #[test]
    fn a_sentence_made_in_english_is_read_back_into_its_template() {
        let t = "broker {broker} killed; the controller fences it after {ms} ms without heartbeats";
        assert_eq!(
            read_back(
                t,
                "broker 2 killed; the controller fences it after 3000 ms without heartbeats"
            ),
            Some(vec![("broker".to_string(), "2"), ("ms".to_string(), "3000")])
        );
        // The whole sentence, or nothing.
        assert_eq!(
            read_back(t, "broker 2 killed; the controller fences it after 3000 ms"),
            None
        );
        assert_eq!(read_back("broker {b} resumed", "broker 1 resumed, then more"), None);
        // A name used twice has one value.
        let twice = "broker {b} killed; fences broker {b} later";
        assert!(read_back(twice, "broker 1 killed; fences broker 1 later").is_some());
        assert_eq!(read_back(twice, "broker 1 killed; fences broker 2 later"), None);
        // The last fixed text is the end, even when it also comes earlier.
        assert_eq!(
            read_back("link {a} {state}", "link 0-1 delayed 200 ms"),
            Some(vec![("a".to_string(), "0-1"), ("state".to_string(), "delayed 200 ms")])
        );
        let zh = Lang::get(Some("zh"));
        assert_eq!(zh.sentence("kill broker 1"), "杀死 broker 1");
        assert_eq!(Lang::english().sentence("kill broker 1"), "kill broker 1");
        let unknown = "an outcome no catalogue has";
        assert_eq!(zh.sentence(unknown), unknown);
        assert!(zh.missing().contains(&unknown.to_string()));
    }

    #[test]
    fn placeholders_are_names_between_braces() {
        assert_eq!(
            placeholders("HW of {partition} moves on by {by} {x y}"),
            BTreeSet::from(["partition".to_string(), "by".to_string()])
        );
    }

    #[test]
    fn counts_agree_with_their_nouns_in_every_language() {
        let en = Lang::english();
        assert_eq!(en.count(1, "topic"), "1 topic");
        assert_eq!(en.count(2, "entry"), crate::view::words::count(2, "entry"));
        assert_eq!(Msg::count(3, "member").id, "{n} members");
        let zh = Lang::get(Some("zh"));
        assert_eq!(zh.count(3, "member"), "3 个成员");
    }

    #[test]
    fn a_message_says_its_values_in_one_pass() {
        let msg = Msg::new("broker {broker} down: {how}")
            .with("broker", 1)
            .with_msg("how", Msg::words("killed"));
        assert_eq!(msg.english(), "broker 1 down: killed");
        assert_eq!(Lang::get(Some("zh")).say(&msg), "broker 1 下线：已杀死");
        // A value is not searched for placeholders, and stray braces stay.
        let odd = Msg::new("{a} and {b} {not a name}").with("a", "{b}").with("b", "x");
        assert_eq!(odd.english(), "{b} and x {not a name}");
    }
}
