//! Small text files that let a log reopen quickly and correctly: the leader-epoch cache, the
//! recovery point, the log start offset and the clean-shutdown marker.
//!
//! Checkpoints use Kafka's text layout (`version`, `count`, then one entry a line) and are
//! replaced atomically: write a temporary file, fsync it, rename it over the old one, fsync
//! the directory.

use std::fs::{self, File};
use std::io::Write;
use std::path::{Path, PathBuf};

use super::LogError;

pub const LEADER_EPOCH_CHECKPOINT: &str = "leader-epoch-checkpoint";
pub const RECOVERY_POINT_CHECKPOINT: &str = "recovery-point-offset-checkpoint";
pub const LOG_START_OFFSET_CHECKPOINT: &str = "log-start-offset-checkpoint";
pub const CLEAN_SHUTDOWN_MARKER: &str = ".kafka_cleanshutdown";

const CHECKPOINT_VERSION: i64 = 0;

/// Replaces `path` with `contents` so that a crash leaves either the old or the new file.
pub fn write_atomically(path: &Path, contents: &[u8]) -> Result<(), LogError> {
    let tmp = path.with_extension("tmp");
    let io = |op: &'static str, p: &Path| {
        let p = p.to_path_buf();
        move |source| LogError::Io { op, path: p, source }
    };
    let mut file = File::create(&tmp).map_err(io("create", &tmp))?;
    file.write_all(contents).map_err(io("write", &tmp))?;
    file.sync_all().map_err(io("fsync", &tmp))?;
    fs::rename(&tmp, path).map_err(io("rename", path))?;
    if let Some(dir) = path.parent() {
        sync_dir(dir)?;
    }
    Ok(())
}

/// Makes a directory's entries (created, renamed, deleted files) durable.
pub fn sync_dir(dir: &Path) -> Result<(), LogError> {
    File::open(dir)
        .and_then(|d| d.sync_all())
        .map_err(|source| LogError::Io {
            op: "fsync directory",
            path: dir.to_path_buf(),
            source,
        })
}

/// Writes `(a, b)` pairs as a version-0 checkpoint.
pub fn write_pairs(path: &Path, entries: &[(i64, i64)]) -> Result<(), LogError> {
    let mut text = format!("{CHECKPOINT_VERSION}\n{}\n", entries.len());
    for (a, b) in entries {
        text.push_str(&format!("{a} {b}\n"));
    }
    write_atomically(path, text.as_bytes())
}

/// Writes a single offset as a version-0 checkpoint with one entry.
pub fn write_offset(path: &Path, offset: i64) -> Result<(), LogError> {
    write_atomically(path, format!("{CHECKPOINT_VERSION}\n1\n{offset}\n").as_bytes())
}

/// Reads a checkpoint of `(a, b)` pairs. `Ok(None)` when the file does not exist.
pub fn read_pairs(path: &Path) -> Result<Option<Vec<(i64, i64)>>, LogError> {
    let Some(lines) = read_entries(path)? else {
        return Ok(None);
    };
    let mut out = Vec::with_capacity(lines.len());
    for (line_no, line) in lines {
        let mut parts = line.split_whitespace();
        let pair = match (parts.next(), parts.next(), parts.next()) {
            (Some(a), Some(b), None) => a.parse::<i64>().ok().zip(b.parse::<i64>().ok()),
            _ => None,
        };
        let Some(pair) = pair else {
            return Err(bad_checkpoint(
                path,
                line_no,
                format!("expected `epoch offset`, found {line:?}"),
            ));
        };
        out.push(pair);
    }
    Ok(Some(out))
}

/// Reads a single-offset checkpoint. `Ok(None)` when the file does not exist.
pub fn read_offset(path: &Path) -> Result<Option<i64>, LogError> {
    let Some(lines) = read_entries(path)? else {
        return Ok(None);
    };
    match lines.as_slice() {
        [(line_no, line)] => line
            .trim()
            .parse::<i64>()
            .map(Some)
            .map_err(|_| bad_checkpoint(path, *line_no, format!("expected an offset, found {line:?}"))),
        _ => Err(bad_checkpoint(
            path,
            2,
            format!("expected one entry, found {}", lines.len()),
        )),
    }
}

