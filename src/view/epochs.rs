//! A replica's leader-epoch cache as a view carries it.
//!
//! A console of thousands of partitions gets a new view every tick and drops the one before,
//! so what a replica row holds is copied and freed thousands of times a second. A short
//! cache (the usual case: one entry per leader epoch that wrote, and most partitions have
//! seen one or two leaders) sits in the row itself: copying or dropping it follows no pointer
//! and touches no reference count. A longer one is shared between views behind an `Arc`, so
//! an unchanged cache is not copied per snapshot either.

use std::fmt;
use std::ops::Deref;
use std::sync::Arc;

/// One entry of a leader-epoch cache: `epoch` wrote from `start_offset` up to the next
/// entry's start (or the log end).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct EpochStart {
    pub epoch: i32,
    pub start_offset: i64,
}

/// Entries a cache holds in the row before it is shared instead.
const INLINE: usize = 3;

/// A replica's leader-epoch cache, oldest first; reads as a slice of [`EpochStart`].
#[derive(Clone)]
pub struct Epochs(Repr);

#[derive(Clone)]
enum Repr {
    Inline { len: u8, entries: [EpochStart; INLINE] },
    Shared(Arc<[EpochStart]>),
}

impl Epochs {
    /// The cache of `entries`: in the row when short, otherwise in a new shared copy.
    pub fn new(entries: &[EpochStart]) -> Epochs {
        match Epochs::inline(entries) {
            Some(inline) => inline,
            None => Epochs(Repr::Shared(entries.into())),
        }
    }

    /// The cache of `entries` when it fits in the row.
    fn inline(entries: &[EpochStart]) -> Option<Epochs> {
        let len = entries.len();
        (len <= INLINE).then(|| {
            let mut inline = [EpochStart::default(); INLINE];
            inline[..len].copy_from_slice(entries);
            Epochs(Repr::Inline {
                len: len as u8,
                entries: inline,
            })
        })
    }

    /// The same entries as `had` when they are equal (a long cache keeps sharing `had`'s
    /// copy), otherwise a cache of `entries`.
    pub fn reuse(had: Option<&Epochs>, entries: impl ExactSizeIterator<Item = EpochStart> + Clone) -> Epochs {
        if let Some(had) = had
            && had.len() == entries.len()
            && had.iter().copied().eq(entries.clone())
        {
            return had.clone();
        }
        Epochs::new(&entries.collect::<Vec<_>>())
    }

    /// Whether a cache of `len` entries sits in the row (nothing to share).
    pub fn fit_in_row(len: usize) -> bool {
        len <= INLINE
    }

    /// Whether this cache is held by other views too (a long one), not in the row.
    pub fn is_shared(&self) -> bool {
        matches!(self.0, Repr::Shared(_))
    }

    /// Whether both are the same shared copy.
    pub fn same_copy(&self, other: &Epochs) -> bool {
        match (&self.0, &other.0) {
            (Repr::Shared(a), Repr::Shared(b)) => Arc::ptr_eq(a, b),
            _ => false,
        }
    }
}

impl Deref for Epochs {
    type Target = [EpochStart];

    fn deref(&self) -> &[EpochStart] {
        match &self.0 {
            Repr::Inline { len, entries } => &entries[..usize::from(*len)],
            Repr::Shared(shared) => shared,
        }
    }
}

impl Default for Epochs {
    fn default() -> Epochs {
        Epochs::new(&[])
    }
}

impl PartialEq for Epochs {
    fn eq(&self, other: &Epochs) -> bool {
        **self == **other
    }
}

impl Eq for Epochs {}

impl fmt::Debug for Epochs {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_list().entries(self.iter()).finish()
    }
}

impl<const N: usize> From<[EpochStart; N]> for Epochs {
    fn from(entries: [EpochStart; N]) -> Epochs {
        Epochs::new(&entries)
    }
}

impl From<Vec<EpochStart>> for Epochs {
    fn from(entries: Vec<EpochStart>) -> Epochs {
        Epochs::new(&entries)
    }
}

impl FromIterator<EpochStart> for Epochs {
    fn from_iter<I: IntoIterator<Item = EpochStart>>(entries: I) -> Epochs {
        Epochs::new(&entries.into_iter().collect::<Vec<_>>())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn starts(n: usize) -> Vec<EpochStart> {
        (0..n)
            .map(|i| EpochStart {
                epoch: i as i32 + 1,
                start_offset: i as i64 * 100,
            })
            .collect()
    }

    #[test]
    fn a_cache_reads_back_its_entries_in_order_whatever_its_length() {
        for n in 0..8 {
            let entries = starts(n);
            let epochs = Epochs::new(&entries);
            assert_eq!(&*epochs, entries.as_slice(), "{n} entries");
            assert_eq!(epochs.is_shared(), n > INLINE, "{n} entries");
            assert_eq!(epochs.clone(), epochs);
            assert_eq!(format!("{epochs:?}"), format!("{entries:?}"));
        }
        assert!(Epochs::default().is_empty());
        assert_ne!(Epochs::new(&starts(2)), Epochs::new(&starts(3)));
    }

    #[test]
    fn a_long_unchanged_cache_is_shared_and_a_changed_one_copied() {
        let long = starts(INLINE + 2);
        let first = Epochs::reuse(None, long.iter().copied());
        let again = Epochs::reuse(Some(&first), long.iter().copied());
        assert!(again.same_copy(&first), "an unchanged cache keeps its copy");
        let mut grown = long.clone();
        grown.push(EpochStart {
            epoch: 99,
            start_offset: 10_000,
        });
        let changed = Epochs::reuse(Some(&first), grown.iter().copied());
        assert!(!changed.same_copy(&first));
        assert_eq!(&*changed, grown.as_slice());
        let short = Epochs::reuse(Some(&first), starts(1).into_iter());
        assert!(!short.is_shared(), "a cache cut short moves into the row");
    }
}
