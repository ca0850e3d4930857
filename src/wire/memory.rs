//! Kafka connections without sockets: one end of an in-memory pipe is served exactly as a
//! connection the listener accepted, the other end goes to the client. Nothing here binds a
//! port, reads the wall clock or starts a thread, so a simulation on tokio's paused clock in
//! a current-thread runtime replays it exactly.
//!
//! The brokers advertise `host:base_port + id` in Metadata as a bound listener would; with no
//! listener these are only names, and [`broker_at`] maps one back to its broker for a client's
//! dialer.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr};
use std::sync::{Arc, Mutex};

use tokio::io::DuplexStream;
use tokio::sync::{broadcast, watch};

use super::fetch_session::FetchSessions;
use super::handlers::Context;
use super::{WireConfig, WireError, connection};
use crate::engine::{BrokerId, BrokerState, Cluster, EventKind};

/// Bytes a pipe holds in each direction before the writer waits for the reader: about what
/// a socket's buffers hold, so a large fetch answer flows in a few rounds.
pub(super) const PIPE_BYTES: usize = 256 * 1024;

/// The port advertised when `base_port` is 0 (a listener would pick a free one; a name needs
/// none, so Kafka's default stands in).
const NAMED_BASE_PORT: u16 = 9092;

/// The address broker `broker` advertises without a listener: `host:base_port + id`, with
/// [`NAMED_BASE_PORT`] for a `base_port` of 0. The host must be an IP address: looking a
/// name up would read the system's resolver.
pub fn advertised_address(config: &WireConfig, broker: BrokerId) -> Result<SocketAddr, WireError> {
    let ip: IpAddr = config
        .host
        .parse()
        .map_err(|_| WireError::BadHost(config.host.clone()))?;
    let base = base_port(config);
    let port = u16::try_from(i32::from(base) + broker)
        .ok()
        .filter(|_| broker >= 0)
        .ok_or(WireError::PortRange { base, broker })?;
    Ok(SocketAddr::new(ip, port))
}

/// The broker whose [`advertised_address`] is `host:port`; None for another host or a port
/// below the base.
pub fn broker_at(config: &WireConfig, host: &str, port: u16) -> Option<BrokerId> {
    let ours: IpAddr = config.host.parse().ok()?;
    let theirs: IpAddr = host.trim_start_matches('[').trim_end_matches(']').parse().ok()?;
    if ours != theirs {
        return None;
    }
    port.checked_sub(base_port(config)).map(BrokerId::from)
}

fn base_port(config: &WireConfig) -> u16 {
    if config.base_port == 0 {
        NAMED_BASE_PORT
    } else {
        config.base_port
    }
}

/// Opens a Kafka connection to broker `broker` of `cluster` without TCP, with no
/// [`super::WireServer`]: the returned stream is the client's end. The broker answers as its
/// listener would (same handlers, same limits from `config`). As over TCP, a broker that is
/// stopped or killed refuses, a paused broker accepts and answers nothing until resumed, and
/// the connection is dropped when its broker stops or crashes. The broker's state is followed
/// through the cluster's events, at once rather than at the listener's polling interval.
/// [`Cluster::shutdown`] announces nothing: its connections end at their next request (the
/// broker is down) or when the client hangs up.
pub fn connect_in_memory(
    cluster: &Cluster,
    config: Arc<WireConfig>,
    broker: BrokerId,
) -> Result<DuplexStream, WireError> {
    // Subscribed before the state is read, so no change in between goes unseen.
    let events = cluster.events();
    let states = cluster.broker_states();
    let paused = match states.iter().find(|(id, _)| *id == broker).map(|(_, s)| *s) {
        Some(BrokerState::Running) => false,
        Some(BrokerState::Paused) => true,
        Some(BrokerState::Stopped | BrokerState::Killed) => return Err(WireError::NotRunning(broker)),
        None => return Err(WireError::NoBroker(broker)),
    };
    let mut addresses = BTreeMap::new();
    for (id, _) in &states {
        addresses.insert(*id, advertised_address(&config, *id)?);
    }
    let ctx = Arc::new(Context {
        cluster: cluster.clone(),
        broker,
        fetch_sessions: Arc::new(FetchSessions::for_config(&config)),
        config,
        addresses: Arc::new(Mutex::new(addresses)),
    });
    let (client, server) = tokio::io::duplex(PIPE_BYTES);
    tokio::spawn(serve_following(server, ctx, paused, events));
    Ok(client)
}

