//! What lies over the dashboard, in layers: the keys overlay, the filter line, dialogs,
//! confirmations, a message's detail, an explanation and captions. The topmost layer that takes keys gets
//! them; a caption only shows, so it stays on screen under a confirmation. A dialog checks
//! its input itself and, when it is right, becomes an [`Action`]; on error it keeps what was
//! typed and says what is wrong.

use chrono::{DateTime, FixedOffset, NaiveDateTime, TimeZone, Utc};

use super::action::{Action, ExplainTarget, SeekBy};
use crate::view::{ClusterView, Command, ProduceRequest, SeekPosition, TailRecord, topic_name_error};

/// One layer over the screen.
#[derive(Debug, Clone, PartialEq)]
pub enum Overlay {
    /// Every key, scrolled by `scroll` lines.
    Help {
        scroll: u16,
    },
    /// The focused pane's filter being typed (in the footer).
    Filter,
    /// The `:` command line being typed (in the footer).
    Command(super::command::CommandLine),
    Dialog(Dialog),
    Confirm {
        question: String,
        command: Command,
    },
    Detail(Box<TailRecord>),
    /// Why `target` is as it is, made again from the current view every frame (so it
    /// changes as the cluster does), scrolled by `scroll` lines.
    Explain {
        target: ExplainTarget,
        scroll: u16,
    },
    /// The clusters the console may switch to (a copy of their names), the cursor on one.
    Clusters {
        names: Vec<String>,
        cursor: usize,
    },
    /// A trainer's words: shown, takes no keys.
    Caption {
        title: String,
        text: String,
    },
}

impl Overlay {
    /// Whether keys go to it (a caption lets them through).
    pub fn takes_keys(&self) -> bool {
        !matches!(self, Overlay::Caption { .. })
    }
}

/// What a dialog is for, with its target.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum DialogKind {
    Produce {
        topic: String,
    },
    CreateTopic,
    Seek {
        by: SeekBy,
        topic: String,
        partition: Option<i32>,
    },
}

#[derive(Debug, Clone, PartialEq)]
pub struct Field {
    pub label: &'static str,
    pub value: String,
    pub hint: &'static str,
}

#[derive(Debug, Clone, PartialEq)]
pub struct Dialog {
    pub kind: DialogKind,
    pub title: String,
    pub fields: Vec<Field>,
    pub focus: usize,
    pub error: Option<String>,
}

/// What a dialog's checks read: the cluster as the console sees it, and the clock.
pub struct Context<'a> {
    pub view: &'a ClusterView,
    pub now: DateTime<Utc>,
    pub tz: FixedOffset,
}

fn field(label: &'static str, value: &str, hint: &'static str) -> Field {
    Field {
        label,
        value: value.to_string(),
        hint,
    }
}

impl Dialog {
    pub fn produce(topic: &str, partition: Option<i32>) -> Dialog {
        let partition = partition.map(|p| p.to_string()).unwrap_or_default();
        Dialog {
            kind: DialogKind::Produce { topic: topic.into() },
            title: format!("Produce to {topic}"),
            fields: vec![
                field("partition", &partition, "empty: chosen by the key's hash"),
                field("key", "", "empty: no key"),
                field("value", "", ""),
                field("headers", "", "k=v, k2=v2"),
            ],
            focus: 2,
            error: None,
        }
    }

    pub fn create_topic(brokers: usize) -> Dialog {
        Dialog {
            kind: DialogKind::CreateTopic,
            title: "Create topic".into(),
            fields: vec![
                field("name", "", "letters, digits, . _ -"),
                field("partitions", "3", ""),
                field("replication factor", &brokers.clamp(1, 3).to_string(), ""),
                field("cleanup policy", "delete", "delete · compact · compact,delete"),
            ],
            focus: 0,
            error: None,
        }
    }

    pub fn seek(by: SeekBy, topic: &str, partition: Option<i32>) -> Dialog {
        let (title, field) = match by {
            SeekBy::Offset => ("Seek to offset", field("offset", "", "in each partition read")),
            SeekBy::Time => (
                "Seek to time",
                field("time", "", "YYYY-MM-DD HH:MM:SS (local), RFC 3339, or -30s -5m -2h"),
            ),
        };
        Dialog {
            kind: DialogKind::Seek {
                by,
                topic: topic.into(),
                partition,
            },
            title: title.into(),
            fields: vec![field],
            focus: 0,
            error: None,
        }
    }

    pub fn next_field(&mut self) {
        self.focus = if self.focus + 1 >= self.fields.len() {
            0
        } else {
            self.focus + 1
        };
    }

    pub fn prev_field(&mut self) {
        self.focus = if self.focus == 0 {
            self.fields.len().saturating_sub(1)
        } else {
            self.focus - 1
        };
    }

    pub fn push(&mut self, c: char) {
        if let Some(f) = self.fields.get_mut(self.focus) {
            f.value.push(c);
        }
    }

    pub fn pop(&mut self) {
        if let Some(f) = self.fields.get_mut(self.focus) {
            f.value.pop();
        }
    }

    fn value(&self, i: usize) -> &str {
        self.fields.get(i).map_or("", |f| f.value.trim())
    }

