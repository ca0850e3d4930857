//! Incremental fetch sessions (KIP-227), one cache per broker listener, after Kafka's
//! `FetchSession.scala`.
//!
//! A client's first fetch (epoch 0) names every partition it wants; the broker remembers them
//! under a session id. Later fetches (epoch 1, 2, ...) name only the partitions whose fetch
//! offset or limits changed and the ones to forget, and the answer leaves out partitions with
//! nothing new: no records, the same high watermark and log start offset, no error. A client
//! following hundreds of partitions then sends and receives a few bytes per idle poll.
//!
//! The rules, as Kafka's `FetchManager.newContext`:
//! - epoch -1 (final): a full fetch without a session; a session id given is closed.
//! - epoch 0 (initial): a full fetch; a session id given is closed, and a new session is made
//!   if the cache has a free slot or can evict one.
//! - epoch > 0: incremental. An unknown id is FETCH_SESSION_ID_NOT_FOUND; an epoch other than
//!   the one expected is INVALID_FETCH_SESSION_EPOCH. A session left with no partitions closes.
//!
//! Eviction, as Kafka's `FetchSessionCacheShard.tryEvict`: first a session idle longer than
//! the eviction time; otherwise the least valuable (unprivileged before privileged, then
//! fewest partitions), if the new session is worth more. A session is evictable by ordinary
//! clients only once it is older than the eviction time; followers' sessions are privileged.
//!
//! The cache is plain data (no IO); the Fetch handler asks it for a [`FetchContext`] before
//! reading and hands the answers back to [`FetchSessions::finish`].

use std::collections::HashMap;
use std::collections::hash_map::RandomState;
use std::hash::{BuildHasher, Hasher};
use std::sync::Mutex;
use std::time::Duration;

use tokio::time::Instant;

use super::WireConfig;
use crate::engine::TopicPartition;

/// A fetch with this epoch carries every partition and closes its session.
pub const FINAL_EPOCH: i32 = -1;
/// A fetch with this epoch carries every partition and asks for a new session.
pub const INITIAL_EPOCH: i32 = 0;
/// "No session".
pub const INVALID_SESSION_ID: i32 = 0;

const FETCH_SESSION_ID_NOT_FOUND: i16 = 70;
const INVALID_FETCH_SESSION_EPOCH: i16 = 71;

/// The epoch a client sends after `epoch` (Kafka's `FetchMetadata.nextEpoch`): it wraps past
/// `i32::MAX` to 1, never back to the initial 0.
pub fn next_epoch(epoch: i32) -> i32 {
    if epoch < 0 {
        FINAL_EPOCH
    } else if epoch == i32::MAX {
        1
    } else {
        epoch + 1
    }
}

/// One partition of a fetch: where to read and how much.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Wanted {
    pub tp: TopicPartition,
    pub offset: i64,
    pub leader_epoch: i32,
    pub max_bytes: usize,
}

/// What the answer for one partition held, as far as the session cares.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Answered {
    pub record_bytes: usize,
    pub high_watermark: i64,
    pub log_start_offset: i64,
    pub error: bool,
}

/// How to serve one Fetch request.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FetchContext {
    /// Answer with this top-level error, this session id, and no partitions.
    Error { code: i16, session_id: i32 },
    /// A full fetch that keeps no session.
    Sessionless(Vec<Wanted>),
    /// A full fetch that makes a session if there is room.
    Full { wanted: Vec<Wanted>, privileged: bool },
    /// An incremental fetch of a session's partitions, in the session's order.
    Incremental {
        session_id: i32,
        request_epoch: i32,
        wanted: Vec<Wanted>,
    },
}

impl FetchContext {
    /// The partitions to read.
    pub fn wanted(&self) -> &[Wanted] {
        match self {
            FetchContext::Error { .. } => &[],
            FetchContext::Sessionless(w)
            | FetchContext::Full { wanted: w, .. }
            | FetchContext::Incremental { wanted: w, .. } => w,
        }
    }
}

/// The answer's top level, and which partitions it keeps.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Finished {
    pub error_code: i16,
    pub session_id: i32,
    /// One per partition read, in the order of [`FetchContext::wanted`].
    pub keep: Vec<bool>,
}

/// A partition a session remembers: the client's last request and what it was last told.
#[derive(Debug, Clone)]
struct Cached {
    wanted: Wanted,
    high_watermark: i64,
    log_start_offset: i64,
}

