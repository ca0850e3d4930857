//! The simulation's clients over the Kafka protocol: the console's client for external
//! clusters ([`KafkaClient`] and [`ops`]) reaching the brokers through in-memory pipes served by
//! the wire layer ([`wire::connect_in_memory`]), so a seed that uses them checks the codec, the
//! handlers and the client as well as the engine. No socket, thread or wall clock is involved:
//! a seed replays exactly on the paused clock.
//!
//! Every call is routed to the partition's leader or the group's coordinator as the metadata
//! names them, looks them up again after NOT_LEADER_OR_FOLLOWER, a lost connection and the
//! like, and gives up with an error once [`CALL_TIMEOUT`] of simulated time has passed.

use std::collections::BTreeMap;
use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use tokio::time::Instant;

use crate::engine::{BrokerId, Clock, Cluster, OffsetSpec, TopicPartition};
use crate::remote::ops::{self, OutRecord};
use crate::remote::{
    AsyncReadWrite, BrokerAddress, ClientSettings, Dialer, KafkaClient, RemoteConfig, RemoteError, Transport,
};
use crate::wire::{self, WireConfig};

/// How long one call may take, its retries included.
pub const CALL_TIMEOUT: Duration = Duration::from_secs(10);
/// One request's answer (request.timeout.ms): a paused broker costs this much of a call.
const REQUEST_TIMEOUT_MS: u64 = 4_000;
/// Opening a connection, ApiVersions included (a paused broker accepts and never answers).
const CONNECT_TIMEOUT_MS: u64 = 2_000;
/// The wait before a call is tried again.
const RETRY_BACKOFF: Duration = Duration::from_millis(100);
/// A fetch's answer at most.
const FETCH_MAX_BYTES: i32 = 1 << 20;

/// Kafka error codes whose produce was refused before anything was appended: the batch can be
/// sent again without a chance of a duplicate.
const NOT_APPENDED_RETRIABLE: &[i16] = &[
    3,  // UNKNOWN_TOPIC_OR_PARTITION
    5,  // LEADER_NOT_AVAILABLE
    6,  // NOT_LEADER_OR_FOLLOWER
    19, // NOT_ENOUGH_REPLICAS (checked before the append)
    74, // FENCED_LEADER_EPOCH
    75, // UNKNOWN_LEADER_EPOCH
];
/// Kafka error codes after which the batch may be in the log: REQUEST_TIMED_OUT (appended,
/// not replicated in time) and NOT_ENOUGH_REPLICAS_AFTER_APPEND.
const MAYBE_APPENDED: &[i16] = &[7, 20];
/// Coordinator moved or not ready: asked again after a new FindCoordinator.
const COORDINATOR_RETRIABLE: &[i16] = &[14, 15, 16];

/// The `[wire]` settings the simulated brokers answer with. Their advertised addresses are
/// names only ([`wire::advertised_address`]); the dialer maps them back ([`wire::broker_at`]).
pub fn wire_config() -> WireConfig {
    WireConfig::default()
}

/// A produce that failed, and whether its batch may be in the log all the same (the request
/// may have reached the leader before the connection died or the answer timed out). A batch
/// that may be appended is never sent again here: the caller knows it may see it once.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}{}", if *.maybe_appended { " (the batch may have been appended)" } else { "" })]
pub struct ProduceError {
    pub message: String,
    pub maybe_appended: bool,
}

impl From<ProduceError> for String {
    fn from(e: ProduceError) -> String {
        e.to_string()
    }
}

/// Kafka-protocol clients of one simulated cluster, sharing one connection per broker. They
/// dial that `Cluster` only: after a restart (a new `Cluster`), close them and connect anew.
pub struct WireClients {
    client: KafkaClient,
    /// Record timestamps come from the cluster's clock, as the in-process producer's do.
    clock: Clock,
    call_timeout: Duration,
}

