//! The in-process network between brokers, the controller and clients. Every request crosses
//! it, so faults are injected here: a link between two nodes can be cut (requests vanish
//! and time out), delayed, or made to drop a share of requests; a stopped broker refuses
//! connections, a paused one accepts them and never answers.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use tokio::sync::{mpsc, oneshot};

use super::protocol::{Request, Response};
use super::{BrokerId, Clock};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum NodeId {
    Broker(BrokerId),
    /// The active controller, wherever it runs.
    Controller,
    /// An in-process client (producer, consumer, admin, test).
    Client(u32),
}

/// What is wrong with a link, in both directions.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LinkFault {
    /// Requests are lost: the caller times out.
    Cut,
    /// Requests arrive after this delay.
    Delay(Duration),
    /// One request in every `one_in` is lost (deterministically, by count), the rest pass.
    Drop { one_in: u32 },
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum NetError {
    #[error("connection refused")]
    Refused,
    #[error("request timed out")]
    Timeout,
}

pub(crate) struct Envelope {
    pub from: NodeId,
    pub request: Request,
    pub reply: oneshot::Sender<Response>,
}

#[derive(Default)]
struct Routes {
    inboxes: HashMap<BrokerId, mpsc::UnboundedSender<Envelope>>,
    controller_on: Option<BrokerId>,
    faults: HashMap<(NodeId, NodeId), LinkFault>,
    /// Requests sent over each faulty link, for `Drop`.
    sent: HashMap<(NodeId, NodeId), u64>,
    /// Requests handed to each broker, by sender: how much work the cluster does.
    delivered: HashMap<(NodeId, BrokerId), u64>,
}

/// Shared by every node; cheap to clone. Delays and timeouts run on the cluster's clock.
#[derive(Clone)]
pub struct Network {
    routes: Arc<Mutex<Routes>>,
    clock: Clock,
}

impl Network {
    pub(crate) fn new(clock: Clock) -> Network {
        Network {
            routes: Arc::default(),
            clock,
        }
    }

    fn routes(&self) -> std::sync::MutexGuard<'_, Routes> {
        self.routes.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A broker starts listening.
    pub(crate) fn attach(&self, broker: BrokerId, inbox: mpsc::UnboundedSender<Envelope>) {
        self.routes().inboxes.insert(broker, inbox);
    }

    /// A broker stops listening: connections to it are refused.
    pub(crate) fn detach(&self, broker: BrokerId) {
        self.routes().inboxes.remove(&broker);
    }

    pub(crate) fn set_controller(&self, broker: Option<BrokerId>) {
        self.routes().controller_on = broker;
    }

    pub fn controller(&self) -> Option<BrokerId> {
        self.routes().controller_on
    }

    /// Requests handed to each broker so far, by sender.
    pub(crate) fn delivered(&self) -> Vec<((NodeId, BrokerId), u64)> {
        self.routes().delivered.iter().map(|(k, v)| (*k, *v)).collect()
    }

    /// Sets or clears the fault on the link between `a` and `b` (both directions).
    pub fn set_link(&self, a: NodeId, b: NodeId, fault: Option<LinkFault>) {
        let mut routes = self.routes();
        for key in [(a, b), (b, a)] {
            match fault {
                Some(f) => routes.faults.insert(key, f),
                None => routes.faults.remove(&key),
            };
        }
    }

    /// Sets or clears the fault on the way from `from` to `to` only. Answers travel back the
    /// other way, so a cut here loses `from`'s requests and the answers to `to`'s requests,
    /// while `to`'s requests still arrive (an asymmetric partition).
    pub fn set_link_one_way(&self, from: NodeId, to: NodeId, fault: Option<LinkFault>) {
        let mut routes = self.routes();
        match fault {
            Some(f) => routes.faults.insert((from, to), f),
            None => routes.faults.remove(&(from, to)),
        };
    }

    /// The node a message to `to` is delivered to (the controller's host for `Controller`).
    fn resolve(&self, to: NodeId) -> Option<(BrokerId, mpsc::UnboundedSender<Envelope>)> {
        let routes = self.routes();
        let broker = match to {
            NodeId::Broker(b) => b,
            NodeId::Controller => routes.controller_on?,
            NodeId::Client(_) => return None,
        };
        routes.inboxes.get(&broker).map(|tx| (broker, tx.clone()))
    }

    /// The fault on the way from `from` to `to`, delivered to `to_broker`. A fault set on a
    /// link to [`NodeId::Controller`] applies wherever the controller runs; the controller's
    /// own traffic also crosses the links of the broker hosting it.
    fn fault(&self, from: NodeId, to: NodeId, to_broker: BrokerId) -> Option<LinkFault> {
        self.directed_fault(from, to, to_broker, false)
    }

