//! The engine's one clock. Every engine timer (heartbeats, sessions, ISR lag, group
//! timeouts, link delays, request timeouts) and every in-process client's timer (linger,
//! delivery and request timeouts, poll waits) reads and waits on it, so a trainer can stop
//! time for the whole cluster (freeze) or stretch it (slow motion) and nothing in the
//! cluster notices: no session expires while frozen, no follower falls behind for lag.
//!
//! Virtual time is a `tokio::time::Instant`, so it pauses and advances with tokio's test
//! clock too. While running, `now = anchor.virtual + (tokio now - anchor.real) / factor`;
//! while frozen it stays at `anchor.virtual`. Every change re-anchors at the current
//! virtual time, so virtual time never jumps. Waiters watch the settings and recompute
//! their real deadline when they change.
//!
//! Record timestamps stay on the wall clock ([`super::WallClock`]).

use std::future::Future;
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::watch;
use tokio::time::Instant;

/// Slow motion beyond this is not a demo any more.
pub const MAX_SLOW_MOTION: u32 = 20;

/// Where virtual time stands against tokio time, and how it runs.
#[derive(Debug, Clone, Copy)]
struct Anchor {
    /// Tokio time at the last change.
    real: Instant,
    /// Virtual time at the last change.
    virtual_at: Instant,
    /// Real time runs this many times faster than virtual time.
    factor: u32,
    frozen: bool,
    /// Frozen by [`Clock::hold`]: a trainer's step holds the cluster still until the next.
    held: bool,
}

impl Anchor {
    fn now(&self) -> Instant {
        if self.frozen {
            self.virtual_at
        } else {
            self.virtual_at + Instant::now().saturating_duration_since(self.real) / self.factor
        }
    }

    /// The tokio instant at which virtual time reaches `deadline`, `None` while frozen.
    fn real_deadline(&self, deadline: Instant) -> Option<Instant> {
        (!self.frozen).then(|| self.real + deadline.saturating_duration_since(self.virtual_at) * self.factor)
    }
}

/// A change the trainer asked for that the clock refuses.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum ClockError {
    #[error("slow motion must be between x1 and x{MAX_SLOW_MOTION}, not x{0}")]
    FactorOutOfRange(u32),
}

/// A [`Clock::timeout`] ran out before its future finished.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
#[error("deadline has elapsed")]
pub struct Elapsed;

/// What changed when the clock was set.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ClockChange {
    Frozen,
    /// Running again after being frozen this long (in tokio time).
    Thawed {
        frozen_for: Duration,
    },
    SlowMotion {
        factor: u32,
    },
}

/// The cluster's clock; cheap to clone, every clone is the same clock.
#[derive(Clone)]
pub struct Clock {
    inner: Arc<Inner>,
}

struct Inner {
    anchor: watch::Sender<Anchor>,
    /// Virtual time at creation, and the wall clock then: [`Clock::now_ms`] counts from it.
    origin: Instant,
    origin_epoch_ms: i64,
}

impl std::fmt::Debug for Clock {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (frozen, factor) = self.state();
        f.debug_struct("Clock")
            .field("frozen", &frozen)
            .field("factor", &factor)
            .finish()
    }
}

impl Default for Clock {
    fn default() -> Self {
        Clock::new()
    }
}