/// A dialer that opens in-memory connections to `cluster`'s brokers: an advertised address
/// names its broker through [`wire::broker_at`]; another address, or a broker that is not
/// running, is refused as a closed port would be.
pub fn in_memory_dialer(cluster: &Cluster, config: Arc<WireConfig>) -> Dialer {
    let cluster = cluster.clone();
    Dialer::new(move |address: &BrokerAddress| {
        let opened = match wire::broker_at(&config, &address.host, address.port) {
            Some(broker) => wire::connect_in_memory(&cluster, Arc::clone(&config), broker)
                .map(|pipe| Box::new(pipe) as Box<dyn AsyncReadWrite>)
                .map_err(|e| std::io::Error::new(std::io::ErrorKind::ConnectionRefused, e.to_string())),
            None => Err(std::io::Error::new(
                std::io::ErrorKind::AddrNotAvailable,
                format!("{address} is no broker of the simulated cluster"),
            )),
        };
        Box::pin(std::future::ready(opened))
    })
}

impl WireClients {
    /// Bootstraps from every broker of `cluster` in id order (the first that answers gives the
    /// metadata).
    pub async fn connect(cluster: &Cluster) -> Result<WireClients, String> {
        let config = Arc::new(wire_config());
        let ids: Vec<BrokerId> = cluster.broker_states().into_iter().map(|(id, _)| id).collect();
        let mut bootstrap = Vec::new();
        for id in ids {
            bootstrap.push(
                wire::advertised_address(&config, id)
                    .map_err(|e| e.to_string())?
                    .to_string(),
            );
        }
        let mut settings = ClientSettings::from_config(&RemoteConfig {
            bootstrap: bootstrap.join(","),
            client_id: "kdeck-sim".into(),
            connect_timeout_ms: CONNECT_TIMEOUT_MS,
            request_timeout_ms: REQUEST_TIMEOUT_MS,
            reconnect_backoff_ms: 50,
            reconnect_backoff_max_ms: 1_000,
            metadata_max_age_ms: 5_000,
            ..RemoteConfig::default()
        })?;
        settings.transport = Transport::Dial(in_memory_dialer(cluster, config));
        settings.backoff_jitter = false;
        let connect = KafkaClient::connect(settings);
        let client = match tokio::time::timeout(CALL_TIMEOUT, connect).await {
            Ok(connected) => connected.map_err(|e| e.to_string())?,
            Err(_) => return Err(format!("no broker answered within {} ms", CALL_TIMEOUT.as_millis())),
        };
        Ok(WireClients {
            client,
            clock: cluster.clock().clone(),
            call_timeout: CALL_TIMEOUT,
        })
    }

    /// Sends `values` as one batch to `tp`'s leader with `acks` (0, 1 or -1) and returns the
    /// batch's base offset (-1 with acks=0). Sent again only after an answer that proves it
    /// was not appended (NOT_LEADER_OR_FOLLOWER, a refused connection...); a lost connection
    /// or a timeout ends the call with [`ProduceError::maybe_appended`] set.
    /// Sends `records` (key, value) as one plain batch to `tp`; the base offset it got.
    pub async fn produce(
        &self,
        tp: &TopicPartition,
        records: Vec<(Option<Bytes>, Bytes)>,
        acks: i16,
    ) -> Result<i64, ProduceError> {
        let refused = |message: String| ProduceError {
            message,
            maybe_appended: false,
        };
        let now = self.clock.now_ms();
        let records: Vec<OutRecord> = records
            .into_iter()
            .map(|(key, value)| OutRecord {
                key,
                value: Some(value),
                timestamp: Some(now),
                ..OutRecord::default()
            })
            .collect();
        if records.is_empty() {
            return Err(refused(format!("no records to produce to {}", describe(tp))));
        }
        let batch = ops::encode_batch(&records).map_err(|e| refused(e.to_string()))?;
        let deadline = Instant::now() + self.call_timeout;
        let mut last = None;
        loop {
            let attempt = ops::produce_once(&self.client, &tp.topic, tp.partition, &batch, acks);
            let error = match tokio::time::timeout_at(deadline, attempt).await {
                Ok(Ok(offset)) => return Ok(offset),
                Ok(Err(error)) => error,
                Err(_) => {
                    return Err(ProduceError {
                        message: self.gave_up(&format!("producing to {}", describe(tp)), last.as_ref()),
                        maybe_appended: true,
                    });
                }
            };
            let message = format!("producing to {}: {error}", describe(tp));
            match produce_outcome(&error) {
                Retry::Again => {}
                Retry::Never { maybe_appended } => {
                    return Err(ProduceError {
                        message,
                        maybe_appended,
                    });
                }
            }
            last = Some(error);
            if !self.back_off(deadline, None).await {
                return Err(refused(
                    self.gave_up(&format!("producing to {}", describe(tp)), last.as_ref()),
                ));
            }
        }
    }