    /// The fault on the way back, from `to_broker` (as `to`) to `from`: what an answer
    /// crosses.
    fn answer_fault(&self, from: NodeId, to: NodeId, to_broker: BrokerId) -> Option<LinkFault> {
        self.directed_fault(from, to, to_broker, true)
    }

    fn directed_fault(&self, from: NodeId, to: NodeId, to_broker: BrokerId, back: bool) -> Option<LinkFault> {
        let routes = self.routes();
        let from_node = match from {
            NodeId::Controller => NodeId::Broker(routes.controller_on?),
            other => other,
        };
        let to_node = NodeId::Broker(to_broker);
        let get = |x: NodeId, y: NodeId| {
            let key = if back { (y, x) } else { (x, y) };
            routes.faults.get(&key)
        };
        get(from_node, to_node)
            .or_else(|| (to == NodeId::Controller).then(|| get(from_node, NodeId::Controller))?)
            .or_else(|| (from == NodeId::Controller).then(|| get(NodeId::Controller, to_node))?)
            .copied()
    }

    /// Whether `broker` is cut off from the controller role (isolated): the KRaft quorum
    /// would not follow it, so it cannot host the active controller.
    pub(crate) fn cut_off_from_controller(&self, broker: BrokerId) -> bool {
        self.routes().faults.get(&(NodeId::Broker(broker), NodeId::Controller)) == Some(&LinkFault::Cut)
    }

    /// Clears every fault; whether there was any.
    /// Every faulty link, each direction apart: what a picture of the cluster draws.
    pub(crate) fn faults(&self) -> Vec<(NodeId, NodeId, LinkFault)> {
        let mut faults: Vec<_> = self.routes().faults.iter().map(|((a, b), f)| (*a, *b, *f)).collect();
        faults.sort_by_key(|(a, b, _)| (*a, *b));
        faults
    }

    pub(crate) fn heal_all(&self) -> bool {
        let mut routes = self.routes();
        let any = !routes.faults.is_empty();
        routes.faults.clear();
        any
    }

    /// Whether this request is the one a `Drop` fault loses.
    fn dropped(&self, from: NodeId, to_broker: BrokerId, one_in: u32) -> bool {
        let mut routes = self.routes();
        let count = routes.sent.entry((from, NodeId::Broker(to_broker))).or_default();
        *count += 1;
        one_in > 0 && (*count).is_multiple_of(u64::from(one_in))
    }

    /// Puts a request in `broker`'s inbox; whether the inbox was there to take it.
    fn deliver(
        &self,
        from: NodeId,
        broker: BrokerId,
        inbox: &mpsc::UnboundedSender<Envelope>,
        envelope: Envelope,
    ) -> bool {
        if inbox.send(envelope).is_err() {
            return false;
        }
        *self.routes().delivered.entry((from, broker)).or_default() += 1;
        true
    }

    /// A request the link lost (cut, or dropped): the caller hears nothing until its timeout.
    async fn lost(&self, timeout: Duration) -> Result<Response, NetError> {
        self.clock.sleep(timeout).await;
        Err(NetError::Timeout)
    }

    /// Sends `request` from `from` to `to` and waits for the answer, at most `timeout`.
    pub(crate) async fn call(
        &self,
        from: NodeId,
        to: NodeId,
        request: Request,
        timeout: Duration,
    ) -> Result<Response, NetError> {
        let Some((broker, inbox)) = self.resolve(to) else {
            return Err(NetError::Refused);
        };
        let fault = self.fault(from, to, broker);
        let (tx, rx) = oneshot::channel();
        let envelope = Envelope {
            from,
            request,
            reply: tx,
        };
        match fault {
            Some(LinkFault::Cut) => return self.lost(timeout).await,
            Some(LinkFault::Drop { one_in }) if self.dropped(from, broker, one_in) => return self.lost(timeout).await,
            Some(LinkFault::Delay(d)) => {
                // A slow link still delivers: the request arrives after the delay even when
                // the caller has given up waiting by then (a late heartbeat still counts),
                // as bytes in flight on a slow network do.
                let network = self.clone();
                tokio::spawn(async move {
                    network.clock.sleep(d).await;
                    network.deliver(from, broker, &inbox, envelope);
                });
            }
            Some(LinkFault::Drop { .. }) | None => {
                if !self.deliver(from, broker, &inbox, envelope) {
                    return Err(NetError::Refused);
                }
            }
        }
        let exchange = async {
            // A dropped reply (the broker died with the request in hand, or its inbox was
            // gone when a delayed request arrived) looks like a broken connection.
            let response = rx.await.map_err(|_| NetError::Refused)?;
            // The answer crosses the link too: one cut meanwhile loses it.
            if self.answer_fault(from, to, broker) == Some(LinkFault::Cut) {
                std::future::pending::<()>().await;
            }
            Ok(response)
        };
        match self.clock.timeout(timeout, exchange).await {
            Ok(result) => result,
            Err(_) => Err(NetError::Timeout),
        }
    }
}