impl Clock {
    /// A running clock at real speed, reading tokio time.
    pub fn new() -> Clock {
        let now = Instant::now();
        let origin_epoch_ms = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_millis() as i64);
        Clock {
            inner: Arc::new(Inner {
                anchor: watch::channel(Anchor {
                    real: now,
                    virtual_at: now,
                    factor: 1,
                    frozen: false,
                    held: false,
                })
                .0,
                origin: now,
                origin_epoch_ms,
            }),
        }
    }

    fn anchor(&self) -> &watch::Sender<Anchor> {
        &self.inner.anchor
    }

    /// Virtual now in milliseconds since the Unix epoch: the wall clock minus the time spent
    /// frozen (and stretched by slow motion). For durations kept as milliseconds, such as a
    /// follower's last caught-up time.
    pub fn now_ms(&self) -> i64 {
        self.inner.origin_epoch_ms + self.elapsed(self.inner.origin).as_millis() as i64
    }

    /// Virtual now: stands still while frozen, runs `factor` times slower in slow motion.
    pub fn now(&self) -> Instant {
        self.anchor().borrow().now()
    }

    /// Virtual time since `earlier` (zero when `earlier` is later).
    pub fn elapsed(&self, earlier: Instant) -> Duration {
        self.now().saturating_duration_since(earlier)
    }

    /// `(frozen, slow-motion factor)`.
    pub fn state(&self) -> (bool, u32) {
        let a = *self.anchor().borrow();
        (a.frozen, a.factor)
    }

    /// Whether the clock stands still because of [`Clock::hold`].
    pub fn held(&self) -> bool {
        self.anchor().borrow().held
    }

    /// Stops virtual time as [`Clock::freeze`] does, marked as a hold (a trainer's step
    /// keeps the cluster still until the next one); `None` when it was already frozen.
    pub fn hold(&self) -> Option<ClockChange> {
        self.change(|a| {
            if a.frozen {
                return None;
            }
            a.frozen = true;
            a.held = true;
            Some(ClockChange::Frozen)
        })
    }

    /// Ends a hold; `None` when the clock was not held (a freeze of the trainer's own stays).
    pub fn release(&self) -> Option<ClockChange> {
        self.change(|a| {
            if !a.held {
                return None;
            }
            let frozen_for = Instant::now().saturating_duration_since(a.real);
            a.frozen = false;
            a.held = false;
            Some(ClockChange::Thawed { frozen_for })
        })
    }

    /// Stops virtual time; `None` when it was already frozen.
    pub fn freeze(&self) -> Option<ClockChange> {
        self.change(|a| {
            if a.frozen {
                return None;
            }
            a.frozen = true;
            Some(ClockChange::Frozen)
        })
    }

    /// Lets virtual time run again from where it stopped; `None` when it was running.
    pub fn thaw(&self) -> Option<ClockChange> {
        self.change(|a| {
            if !a.frozen {
                return None;
            }
            let frozen_for = Instant::now().saturating_duration_since(a.real);
            a.frozen = false;
            a.held = false;
            Some(ClockChange::Thawed { frozen_for })
        })
    }

    /// Virtual time runs `factor` times slower than real time from now on (1: real time).
    pub fn set_factor(&self, factor: u32) -> Result<Option<ClockChange>, ClockError> {
        if !(1..=MAX_SLOW_MOTION).contains(&factor) {
            return Err(ClockError::FactorOutOfRange(factor));
        }
        Ok(self.change(|a| {
            if a.factor == factor {
                return None;
            }
            a.factor = factor;
            Some(ClockChange::SlowMotion { factor })
        }))
    }

    /// Re-anchors at the current virtual time, then applies `edit`; waiters are told only
    /// when something changed. A frozen anchor keeps the tokio time it froze at (nothing
    /// reads it but [`Clock::thaw`], which reports how long the freeze lasted).
    fn change(&self, edit: impl FnOnce(&mut Anchor) -> Option<ClockChange>) -> Option<ClockChange> {
        let mut change = None;
        self.anchor().send_if_modified(|a| {
            let mut next = Anchor {
                virtual_at: a.now(),
                ..*a
            };
            change = edit(&mut next);
            if change.is_none() {
                return false;
            }
            if !(a.frozen && next.frozen) {
                next.real = Instant::now();
            }
            *a = next;
            true
        });
        change
    }

    /// Waits until virtual time reaches `deadline`; waits without limit while frozen.
    pub async fn sleep_until(&self, deadline: Instant) {
        let mut settings = self.anchor().subscribe();
        loop {
            let anchor = *settings.borrow_and_update();
            if anchor.now() >= deadline {
                return;
            }
            match anchor.real_deadline(deadline) {
                Some(real) => {
                    tokio::select! {
                        // One order on every run: tokio otherwise picks a random branch first.
                        biased;
                        () = tokio::time::sleep_until(real) => {}
                        _ = settings.changed() => {}
                    }
                }
                None => {
                    // The sender lives as long as `self`.
                    let _ = settings.changed().await;
                }
            }
        }
    }

    /// Waits for `duration` of virtual time.
    pub async fn sleep(&self, duration: Duration) {
        self.sleep_until(self.now() + duration).await;
    }

    /// Runs `future` until virtual time reaches `deadline`.
    pub async fn timeout_at<F: Future>(&self, deadline: Instant, future: F) -> Result<F::Output, Elapsed> {
        tokio::select! {
            biased;
            out = future => Ok(out),
            () = self.sleep_until(deadline) => Err(Elapsed),
        }
    }

    /// Runs `future` for at most `duration` of virtual time.
    pub async fn timeout<F: Future>(&self, duration: Duration, future: F) -> Result<F::Output, Elapsed> {
        self.timeout_at(self.now() + duration, future).await
    }

    /// Ticks every `period` of virtual time, the first tick at once; a late tick delays the
    /// next ones (tokio's `MissedTickBehavior::Delay`).
    pub fn interval(&self, period: Duration) -> Interval {
        Interval {
            clock: self.clone(),
            period,
            next: self.now(),
        }
    }
}

