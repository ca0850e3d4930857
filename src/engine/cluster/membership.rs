//! Brokers joining and leaving the running cluster. A new broker takes the next id, an empty
//! log directory, registers and then gets partitions only by reassignment or new topics (as
//! in Kafka). A decommission drains the broker with the reassignment planner (KIP-455 moves),
//! and a task follows it: once no partition has a replica there, a controlled shutdown, then
//! UnregisterBroker, after which the broker is gone from the metadata.
//!
//! Both are in the controller's persisted metadata: a restart on the same data directory
//! launches the added brokers again, leaves the decommissioned ones out, and resumes a drain.

use std::time::Duration;

use anyhow::{Context, Result, anyhow, bail};

use super::{BrokerState, Cluster, Membership, lock};
use crate::engine::controller::MetadataImage;
use crate::engine::{BrokerId, TopicPartition};
use crate::kafka::reassign::{self, Assignment, Goal};

/// How often a drain's follower looks at the metadata (on the cluster's clock).
const DRAIN_CHECK: Duration = Duration::from_millis(100);

impl Cluster {
    /// Adds a broker: the id one past the highest the cluster has known, an empty log
    /// directory; it registers with the controller and is unfenced by its first heartbeat.
    /// It holds no partition until a reassignment or a new topic puts one there.
    pub fn add_broker(&self) -> Result<BrokerId> {
        let _one_at_a_time = lock(&self.inner.membership);
        let image = self.metadata();
        let highest = [image.highest_known_broker(), self.slots().keys().next_back().copied()]
            .into_iter()
            .flatten()
            .max();
        let id = highest.map_or(0, |h| h + 1);
        let dir = self.inner.config.data_dir.join(format!("broker-{id}"));
        if dir.exists() {
            bail!(
                "{} exists but the cluster's metadata knows no broker {id}: move it away to add a broker",
                dir.display()
            );
        }
        self.inner.ctx.controller.note_added_broker(id)?;
        lock(&self.inner.joining).insert(id);
        self.launch(id);
        Ok(id)
    }

    /// Starts decommissioning broker `id`: its replicas move to the other live brokers (the
    /// drain planner's moves), then it shuts down and leaves the metadata. Refused when it is
    /// the last broker, or when a partition it holds needs more live brokers than the others.
    /// Returns how many replicas move.
    pub async fn decommission(&self, id: BrokerId) -> Result<usize> {
        let _one_at_a_time = lock(&self.inner.membership);
        let image = self.metadata();
        if !self.slots().contains_key(&id) {
            bail!("there is no broker {id}");
        }
        if image.draining.contains_key(&id) {
            bail!("broker {id} is already being decommissioned");
        }
        let others: Vec<BrokerId> = self
            .slots()
            .keys()
            .copied()
            .filter(|b| *b != id && !image.draining.contains_key(b))
            .collect();
        if others.is_empty() {
            bail!("broker {id} is the last broker of the cluster: it cannot be decommissioned");
        }
        let live: Vec<BrokerId> = others.iter().copied().filter(|b| image.is_live(*b)).collect();
        check_room(&image, id, &live)?;
        let current: Vec<Assignment> = image
            .partitions()
            .map(|(tp, p)| Assignment::new(tp.topic, tp.partition, p.target_replicas()))
            .collect();
        let mut brokers = live.clone();
        brokers.push(id);
        let drain = Goal::Drain {
            broker: id,
            topics: Vec::new(),
        };
        let plan = reassign::propose(&current, &brokers, &drain).map_err(|e| anyhow!("broker {id}: {e}"))?;
        let moves: Vec<(TopicPartition, Option<Vec<BrokerId>>)> = plan
            .partitions
            .iter()
            .map(|a| {
                (
                    TopicPartition::new(a.topic.clone(), a.partition),
                    Some(a.replicas.clone()),
                )
            })
            .collect();
        let host = self.controller_host()?;
        let controller = &self.inner.ctx.controller;
        let replicas = image.replica_count(id);
        let (results, changed) = controller.alter_reassignments(&moves)?;
        if let Some(changed) = changed {
            host.publish(changed);
        }
        let refused: Vec<String> = results
            .iter()
            .filter_map(|(tp, e)| e.as_ref().map(|e| format!("{tp}: {e}")))
            .collect();
        if !refused.is_empty() {
            // All or nothing: the moves that started go back, so no half drain is left behind.
            let undo: Vec<(TopicPartition, Option<Vec<BrokerId>>)> = results
                .iter()
                .filter(|(_, e)| e.is_none())
                .map(|(tp, _)| (tp.clone(), None))
                .collect();
            if let Ok((_, Some(changed))) = controller.alter_reassignments(&undo) {
                host.publish(changed);
            }
            bail!("broker {id} cannot be drained: {}", refused.join("; "));
        }
        controller
            .begin_drain(id, replicas)
            .context("recording the decommission")?;
        self.follow_drain(id);
        Ok(replicas)
    }

