//! One informer's part of a wait: its objects as the events say they are,
//! and how many of them count, kept as each event arrives.

use std::cell::OnceCell;
use std::collections::HashMap;
use std::sync::Arc;

use super::goal::WaitFor;
use super::objects::Membership;
use super::report::{ObjectOutcome, ObjectState};
use crate::cache::condition::{Condition, Verdict};
use crate::cache::index::IndexInput;
use crate::cache::store::CachedObject;
use crate::informer::event::Event;
use crate::vocabulary::resource::ResourceKey;

/// What the wait knows of one object.
#[derive(Debug, Default)]
struct Entry {
    /// In the cache.
    present: bool,
    /// Named, or picked by the selection as it is now.
    picked: bool,
    /// Picked while present at some time during the wait.
    seen: bool,
    /// Named, waiting for deletion: the uid first seen.
    uid: Option<String>,
    /// Named, waiting for deletion: in the cache with another uid than
    /// the first seen (deleted and created again).
    replaced: bool,
    /// What the condition gave, while present and picked.
    verdict: Option<Verdict>,
    /// A mistake of the condition on this object was said.
    reported: bool,
}

/// What is told of each object a condition is a mistake on.
pub(super) type MistakeHook = Arc<dyn Fn(&ObjectOutcome) + Send + Sync>;

/// One informer's objects, as far as a wait is concerned.
pub(super) struct Tracker {
    pub(super) resource: ResourceKey,
    membership: Membership,
    condition: Option<Condition>,
    entries: HashMap<String, Entry>,
    /// Every initial Add has arrived: the cache was whole.
    pub(super) synced: bool,
    /// Objects that count (see `counts`), and how many of them are true.
    pub(super) objects: usize,
    pub(super) holding: usize,
    /// Objects the condition was found not to be a boolean on, or to fail on.
    pub(super) mistakes: u64,
    on_mistake: Option<MistakeHook>,
}

impl Tracker {
    pub(super) fn new(
        resource: ResourceKey,
        membership: Membership,
        goal: &WaitFor,
        on_mistake: Option<MistakeHook>,
    ) -> Self {
        let mut tracker = Tracker {
            on_mistake,
            resource,
            condition: goal.as_condition().cloned(),
            entries: HashMap::new(),
            synced: false,
            objects: 0,
            holding: 0,
            mistakes: 0,
            membership,
        };
        // Named objects count from the start, there or not.
        let names: Vec<String> = tracker
            .membership
            .names()
            .map(|keys| keys.iter().cloned().collect())
            .unwrap_or_default();
        for key in names {
            tracker.change(&key, |entry| {
                entry.picked = true;
            });
        }
        tracker
    }

    fn named(&self) -> bool {
        self.membership.names().is_some()
    }

    fn deleting(&self) -> bool {
        self.condition.is_none()
    }

    /// Whether `entry` counts, and whether it is true: the rules of
    /// [`WaitFor`] and [`Objects`](super::Objects).
    fn counts(&self, entry: &Entry) -> (bool, bool) {
        match (&self.condition, self.named()) {
            (Some(_), named) => {
                let counts = named || (entry.present && entry.picked);
                let met = entry.present
                    && entry.picked
                    && entry.verdict.as_ref().is_some_and(Verdict::is_met);
                (counts, met)
            }
            (None, true) => (true, !entry.present || entry.replaced),
            (None, false) => (entry.seen, !(entry.present && entry.picked)),
        }
    }

    /// Changes the entry of `key` (made if missing), keeping the counts,
    /// and forgets it when it no longer matters.
    fn change(&mut self, key: &str, f: impl FnOnce(&mut Entry)) {
        // An entry not kept did not count.
        let kept = self.entries.remove(key);
        let (counted, held) = kept.as_ref().map_or((false, false), |e| self.counts(e));
        let mut entry = kept.unwrap_or_default();
        f(&mut entry);
        let (counts, holds) = self.counts(&entry);
        self.objects = (self.objects + usize::from(counts)).saturating_sub(usize::from(counted));
        self.holding = (self.holding + usize::from(holds)).saturating_sub(usize::from(held));
        // Kept while it counts, or while its report must not be said again.
        if counts || entry.reported {
            self.entries.insert(key.to_owned(), entry);
        }
    }

    /// Takes one event in.
    pub(super) fn apply(&mut self, event: &Event) {
        match event {
            Event::Add { object, .. } | Event::Update { new: object, .. } => self.upsert(object),
            Event::Delete { object, .. } => {
                // An object the wait does not know of does not count.
                if let Some(key) = object.key().filter(|k| self.entries.contains_key(k)) {
                    self.change(&key, |entry| {
                        entry.present = false;
                        entry.verdict = None;
                    });
                }
            }
        }
    }

    fn upsert(&mut self, cached: &CachedObject) {
        let Some(key) = cached.key() else {
            return;
        };
        let named = self.named();
        if named && !self.entries.contains_key(&key) {
            return;
        }
        // Decoded (with compact storage) only when an index or the
        // condition reads it.
        let object = OnceCell::new();
        let input = OnceCell::new();
        let input =
            || input.get_or_init(|| IndexInput::new(object.get_or_init(|| cached.object())));
        let picked = self.membership.picks(&key, cached, input);
        if !picked && !self.entries.contains_key(&key) {
            return;
        }
        let deleting_named = named && self.deleting();
        let uid = cached.uid().map(str::to_owned);
        let verdict = match &self.condition {
            Some(condition) if picked => Some(condition.evaluate(input())),
            _ => None,
        };
        let mistake = verdict.as_ref().filter(|v| v.is_mistake()).cloned();
        let mut report = false;
        self.change(&key, |entry| {
            entry.present = true;
            entry.picked = picked;
            entry.seen |= picked;
            if deleting_named {
                match &entry.uid {
                    None => entry.uid = uid,
                    Some(first) => entry.replaced |= uid.as_ref() != Some(first),
                }
            }
            entry.verdict = verdict;
            if mistake.is_some() && !entry.reported {
                entry.reported = true;
                report = true;
            }
        });
        if let (true, Some(mistake), Some(condition)) = (report, mistake, &self.condition) {
            self.mistakes += 1;
            tracing::warn!(
                resource = %self.resource,
                object = %key,
                condition = %condition,
                "the condition is {mistake} on this object; it counts as not met (said once per object)"
            );
            if let Some(hook) = &self.on_mistake {
                hook(&ObjectOutcome {
                    resource: self.resource.clone(),
                    key,
                    state: ObjectState::Present {
                        verdict: Some(mistake),
                    },
                    holds: false,
                });
            }
        }
    }

    /// Every object that counts, as it stands, as objects of `resource`.
    pub(super) fn outcomes(&self, resource: &ResourceKey) -> Vec<ObjectOutcome> {
        let mut outcomes: Vec<ObjectOutcome> = self
            .entries
            .iter()
            .filter_map(|(key, entry)| {
                let (counts, holds) = self.counts(entry);
                counts.then(|| ObjectOutcome {
                    resource: resource.clone(),
                    key: key.clone(),
                    state: if entry.replaced {
                        ObjectState::Replaced
                    } else if entry.present && entry.picked {
                        ObjectState::Present {
                            verdict: entry.verdict.clone(),
                        }
                    } else {
                        ObjectState::Absent
                    },
                    holds,
                })
            })
            .collect();
        outcomes.sort_by(|a, b| a.key.cmp(&b.key));
        outcomes
    }
}