/// Header-checked entry lines with their 1-based line numbers.
fn read_entries(path: &Path) -> Result<Option<Vec<(usize, String)>>, LogError> {
    let text = match fs::read(path) {
        Ok(bytes) => bytes,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(None),
        Err(source) => {
            return Err(LogError::Io {
                op: "read",
                path: path.to_path_buf(),
                source,
            });
        }
    };
    let text = String::from_utf8(text).map_err(|_| bad_checkpoint(path, 1, "not UTF-8 text".into()))?;
    let mut lines = text.lines().enumerate().map(|(i, l)| (i + 1, l));
    match lines.next() {
        Some((_, v)) if v.trim().parse::<i64>() == Ok(CHECKPOINT_VERSION) => {}
        other => {
            return Err(bad_checkpoint(
                path,
                1,
                format!("expected version 0, found {:?}", other.map(|o| o.1)),
            ));
        }
    }
    let count = match lines.next() {
        Some((_, c)) => c
            .trim()
            .parse::<usize>()
            .map_err(|_| bad_checkpoint(path, 2, format!("expected an entry count, found {c:?}")))?,
        None => return Err(bad_checkpoint(path, 2, "missing entry count".into())),
    };
    let entries: Vec<(usize, String)> = lines
        .filter(|(_, l)| !l.trim().is_empty())
        .map(|(n, l)| (n, l.to_string()))
        .collect();
    if entries.len() != count {
        return Err(bad_checkpoint(
            path,
            2,
            format!("entry count says {count}, file has {}", entries.len()),
        ));
    }
    Ok(Some(entries))
}

fn bad_checkpoint(path: &Path, line: usize, reason: String) -> LogError {
    LogError::CorruptCheckpoint {
        path: path.to_path_buf(),
        line,
        reason,
    }
}

/// One leader epoch and the first offset written under it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEntry {
    pub epoch: i32,
    pub start_offset: i64,
}

/// Answer to "where does epoch E end", as Kafka's `OffsetsForLeaderEpoch` defines it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EpochEndOffset {
    pub epoch: i32,
    pub end_offset: i64,
}

impl EpochEndOffset {
    pub const UNDEFINED: EpochEndOffset = EpochEndOffset {
        epoch: -1,
        end_offset: -1,
    };
}

/// The leader-epoch cache of one log: `(epoch, start offset)` entries, strictly increasing in
/// both. It is what lets a follower truncate to the point where its log diverged from the
/// leader's, instead of to its high watermark (KIP-101, KIP-279).
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LeaderEpochCache {
    entries: Vec<EpochEntry>,
}

impl LeaderEpochCache {
    pub fn from_entries(pairs: &[(i64, i64)]) -> Self {
        let mut cache = LeaderEpochCache::default();
        for &(epoch, start) in pairs {
            if let Ok(epoch) = i32::try_from(epoch) {
                cache.assign(epoch, start);
            }
        }
        cache
    }

    pub fn entries(&self) -> &[EpochEntry] {
        &self.entries
    }

    pub fn pairs(&self) -> Vec<(i64, i64)> {
        self.entries
            .iter()
            .map(|e| (i64::from(e.epoch), e.start_offset))
            .collect()
    }

    pub fn latest_epoch(&self) -> Option<i32> {
        self.entries.last().map(|e| e.epoch)
    }

    /// Records that `epoch` starts at `start_offset`. Entries that would break monotonicity
    /// (an epoch or start offset at or above the new one) are removed first, as Kafka does.
    /// Returns whether the cache changed.
    pub fn assign(&mut self, epoch: i32, start_offset: i64) -> bool {
        if epoch < 0 || start_offset < 0 {
            return false;
        }
        let needed = match self.entries.last() {
            Some(last) => epoch != last.epoch || start_offset < last.start_offset,
            None => true,
        };
        if !needed {
            return false;
        }
        while let Some(last) = self.entries.last() {
            if last.epoch >= epoch || last.start_offset >= start_offset {
                self.entries.pop();
            } else {
                break;
            }
        }
        self.entries.push(EpochEntry { epoch, start_offset });
        true
    }

    /// `endOffsetFor(requestedEpoch, logEndOffset)` from Kafka's `LeaderEpochFileCache`: the
    /// largest epoch not above the requested one, and the offset where the next epoch starts
    /// (the log end offset for the latest epoch).
    pub fn end_offset_for(&self, requested: i32, log_end_offset: i64) -> EpochEndOffset {
        if requested < 0 {
            return EpochEndOffset::UNDEFINED;
        }
        if self.latest_epoch() == Some(requested) {
            return EpochEndOffset {
                epoch: requested,
                end_offset: log_end_offset,
            };
        }
        let Some(higher) = self.entries.iter().find(|e| e.epoch > requested) else {
            return EpochEndOffset::UNDEFINED;
        };
        match self.entries.iter().rev().find(|e| e.epoch <= requested) {
            Some(floor) => EpochEndOffset {
                epoch: floor.epoch,
                end_offset: higher.start_offset,
            },
            None => EpochEndOffset {
                epoch: requested,
                end_offset: higher.start_offset,
            },
        }
    }