    /// Follows broker `id`'s drain to its end (also after a restart, from the metadata).
    pub(super) fn follow_drain(&self, id: BrokerId) {
        let task = tokio::spawn(self.clone().drain(id));
        if let Some(old) = lock(&self.inner.drains).insert(id, task) {
            old.abort();
        }
    }

    /// Waits until no partition has a replica on `id`, shuts it down in control, then has
    /// the controller forget it. A broker killed meanwhile is not started again: its moves
    /// finish without it where another in-sync replica is left (they wait for it where it held
    /// the only copy), and then it leaves as it is. A paused one waits until it is resumed.
    async fn drain(self, id: BrokerId) {
        let clock = self.inner.ctx.clock.clone();
        loop {
            clock.sleep(DRAIN_CHECK).await;
            let image = self.metadata();
            if !image.draining.contains_key(&id) {
                return;
            }
            if image.replica_count(id) > 0 {
                continue;
            }
            let state = self.slots().get(&id).map(|s| s.state);
            match state {
                Some(BrokerState::Running) => {
                    if let Err(e) = self.stop(id).await {
                        tracing::warn!(broker = id, "decommission: controlled shutdown not done yet: {e:#}");
                    }
                    continue;
                }
                Some(BrokerState::Paused) => continue,
                _ => {}
            }
            let Ok(host) = self.controller_host() else {
                continue;
            };
            match self.inner.ctx.controller.unregister_broker(id) {
                Ok(changed) => {
                    if let Some(changed) = changed {
                        host.publish(changed);
                    }
                }
                Err(e) => {
                    tracing::warn!(broker = id, "decommission: unregistering: {e}");
                    continue;
                }
            }
            self.slots().remove(&id);
            lock(&self.inner.joining).remove(&id);
            lock(&self.inner.drains).remove(&id);
            return;
        }
    }

    /// Where broker `id` stands: draining (with its progress), joining, or a member.
    pub(super) fn membership(&self, image: &MetadataImage, id: BrokerId, unfenced: bool) -> Membership {
        if let Some(total) = image.draining.get(&id) {
            return Membership::Draining {
                left: image.replica_count(id),
                total: *total,
            };
        }
        let mut joining = lock(&self.inner.joining);
        if !joining.contains(&id) {
            return Membership::Member;
        }
        if unfenced {
            joining.remove(&id);
            Membership::Member
        } else {
            Membership::Joining
        }
    }
}

/// Every partition on `id` must find its replication factor among the `live` other brokers.
fn check_room(image: &MetadataImage, id: BrokerId, live: &[BrokerId]) -> Result<()> {
    for (tp, p) in image.partitions() {
        let target = p.target_replicas();
        if !target.contains(&id) {
            continue;
        }
        if target.len() > live.len() {
            bail!(
                "cannot decommission broker {id}: topic {} has replication factor {} and only {} other live broker{} ({:?}) would be left (partition {tp})",
                tp.topic,
                target.len(),
                live.len(),
                if live.len() == 1 { "" } else { "s" },
                live
            );
        }
    }
    Ok(())
}
