//! Where a consumer group's offset reset moves each partition, as kafka-consumer-groups.sh
//! `--reset-offsets` decides it (`ConsumerGroupCommand.prepareOffsetsToReset`): to the log
//! start or end, to an offset, by a shift from the committed offset, or to the first record
//! at or after a time; an offset outside the log is clamped to its start or end. Also the
//! tool's spellings of a time and a duration. Pure: the callers look the offsets up.

use chrono::{DateTime, Local, NaiveDateTime, TimeZone};

/// `--to-earliest | --to-latest | --to-offset | --shift-by | --to-datetime | --by-duration`.
/// In a console script: `to = "earliest"`, `to = { shift_by = -10 }`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ResetSpec {
    Earliest,
    Latest,
    Offset(i64),
    ShiftBy(i64),
    /// The first record at or after this time (ms since the epoch).
    Datetime(i64),
    /// The first record at or after now minus this many ms.
    ByDuration(i64),
}

impl ResetSpec {
    /// The timestamp whose offset (ListOffsets by time) the reset needs, if any.
    pub fn timestamp(self, now_ms: i64) -> Option<i64> {
        match self {
            ResetSpec::Datetime(at) => Some(at),
            ResetSpec::ByDuration(ms) => Some(now_ms.saturating_sub(ms)),
            _ => None,
        }
    }
}

/// What is known of one partition when a reset is planned.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct PartitionOffsets {
    pub log_start: i64,
    /// The high watermark: what a consumer can read up to.
    pub log_end: i64,
    /// The group's committed offset, if any.
    pub committed: Option<i64>,
    /// The offset of the first record at or after [`ResetSpec::timestamp`] (`None` when
    /// there is none, or the spec needs no time).
    pub at_time: Option<i64>,
}

/// The new offset of a partition, or why it cannot be reset (Kafka's wording).
pub fn new_offset(spec: ResetSpec, p: &PartitionOffsets) -> Result<i64, String> {
    // Kafka's `checkOffsetsRange`: past the end goes to the end, before the start to the start.
    let clamp = |offset: i64| offset.min(p.log_end).max(p.log_start);
    Ok(match spec {
        ResetSpec::Earliest => p.log_start,
        ResetSpec::Latest => p.log_end,
        ResetSpec::Offset(offset) => clamp(offset),
        ResetSpec::ShiftBy(by) => {
            let current = p
                .committed
                .ok_or("cannot shift the offset since there is no current committed offset")?;
            clamp(current.saturating_add(by))
        }
        // No record at or after the time: the log end, as the tool falls back to.
        ResetSpec::Datetime(_) | ResetSpec::ByDuration(_) => p.at_time.unwrap_or(p.log_end),
    })
}

/// Why a group's offsets cannot be reset in `state` (a DescribeGroups state name), in
/// kafka-consumer-groups.sh's words: only a group without active members (Empty, or Dead: it
/// does not exist yet) can be reset, for its coordinator refuses a commit outside the
/// generation of an active group anyway.
pub fn reset_refused(group: &str, state: &str) -> Option<String> {
    match state {
        "Empty" | "Dead" => None,
        _ => Some(format!(
            "Assignments can only be reset if the group '{group}' is inactive, but the current state is {state}."
        )),
    }
}

