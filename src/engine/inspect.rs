//! The read-only window invariant checkers look through: the simulation and a few tests
//! compare each replica as its own broker sees it, read replica logs byte for byte, and
//! count the requests the cluster handles. Apart from [`Cluster`] because it goes past the
//! network and the leader checks that every client request obeys; the engine itself never
//! calls it.

use std::collections::BTreeMap;

use super::cluster::Cluster;
use super::network::NodeId;
use super::partition::Role;
use super::protocol::ErrorCode;
use super::{BrokerId, TopicPartition};
use crate::storage::EpochEntry;

/// One replica as the broker hosting it sees it, where [`super::PartitionView`] shows the
/// controller's view: what an invariant checker compares across replicas.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReplicaProbe {
    pub tp: TopicPartition,
    pub broker: BrokerId,
    /// The hosting broker's registration epoch (-1 before it registered): a restarted broker
    /// is a new incarnation with fresh replica state.
    pub broker_epoch: i64,
    pub is_leader: bool,
    /// The leader this replica follows (itself when leading), `None` while leaderless.
    pub leader: Option<BrokerId>,
    /// The leader epoch this replica applied last.
    pub leader_epoch: i32,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub log_end_offset: i64,
    /// The replica's leader-epoch cache.
    pub epochs: Vec<EpochEntry>,
}

/// A cluster seen read-only, from [`Cluster::inspect`].
pub struct Inspector<'a> {
    cluster: &'a Cluster,
}

impl Cluster {
    /// The read-only window for invariant checkers.
    pub fn inspect(&self) -> Inspector<'_> {
        Inspector { cluster: self }
    }
}

impl Inspector<'_> {
    /// Every replica hosted by a running or paused broker, as that broker sees it, ordered by
    /// partition then broker. Read-only: for invariant checkers (the simulation) that compare
    /// each replica's own state with the controller's and with the other replicas'.
    pub fn replica_probes(&self) -> Vec<ReplicaProbe> {
        let mut out = Vec::new();
        self.cluster.with_instances(|instances| {
            for &(id, broker) in instances {
                let broker_epoch = broker.broker_epoch();
                for p in broker.partitions() {
                    let (role, leader_epoch) = p.role();
                    let status = p.status();
                    out.push(ReplicaProbe {
                        tp: p.tp.clone(),
                        broker: id,
                        broker_epoch,
                        is_leader: role == Role::Leader,
                        leader: match role {
                            Role::Leader => Some(id),
                            Role::Follower { leader } => Some(leader),
                            Role::Leaderless => None,
                        },
                        leader_epoch,
                        high_watermark: status.high_watermark,
                        log_start_offset: status.log_start_offset,
                        log_end_offset: status.log_end_offset,
                        epochs: status.epochs,
                    });
                }
            }
        });
        out.sort_by(|a, b| (&a.tp, a.broker).cmp(&(&b.tp, b.broker)));
        out
    }

    /// Reads a replica's own log on a running or paused broker: whole batches from the one
    /// holding `offset`, about `max_bytes` of them, none at or past `upper`. Read-only and
    /// past the network and the leader checks, for invariant checkers that compare replicas
    /// byte for byte. NOT_LEADER_OR_FOLLOWER when the broker does not host the replica.
    pub fn read_replica(
        &self,
        broker: BrokerId,
        tp: &TopicPartition,
        offset: i64,
        upper: i64,
        max_bytes: usize,
    ) -> Result<bytes::Bytes, ErrorCode> {
        let partition = self
            .cluster
            .with_instances(|instances| {
                instances
                    .iter()
                    .find(|(id, _)| *id == broker)
                    .and_then(|(_, b)| b.partition(tp))
            })
            .ok_or(ErrorCode::NotLeaderOrFollower)?;
        partition
            .log
            .read(offset, max_bytes, Some(upper))
            .map(|d| d.records)
            .map_err(|e| ErrorCode::from_storage(e.kafka_error_code()))
    }

    /// Requests the in-process network handed to each broker since the cluster started, by
    /// sender and receiving broker. Read-only: how much work the cluster does, so a checker
    /// can tell an idle cluster from one that spins.
    pub fn requests_delivered(&self) -> BTreeMap<(NodeId, BrokerId), u64> {
        self.cluster.network().delivered().into_iter().collect()
    }
}
