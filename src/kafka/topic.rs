//! Kafka's rules for topic names: which names are legal, and which topics are internal.

/// Kafka's internal topics (`__consumer_offsets`, `__transaction_state`...) and, as kdeck
/// treats them, any topic whose name starts with `__`.
pub fn is_internal_topic(name: &str) -> bool {
    name.starts_with("__")
}

/// Kafka's topic name rule: 1 to 249 of `[a-zA-Z0-9._-]`, and not `.` or `..`. `None` when
/// `name` is legal, else the sentence that says why not. The one copy of the rule: the
/// controller, the Kafka listeners and the console all ask it.
pub fn topic_name_error(name: &str) -> Option<String> {
    let why = if name.is_empty() {
        "it is empty".to_string()
    } else if name.len() > 249 {
        return Some(format!(
            "a name of {} characters is not a legal topic name: at most 249",
            name.chars().count()
        ));
    } else if name == "." || name == ".." {
        "\".\" and \"..\" are reserved".to_string()
    } else if let Some(c) = name
        .chars()
        .find(|c| !(c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-')))
    {
        format!("{c:?} is not one of [a-zA-Z0-9._-]")
    } else {
        return None;
    };
    Some(format!("{name:?} is not a legal topic name: {why}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn kafkas_topic_name_rule_has_one_sentence_for_every_illegal_name() {
        for legal in ["orders", "a.b_c-9", &"x".repeat(249)] {
            assert_eq!(topic_name_error(legal), None, "{legal}");
        }
        for illegal in ["", ".", "..", "has space", "ünïcode", &"x".repeat(250)] {
            let why = topic_name_error(illegal).expect("illegal");
            assert!(why.contains("is not a legal topic name"), "{why}");
        }
        // The sentence says what is wrong.
        assert!(topic_name_error("has space").is_some_and(|w| w.contains("' '")));
        assert!(topic_name_error(&"x".repeat(250)).is_some_and(|w| w.contains("250 characters") && w.len() < 80));
        assert!(topic_name_error("..").is_some_and(|w| w.contains("reserved")));
    }
}