    /// The records of `tp` from `offset` up to the high watermark, read from its leader
    /// (read_uncommitted: what a consumer may see), as `(offset, value, leader epoch of the
    /// batch)`. One fetch: at most [`FETCH_MAX_BYTES`], empty at the end of the log.
    #[cfg(test)]
    pub async fn fetch(&self, tp: &TopicPartition, offset: i64) -> Result<Vec<(i64, Bytes, i32)>, String> {
        self.fetch_with_next(tp, offset).await.map(|(records, _)| records)
    }

    /// As [`WireClients::fetch`], with where the next fetch starts: past the last whole batch
    /// read, which in a compacted log may hold no record at all (a consumer moves past it,
    /// as Kafka's does with `batch.nextOffset`).
    pub async fn fetch_with_next(
        &self,
        tp: &TopicPartition,
        offset: i64,
    ) -> Result<(Vec<(i64, Bytes, i32)>, i64), String> {
        let what = format!("fetching {} at offset {offset}", describe(tp));
        let fetched = self
            .retrying(&what, None, || {
                ops::fetch(
                    &self.client,
                    &tp.topic,
                    tp.partition,
                    offset,
                    Duration::ZERO,
                    FETCH_MAX_BYTES,
                )
            })
            .await?;
        let records = fetched
            .records
            .into_iter()
            .map(|r| {
                let epoch = fetched
                    .leader_epochs
                    .iter()
                    .take_while(|(base, _)| *base <= r.offset)
                    .last()
                    .map_or(-1, |(_, epoch)| *epoch);
                (r.offset, r.value.unwrap_or_default(), epoch)
            })
            .collect();
        Ok((records, fetched.next_offset))
    }

    /// `tp`'s log start ([`OffsetSpec::Earliest`]) or high watermark ([`OffsetSpec::Latest`]),
    /// from its leader.
    pub async fn list_offsets(&self, tp: &TopicPartition, spec: OffsetSpec) -> Result<i64, String> {
        let what = format!("listing the {spec:?} offset of {}", describe(tp));
        let wanted = [(tp.topic.clone(), tp.partition)];
        let (client, wanted) = (&self.client, &wanted);
        self.retrying(&what, None, || async move {
            ops::list_offsets(client, wanted, spec)
                .await
                .pop()
                .unwrap_or_else(|| Err(RemoteError::Other("no answer for the partition".into())))
        })
        .await
    }

    /// Commits `offset` for `tp` in `group` as a consumer outside the membership (OffsetCommit
    /// with generation -1 and no member id), at the group's coordinator.
    pub async fn commit(&self, group: &str, tp: &TopicPartition, offset: i64) -> Result<(), String> {
        let what = format!("committing offset {offset} of {} for group {group}", describe(tp));
        let offsets = [(tp.topic.clone(), tp.partition, offset)];
        self.retrying(&what, Some(group), || {
            ops::commit_offsets(&self.client, group, &offsets)
        })
        .await
    }

    /// Every offset `group` has committed (OffsetFetch at the group's coordinator).
    pub async fn committed(&self, group: &str) -> Result<BTreeMap<TopicPartition, i64>, String> {
        let what = format!("reading group {group}'s committed offsets");
        let offsets = self
            .retrying(&what, Some(group), || ops::committed_offsets(&self.client, group))
            .await?;
        Ok(offsets
            .into_iter()
            .map(|c| (TopicPartition::new(c.topic, c.partition), c.offset))
            .collect())
    }

    /// Closes every connection; later calls fail.
    pub fn close(&self) {
        self.client.close();
    }