/// What one cluster event means for a connection to one broker.
#[derive(Debug, PartialEq, Eq)]
enum Follow {
    Pause,
    Resume,
    Close,
    Nothing,
}

fn follow(broker: BrokerId, event: Result<EventKind, broadcast::error::RecvError>) -> Follow {
    match event {
        Ok(EventKind::BrokerPaused { broker: b }) if b == broker => Follow::Pause,
        Ok(EventKind::BrokerResumed { broker: b }) if b == broker => Follow::Resume,
        // A start means a stop went by unseen: this connection belongs to the old instance.
        Ok(EventKind::BrokerStopped { broker: b, .. } | EventKind::BrokerStarted { broker: b, .. }) if b == broker => {
            Follow::Close
        }
        Ok(_) => Follow::Nothing,
        // Events were lost (one of them may have been a crash), or the cluster is gone:
        // closing is always safe, the client reconnects.
        Err(_) => Follow::Close,
    }
}

/// Serves `stream` as broker `ctx.broker` and follows the broker's state until the
/// connection ends. One task and one waiter per signal, so nothing wakes in a random order.
async fn serve_following(
    stream: DuplexStream,
    ctx: Arc<Context>,
    paused: bool,
    mut events: broadcast::Receiver<crate::engine::ClusterEvent>,
) {
    let broker = ctx.broker;
    let (paused_tx, paused_rx) = watch::channel(paused);
    let (closed_tx, closed_rx) = watch::channel(false);
    let serving = connection::serve(
        stream,
        format!("in-memory client of broker {broker}"),
        ctx,
        paused_rx,
        closed_rx,
    );
    tokio::pin!(serving);
    loop {
        // Events first: a pause or a crash published before a request arrived applies to it.
        let event = tokio::select! {
            biased;
            event = events.recv() => event.map(|e| e.kind),
            () = &mut serving => return,
        };
        match follow(broker, event) {
            Follow::Pause => {
                paused_tx.send_replace(true);
            }
            Follow::Resume => {
                paused_tx.send_replace(false);
            }
            Follow::Close => {
                closed_tx.send_replace(true);
                serving.await;
                return;
            }
            Follow::Nothing => {}
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use tokio::io::{AsyncReadExt, AsyncWriteExt};

    use super::*;
    use crate::engine::ClusterConfig;

    /// An ApiVersions v0 request: the smallest exchange that shows a connection is served.
    async fn ask(pipe: &mut DuplexStream, correlation_id: i32) {
        let mut body = Vec::new();
        body.extend_from_slice(&18i16.to_be_bytes());
        body.extend_from_slice(&0i16.to_be_bytes());
        body.extend_from_slice(&correlation_id.to_be_bytes());
        body.extend_from_slice(&(-1i16).to_be_bytes());
        let mut frame = (body.len() as i32).to_be_bytes().to_vec();
        frame.extend_from_slice(&body);
        pipe.write_all(&frame).await.expect("request written");
    }

    /// The next answer's correlation id; None at the end of the stream.
    async fn answer(pipe: &mut DuplexStream) -> Option<i32> {
        let length = pipe.read_i32().await.ok()?;
        let mut rest = vec![0u8; usize::try_from(length).ok()?];
        pipe.read_exact(&mut rest).await.ok()?;
        Some(i32::from_be_bytes(rest.get(..4)?.try_into().ok()?))
    }

    #[tokio::test(start_paused = true)]
    async fn in_memory_connections_live_and_die_with_their_broker() {
        let dir = tempfile::tempdir().expect("temp dir");
        let cluster = Cluster::start(ClusterConfig {
            data_dir: dir.path().to_path_buf(),
            brokers: 2,
            ..ClusterConfig::default()
        })
        .await
        .expect("the cluster starts");
        let config = Arc::new(WireConfig::default());
        assert!(matches!(
            connect_in_memory(&cluster, Arc::clone(&config), 7),
            Err(WireError::NoBroker(7))
        ));

        let mut pipe = connect_in_memory(&cluster, Arc::clone(&config), 1).expect("connects");
        ask(&mut pipe, 1).await;
        assert_eq!(answer(&mut pipe).await, Some(1));

        // Paused: the request is read, and answered only once the broker resumes.
        cluster.pause(1).expect("paused");
        let mut other = connect_in_memory(&cluster, Arc::clone(&config), 1).expect("a paused broker accepts");
        ask(&mut pipe, 2).await;
        ask(&mut other, 3).await;
        let silent = tokio::time::timeout(Duration::from_secs(5), answer(&mut pipe)).await;
        assert!(silent.is_err(), "a paused broker answers nothing");
        cluster.resume(1).expect("resumed");
        assert_eq!(answer(&mut pipe).await, Some(2));
        assert_eq!(answer(&mut other).await, Some(3));

        // Killed: open connections end, new ones are refused.
        cluster.kill(1).expect("killed");
        assert_eq!(answer(&mut pipe).await, None, "the connection is dropped");
        assert_eq!(answer(&mut other).await, None, "the connection is dropped");
        assert!(matches!(
            connect_in_memory(&cluster, Arc::clone(&config), 1),
            Err(WireError::NotRunning(1))
        ));
        cluster.start_broker(1).expect("restarted");
        let mut again = connect_in_memory(&cluster, Arc::clone(&config), 1).expect("connects again");
        ask(&mut again, 4).await;
        assert_eq!(answer(&mut again).await, Some(4));
        cluster.shutdown().await;
    }

    #[test]
    fn advertised_addresses_map_back_to_their_brokers() {
        let config = WireConfig::default();
        for broker in 0..5 {
            let addr = advertised_address(&config, broker).expect("an address");
            assert_eq!(addr.to_string(), format!("127.0.0.1:{}", 9092 + broker));
            assert_eq!(broker_at(&config, &addr.ip().to_string(), addr.port()), Some(broker));
        }
        assert_eq!(broker_at(&config, "127.0.0.2", 9093), None, "another host");
        assert_eq!(broker_at(&config, "localhost", 9093), None, "names are not looked up");
        assert_eq!(broker_at(&config, "127.0.0.1", 9091), None, "below the base port");

        let v6 = WireConfig {
            host: "::1".into(),
            base_port: 0,
            ..WireConfig::default()
        };
        let addr = advertised_address(&v6, 2).expect("an address");
        assert_eq!(addr.to_string(), "[::1]:9094");
        assert_eq!(broker_at(&v6, "[::1]", 9094), Some(2));
        assert_eq!(broker_at(&v6, "::1", 9092), Some(0));

        let named = WireConfig {
            host: "kafka.local".into(),
            ..WireConfig::default()
        };
        assert!(matches!(advertised_address(&named, 0), Err(WireError::BadHost(_))));
        let high = WireConfig {
            base_port: 65_534,
            ..WireConfig::default()
        };
        assert!(matches!(
            advertised_address(&high, 2),
            Err(WireError::PortRange {
                base: 65_534,
                broker: 2
            })
        ));
    }

    #[test]
    fn a_connection_follows_only_its_own_broker() {
        let stopped = |broker| EventKind::BrokerStopped {
            broker,
            how: "killed".into(),
        };
        assert_eq!(follow(1, Ok(stopped(1))), Follow::Close);
        assert_eq!(follow(1, Ok(stopped(2))), Follow::Nothing);
        assert_eq!(follow(1, Ok(EventKind::BrokerPaused { broker: 1 })), Follow::Pause);
        assert_eq!(follow(1, Ok(EventKind::BrokerResumed { broker: 1 })), Follow::Resume);
        assert_eq!(
            follow(
                1,
                Ok(EventKind::BrokerStarted {
                    broker: 1,
                    broker_epoch: 7
                })
            ),
            Follow::Close
        );
        assert_eq!(follow(1, Err(broadcast::error::RecvError::Lagged(3))), Follow::Close);
        assert_eq!(follow(1, Err(broadcast::error::RecvError::Closed)), Follow::Close);
    }
}
