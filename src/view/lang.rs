//! The words of the console and of trainer mode in other languages: one message catalogue
//! per language in `assets/lang/` (compiled in), gettext style. A message's id is its
//! English text, so English needs no file and an untranslated message shows in English;
//! a template names its values (`"{partition} has a new leader"`), and a translation uses
//! the same names in its own order.
//!
//! [`Lang::missing`] lists the ids a translation was asked for and lacks: the tests render
//! every screen of trainer mode in Chinese and require it empty, so the catalogue stays
//! complete as the console grows.

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
        let mut out = self.tr(english).to_string();
        for (name, value) in args {
            out = out.replace(&format!("{{{name}}}"), &value.to_string());
        }
        out
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
            out.insert(english, t);
        }
    }
    Ok(out)
}

/// Names between braces in a template: what a translation must keep.
pub fn placeholders(text: &str) -> BTreeSet<String> {
    let mut out = BTreeSet::new();
    let mut rest = text;
    while let Some(start) = rest.find('{') {
        let after = &rest[start + 1..];
        match after.find('}') {
            Some(end) if after[..end].chars().all(|c| c.is_ascii_alphanumeric() || c == '_') && end > 0 => {
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

/// A count with its noun, singular or plural ("1 topic", "3 topics"), in `lang`: the
/// English forms are the ids (`"{n} topic"`, `"{n} topics"`).
pub fn count(lang: &Lang, n: usize, one: &str, many: &str) -> String {
    lang.fmt(if n == 1 { one } else { many }, &[("n", &n)])
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
    fn placeholders_are_names_between_braces() {
        assert_eq!(
            placeholders("HW of {partition} moves on by {by} {x y}"),
            BTreeSet::from(["partition".to_string(), "by".to_string()])
        );
    }

    #[test]
    fn counts_agree_with_their_nouns() {
        let en = Lang::english();
        assert_eq!(count(en, 1, "{n} topic", "{n} topics"), "1 topic");
        assert_eq!(count(en, 2, "{n} topic", "{n} topics"), "2 topics");
    }
}
