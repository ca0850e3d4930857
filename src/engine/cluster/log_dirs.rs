//! What a broker keeps on disk and DeleteRecords: Kafka's DescribeLogDirs answer for one
//! broker (its one log directory, the size of each replica it hosts, the filesystem's size
//! and free space) and the leader's move of a partition's log start. Apart from the
//! client requests because they concern the logs themselves, not the records in them.

use std::path::{Path, PathBuf};
use std::time::Duration;

use super::Cluster;
use crate::engine::partition::Role;
use crate::engine::protocol::{ErrorCode, Request, Response};
use crate::engine::{BrokerId, TopicPartition};

/// One broker's log directory as DescribeLogDirs tells it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirDescription {
    pub path: PathBuf,
    /// The filesystem's size and the bytes still free on it; `None` where the platform does
    /// not tell (Kafka's -1).
    pub total_bytes: Option<u64>,
    pub usable_bytes: Option<u64>,
    /// Every replica the broker hosts, by partition.
    pub replicas: Vec<LogDirReplica>,
}

/// One replica in a log directory.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct LogDirReplica {
    pub tp: TopicPartition,
    /// Bytes of its segment files.
    pub size_bytes: u64,
    /// How far its log end is behind the leader's: 0 for the leader, -1 when the leader's
    /// log end cannot be read (no leader, or its broker is down).
    pub offset_lag: i64,
}

impl LogDirDescription {
    /// Bytes of every replica in the directory: the broker's disk use.
    pub fn size_bytes(&self) -> u64 {
        self.replicas.iter().map(|r| r.size_bytes).sum()
    }
}

impl Cluster {
    /// DescribeLogDirs on `broker`: its log directory and the replicas in it, optionally
    /// only those of `topics`. NETWORK_EXCEPTION when the broker is not running.
    pub fn describe_log_dir(
        &self,
        broker: BrokerId,
        topics: Option<&[String]>,
    ) -> Result<LogDirDescription, ErrorCode> {
        let Some(b) = self.running_broker(broker) else {
            return Err(ErrorCode::NetworkException);
        };
        let mut replicas: Vec<LogDirReplica> = b
            .partitions()
            .into_iter()
            .filter(|p| topics.is_none_or(|t| t.contains(&p.tp.topic)))
            .map(|p| {
                let offset_lag = match p.role().0 {
                    Role::Leader => 0,
                    // The embedded cluster reads its leader's log end in place; a Kafka
                    // broker knows it from its fetcher.
                    Role::Follower { leader } => self
                        .running_broker(leader)
                        .and_then(|l| l.partition(&p.tp))
                        .map_or(-1, |l| (l.log.log_end_offset() - p.log.log_end_offset()).max(0)),
                    Role::Leaderless => -1,
                };
                LogDirReplica {
                    tp: p.tp.clone(),
                    size_bytes: p.log.size_bytes(),
                    offset_lag,
                }
            })
            .collect();
        replicas.sort_by(|a, b| a.tp.cmp(&b.tp));
        let (total_bytes, usable_bytes) = filesystem_space(b.dir()).unzip();
        Ok(LogDirDescription {
            path: b.dir().to_path_buf(),
            total_bytes,
            usable_bytes,
            replicas,
        })
    }

    /// DeleteRecords: asks the partition's leader to move its log start up to `offset` (-1:
    /// the high watermark, [`crate::engine::DELETE_TO_HIGH_WATERMARK`]); followers follow on
    /// their next fetch. Returns the leader's new log start (Kafka's low watermark).
    pub async fn delete_records(&self, tp: &TopicPartition, offset: i64) -> Result<i64, ErrorCode> {
        let leader = self.leader_of(tp)?;
        self.delete_records_on(leader, tp, offset).await
    }

    /// DeleteRecords served by one broker, as a client connected to it sends it: a broker
    /// that does not lead the partition answers NOT_LEADER_OR_FOLLOWER.
    pub async fn delete_records_on(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        offset: i64,
    ) -> Result<i64, ErrorCode> {
        let request = Request::DeleteRecords { tp: tp.clone(), offset };
        match self.call(broker, request, Duration::from_secs(5)).await? {
            Response::DeleteRecords {
                error: ErrorCode::None,
                low_watermark,
            } => Ok(low_watermark),
            Response::DeleteRecords { error, .. } => Err(error),
            _ => Err(ErrorCode::UnknownServerError),
        }
    }
}

/// `(total, usable)` bytes of the filesystem holding `dir` (Kafka's `getTotalSpace` and
/// `getUsableSpace`: the space an unprivileged writer may still use).
#[cfg(unix)]
fn filesystem_space(dir: &Path) -> Option<(u64, u64)> {
    use std::os::unix::ffi::OsStrExt;
    let path = std::ffi::CString::new(dir.as_os_str().as_bytes()).ok()?;
    let mut stat = std::mem::MaybeUninit::<libc::statvfs>::uninit();
    // SAFETY: `path` is a NUL-terminated string and `stat` a buffer of the size statvfs
    // fills; it is read only after statvfs reported success.
    let stat = unsafe {
        if libc::statvfs(path.as_ptr(), stat.as_mut_ptr()) != 0 {
            return None;
        }
        stat.assume_init()
    };
    let block = stat.f_frsize as u64;
    Some((
        (stat.f_blocks as u64).saturating_mul(block),
        (stat.f_bavail as u64).saturating_mul(block),
    ))
}

#[cfg(not(unix))]
fn filesystem_space(_dir: &Path) -> Option<(u64, u64)> {
    None
}
