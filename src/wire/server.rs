//! One TCP listener per broker, opened and closed with the broker's life: a killed or stopped
//! broker's port refuses connections (its open connections are dropped), a paused broker's
//! port accepts and never answers, as a frozen process would. A broker added live gets a
//! listener of its own; a decommissioned one's closes for good.

use std::collections::BTreeMap;
use std::net::{IpAddr, SocketAddr, ToSocketAddrs};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Duration;

use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio::task::JoinHandle;

use super::connection;
use super::fetch_session::FetchSessions;
use super::handlers::Context;
use super::{WireConfig, WireError};
use crate::engine::{BrokerId, BrokerState, Cluster};

/// A broker's listening address.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Listener {
    pub broker: BrokerId,
    pub addr: SocketAddr,
}

struct Open {
    /// What the listener's connections answer as; an in-memory connection shares it.
    ctx: Arc<Context>,
    paused: watch::Sender<bool>,
    /// Dropping it tells the accept loop and every connection to close.
    closed: watch::Sender<bool>,
    accept: JoinHandle<()>,
}

struct Inner {
    cluster: Cluster,
    config: Arc<WireConfig>,
    ip: IpAddr,
    /// Every broker's address; kept while a broker is down so it comes back on the same port.
    addresses: Arc<Mutex<BTreeMap<BrokerId, SocketAddr>>>,
    open: Mutex<BTreeMap<BrokerId, Open>>,
    /// The watcher and [`WireServer::sync`] must not both bind one broker's port.
    reconciling: tokio::sync::Mutex<()>,
}

/// The Kafka listeners of an embedded cluster. Stop them with [`WireServer::shutdown`].
pub struct WireServer {
    inner: Arc<Inner>,
    watcher: JoinHandle<()>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// How often the broker states are compared with the open listeners.
const WATCH_INTERVAL: Duration = Duration::from_millis(50);

impl WireServer {
    /// Binds a listener for every running broker of `cluster` and keeps them in step with
    /// the brokers' states.
    pub async fn start(cluster: Cluster, config: WireConfig) -> Result<WireServer, WireError> {
        let ip = resolve_host(&config.host)?;
        if !ip.is_loopback() && !config.allow_non_loopback {
            return Err(WireError::NonLoopback(config.host.clone()));
        }
        let inner = Arc::new(Inner {
            cluster,
            config: Arc::new(config),
            ip,
            addresses: Arc::new(Mutex::new(BTreeMap::new())),
            open: Mutex::new(BTreeMap::new()),
            reconciling: tokio::sync::Mutex::new(()),
        });
        for (id, state) in inner.cluster.broker_states() {
            if matches!(state, BrokerState::Running | BrokerState::Paused) {
                let listener = inner.bind(id).await?;
                inner.open(id, listener, state == BrokerState::Paused);
            }
        }
        let watcher = tokio::spawn(Arc::clone(&inner).watch());
        Ok(WireServer { inner, watcher })
    }

    /// Every broker's address, including brokers that are down.
    pub fn listeners(&self) -> Vec<Listener> {
        lock(&self.inner.addresses)
            .iter()
            .map(|(broker, addr)| Listener {
                broker: *broker,
                addr: *addr,
            })
            .collect()
    }

    /// Brings the listeners in step with the brokers' states now (a command that just killed
    /// or started a broker answers once its port is closed or open).
    pub async fn sync(&self) {
        self.inner.reconcile().await;
    }

    /// A connection to broker `broker` without a socket, served as one its listener accepted:
    /// it pauses with the listener and is dropped when the listener closes. The broker's
    /// listener must be open (the broker running or paused, as of the last sync).
    pub fn connect_in_memory(&self, broker: BrokerId) -> Result<tokio::io::DuplexStream, WireError> {
        let open = lock(&self.inner.open);
        let o = open.get(&broker).ok_or(WireError::NotRunning(broker))?;
        let (client, server) = tokio::io::duplex(super::memory::PIPE_BYTES);
        tokio::spawn(connection::serve(
            server,
            format!("in-memory client of broker {broker}"),
            Arc::clone(&o.ctx),
            o.paused.subscribe(),
            o.closed.subscribe(),
        ));
        Ok(client)
    }