    /// Runs `attempt` until it succeeds, fails for good, or the call's time is up. A call that
    /// may be repeated safely: a read, or a commit of one offset.
    async fn retrying<T, F, Fut>(&self, what: &str, group: Option<&str>, mut attempt: F) -> Result<T, String>
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, RemoteError>>,
    {
        let deadline = Instant::now() + self.call_timeout;
        let mut last = None;
        loop {
            match tokio::time::timeout_at(deadline, attempt()).await {
                Ok(Ok(value)) => return Ok(value),
                Ok(Err(error)) if retriable_read(&error) => last = Some(error),
                Ok(Err(error)) => return Err(format!("{what}: {error}")),
                Err(_) => return Err(self.gave_up(what, last.as_ref())),
            }
            if !self.back_off(deadline, group).await {
                return Err(self.gave_up(what, last.as_ref()));
            }
        }
    }

    /// Forgets what may be stale (the group's coordinator, the metadata) and waits a little
    /// before the next try; false when the call's time runs out first.
    async fn back_off(&self, deadline: Instant, group: Option<&str>) -> bool {
        if let Some(group) = group {
            self.client.forget_coordinator(group);
        }
        tokio::time::sleep_until(deadline.min(Instant::now() + RETRY_BACKOFF)).await;
        // A failed refresh is no reason to stop: the next try says what is wrong.
        let _ = tokio::time::timeout_at(deadline, self.client.refresh_metadata()).await;
        Instant::now() < deadline
    }

    fn gave_up(&self, what: &str, last: Option<&RemoteError>) -> String {
        let ms = self.call_timeout.as_millis();
        match last {
            Some(error) => format!("{what}: timed out after {ms} ms; last error: {error}"),
            None => format!("{what}: timed out after {ms} ms"),
        }
    }
}

fn describe(tp: &TopicPartition) -> String {
    format!("{}/{}", tp.topic, tp.partition)
}

/// What to do after a failed produce attempt.
#[derive(Debug, PartialEq, Eq)]
enum Retry {
    Again,
    Never { maybe_appended: bool },
}

fn produce_outcome(error: &RemoteError) -> Retry {
    match error {
        // Nothing reached a broker: no connection, or no broker to send to.
        RemoteError::Connect { .. } | RemoteError::NoBootstrap(_) | RemoteError::UnknownBroker(_) => Retry::Again,
        RemoteError::Kafka { code, .. } if NOT_APPENDED_RETRIABLE.contains(code) => Retry::Again,
        RemoteError::Kafka { code, .. } => Retry::Never {
            maybe_appended: MAYBE_APPENDED.contains(code),
        },
        // The request may have reached the leader before the answer was lost.
        RemoteError::Timeout { .. } | RemoteError::Disconnected { .. } | RemoteError::Protocol { .. } => {
            Retry::Never { maybe_appended: true }
        }
        RemoteError::Tls { .. }
        | RemoteError::Sasl { .. }
        | RemoteError::Unsupported { .. }
        | RemoteError::Other(_) => Retry::Never { maybe_appended: false },
    }
}

