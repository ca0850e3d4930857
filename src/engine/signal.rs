//! A value that tasks wait on changing: the part of `tokio::sync::watch` the engine uses, with
//! one difference that matters. tokio's watch spreads its waiters over eight queues picked
//! at random and wakes the queues in turn, so tasks woken together (followers' long polls,
//! acks=all waiters, a resumed broker's tasks) run in a different order on every run, and a
//! simulated seed cannot replay. Here every waiter queues on one `Notify`, which wakes them
//! in the order they began to wait.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use tokio::sync::Notify;

struct Shared<T> {
    value: Mutex<T>,
    version: AtomicU64,
    closed: AtomicBool,
    changed: Notify,
}

/// The sending side: changes the value and wakes every waiter.
pub struct Signal<T> {
    shared: Arc<Shared<T>>,
}

/// A waiter's side: remembers which version it has seen.
pub struct Watcher<T> {
    shared: Arc<Shared<T>>,
    seen: u64,
}

/// The signal is gone: nothing will change the value any more.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Closed;

impl<T> Signal<T> {
    pub fn new(value: T) -> Signal<T> {
        Signal {
            shared: Arc::new(Shared {
                value: Mutex::new(value),
                version: AtomicU64::new(0),
                closed: AtomicBool::new(false),
                changed: Notify::new(),
            }),
        }
    }

    /// Changes the value in place and wakes the waiters.
    pub fn send_modify(&self, change: impl FnOnce(&mut T)) {
        self.send_if_modified(|v| {
            change(v);
            true
        });
    }

    /// Changes the value in place; wakes the waiters when `change` says it changed.
    pub fn send_if_modified(&self, change: impl FnOnce(&mut T) -> bool) -> bool {
        let changed = change(&mut self.shared.lock());
        if changed {
            self.wake();
        }
        changed
    }

    /// Sets the value and wakes the waiters.
    pub fn send_replace(&self, value: T) -> T {
        let old = std::mem::replace(&mut *self.shared.lock(), value);
        self.wake();
        old
    }

    /// A new version: every waiter wakes, in the order it began to wait.
    fn wake(&self) {
        self.shared.version.fetch_add(1, Ordering::SeqCst);
        self.shared.changed.notify_waiters();
    }

    /// A waiter that has seen the value as it is now.
    pub fn subscribe(&self) -> Watcher<T> {
        Watcher {
            shared: Arc::clone(&self.shared),
            seen: self.shared.version.load(Ordering::SeqCst),
        }
    }
}

impl<T> Drop for Signal<T> {
    fn drop(&mut self) {
        self.shared.closed.store(true, Ordering::SeqCst);
        self.shared.changed.notify_waiters();
    }
}

impl<T> Shared<T> {
    fn lock(&self) -> MutexGuard<'_, T> {
        self.value.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

impl<T> Watcher<T> {
    /// Waits until the value changes after what this waiter saw last.
    pub async fn changed(&mut self) -> Result<(), Closed> {
        loop {
            let notified = self.shared.changed.notified();
            tokio::pin!(notified);
            // Queued before looking, so a change between the look and the wait wakes it.
            notified.as_mut().enable();
            let version = self.shared.version.load(Ordering::SeqCst);
            if version != self.seen {
                self.seen = version;
                return Ok(());
            }
            if self.shared.closed.load(Ordering::SeqCst) {
                return Err(Closed);
            }
            notified.await;
        }
    }

    /// Waits until `ready` holds of the value (at once when it already does).
    pub async fn wait_for(&mut self, mut ready: impl FnMut(&T) -> bool) -> Result<(), Closed> {
        loop {
            self.seen = self.shared.version.load(Ordering::SeqCst);
            if ready(&self.shared.lock()) {
                return Ok(());
            }
            self.changed().await?;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test(start_paused = true)]
    async fn waiters_wake_in_the_order_they_began_to_wait() {
        let signal = Arc::new(Signal::new(0u32));
        let woken = Arc::new(Mutex::new(Vec::new()));
        let mut tasks = Vec::new();
        for i in 0..20 {
            let mut watcher = signal.subscribe();
            let woken = Arc::clone(&woken);
            tasks.push(tokio::spawn(async move {
                if watcher.changed().await.is_ok() {
                    woken.lock().unwrap_or_else(PoisonError::into_inner).push(i);
                }
            }));
            // Each task begins to wait before the next one is spawned.
            tokio::task::yield_now().await;
        }
        signal.send_replace(1);
        for t in tasks {
            t.await.expect("the waiter ends");
        }
        let order = woken.lock().unwrap_or_else(PoisonError::into_inner).clone();
        assert_eq!(order, (0..20).collect::<Vec<_>>());
    }

    #[tokio::test(start_paused = true)]
    async fn wait_for_returns_at_once_when_it_already_holds_and_a_dropped_signal_closes() {
        let signal = Signal::new(false);
        let mut watcher = signal.subscribe();
        signal.send_replace(true);
        assert_eq!(watcher.wait_for(|v| *v).await, Ok(()));
        let mut other = signal.subscribe();
        drop(signal);
        assert_eq!(other.changed().await, Err(Closed));
    }
}
