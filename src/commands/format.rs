//! How `kdeck consume` prints a record: `value`, `kv`, `json`, or a kcat-style template.

use anyhow::{Result, bail};

use crate::view::TailRecord;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Format {
    /// The value and a newline (kcat's default `%s\n`).
    Value,
    /// Key, a tab, value, newline.
    KeyValue,
    /// One JSON object per line.
    Json,
    Template(Vec<Piece>),
}

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Piece {
    Text(Vec<u8>),
    Topic,
    Partition,
    Offset,
    Key,
    Value,
    Timestamp,
    Headers,
    KeyLength,
    ValueLength,
}

impl Format {
    /// Checked before connecting, so a typo costs no round trip.
    pub(crate) fn parse(text: &str) -> Result<Format> {
        match text {
            "value" => return Ok(Format::Value),
            "kv" => return Ok(Format::KeyValue),
            "json" => return Ok(Format::Json),
            _ => {}
        }
        if !text.contains('%') && !text.contains('\\') {
            bail!("--format {text:?}: expected value, kv, json or a template with %s, %k, %o...");
        }
        let mut pieces = Vec::new();
        let mut literal = Vec::new();
        let mut chars = text.chars();
        while let Some(c) = chars.next() {
            let piece = match c {
                '%' => match chars.next() {
                    Some('t') => Piece::Topic,
                    Some('p') => Piece::Partition,
                    Some('o') => Piece::Offset,
                    Some('k') => Piece::Key,
                    Some('s') => Piece::Value,
                    Some('T') => Piece::Timestamp,
                    Some('h') => Piece::Headers,
                    Some('K') => Piece::KeyLength,
                    Some('S') => Piece::ValueLength,
                    Some('%') => {
                        literal.push(b'%');
                        continue;
                    }
                    Some(other) => bail!("--format: unknown field %{other} (known: %t %p %o %k %s %T %h %K %S %%)"),
                    None => bail!("--format: a lone % at the end"),
                },
                '\\' => {
                    let escaped = match chars.next() {
                        Some('n') => b'\n',
                        Some('t') => b'\t',
                        Some('r') => b'\r',
                        Some('0') => 0,
                        Some('\\') => b'\\',
                        Some(other) => bail!("--format: unknown escape \\{other} (known: \\n \\t \\r \\0 \\\\)"),
                        None => bail!("--format: a lone \\ at the end"),
                    };
                    literal.push(escaped);
                    continue;
                }
                other => {
                    let mut buf = [0; 4];
                    literal.extend_from_slice(other.encode_utf8(&mut buf).as_bytes());
                    continue;
                }
            };
            if !literal.is_empty() {
                pieces.push(Piece::Text(std::mem::take(&mut literal)));
            }
            pieces.push(piece);
        }
        if !literal.is_empty() {
            pieces.push(Piece::Text(literal));
        }
        Ok(Format::Template(pieces))
    }

    /// Appends `record` of `topic` to `out`. Keys and values go out as their bytes, not
    /// re-encoded; a missing key or value prints as nothing (kcat), its length as -1.
    pub(crate) fn write(&self, topic: &str, record: &TailRecord, out: &mut Vec<u8>) {
        let key = record.key.as_deref().unwrap_or_default();
        let value = record.value.as_deref().unwrap_or_default();
        match self {
            Format::Value => {
                out.extend_from_slice(value);
                out.push(b'\n');
            }
            Format::KeyValue => {
                out.extend_from_slice(key);
                out.push(b'\t');
                out.extend_from_slice(value);
                out.push(b'\n');
            }
            Format::Json => {
                let text = |bytes: &Option<bytes::Bytes>| {
                    bytes
                        .as_ref()
                        .map(|b| serde_json::Value::String(String::from_utf8_lossy(b).into_owned()))
                        .unwrap_or(serde_json::Value::Null)
                };
                let headers: serde_json::Map<String, serde_json::Value> =
                    record.headers.iter().map(|(k, v)| (k.clone(), text(v))).collect();
                let object = serde_json::json!({
                    "topic": topic,
                    "partition": record.partition,
                    "offset": record.offset,
                    "timestamp": record.timestamp,
                    "key": text(&record.key),
                    "value": text(&record.value),
                    "headers": headers,
                });
                out.extend_from_slice(object.to_string().as_bytes());
                out.push(b'\n');
            }
            Format::Template(pieces) => {
                for piece in pieces {
                    match piece {
                        Piece::Text(text) => out.extend_from_slice(text),
                        Piece::Topic => out.extend_from_slice(topic.as_bytes()),
                        Piece::Partition => out.extend_from_slice(record.partition.to_string().as_bytes()),
                        Piece::Offset => out.extend_from_slice(record.offset.to_string().as_bytes()),
                        Piece::Key => out.extend_from_slice(key),
                        Piece::Value => out.extend_from_slice(value),
                        Piece::Timestamp => out.extend_from_slice(record.timestamp.to_string().as_bytes()),
                        Piece::Headers => {
                            for (i, (k, v)) in record.headers.iter().enumerate() {
                                if i > 0 {
                                    out.push(b',');
                                }
                                out.extend_from_slice(k.as_bytes());
                                out.push(b'=');
                                out.extend_from_slice(v.as_deref().unwrap_or_default());
                            }
                        }
                        Piece::KeyLength => out.extend_from_slice(length(&record.key).as_bytes()),
                        Piece::ValueLength => out.extend_from_slice(length(&record.value).as_bytes()),
                    }
                }
            }
        }
    }
}

fn length(bytes: &Option<bytes::Bytes>) -> String {
    bytes.as_ref().map_or(-1, |b| b.len() as i64).to_string()
}

#[cfg(test)]
mod tests {
    use bytes::Bytes;

    use super::*;

    fn record() -> TailRecord {
        TailRecord {
            partition: 2,
            offset: 17,
            timestamp: 1_700_000_000_000,
            key: Some(Bytes::from_static(b"user-1")),
            value: Some(Bytes::from("héllo 🌍")),
            headers: vec![("source".into(), Some(Bytes::from_static(b"web")))],
        }
    }

    fn render(format: &str, record: &TailRecord) -> String {
        let mut out = Vec::new();
        Format::parse(format)
            .expect("a valid format")
            .write("clicks", record, &mut out);
        String::from_utf8(out).expect("utf-8")
    }

    #[test]
    fn templates_print_kcat_fields() {
        assert_eq!(render("%p:%o:%k=%s\\n", &record()), "2:17:user-1=héllo 🌍\n");
        assert_eq!(
            render("%t [%p] @%o %T %h %K/%S 100%%\\t|", &record()),
            "clicks [2] @17 1700000000000 source=web 6/11 100%\t|"
        );
        let mut keyless = record();
        keyless.key = None;
        assert_eq!(render("[%k] %K\\n", &keyless), "[] -1\n");
    }

    #[test]
    fn named_formats() {
        assert_eq!(render("value", &record()), "héllo 🌍\n");
        assert_eq!(render("kv", &record()), "user-1\théllo 🌍\n");
        let json: serde_json::Value = serde_json::from_str(&render("json", &record())).expect("json");
        assert_eq!(json["offset"], 17);
        assert_eq!(json["key"], "user-1");
        assert_eq!(json["headers"]["source"], "web");
    }

    #[test]
    fn bad_templates_are_refused_with_the_reason() {
        assert!(Format::parse("%x").unwrap_err().to_string().contains("%x"));
        assert!(Format::parse("%s%").unwrap_err().to_string().contains("lone %"));
        assert!(Format::parse("yaml").unwrap_err().to_string().contains("expected"));
    }
}
