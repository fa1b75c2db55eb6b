//! Hand-overs: a source lets a range go only once the informers that follow
//! it have told their handlers that the range's objects left.

use std::collections::HashMap;
use std::sync::Arc;

use parking_lot::Mutex;
use tokio::sync::{Notify, watch};
use tokio::time::Instant;

use super::ShardRange;

/// What the informers following a [`ShardSource`](super::ShardSource) may
/// still hold of its ranges, for their handlers.
///
/// An informer following a source reads its ranges through a
/// [`HandoverFollower`], which counts what it read as held; once its
/// handlers have received the `leftShard` deletes of a range it no longer
/// has (the take's [`Settlement`] is dropped), it holds only the ranges it
/// keeps. A
/// source giving ranges up [publishes](Self::publish) the ranges it keeps,
/// waits until [`released`](Self::released), and only then lets another
/// process take them: no object is then held by the handlers of two
/// processes at once.
///
/// ```
/// use std::time::Duration;
/// use kube_dynamic_informer::vocabulary::{Handover, ShardRange};
/// use tokio::sync::watch;
///
/// # #[tokio::main(flavor = "current_thread")] async fn main() {
/// let (ranges, mut receiver) = watch::channel(None);
/// let handover = Handover::default();
/// let all = vec![ShardRange::all()];
/// handover.publish(&ranges, all.clone());
///
/// // An informer takes the ranges...
/// let follower = std::sync::Arc::new(handover.follow());
/// let (taken, _) = follower.take(&mut receiver);
/// assert_eq!(taken, Some(all.clone()));
/// // ...and the source gives them up: it waits for the informer.
/// handover.publish(&ranges, Vec::new());
/// let (taken, settlement) = follower.take(&mut receiver);
/// assert_eq!(taken, Some(Vec::new()));
/// let deadline = tokio::time::Instant::now() + Duration::from_millis(10);
/// assert_eq!(handover.released(&all, deadline).await, Err(1));
/// // The informer's handlers got their deletes.
/// drop(settlement);
/// assert_eq!(handover.released(&all, deadline).await, Ok(()));
/// # }
/// ```
#[derive(Clone, Default)]
pub struct Handover {
    inner: Arc<Inner>,
}

#[derive(Default)]
struct Inner {
    followers: Mutex<Followers>,
    changed: Notify,
}

#[derive(Default)]
struct Followers {
    next: u64,
    by_id: HashMap<u64, Held>,
}

/// What one follower holds: the ranges it settled on, and those it took
/// since (each take numbered, so that a settlement made at an earlier take
/// keeps the later ones).
#[derive(Default)]
struct Held {
    settled: Vec<ShardRange>,
    takes: Vec<(u64, Vec<ShardRange>)>,
    next_take: u64,
}

impl Held {
    fn overlaps(&self, ranges: &[ShardRange]) -> bool {
        self.settled
            .iter()
            .chain(self.takes.iter().flat_map(|(_, r)| r))
            .any(|h| ranges.iter().any(|r| h.overlaps(r)))
    }
}

impl std::fmt::Debug for Handover {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Handover")
            .field("followers", &self.inner.followers.lock().by_id.len())
            .finish()
    }
}

impl Handover {
    /// Sends `ranges` on `sender` (when they changed), in one step with
    /// every follower's [`take`](HandoverFollower::take): a follower either
    /// read them, or counts what it read before as held. True when they
    /// changed.
    pub fn publish(
        &self,
        sender: &watch::Sender<Option<Vec<ShardRange>>>,
        ranges: Vec<ShardRange>,
    ) -> bool {
        let _followers = self.inner.followers.lock();
        sender.send_if_modified(|current| {
            let changed = current.as_ref() != Some(&ranges);
            if changed {
                *current = Some(ranges);
            }
            changed
        })
    }

    /// A new follower, holding nothing yet.
    #[must_use]
    pub fn follow(&self) -> HandoverFollower {
        let mut followers = self.inner.followers.lock();
        let id = followers.next;
        followers.next += 1;
        followers.by_id.insert(id, Held::default());
        HandoverFollower {
            id,
            handover: self.clone(),
        }
    }

    /// Waits until no follower holds any part of `ranges`, or `deadline`.
    ///
    /// # Errors
    /// At the deadline: how many followers still hold a part of them.
    pub async fn released(&self, ranges: &[ShardRange], deadline: Instant) -> Result<(), usize> {
        loop {
            let changed = self.inner.changed.notified();
            let holding = self
                .inner
                .followers
                .lock()
                .by_id
                .values()
                .filter(|held| held.overlaps(ranges))
                .count();
            if holding == 0 {
                return Ok(());
            }
            if tokio::time::timeout_at(deadline, changed).await.is_err() {
                return Err(holding);
            }
        }
    }
}

/// One informer's following of a [`Handover`]; it holds nothing once
/// dropped.
pub struct HandoverFollower {
    id: u64,
    handover: Handover,
}

impl std::fmt::Debug for HandoverFollower {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("HandoverFollower")
            .field("id", &self.id)
            .finish()
    }
}

impl HandoverFollower {
    /// Reads the source's current ranges from `receiver` (marking them
    /// seen) and counts them as held, in one step with the source's
    /// [`publish`](Handover::publish). The [`Settlement`] settles on them
    /// once dropped.
    pub fn take(
        self: &Arc<Self>,
        receiver: &mut watch::Receiver<Option<Vec<ShardRange>>>,
    ) -> (Option<Vec<ShardRange>>, Settlement) {
        let mut followers = self.handover.inner.followers.lock();
        let ranges = receiver.borrow_and_update().clone();
        let mut take = 0;
        if let Some(held) = followers.by_id.get_mut(&self.id) {
            take = held.next_take;
            held.next_take += 1;
            held.takes.push((take, ranges.clone().unwrap_or_default()));
        }
        let settlement = Settlement(Arc::new(Settle {
            follower: self.clone(),
            take,
            ranges: ranges.clone().unwrap_or_default(),
        }));
        (ranges, settlement)
    }

    fn settle(&self, take: u64, ranges: Vec<ShardRange>) {
        if let Some(held) = self.handover.inner.followers.lock().by_id.get_mut(&self.id) {
            held.settled = ranges;
            held.takes.retain(|(t, _)| *t > take);
        }
        self.handover.inner.changed.notify_waiters();
    }
}

/// Settles a follower on the ranges of one [take](HandoverFollower::take)
/// once every clone is dropped: an informer queues a clone behind the
/// `leftShard` deletes for each handler, so that the last handler to reach
/// it lets the source go on. Ranges taken later stay held.
#[derive(Clone, Debug)]
pub struct Settlement(#[expect(dead_code, reason = "settles when dropped")] Arc<Settle>);

#[derive(Debug)]
struct Settle {
    follower: Arc<HandoverFollower>,
    take: u64,
    ranges: Vec<ShardRange>,
}

impl Drop for Settle {
    fn drop(&mut self) {
        self.follower
            .settle(self.take, std::mem::take(&mut self.ranges));
    }
}

impl Drop for HandoverFollower {
    fn drop(&mut self) {
        self.handover.inner.followers.lock().by_id.remove(&self.id);
        self.handover.inner.changed.notify_waiters();
    }
}