    /// Closes every listener and connection; the server serves nothing afterwards.
    pub fn shutdown(&self) {
        self.watcher.abort();
        let open = std::mem::take(&mut *lock(&self.inner.open));
        for (_, o) in open {
            o.accept.abort();
        }
    }
}

fn resolve_host(host: &str) -> Result<IpAddr, WireError> {
    if let Ok(ip) = host.parse::<IpAddr>() {
        return Ok(ip);
    }
    (host, 0)
        .to_socket_addrs()
        .ok()
        .and_then(|mut addrs| addrs.next())
        .map(|a| a.ip())
        .ok_or_else(|| WireError::BadHost(host.to_string()))
}

impl Inner {
    async fn bind(&self, broker: BrokerId) -> Result<TcpListener, WireError> {
        let known = lock(&self.addresses).get(&broker).copied();
        let port = match known {
            Some(addr) => addr.port(),
            None if self.config.base_port == 0 => 0,
            None => u16::try_from(i32::from(self.config.base_port) + broker).map_err(|_| WireError::PortRange {
                base: self.config.base_port,
                broker,
            })?,
        };
        let addr = SocketAddr::new(self.ip, port);
        let listener = TcpListener::bind(addr).await.map_err(|source| {
            if source.kind() == std::io::ErrorKind::AddrInUse {
                WireError::PortInUse { broker, port }
            } else {
                WireError::Bind {
                    broker,
                    addr: addr.to_string(),
                    source,
                }
            }
        })?;
        let bound = listener.local_addr().map_err(|source| WireError::Bind {
            broker,
            addr: addr.to_string(),
            source,
        })?;
        lock(&self.addresses).insert(broker, bound);
        Ok(listener)
    }

    fn open(&self, broker: BrokerId, listener: TcpListener, paused: bool) {
        let (paused_tx, paused_rx) = watch::channel(paused);
        let (closed_tx, closed_rx) = watch::channel(false);
        let ctx = Arc::new(Context {
            cluster: self.cluster.clone(),
            broker,
            config: Arc::clone(&self.config),
            addresses: Arc::clone(&self.addresses),
            fetch_sessions: Arc::new(FetchSessions::for_config(&self.config)),
        });
        let accept = tokio::spawn(accept_loop(listener, Arc::clone(&ctx), paused_rx, closed_rx));
        lock(&self.open).insert(
            broker,
            Open {
                ctx,
                paused: paused_tx,
                closed: closed_tx,
                accept,
            },
        );
    }

    /// Closes a listener and returns once its socket is gone (the port refuses connections).
    async fn close(&self, broker: BrokerId) {
        let open = lock(&self.open).remove(&broker);
        if let Some(o) = open {
            let _ = o.closed.send(true);
            o.accept.abort();
            let _ = o.accept.await;
            tracing::info!(broker, "Kafka listener closed");
        }
    }

    /// Follows the brokers' states.
    async fn watch(self: Arc<Self>) {
        loop {
            tokio::time::sleep(WATCH_INTERVAL).await;
            self.reconcile().await;
        }
    }

    /// Opens, pauses, resumes and closes listeners to match the brokers' states.
    async fn reconcile(&self) {
        let _one_at_a_time = self.reconciling.lock().await;
        {
            let states = self.cluster.broker_states();
            // A decommissioned broker left the cluster: its listener closes and its address
            // is forgotten (Metadata answers and the console no longer list it).
            let gone: Vec<BrokerId> = lock(&self.addresses)
                .keys()
                .copied()
                .filter(|id| !states.iter().any(|(b, _)| b == id))
                .collect();
            for id in gone {
                self.close(id).await;
                lock(&self.addresses).remove(&id);
                tracing::info!(
                    broker = id,
                    "broker left the cluster: its Kafka listener address is released"
                );
            }
            for (id, state) in states {
                let is_open = lock(&self.open).contains_key(&id);
                match state {
                    BrokerState::Running | BrokerState::Paused => {
                        let paused = state == BrokerState::Paused;
                        if is_open {
                            if let Some(o) = lock(&self.open).get(&id) {
                                o.paused.send_if_modified(|p| std::mem::replace(p, paused) != paused);
                            }
                            continue;
                        }
                        match self.bind(id).await {
                            Ok(listener) => {
                                self.open(id, listener, paused);
                                tracing::info!(broker = id, "Kafka listener reopened");
                            }
                            Err(e) => tracing::warn!("{e}"),
                        }
                    }
                    BrokerState::Stopped | BrokerState::Killed => {
                        if is_open {
                            self.close(id).await;
                        }
                    }
                }
            }
        }
    }
}

async fn accept_loop(
    listener: TcpListener,
    ctx: Arc<Context>,
    paused: watch::Receiver<bool>,
    mut closed: watch::Receiver<bool>,
) {
    loop {
        let accepted = tokio::select! {
            accepted = listener.accept() => accepted,
            _ = closed.changed() => return,
        };
        match accepted {
            Ok((stream, peer)) => {
                let _ = stream.set_nodelay(true);
                tokio::spawn(connection::serve(
                    stream,
                    peer.to_string(),
                    Arc::clone(&ctx),
                    paused.clone(),
                    closed.clone(),
                ));
            }
            Err(e) => {
                // Out of file descriptors and the like: back off instead of spinning.
                tracing::warn!(broker = ctx.broker, "accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(100)).await;
            }
        }
    }
}