/// `--to-datetime`: Kafka's `YYYY-MM-DDTHH:mm:SS.sss`, seconds' fraction optional, with a time
/// zone (`Z`, `+01:00`, `+0100`) or without one: then the local time, as the tool reads it.
pub fn parse_datetime(text: &str) -> Result<i64, String> {
    let t = text.trim();
    let with_zone = DateTime::parse_from_rfc3339(t)
        .or_else(|_| DateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f%z"))
        .map(|d| d.timestamp_millis());
    if let Ok(ms) = with_zone {
        return Ok(ms);
    }
    let local = NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M:%S%.f")
        .or_else(|_| NaiveDateTime::parse_from_str(t, "%Y-%m-%dT%H:%M"))
        .ok()
        .and_then(|naive| Local.from_local_datetime(&naive).earliest());
    local.map(|d| d.timestamp_millis()).ok_or_else(|| {
        format!("{text:?} is not a date and time: expected YYYY-MM-DDTHH:mm:SS[.sss] with an optional zone (Z, +01:00)")
    })
}

/// `--by-duration`: an ISO-8601 duration as Java's `Duration.parse` reads it,
/// `PnDTnHnMn.nS` (for example PT10M, P1DT12H, PT0.5S), in ms.
pub fn parse_duration(text: &str) -> Result<i64, String> {
    let bad = || format!("{text:?} is not a duration: expected ISO-8601 PnDTnHnMnS, for example PT10M or P1DT2H");
    let upper = text.trim().to_ascii_uppercase();
    let rest = upper.strip_prefix('P').ok_or_else(bad)?;
    let (days, time) = match rest.split_once('T') {
        Some((days, time)) if !time.is_empty() => (days, Some(time)),
        Some(_) => return Err(bad()),
        None => (rest, None),
    };
    let mut ms: f64 = 0.0;
    let mut any = false;
    let mut add = |part: &str, units: &[(char, f64)]| -> Result<(), String> {
        let mut number = String::new();
        let mut allowed = units.iter();
        for c in part.chars() {
            if c.is_ascii_digit() || c == '.' {
                number.push(c);
                continue;
            }
            // Units come in order (D; then H, M, S), each at most once.
            let (_, scale) = allowed.by_ref().find(|(u, _)| *u == c).ok_or_else(bad)?;
            let value: f64 = number.parse().map_err(|_| bad())?;
            if number.contains('.') && c != 'S' {
                return Err(bad());
            }
            ms += value * scale;
            any = true;
            number.clear();
        }
        if number.is_empty() { Ok(()) } else { Err(bad()) }
    };
    add(days, &[('D', 86_400_000.0)])?;
    if let Some(time) = time {
        add(time, &[('H', 3_600_000.0), ('M', 60_000.0), ('S', 1_000.0)])?;
    }
    if !any || !ms.is_finite() || ms > i64::MAX as f64 {
        return Err(bad());
    }
    Ok(ms.round() as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn partition(committed: Option<i64>, at_time: Option<i64>) -> PartitionOffsets {
        PartitionOffsets {
            log_start: 10,
            log_end: 50,
            committed,
            at_time,
        }
    }

    #[test]
    fn new_offsets_are_clamped_to_the_log_as_kafka_does() {
        let p = partition(Some(30), None);
        assert_eq!(new_offset(ResetSpec::Earliest, &p), Ok(10));
        assert_eq!(new_offset(ResetSpec::Latest, &p), Ok(50));
        assert_eq!(new_offset(ResetSpec::Offset(25), &p), Ok(25));
        assert_eq!(new_offset(ResetSpec::Offset(5), &p), Ok(10), "before the start");
        assert_eq!(new_offset(ResetSpec::Offset(500), &p), Ok(50), "past the end");
        assert_eq!(new_offset(ResetSpec::ShiftBy(-5), &p), Ok(25));
        assert_eq!(new_offset(ResetSpec::ShiftBy(-100), &p), Ok(10));
        assert_eq!(new_offset(ResetSpec::ShiftBy(100), &p), Ok(50));
        assert!(new_offset(ResetSpec::ShiftBy(1), &partition(None, None)).is_err());
    }

    #[test]
    fn a_time_without_a_record_after_it_resets_to_the_end() {
        assert_eq!(new_offset(ResetSpec::Datetime(0), &partition(None, Some(12))), Ok(12));
        assert_eq!(
            new_offset(ResetSpec::ByDuration(60_000), &partition(None, None)),
            Ok(50)
        );
        assert_eq!(ResetSpec::ByDuration(600_000).timestamp(1_000_000), Some(400_000));
        assert_eq!(ResetSpec::Latest.timestamp(1_000_000), None);
    }

    #[test]
    fn only_an_inactive_group_is_reset() {
        assert_eq!(reset_refused("g", "Empty"), None);
        assert_eq!(reset_refused("g", "Dead"), None);
        assert_eq!(
            reset_refused("g", "Stable").as_deref(),
            Some("Assignments can only be reset if the group 'g' is inactive, but the current state is Stable.")
        );
    }

    #[test]
    fn datetimes_parse_in_the_tools_format() {
        assert_eq!(parse_datetime("2026-12-04T10:00:00Z"), Ok(1_796_378_400_000));
        assert_eq!(parse_datetime("2026-12-04T10:00:00.250Z"), Ok(1_796_378_400_250));
        assert_eq!(parse_datetime("2026-12-04T11:00:00+01:00"), Ok(1_796_378_400_000));
        assert_eq!(parse_datetime("2026-12-04T11:00:00.000+0100"), Ok(1_796_378_400_000));
        assert!(parse_datetime("2026-12-04T10:00:00").is_ok(), "local time");
        assert!(parse_datetime("yesterday").is_err());
    }

    #[test]
    fn durations_parse_as_javas_duration_does() {
        assert_eq!(parse_duration("PT10M"), Ok(600_000));
        assert_eq!(parse_duration("P1DT2H"), Ok(93_600_000));
        assert_eq!(parse_duration("pt0.5s"), Ok(500));
        assert_eq!(parse_duration("P2D"), Ok(172_800_000));
        for bad in ["10m", "P", "PT", "PT1H2D", "PT5", "PT1.5M", "P1M", "-PT1M"] {
            assert!(parse_duration(bad).is_err(), "{bad}");
        }
    }
}
