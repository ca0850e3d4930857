//! Which offset a ListOffsets lookup asks for, named once for the engine, the wire, the
//! external-cluster client and the console.

/// Which offset a ListOffsets lookup asks for. Kafka's wire carries it as a timestamp with
/// two reserved values, EARLIEST_TIMESTAMP (-2) and LATEST_TIMESTAMP (-1); those numbers
/// are turned into names and back only in [`OffsetSpec::from_timestamp`] and
/// [`OffsetSpec::timestamp`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OffsetSpec {
    /// The log start offset.
    Earliest,
    /// The log end as a consumer sees it: the high watermark.
    Latest,
    /// The first offset whose timestamp is at or after this many ms since the epoch.
    Timestamp(i64),
}

impl OffsetSpec {
    const EARLIEST_TIMESTAMP: i64 = -2;
    const LATEST_TIMESTAMP: i64 = -1;

    /// The lookup a ListOffsets request's timestamp asks for.
    pub fn from_timestamp(timestamp: i64) -> OffsetSpec {
        match timestamp {
            Self::EARLIEST_TIMESTAMP => OffsetSpec::Earliest,
            Self::LATEST_TIMESTAMP => OffsetSpec::Latest,
            ms => OffsetSpec::Timestamp(ms),
        }
    }

    /// The timestamp a ListOffsets request carries for this lookup.
    pub fn timestamp(self) -> i64 {
        match self {
            OffsetSpec::Earliest => Self::EARLIEST_TIMESTAMP,
            OffsetSpec::Latest => Self::LATEST_TIMESTAMP,
            OffsetSpec::Timestamp(ms) => ms,
        }
    }
}

/// Kafka's ListOffsets timestamp, reserved values included.
impl From<i64> for OffsetSpec {
    fn from(timestamp: i64) -> OffsetSpec {
        OffsetSpec::from_timestamp(timestamp)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn an_offset_spec_round_trips_kafkas_list_offsets_timestamp() {
        for spec in [
            OffsetSpec::Earliest,
            OffsetSpec::Latest,
            OffsetSpec::Timestamp(1_700_000_000_000),
        ] {
            assert_eq!(OffsetSpec::from_timestamp(spec.timestamp()), spec);
        }
        assert_eq!(OffsetSpec::Earliest.timestamp(), -2);
        assert_eq!(OffsetSpec::from(-1), OffsetSpec::Latest);
    }
}
