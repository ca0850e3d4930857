//! How `kdeck consume` prints a record: `value`, `kv`, `json`, or a kcat-style template; and
//! the escapes (`\n`, `\xHH`...) of templates and delimiters.

use anyhow::{Result, bail};
use base64::Engine as _;

use crate::view::TailRecord;

#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Format {
    /// The value and the record delimiter (kcat's default `%s\n`).
    Value {
        record_delimiter: Vec<u8>,
    },
    /// Key, the key delimiter, value, the record delimiter (kcat -K).
    KeyValue {
        key_delimiter: Vec<u8>,
        record_delimiter: Vec<u8>,
    },
    /// One JSON object per record, each followed by the record delimiter.
    Json {
        record_delimiter: Vec<u8>,
    },
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
    /// kcat's %R: the value's length (-1 for null) as a big-endian 32-bit integer, so that a
    /// reader of binary values knows where each ends.
    ValueLengthBinary,
}

impl Format {
    /// `--format` with `-D` (after each record) and `-K` (between key and value), checked
    /// before connecting, so a typo costs no round trip. A template says where its
    /// delimiters go: -D and -K with one are refused rather than silently ignored (kcat).
    pub(crate) fn parse(text: &str, delimiter: Option<&str>, key_delimiter: Option<&str>) -> Result<Format> {
        let record_delimiter = match delimiter {
            Some(d) => unescape(d).map_err(|e| anyhow::anyhow!("--delimiter: {e}"))?,
            None => b"\n".to_vec(),
        };
        let key_given = key_delimiter.is_some();
        let key_delimiter = key_delimiter
            .map(|d| unescape(d).map_err(|e| anyhow::anyhow!("--key-delimiter: {e}")))
            .transpose()?;
        match (text, key_delimiter) {
            ("value", None) => return Ok(Format::Value { record_delimiter }),
            ("value" | "kv", Some(key_delimiter)) => {
                return Ok(Format::KeyValue {
                    key_delimiter,
                    record_delimiter,
                });
            }
            ("kv", None) => {
                return Ok(Format::KeyValue {
                    key_delimiter: b"\t".to_vec(),
                    record_delimiter,
                });
            }
            ("json", None) => return Ok(Format::Json { record_delimiter }),
            ("json", Some(_)) => bail!("--key-delimiter: json output holds the key in its own field"),
            _ => {}
        }
        if !text.contains('%') && !text.contains('\\') {
            bail!("--format {text:?}: expected value, kv, json or a template with %s, %k, %o...");
        }
        if delimiter.is_some() || key_given {
            bail!("--format {text:?} is a template: put the delimiters in it instead of -D or -K");
        }
        Ok(Format::Template(template(text)?))
    }

    /// Appends `record` of `topic` to `out`. Keys and values go out as their bytes, not
    /// re-encoded; a missing key or value prints as nothing (kcat), its length as -1.
    pub(crate) fn write(&self, topic: &str, record: &TailRecord, out: &mut Vec<u8>) {
        let key = record.key.as_deref().unwrap_or_default();
        let value = record.value.as_deref().unwrap_or_default();
        match self {
            Format::Value { record_delimiter } => {
                out.extend_from_slice(value);
                out.extend_from_slice(record_delimiter);
            }
            Format::KeyValue {
                key_delimiter,
                record_delimiter,
            } => {
                out.extend_from_slice(key);
                out.extend_from_slice(key_delimiter);
                out.extend_from_slice(value);
                out.extend_from_slice(record_delimiter);
            }
            Format::Json { record_delimiter } => {
                out.extend_from_slice(json(topic, record).to_string().as_bytes());
                out.extend_from_slice(record_delimiter);
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
                        Piece::KeyLength => out.extend_from_slice(length(&record.key).to_string().as_bytes()),
                        Piece::ValueLength => out.extend_from_slice(length(&record.value).to_string().as_bytes()),
                        Piece::ValueLengthBinary => {
                            let n = i32::try_from(length(&record.value)).unwrap_or(i32::MAX);
                            out.extend_from_slice(&n.to_be_bytes());
                        }
                    }
                }
            }
        }
    }
}