/// Failures worth another try for a call that may be repeated: the broker went away or was
/// silent, or the leader or coordinator moved.
fn retriable_read(error: &RemoteError) -> bool {
    match error {
        RemoteError::Kafka { code, .. } => {
            NOT_APPENDED_RETRIABLE.contains(code) || COORDINATOR_RETRIABLE.contains(code) || *code == 7
        }
        RemoteError::UnknownBroker(_) => true,
        other => other.is_connection_error(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::engine::{ClusterConfig, TopicConfig};

    async fn start(brokers: i32) -> (tempfile::TempDir, Cluster) {
        let dir = tempfile::tempdir().expect("temp dir");
        let config = ClusterConfig {
            data_dir: dir.path().to_path_buf(),
            brokers,
            ..ClusterConfig::default()
        };
        let cluster = Cluster::start(config).await.expect("the cluster starts");
        (dir, cluster)
    }

    /// Creates `topic` and waits until each partition leads with its full ISR, and every
    /// group has a coordinator.
    async fn create(cluster: &Cluster, topic: &str, partitions: i32, replication_factor: i32) {
        cluster
            .create_topic(topic, TopicConfig::new(partitions, replication_factor))
            .await
            .expect("topic created");
        cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.partitions
                    .iter()
                    .filter(|p| p.tp.topic == topic || p.tp.topic == "__consumer_offsets")
                    .all(|p| p.leader.is_some() && p.isr.len() == p.replicas.len() && p.high_watermark.is_some())
                    && s.partitions.iter().any(|p| p.tp.topic == topic)
            })
            .await
            .expect("partitions ready");
    }

    /// Keyless records of these values.
    fn values(texts: &[&str]) -> Vec<(Option<Bytes>, Bytes)> {
        texts.iter().map(|t| (None, Bytes::from(t.to_string()))).collect()
    }

    fn leader(cluster: &Cluster, tp: &TopicPartition) -> (BrokerId, i32) {
        let snapshot = cluster.snapshot();
        let p = snapshot.partition(tp).expect("the partition exists");
        (p.leader.expect("a leader"), p.leader_epoch)
    }

    /// Produces with every acks setting, reads the batches back at the offsets produce
    /// reported, lists offsets, commits and reads the commit back. Returns what it saw.
    async fn round_trip(cluster: &Cluster, clients: &WireClients, log: &mut Vec<String>) {
        let tp = TopicPartition::new("events", 1);
        let (_, epoch) = leader(cluster, &tp);
        let first = clients
            .produce(&tp, values(&["a", "b", "c"]), -1)
            .await
            .expect("acks=all");
        let second = clients.produce(&tp, values(&["d"]), 1).await.expect("acks=1");
        let unacked = clients.produce(&tp, values(&["e"]), 0).await.expect("acks=0 is sent");
        assert_eq!((first, second, unacked), (0, 3, -1));
        let third = clients.produce(&tp, values(&["f", "g"]), -1).await.expect("acks=all");
        assert_eq!(third, 5, "the acks=0 batch went first, on the same connection");
        let fetched = clients.fetch(&tp, 0).await.expect("fetched");
        let expected: Vec<(i64, Bytes, i32)> = ["a", "b", "c", "d", "e", "f", "g"]
            .iter()
            .zip(0..)
            .map(|(v, offset)| (offset, Bytes::from(v.to_string()), epoch))
            .collect();
        assert_eq!(fetched, expected);
        let from_middle = clients.fetch(&tp, 4).await.expect("fetched");
        assert_eq!(from_middle, expected[4..].to_vec(), "records before the offset are cut");
        assert_eq!(clients.fetch(&tp, 7).await, Ok(Vec::new()), "nothing past the end");
        assert_eq!(clients.list_offsets(&tp, OffsetSpec::Earliest).await, Ok(0));
        assert_eq!(clients.list_offsets(&tp, OffsetSpec::Latest).await, Ok(7));
        let other = TopicPartition::new("events", 0);
        assert_eq!(clients.committed("readers").await, Ok(BTreeMap::new()));
        clients.commit("readers", &tp, 5).await.expect("committed");
        clients.commit("readers", &other, 0).await.expect("committed");
        clients.commit("readers", &tp, 7).await.expect("committed again");
        let committed = clients.committed("readers").await.expect("read back");
        assert_eq!(committed, BTreeMap::from([(other, 0), (tp.clone(), 7)]));
        log.push(format!("round trip: {fetched:?} committed {committed:?}"));
    }

    /// Kills the leader of events/1: the next produce waits for the new leader (refused
    /// connections are retried) and lands after what was there, in a later epoch.
    async fn leader_killed(cluster: &Cluster, clients: &WireClients, log: &mut Vec<String>) {
        let tp = TopicPartition::new("events", 1);
        let end = clients.list_offsets(&tp, OffsetSpec::Latest).await.expect("end");
        let (old, old_epoch) = leader(cluster, &tp);
        cluster.kill(old).expect("killed");
        // The client notices its connection closed (as it would a TCP reset) before it sends:
        // a request sent on it first would be lost with an unknown outcome (see below).
        tokio::time::sleep(Duration::from_millis(1)).await;
        let began = Instant::now();
        let offset = clients
            .produce(&tp, values(&["after"]), -1)
            .await
            .expect("acked by the new leader");
        let took = began.elapsed();
        assert!(took < CALL_TIMEOUT, "{took:?}");
        assert_eq!(offset, end);
        let (new, new_epoch) = leader(cluster, &tp);
        assert_ne!(new, old);
        assert!(new_epoch > old_epoch);
        let fetched = clients.fetch(&tp, offset).await.expect("fetched");
        assert_eq!(fetched, vec![(offset, Bytes::from("after"), new_epoch)]);
        assert_eq!(
            clients.committed("readers").await.map(|c| c.len()),
            Ok(2),
            "commits survive"
        );
        log.push(format!(
            "leader {old} killed: produced at {offset} to {new} after {} ms",
            took.as_millis()
        ));
        cluster.start_broker(old).expect("restarted");
    }

    /// A produce waiting on a paused leader when that leader dies ends at once, saying the
    /// batch may have been appended (it may: the broker read it before it froze).
    async fn in_flight_produce_lost(cluster: &Cluster, clients: &WireClients, log: &mut Vec<String>) {
        let tp = TopicPartition::new("events", 0);
        // Warm up: the connection to the leader is open before it pauses.
        clients.produce(&tp, values(&["warm"]), -1).await.expect("acked");
        let (old, _) = leader(cluster, &tp);
        cluster.pause(old).expect("paused");
        let began = Instant::now();
        let (outcome, ()) = tokio::join!(clients.produce(&tp, values(&["lost?"]), -1), async {
            tokio::time::sleep(Duration::from_millis(500)).await;
            cluster.kill(old).expect("killed");
        });
        let error = outcome.expect_err("the answer was lost");
        assert!(error.maybe_appended, "{error}");
        assert!(began.elapsed() < Duration::from_secs(1), "{:?}", began.elapsed());
        log.push(format!("in flight: {error}"));
        cluster.start_broker(old).expect("restarted");
    }

    /// A topic with one replica on a paused broker: every call times out within the call's
    /// time, with the reason; after the broker resumes, calls work again.
    async fn paused_broker(cluster: &Cluster, clients: &WireClients, log: &mut Vec<String>) {
        let tp = TopicPartition::new("solo", 0);
        // Its one replica may be on a broker that just restarted.
        cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.partition(&tp).is_some_and(|p| p.available())
            })
            .await
            .expect("solo has a leader");
        clients.produce(&tp, values(&["x"]), -1).await.expect("acked");
        let (only, _) = leader(cluster, &tp);
        cluster.pause(only).expect("paused");
        let began = Instant::now();
        let error = clients.fetch(&tp, 0).await.expect_err("no answer from a paused broker");
        let took = began.elapsed();
        assert!(error.contains("timed out after 10000 ms"), "{error}");
        assert!(
            took >= CALL_TIMEOUT && took < CALL_TIMEOUT + Duration::from_secs(1),
            "{took:?}"
        );
        let produced = clients
            .produce(&tp, values(&["y"]), -1)
            .await
            .expect_err("no leader to take it");
        log.push(format!(
            "paused: {error} after {} ms; produce: {produced}",
            took.as_millis()
        ));
        cluster.resume(only).expect("resumed");
        cluster
            .wait_for(Duration::from_secs(30), |s| {
                s.partition(&tp).is_some_and(|p| p.available())
            })
            .await
            .expect("the partition is back");
        let fetched = clients.fetch(&tp, 0).await.expect("answers again");
        assert_eq!(fetched.first().map(|r| r.1.clone()), Some(Bytes::from("x")));
        log.push(format!("resumed: {} records", fetched.len()));
    }

    async fn cluster_with_topics() -> (tempfile::TempDir, Cluster, WireClients) {
        let (dir, cluster) = start(3).await;
        create(&cluster, "events", 2, 3).await;
        create(&cluster, "solo", 1, 1).await;
        let clients = WireClients::connect(&cluster).await.expect("connects");
        (dir, cluster, clients)
    }

    #[tokio::test(start_paused = true)]
    async fn produced_batches_are_fetched_at_their_offsets_and_commits_read_back() {
        let (_dir, cluster, clients) = cluster_with_topics().await;
        round_trip(&cluster, &clients, &mut Vec::new()).await;
        clients.close();
        cluster.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_produce_after_the_leader_dies_goes_to_the_new_leader() {
        let (_dir, cluster, clients) = cluster_with_topics().await;
        round_trip(&cluster, &clients, &mut Vec::new()).await;
        leader_killed(&cluster, &clients, &mut Vec::new()).await;
        cluster.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_produce_in_flight_when_its_leader_dies_may_have_been_appended() {
        let (_dir, cluster, clients) = cluster_with_topics().await;
        in_flight_produce_lost(&cluster, &clients, &mut Vec::new()).await;
        cluster.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_call_to_a_paused_broker_times_out() {
        let (_dir, cluster, clients) = cluster_with_topics().await;
        paused_broker(&cluster, &clients, &mut Vec::new()).await;
        cluster.shutdown().await;
    }

    #[tokio::test(start_paused = true)]
    async fn the_clients_bootstrap_past_a_dead_broker_and_refuse_unknown_addresses() {
        let (_dir, cluster) = start(3).await;
        create(&cluster, "events", 1, 3).await;
        cluster.kill(0).expect("killed");
        let clients = WireClients::connect(&cluster).await.expect("bootstraps from broker 1");
        let tp = TopicPartition::new("events", 0);
        let offset = clients.produce(&tp, values(&["v"]), -1).await.expect("acked");
        assert_eq!(clients.fetch(&tp, offset).await.map(|r| r.len()), Ok(1));

        let dialer = in_memory_dialer(&cluster, Arc::new(wire_config()));
        let elsewhere = BrokerAddress {
            host: "127.0.0.1".into(),
            port: 9000,
        };
        let refused = dialer.dial(&elsewhere).await.err().map(|e| e.kind());
        assert_eq!(refused, Some(std::io::ErrorKind::AddrNotAvailable));
        let dead = BrokerAddress {
            host: "127.0.0.1".into(),
            port: 9092,
        };
        let refused = dialer.dial(&dead).await.err().map(|e| e.kind());
        assert_eq!(refused, Some(std::io::ErrorKind::ConnectionRefused), "broker 0 is down");
        cluster.shutdown().await;
    }

    #[test]
    fn produce_errors_say_whether_the_batch_may_be_in_the_log() {
        let kafka = |code| RemoteError::kafka("producing", code, None);
        assert_eq!(produce_outcome(&kafka(6)), Retry::Again);
        assert_eq!(produce_outcome(&kafka(19)), Retry::Again);
        assert_eq!(produce_outcome(&kafka(20)), Retry::Never { maybe_appended: true });
        assert_eq!(produce_outcome(&kafka(7)), Retry::Never { maybe_appended: true });
        assert_eq!(produce_outcome(&kafka(10)), Retry::Never { maybe_appended: false });
        let lost = RemoteError::Disconnected {
            broker: "broker 1".into(),
            reason: "closed".into(),
        };
        assert_eq!(produce_outcome(&lost), Retry::Never { maybe_appended: true });
        let refused = RemoteError::Connect {
            address: "broker 1".into(),
            reason: "refused".into(),
        };
        assert_eq!(produce_outcome(&refused), Retry::Again);
        let error = ProduceError {
            message: "producing to t/0: lost".into(),
            maybe_appended: true,
        };
        assert_eq!(
            String::from(error),
            "producing to t/0: lost (the batch may have been appended)"
        );
    }

    /// Everything above on one cluster, in one paused-clock runtime of its own.
    fn scenario() -> Vec<String> {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_time()
            .start_paused(true)
            .build()
            .expect("a runtime");
        let log = runtime.block_on(async {
            let began = Instant::now();
            let (_dir, cluster, clients) = cluster_with_topics().await;
            let mut log = Vec::new();
            round_trip(&cluster, &clients, &mut log).await;
            leader_killed(&cluster, &clients, &mut log).await;
            in_flight_produce_lost(&cluster, &clients, &mut log).await;
            paused_broker(&cluster, &clients, &mut log).await;
            let tp = TopicPartition::new("events", 0);
            let fetched = clients.fetch(&tp, 0).await;
            log.push(format!("events/0 at the end: {fetched:?}"));
            log.push(format!("simulated: {} ms", began.elapsed().as_millis()));
            cluster.shutdown().await;
            log
        });
        runtime.shutdown_background();
        log
    }

    #[test]
    fn the_same_calls_on_the_paused_clock_give_the_same_outcome_twice() {
        let first = scenario();
        // Shown when the comparison fails.
        println!("{}", first.join("\n"));
        let second = scenario();
        assert_eq!(first, second);
    }
}