impl Cached {
    /// Kafka's `CachedPartition.maybeUpdateResponseData`: whether the client must hear about
    /// the partition, remembering what it is told.
    fn must_respond(&mut self, answer: &Answered) -> bool {
        let mut respond = answer.record_bytes > 0;
        if self.high_watermark != answer.high_watermark {
            respond = true;
            self.high_watermark = answer.high_watermark;
        }
        if self.log_start_offset != answer.log_start_offset {
            respond = true;
            self.log_start_offset = answer.log_start_offset;
        }
        if answer.error {
            // Resent once the error is gone.
            self.high_watermark = -1;
            respond = true;
        }
        respond
    }
}

#[derive(Debug)]
struct Session {
    privileged: bool,
    /// In fetch order: partitions that returned records move to the back, so a response
    /// size limit does not starve the later ones.
    partitions: Vec<Cached>,
    created: Instant,
    last_used: Instant,
    /// The epoch the next request must carry.
    epoch: i32,
}

impl Session {
    fn wanted(&self) -> Vec<Wanted> {
        self.partitions.iter().map(|c| c.wanted.clone()).collect()
    }

    /// Evictable by ordinary clients once it has lived longer than the eviction time (as of
    /// its last use, when Kafka re-files it).
    fn evictable_by(&self, privileged: bool, eviction: Duration) -> bool {
        let old = self.last_used.saturating_duration_since(self.created) > eviction;
        old || (privileged && !self.privileged)
    }
}

#[derive(Debug)]
struct Inner {
    sessions: HashMap<i32, Session>,
    rng: u64,
    evictions: u64,
}

/// The sessions of one broker.
#[derive(Debug)]
pub struct FetchSessions {
    slots: usize,
    eviction: Duration,
    inner: Mutex<Inner>,
}

/// Counters for the console and tests.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct SessionStats {
    pub sessions: usize,
    pub partitions: usize,
    pub evictions: u64,
}

impl FetchSessions {
    /// `slots` is Kafka's `max.incremental.fetch.session.cache.slots` (1000), `eviction` its
    /// `min.incremental.fetch.session.eviction.ms` (120 s).
    pub fn new(slots: usize, eviction: Duration) -> Self {
        let seed = RandomState::new().build_hasher().finish() | 1;
        FetchSessions {
            slots,
            eviction,
            inner: Mutex::new(Inner {
                sessions: HashMap::new(),
                rng: seed,
                evictions: 0,
            }),
        }
    }