    /// Drops entries that start at or after `end_offset` (the log was truncated there).
    pub fn truncate_from_end(&mut self, end_offset: i64) -> bool {
        let before = self.entries.len();
        self.entries.retain(|e| e.start_offset < end_offset);
        before != self.entries.len()
    }

    /// Drops entries wholly below `start_offset` (the log start moved there); the latest of
    /// them is kept, moved to start at `start_offset`.
    pub fn truncate_from_start(&mut self, start_offset: i64) -> bool {
        let below = self
            .entries
            .iter()
            .take_while(|e| e.start_offset <= start_offset)
            .count();
        if below == 0 {
            return false;
        }
        let kept = EpochEntry {
            epoch: self.entries[below - 1].epoch,
            start_offset,
        };
        let changed = below > 1 || self.entries[0] != kept;
        self.entries.drain(..below);
        self.entries.insert(0, kept);
        changed
    }
}

/// Paths of the per-log checkpoint files.
#[derive(Debug, Clone)]
pub struct CheckpointFiles {
    pub leader_epoch: PathBuf,
    pub recovery_point: PathBuf,
    pub log_start_offset: PathBuf,
    pub clean_shutdown: PathBuf,
}

impl CheckpointFiles {
    pub fn in_dir(dir: &Path) -> Self {
        CheckpointFiles {
            leader_epoch: dir.join(LEADER_EPOCH_CHECKPOINT),
            recovery_point: dir.join(RECOVERY_POINT_CHECKPOINT),
            log_start_offset: dir.join(LOG_START_OFFSET_CHECKPOINT),
            clean_shutdown: dir.join(CLEAN_SHUTDOWN_MARKER),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn cache(entries: &[(i32, i64)]) -> LeaderEpochCache {
        let mut c = LeaderEpochCache::default();
        for &(e, o) in entries {
            c.assign(e, o);
        }
        c
    }

    #[test]
    fn end_offset_for_follows_kafka() {
        let c = cache(&[(1, 0), (3, 10), (6, 25)]);
        let eo = |epoch, end_offset| EpochEndOffset { epoch, end_offset };
        assert_eq!(c.end_offset_for(-1, 40), EpochEndOffset::UNDEFINED);
        assert_eq!(c.end_offset_for(6, 40), eo(6, 40));
        assert_eq!(c.end_offset_for(3, 40), eo(3, 25));
        // Largest epoch at or below the requested one, ended by the next epoch's start.
        assert_eq!(c.end_offset_for(4, 40), eo(3, 25));
        assert_eq!(c.end_offset_for(0, 40), eo(0, 0));
        assert_eq!(c.end_offset_for(7, 40), EpochEndOffset::UNDEFINED);
        assert_eq!(
            LeaderEpochCache::default().end_offset_for(0, 5),
            EpochEndOffset::UNDEFINED
        );
    }

    #[test]
    fn assign_removes_conflicting_entries() {
        let mut c = cache(&[(1, 0), (3, 10), (6, 25)]);
        assert!(c.assign(4, 12));
        assert_eq!(c.pairs(), vec![(1, 0), (3, 10), (4, 12)]);
        assert!(!c.assign(4, 20), "same epoch at a later offset changes nothing");
        assert!(c.assign(4, 11), "same epoch at an earlier offset moves its start");
        assert_eq!(c.pairs(), vec![(1, 0), (3, 10), (4, 11)]);
    }

    #[test]
    fn truncation_from_both_ends() {
        let mut c = cache(&[(1, 0), (3, 10), (6, 25)]);
        assert!(c.truncate_from_end(25));
        assert_eq!(c.pairs(), vec![(1, 0), (3, 10)]);
        assert!(c.truncate_from_start(15));
        assert_eq!(c.pairs(), vec![(3, 15)]);
        assert!(!c.truncate_from_start(15));
    }

    #[test]
    fn checkpoint_round_trip_and_clear_errors() {
        let dir = tempfile::tempdir().expect("tempdir");
        let path = dir.path().join(LEADER_EPOCH_CHECKPOINT);
        write_pairs(&path, &[(1, 0), (4, 99)]).expect("write");
        assert_eq!(read_pairs(&path).expect("read"), Some(vec![(1, 0), (4, 99)]));
        fs::write(&path, "0\n2\n1 0\nfour 99\n").expect("write garbage");
        let err = read_pairs(&path).expect_err("garbage must not parse").to_string();
        assert!(err.contains("line 4"), "{err}");
        assert_eq!(read_pairs(&dir.path().join("missing")).expect("missing is fine"), None);
    }
}