/// See [`Clock::interval`].
pub struct Interval {
    clock: Clock,
    period: Duration,
    next: Instant,
}

impl Interval {
    pub async fn tick(&mut self) -> Instant {
        self.clock.sleep_until(self.next).await;
        let now = self.clock.now();
        self.next = now + self.period;
        now
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SEC: Duration = Duration::from_secs(1);

    #[tokio::test(start_paused = true)]
    async fn at_real_speed_the_clock_follows_tokio_time() {
        let clock = Clock::new();
        let start = clock.now();
        tokio::time::advance(3 * SEC).await;
        assert_eq!(clock.now() - start, 3 * SEC);
    }

    #[tokio::test(start_paused = true)]
    async fn a_frozen_clock_stands_still_and_runs_on_from_where_it_stopped() {
        let clock = Clock::new();
        let start = clock.now();
        tokio::time::advance(SEC).await;
        assert_eq!(clock.freeze(), Some(ClockChange::Frozen));
        assert_eq!(clock.freeze(), None, "freezing twice changes nothing");
        tokio::time::advance(60 * SEC).await;
        assert_eq!(clock.now() - start, SEC);
        assert_eq!(clock.state(), (true, 1));
        assert_eq!(clock.thaw(), Some(ClockChange::Thawed { frozen_for: 60 * SEC }));
        tokio::time::advance(2 * SEC).await;
        assert_eq!(clock.now() - start, 3 * SEC, "tokio time minus the frozen minute");
    }

    #[tokio::test(start_paused = true)]
    async fn a_sleep_across_a_freeze_wakes_after_its_virtual_duration() {
        let clock = Clock::new();
        let real_start = Instant::now();
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move {
                clock.sleep(10 * SEC).await;
                Instant::now()
            }
        });
        // The sleeper starts its sleep before time moves.
        tokio::task::yield_now().await;
        tokio::time::advance(4 * SEC).await;
        clock.freeze();
        tokio::time::advance(100 * SEC).await;
        assert!(!sleeper.is_finished(), "a frozen clock wakes no sleeper");
        clock.thaw();
        let woke = sleeper.await.expect("sleeper");
        assert_eq!(woke - real_start, 110 * SEC);
    }

    #[tokio::test(start_paused = true)]
    async fn a_factor_change_mid_sleep_stretches_the_rest_of_it() {
        let clock = Clock::new();
        let real_start = Instant::now();
        let sleeper = tokio::spawn({
            let clock = clock.clone();
            async move {
                clock.sleep(10 * SEC).await;
                Instant::now()
            }
        });
        // The sleeper starts its sleep before time moves.
        tokio::task::yield_now().await;
        tokio::time::advance(4 * SEC).await;
        assert_eq!(clock.set_factor(3), Ok(Some(ClockChange::SlowMotion { factor: 3 })));
        let woke = sleeper.await.expect("sleeper");
        assert_eq!(
            woke - real_start,
            4 * SEC + 3 * 6 * SEC,
            "6 virtual seconds left, 3 times slower"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn slow_motion_is_bounded() {
        let clock = Clock::new();
        assert_eq!(clock.set_factor(0), Err(ClockError::FactorOutOfRange(0)));
        assert_eq!(clock.set_factor(21), Err(ClockError::FactorOutOfRange(21)));
        assert_eq!(clock.set_factor(20), Ok(Some(ClockChange::SlowMotion { factor: 20 })));
        assert_eq!(clock.state(), (false, 20));
    }

    #[tokio::test(start_paused = true)]
    async fn a_timeout_does_not_fire_while_frozen() {
        let clock = Clock::new();
        clock.freeze();
        let waiting = tokio::spawn({
            let clock = clock.clone();
            async move { clock.timeout(SEC, std::future::pending::<()>()).await }
        });
        tokio::time::advance(600 * SEC).await;
        assert!(!waiting.is_finished());
        clock.thaw();
        assert_eq!(waiting.await.expect("task"), Err(Elapsed));
    }

    #[tokio::test(start_paused = true)]
    async fn an_interval_ticks_in_virtual_time() {
        let clock = Clock::new();
        clock.set_factor(2).expect("factor");
        let real_start = Instant::now();
        let mut ticks = clock.interval(SEC);
        ticks.tick().await;
        ticks.tick().await;
        ticks.tick().await;
        assert_eq!(Instant::now() - real_start, 4 * SEC);
    }
}