    /// The `[wire]` settings' cache.
    pub fn for_config(config: &WireConfig) -> Self {
        FetchSessions::new(
            config.fetch_session_cache_slots,
            Duration::from_millis(config.fetch_session_eviction_ms),
        )
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Inner> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    pub fn stats(&self) -> SessionStats {
        let inner = self.lock();
        SessionStats {
            sessions: inner.sessions.len(),
            partitions: inner.sessions.values().map(|s| s.partitions.len()).sum(),
            evictions: inner.evictions,
        }
    }

    /// Kafka's `FetchManager.newContext`. `requested` are the request's partitions; for an
    /// incremental fetch they update the session, and `forgotten` leave it.
    pub fn new_context(
        &self,
        session_id: i32,
        epoch: i32,
        privileged: bool,
        requested: Vec<Wanted>,
        forgotten: &[TopicPartition],
        now: Instant,
    ) -> FetchContext {
        let mut inner = self.lock();
        if epoch == INITIAL_EPOCH || epoch == FINAL_EPOCH {
            if session_id != INVALID_SESSION_ID {
                // Any session named in a full fetch is closed.
                inner.sessions.remove(&session_id);
            }
            return if epoch == FINAL_EPOCH {
                FetchContext::Sessionless(requested)
            } else {
                FetchContext::Full {
                    wanted: requested,
                    privileged,
                }
            };
        }
        let Some(session) = inner.sessions.get_mut(&session_id) else {
            return FetchContext::Error {
                code: FETCH_SESSION_ID_NOT_FOUND,
                session_id,
            };
        };
        if session.epoch != epoch {
            return FetchContext::Error {
                code: INVALID_FETCH_SESSION_EPOCH,
                session_id,
            };
        }
        for w in requested.iter() {
            match session.partitions.iter_mut().find(|c| c.wanted.tp == w.tp) {
                Some(cached) => cached.wanted = w.clone(),
                None => session.partitions.push(Cached {
                    wanted: w.clone(),
                    high_watermark: -1,
                    log_start_offset: -1,
                }),
            }
        }
        session.partitions.retain(|c| !forgotten.contains(&c.wanted.tp));
        if session.partitions.is_empty() {
            inner.sessions.remove(&session_id);
            return FetchContext::Sessionless(requested);
        }
        session.last_used = now;
        session.epoch = next_epoch(session.epoch);
        FetchContext::Incremental {
            session_id,
            request_epoch: epoch,
            wanted: session.wanted(),
        }
    }

    /// Files the answers: makes the session of a full fetch, or for an incremental one
    /// remembers what the client is told and drops what it need not hear.
    pub fn finish(&self, context: &FetchContext, answers: &[Answered], now: Instant) -> Finished {
        let all = vec![true; answers.len()];
        match context {
            FetchContext::Error { code, session_id } => Finished {
                error_code: *code,
                session_id: *session_id,
                keep: vec![false; answers.len()],
            },
            FetchContext::Sessionless(_) => Finished {
                error_code: 0,
                session_id: INVALID_SESSION_ID,
                keep: all,
            },
            FetchContext::Full { wanted, privileged } => {
                let partitions = wanted
                    .iter()
                    .zip(answers)
                    .map(|(w, a)| Cached {
                        wanted: w.clone(),
                        high_watermark: if a.error { -1 } else { a.high_watermark },
                        log_start_offset: a.log_start_offset,
                    })
                    .collect();
                let session_id = self.maybe_create(*privileged, partitions, now);
                Finished {
                    error_code: 0,
                    session_id,
                    keep: all,
                }
            }
            FetchContext::Incremental {
                session_id,
                request_epoch,
                wanted,
            } => {
                let mut inner = self.lock();
                let Some(session) = inner.sessions.get_mut(session_id) else {
                    // Evicted while the fetch waited: the client starts over.
                    return Finished {
                        error_code: FETCH_SESSION_ID_NOT_FOUND,
                        session_id: *session_id,
                        keep: vec![false; answers.len()],
                    };
                };
                if session.epoch != next_epoch(*request_epoch) {
                    // Another request moved the session on meanwhile (a duplicate).
                    return Finished {
                        error_code: INVALID_FETCH_SESSION_EPOCH,
                        session_id: *session_id,
                        keep: vec![false; answers.len()],
                    };
                }
                let mut keep = Vec::with_capacity(answers.len());
                let mut to_back = Vec::new();
                for (w, answer) in wanted.iter().zip(answers) {
                    let Some(index) = session.partitions.iter().position(|c| c.wanted.tp == w.tp) else {
                        keep.push(false);
                        continue;
                    };
                    keep.push(session.partitions[index].must_respond(answer));
                    if answer.record_bytes > 0 {
                        to_back.push(w.tp.clone());
                    }
                }
                for tp in to_back {
                    if let Some(index) = session.partitions.iter().position(|c| c.wanted.tp == tp) {
                        let cached = session.partitions.remove(index);
                        session.partitions.push(cached);
                    }
                }
                session.last_used = now;
                Finished {
                    error_code: 0,
                    session_id: *session_id,
                    keep,
                }
            }
        }
    }

    /// Kafka's `maybeCreateSession`: a new session if a slot is free or one can be evicted.
    fn maybe_create(&self, privileged: bool, partitions: Vec<Cached>, now: Instant) -> i32 {
        let mut inner = self.lock();
        if inner.sessions.len() >= self.slots && !self.try_evict(&mut inner, privileged, partitions.len(), now) {
            return INVALID_SESSION_ID;
        }
        let id = loop {
            // xorshift64: ids that another client cannot guess from its own.
            let mut x = inner.rng;
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            inner.rng = x;
            let id = (x >> 33) as i32;
            if id != INVALID_SESSION_ID && !inner.sessions.contains_key(&id) {
                break id;
            }
        };
        inner.sessions.insert(
            id,
            Session {
                privileged,
                partitions,
                created: now,
                last_used: now,
                epoch: next_epoch(INITIAL_EPOCH),
            },
        );
        id
    }

    fn try_evict(&self, inner: &mut Inner, privileged: bool, size: usize, now: Instant) -> bool {
        if self.slots == 0 {
            return false;
        }
        let stale = inner
            .sessions
            .iter()
            .min_by_key(|(id, s)| (s.last_used, **id))
            .filter(|(_, s)| now.saturating_duration_since(s.last_used) > self.eviction)
            .map(|(id, _)| *id);
        let victim = stale.or_else(|| {
            let (id, s) = inner
                .sessions
                .iter()
                .filter(|(_, s)| s.evictable_by(privileged, self.eviction))
                .min_by_key(|(id, s)| (s.privileged, s.partitions.len(), **id))?;
            // The new session (id 0 in Kafka's comparison) must be worth more.
            ((privileged, size) > (s.privileged, s.partitions.len())).then_some(*id)
        });
        match victim {
            Some(id) => {
                inner.sessions.remove(&id);
                inner.evictions += 1;
                true
            }
            None => false,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(partition: i32, offset: i64) -> Wanted {
        Wanted {
            tp: TopicPartition::new("t", partition),
            offset,
            leader_epoch: -1,
            max_bytes: 1024,
        }
    }

    fn quiet(hw: i64) -> Answered {
        Answered {
            record_bytes: 0,
            high_watermark: hw,
            log_start_offset: 0,
            error: false,
        }
    }

    fn data(hw: i64) -> Answered {
        Answered {
            record_bytes: 100,
            ..quiet(hw)
        }
    }

    /// A full fetch of partitions 0..n that made a session; returns its id.
    fn open(cache: &FetchSessions, n: i32, privileged: bool, now: Instant) -> i32 {
        let wanted: Vec<Wanted> = (0..n).map(|p| w(p, 0)).collect();
        let ctx = cache.new_context(0, INITIAL_EPOCH, privileged, wanted, &[], now);
        let answers: Vec<Answered> = (0..n).map(|_| quiet(10)).collect();
        cache.finish(&ctx, &answers, now).session_id
    }

    #[test]
    fn epochs_wrap_to_one() {
        assert_eq!(next_epoch(0), 1);
        assert_eq!(next_epoch(i32::MAX), 1);
        assert_eq!(next_epoch(-1), -1);
    }

    #[test]
    fn an_incremental_fetch_reads_the_whole_session_and_answers_only_what_changed() {
        let cache = FetchSessions::new(10, Duration::from_secs(120));
        let now = Instant::now();
        let id = open(&cache, 3, false, now);
        assert_ne!(id, INVALID_SESSION_ID);

        // Epoch 1 names only partition 1, at a new offset.
        let ctx = cache.new_context(id, 1, false, vec![w(1, 5)], &[], now);
        let FetchContext::Incremental { wanted, .. } = &ctx else {
            panic!("expected an incremental fetch, got {ctx:?}");
        };
        assert_eq!(wanted, &vec![w(0, 0), w(1, 5), w(2, 0)]);
        // Partition 0 unchanged, 1 has records, 2's high watermark moved.
        let done = cache.finish(&ctx, &[quiet(10), data(12), quiet(11)], now);
        assert_eq!(done.error_code, 0);
        assert_eq!(done.session_id, id);
        assert_eq!(done.keep, vec![false, true, true]);

        // Partition 1 returned records: it moved to the back.
        let ctx = cache.new_context(id, 2, false, vec![], &[], now);
        assert_eq!(
            ctx.wanted().iter().map(|w| w.tp.partition).collect::<Vec<_>>(),
            vec![0, 2, 1]
        );
        // Nothing changed: nothing answered.
        let done = cache.finish(&ctx, &[quiet(10), quiet(11), quiet(12)], now);
        assert_eq!(done.keep, vec![false, false, false]);
    }

    #[test]
    fn a_wrong_epoch_or_unknown_id_is_refused() {
        let cache = FetchSessions::new(10, Duration::from_secs(120));
        let now = Instant::now();
        let id = open(&cache, 1, false, now);
        assert_eq!(
            cache.new_context(id, 2, false, vec![], &[], now),
            FetchContext::Error {
                code: INVALID_FETCH_SESSION_EPOCH,
                session_id: id
            }
        );
        let other = id.wrapping_add(1).max(1);
        assert_eq!(
            cache.new_context(other, 1, false, vec![], &[], now),
            FetchContext::Error {
                code: FETCH_SESSION_ID_NOT_FOUND,
                session_id: other
            }
        );
        // The session survives a refused request.
        assert!(matches!(
            cache.new_context(id, 1, false, vec![], &[], now),
            FetchContext::Incremental { .. }
        ));
    }

    #[test]
    fn a_duplicate_request_is_answered_with_invalid_epoch() {
        let cache = FetchSessions::new(10, Duration::from_secs(120));
        let now = Instant::now();
        let id = open(&cache, 1, false, now);
        let first = cache.new_context(id, 1, false, vec![], &[], now);
        // The same epoch again while the first waits: refused at once.
        assert!(matches!(
            cache.new_context(id, 1, false, vec![], &[], now),
            FetchContext::Error {
                code: INVALID_FETCH_SESSION_EPOCH,
                ..
            }
        ));
        assert_eq!(cache.finish(&first, &[quiet(10)], now).error_code, 0);
    }

    #[test]
    fn errors_are_always_answered_and_answered_again_once_gone() {
        let cache = FetchSessions::new(10, Duration::from_secs(120));
        let now = Instant::now();
        let id = open(&cache, 1, false, now);
        let ctx = cache.new_context(id, 1, false, vec![], &[], now);
        let failed = Answered {
            error: true,
            high_watermark: -1,
            ..quiet(10)
        };
        assert_eq!(cache.finish(&ctx, &[failed], now).keep, vec![true]);
        let ctx = cache.new_context(id, 2, false, vec![], &[], now);
        assert_eq!(cache.finish(&ctx, &[quiet(10)], now).keep, vec![true]);
    }

    #[test]
    fn forgetting_every_partition_closes_the_session() {
        let cache = FetchSessions::new(10, Duration::from_secs(120));
        let now = Instant::now();
        let id = open(&cache, 2, false, now);
        let forget = [TopicPartition::new("t", 0), TopicPartition::new("t", 1)];
        assert_eq!(
            cache.new_context(id, 1, false, vec![], &forget, now),
            FetchContext::Sessionless(vec![])
        );
        assert_eq!(cache.stats().sessions, 0);
    }

    #[test]
    fn full_fetches_close_the_named_session_and_final_makes_none() {
        let cache = FetchSessions::new(10, Duration::from_secs(120));
        let now = Instant::now();
        let id = open(&cache, 1, false, now);
        let ctx = cache.new_context(id, FINAL_EPOCH, false, vec![w(0, 0)], &[], now);
        assert_eq!(ctx, FetchContext::Sessionless(vec![w(0, 0)]));
        assert_eq!(cache.finish(&ctx, &[quiet(1)], now).session_id, INVALID_SESSION_ID);
        assert_eq!(cache.stats().sessions, 0);
        // Initial with the old id: the old one is gone, a new one is made.
        let new = {
            let ctx = cache.new_context(id, INITIAL_EPOCH, false, vec![w(0, 0)], &[], now);
            cache.finish(&ctx, &[quiet(1)], now).session_id
        };
        assert_ne!(new, INVALID_SESSION_ID);
        assert_eq!(cache.stats().sessions, 1);
    }

    #[test]
    fn a_full_cache_evicts_stale_sessions_then_smaller_old_ones_and_else_makes_none() {
        let eviction = Duration::from_secs(120);
        let cache = FetchSessions::new(2, eviction);
        let t0 = Instant::now();
        let a = open(&cache, 5, false, t0);
        let b = open(&cache, 1, false, t0);
        // Full and nothing old: a new client gets no session.
        assert_eq!(open(&cache, 10, false, t0 + Duration::from_secs(1)), INVALID_SESSION_ID);
        // `a` keeps fetching; `b` goes idle past the eviction time and is evicted.
        let t1 = t0 + Duration::from_secs(121);
        let ctx = cache.new_context(a, 1, false, vec![], &[], t1);
        cache.finish(&ctx, &[quiet(10); 5], t1);
        let c = open(&cache, 1, false, t1 + Duration::from_secs(1));
        assert_ne!(c, INVALID_SESSION_ID);
        assert!(matches!(
            cache.new_context(b, 1, false, vec![], &[], t1),
            FetchContext::Error {
                code: FETCH_SESSION_ID_NOT_FOUND,
                ..
            }
        ));
        // `a` is old (used 121 s after it was made) with 5 partitions; a client wanting 6
        // takes its slot, one wanting 5 does not.
        let t2 = t1 + Duration::from_secs(2);
        assert_eq!(open(&cache, 5, false, t2), INVALID_SESSION_ID);
        let d = open(&cache, 6, false, t2);
        assert_ne!(d, INVALID_SESSION_ID);
        assert_eq!(cache.stats().evictions, 2);
        assert_eq!(cache.stats().sessions, 2);
    }

    #[test]
    fn a_follower_may_evict_a_young_client_session() {
        let cache = FetchSessions::new(1, Duration::from_secs(120));
        let now = Instant::now();
        assert_ne!(open(&cache, 50, false, now), INVALID_SESSION_ID);
        assert_ne!(open(&cache, 1, true, now), INVALID_SESSION_ID);
        // And a client cannot evict the follower's.
        assert_eq!(open(&cache, 100, false, now), INVALID_SESSION_ID);
    }

    #[test]
    fn no_slots_means_no_sessions() {
        let cache = FetchSessions::new(0, Duration::from_secs(120));
        assert_eq!(open(&cache, 1, false, Instant::now()), INVALID_SESSION_ID);
    }
}