/// A kcat template: %-fields and text with escapes.
fn template(text: &str) -> Result<Vec<Piece>> {
    let mut pieces = Vec::new();
    let mut literal = String::new();
    let mut chars = text.chars();
    let flush = |literal: &mut String, pieces: &mut Vec<Piece>| -> Result<()> {
        if !literal.is_empty() {
            let bytes = unescape(literal).map_err(|e| anyhow::anyhow!("--format: {e}"))?;
            pieces.push(Piece::Text(bytes));
            literal.clear();
        }
        Ok(())
    };
    while let Some(c) = chars.next() {
        if c != '%' {
            literal.push(c);
            if c == '\\'
                && let Some(next) = chars.next()
            {
                // An escaped character is never a field: `\%` stays for unescape to judge.
                literal.push(next);
            }
            continue;
        }
        let piece = match chars.next() {
            Some('t') => Piece::Topic,
            Some('p') => Piece::Partition,
            Some('o') => Piece::Offset,
            Some('k') => Piece::Key,
            Some('s') => Piece::Value,
            Some('T') => Piece::Timestamp,
            Some('h') => Piece::Headers,
            Some('K') => Piece::KeyLength,
            Some('S') => Piece::ValueLength,
            Some('R') => Piece::ValueLengthBinary,
            Some('%') => {
                literal.push('%');
                continue;
            }
            Some(other) => bail!("--format: unknown field %{other} (known: %t %p %o %k %s %T %h %K %S %R %%)"),
            None => bail!("--format: a lone % at the end"),
        };
        flush(&mut literal, &mut pieces)?;
        pieces.push(piece);
    }
    flush(&mut literal, &mut pieces)?;
    Ok(pieces)
}

/// kcat's escapes in a delimiter or a template's text: \n \r \t, \xHH (one or two hex
/// digits: any byte), and \0 (NUL) and \\ (a backslash), which kcat's C strings cannot carry.
pub(crate) fn unescape(text: &str) -> Result<Vec<u8>, String> {
    let mut out = Vec::with_capacity(text.len());
    let mut chars = text.chars().peekable();
    while let Some(c) = chars.next() {
        if c != '\\' {
            let mut buf = [0; 4];
            out.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
            continue;
        }
        match chars.next() {
            Some('n') => out.push(b'\n'),
            Some('r') => out.push(b'\r'),
            Some('t') => out.push(b'\t'),
            Some('0') => out.push(0),
            Some('\\') => out.push(b'\\'),
            Some('x') => {
                let mut digits = String::new();
                while digits.len() < 2
                    && let Some(d) = chars.next_if(char::is_ascii_hexdigit)
                {
                    digits.push(d);
                }
                match u8::from_str_radix(&digits, 16) {
                    Ok(byte) => out.push(byte),
                    Err(_) => return Err(format!("\\x needs a hex number (\\x00 to \\xff) in {text:?}")),
                }
            }
            Some(other) => {
                return Err(format!(
                    "unknown escape \\{other} in {text:?} (known: \\n \\r \\t \\0 \\\\ \\xHH)"
                ));
            }
            None => return Err(format!("a lone \\ at the end of {text:?}")),
        }
    }
    Ok(out)
}

/// The record as JSON. A key, value or header value that is not UTF-8 is written in base64
/// (standard alphabet, padded) and its place is named in the "base64" array ("key", "value",
/// "headers.NAME"), so that binary data survives and text stays readable.
fn json(topic: &str, record: &TailRecord) -> serde_json::Value {
    let mut encoded = Vec::new();
    let mut text = |bytes: &Option<bytes::Bytes>, place: String| match bytes {
        None => serde_json::Value::Null,
        Some(b) => match std::str::from_utf8(b) {
            Ok(s) => serde_json::Value::String(s.to_string()),
            Err(_) => {
                encoded.push(serde_json::Value::String(place));
                serde_json::Value::String(base64::engine::general_purpose::STANDARD.encode(b))
            }
        },
    };
    let key = text(&record.key, "key".into());
    let value = text(&record.value, "value".into());
    let headers: serde_json::Map<String, serde_json::Value> = record
        .headers
        .iter()
        .map(|(k, v)| (k.clone(), text(v, format!("headers.{k}"))))
        .collect();
    let mut object = serde_json::json!({
        "topic": topic,
        "partition": record.partition,
        "offset": record.offset,
        "timestamp": record.timestamp,
        "key": key,
        "value": value,
        "headers": headers,
    });
    if !encoded.is_empty()
        && let Some(map) = object.as_object_mut()
    {
        map.insert("base64".into(), serde_json::Value::Array(encoded));
    }
    object
}