    /// The action the dialog asks for, or what is wrong with its input.
    pub fn submit(&self, cx: &Context<'_>) -> Result<Action, String> {
        match &self.kind {
            DialogKind::Produce { topic } => {
                let partitions = cx
                    .view
                    .topics
                    .iter()
                    .find(|t| &t.name == topic)
                    .map(|t| t.partitions)
                    .ok_or_else(|| format!("topic {topic} no longer exists"))?;
                let partition = match self.value(0) {
                    "" => None,
                    p => {
                        let p = p
                            .parse::<i32>()
                            .map_err(|_| format!("partition {p:?} is not a number"))?;
                        if p < 0 || p >= partitions {
                            return Err(format!(
                                "partition {p} is out of range: {topic} has {partitions} partitions (0-{})",
                                partitions - 1
                            ));
                        }
                        Some(p)
                    }
                };
                let key = Some(self.value(1).to_string()).filter(|k| !k.is_empty());
                let headers = parse_headers(self.value(3))?;
                let value = self.fields.get(2).map_or(String::new(), |f| f.value.clone());
                Ok(Action::Produce(ProduceRequest {
                    topic: topic.clone(),
                    partition,
                    key,
                    value,
                    headers,
                }))
            }
            DialogKind::CreateTopic => {
                let name = self.value(0);
                if let Some(why) = topic_name_error(name) {
                    return Err(why);
                }
                if cx.view.topics.iter().any(|t| t.name == name) {
                    return Err(format!("topic {name} already exists"));
                }
                let partitions = self
                    .value(1)
                    .parse::<i32>()
                    .ok()
                    .filter(|p| *p >= 1)
                    .ok_or("partitions must be a number of at least 1")?;
                let replication_factor = self
                    .value(2)
                    .parse::<i32>()
                    .ok()
                    .filter(|r| *r >= 1)
                    .ok_or("the replication factor must be a number of at least 1")?;
                let live = cx.view.brokers.iter().filter(|b| b.status.is_up()).count();
                if replication_factor as usize > live {
                    return Err(format!(
                        "replication factor {replication_factor} is larger than the {live} live broker{}",
                        if live == 1 { "" } else { "s" }
                    ));
                }
                let cleanup_policy = match self.value(3).replace(' ', "").to_ascii_lowercase().as_str() {
                    "" | "delete" => "delete",
                    "compact" => "compact",
                    "compact,delete" | "delete,compact" => "compact,delete",
                    _ => return Err("the cleanup policy is delete, compact or compact,delete".into()),
                };
                Ok(Action::CreateTopic {
                    name: name.to_string(),
                    partitions,
                    replication_factor,
                    cleanup_policy: cleanup_policy.into(),
                })
            }
            DialogKind::Seek { by, topic, partition } => {
                let to = match by {
                    SeekBy::Offset => SeekPosition::Offset(
                        self.value(0)
                            .parse::<i64>()
                            .ok()
                            .filter(|o| *o >= 0)
                            .ok_or("an offset is a number of at least 0")?,
                    ),
                    SeekBy::Time => SeekPosition::Timestamp(parse_time(self.value(0), cx.now, cx.tz)?),
                };
                Ok(Action::Seek {
                    topic: topic.clone(),
                    partition: *partition,
                    to,
                })
            }
        }
    }
}

/// `k=v, k2=v2` into header pairs.
pub fn parse_headers(text: &str) -> Result<Vec<(String, String)>, String> {
    let mut headers: Vec<(String, String)> = Vec::new();
    for part in text.split(',').map(str::trim).filter(|p| !p.is_empty()) {
        let (k, v) = part
            .split_once('=')
            .ok_or_else(|| format!("header {part:?} is not key=value"))?;
        let k = k.trim();
        if k.is_empty() {
            return Err(format!("header {part:?} has no key"));
        }
        if headers.iter().any(|(h, _)| h == k) {
            return Err(format!("header {k:?} is given twice"));
        }
        headers.push((k.to_string(), v.trim().to_string()));
    }
    Ok(headers)
}

/// A local date-time, an RFC 3339 time, or a relative `-30s`, `-5m`, `-2h`, `-1d`.
pub fn parse_time(text: &str, now: DateTime<Utc>, tz: FixedOffset) -> Result<DateTime<Utc>, String> {
    if let Some(rel) = text.strip_prefix('-') {
        let (n, unit) = rel.split_at(rel.find(|c: char| !c.is_ascii_digit()).unwrap_or(rel.len()));
        let n: i64 = n
            .parse()
            .map_err(|_| format!("{text:?}: expected -<number><s|m|h|d>"))?;
        let secs = match unit {
            "s" | "" => n,
            "m" => n.saturating_mul(60),
            "h" => n.saturating_mul(3600),
            "d" => n.saturating_mul(86_400),
            _ => return Err(format!("{text:?}: the unit is s, m, h or d")),
        };
        return chrono::Duration::try_seconds(secs)
            .and_then(|d| now.checked_sub_signed(d))
            .ok_or_else(|| format!("{text:?} is too far back"));
    }
    if let Ok(t) = DateTime::parse_from_rfc3339(text) {
        return Ok(t.with_timezone(&Utc));
    }
    for format in ["%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M", "%Y-%m-%dT%H:%M:%S"] {
        if let Ok(local) = NaiveDateTime::parse_from_str(text, format)
            && let Some(t) = tz.from_local_datetime(&local).single()
        {
            return Ok(t.with_timezone(&Utc));
        }
    }
    Err(format!(
        "{text:?} is not a time: use YYYY-MM-DD HH:MM:SS, RFC 3339 or -30s / -5m / -2h"
    ))
}