fn length(bytes: &Option<bytes::Bytes>) -> i64 {
    bytes.as_ref().map_or(-1, |b| b.len() as i64)
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
            producer_id: -1,
            txn: None,
        }
    }

    fn render(format: &str, record: &TailRecord) -> String {
        let mut out = Vec::new();
        Format::parse(format, None, None)
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

    fn render_with(format: &str, delimiter: Option<&str>, key_delimiter: Option<&str>, record: &TailRecord) -> Vec<u8> {
        let mut out = Vec::new();
        Format::parse(format, delimiter, key_delimiter)
            .expect("a valid format")
            .write("clicks", record, &mut out);
        out
    }

    #[test]
    fn kcat_delimiters_print_the_key_and_end_each_record() {
        let r = record();
        assert_eq!(render_with("value", Some("\\0"), None, &r), "héllo 🌍\0".as_bytes());
        assert_eq!(
            render_with("value", None, Some(" => "), &r),
            "user-1 => héllo 🌍\n".as_bytes()
        );
        assert_eq!(
            render_with("kv", Some("\\r\\n"), None, &r),
            "user-1\théllo 🌍\r\n".as_bytes()
        );
        assert_eq!(render_with("json", Some("\\x1e"), None, &r).last(), Some(&0x1e));
    }

    #[test]
    fn binary_keys_and_values_are_written_as_their_bytes_and_json_says_base64() {
        let mut binary = record();
        binary.key = Some(Bytes::from_static(b"\xff\x00"));
        binary.value = Some(Bytes::from_static(b"\x00\x01\xfe"));
        binary.headers = vec![("trace".into(), Some(Bytes::from_static(b"\x80")))];
        assert_eq!(render_with("%k|%s\\n", None, None, &binary), b"\xff\x00|\x00\x01\xfe\n");
        assert_eq!(
            render_with("%R%s", None, None, &binary),
            b"\x00\x00\x00\x03\x00\x01\xfe"
        );
        let mut null = record();
        null.value = None;
        assert_eq!(render_with("%R", None, None, &null), (-1i32).to_be_bytes());
        let json: serde_json::Value = serde_json::from_slice(&render_with("json", None, None, &binary)).expect("json");
        assert_eq!(json["key"], "/wA=");
        assert_eq!(json["value"], "AAH+");
        assert_eq!(json["headers"]["trace"], "gA==");
        assert_eq!(json["base64"], serde_json::json!(["key", "value", "headers.trace"]));
    }

    #[test]
    fn escapes_are_kcats_and_any_byte_by_hex() {
        assert_eq!(unescape("a\\tb\\nc\\r"), Ok(b"a\tb\nc\r".to_vec()));
        assert_eq!(unescape("\\x54!\\x45\\x53T"), Ok(b"T!EST".to_vec()), "kcat's own test");
        assert_eq!(unescape("\\xff\\x0\\0\\\\"), Ok(b"\xff\x00\x00\\".to_vec()));
        assert!(unescape("\\q").is_err());
        assert!(unescape("end\\").is_err());
    }

    #[test]
    fn bad_templates_are_refused_with_the_reason() {
        let error = |format: &str| Format::parse(format, None, None).unwrap_err().to_string();
        assert!(error("%x").contains("%x"));
        assert!(error("%s%").contains("lone %"));
        assert!(error("yaml").contains("expected"));
        assert!(error("%s\\q").contains("\\q"));
        assert!(error("%s\\xzz").contains("hex"));
        let with_delimiter = Format::parse("%s", Some("|"), None).unwrap_err().to_string();
        assert!(with_delimiter.contains("template"), "{with_delimiter}");
        let json_key = Format::parse("json", None, Some(":")).unwrap_err().to_string();
        assert!(json_key.contains("key"), "{json_key}");
    }
}
