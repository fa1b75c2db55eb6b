//! Handler filters: which objects a handler wants (a [`Condition`]) and
//! which of their updates (a [`ChangePredicate`]), applied by the
//! dispatcher once per event for all the handlers that ask the same, before
//! anything is queued: an event a handler does not want costs it no queue,
//! no wake-up and no call.
//!
//! A [`Gate`] is one such pair with what it knows of the cache: the keys of
//! the cached objects that meet its filter. An object's verdict is taken
//! once, when a new state of it arrives; an update compares it with the
//! verdict of the state before, so a compact cache's old state is never
//! decoded to be evaluated again, and a handler never receives a Delete for
//! an object it was not given, nor an Update of one.

use std::cell::OnceCell;
use std::collections::HashSet;
use std::fmt;
use std::sync::Arc;

use kube_core::DynamicObject;

use crate::cache::index::IndexInput;
use crate::cache::store::CachedObject;
use crate::cache::{ChangePredicate, Condition, Verdict};
use crate::vocabulary::resource::ResourceKey;

use super::event::Event;

/// A handler's filter that is not a boolean on an object, or fails on it:
/// the object counts as not matching, and this is said once per object
/// (a `tracing` warning, and to
/// [`HandlerOptions::on_mistake`](super::HandlerOptions::on_mistake)).
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct FilterMistake {
    /// The informer's resource.
    pub resource: ResourceKey,
    /// The object's key (`namespace/name`, or `name`).
    pub key: String,
    /// The filter.
    pub filter: Condition,
    /// What it gave: [`Verdict::NotBoolean`] or [`Verdict::Failed`].
    pub verdict: Verdict,
}

/// `filter 'status.phase' on shop/w: not a boolean: "Running"`.
impl fmt::Display for FilterMistake {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "filter '{}' on {} {}: {}",
            self.filter, self.resource, self.key, self.verdict
        )
    }
}

/// What a handler is told of its filter's mistakes.
#[derive(Clone)]
pub(super) struct MistakeHook(pub(super) Arc<dyn Fn(&FilterMistake) + Send + Sync>);

impl fmt::Debug for MistakeHook {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("MistakeHook(..)")
    }
}

/// Why an event did not reach a handler, for its counters
/// (`kdi_handler_events_filtered_total`'s `reason`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Dropped {
    /// The object does not meet the filter (before or after).
    Condition = 0,
    /// An update that changes none of the change predicate's values.
    Unchanged = 1,
}

/// What a gate let through of a delta's events: each with the place of the
/// event it comes from, and how many it held back, by [`Dropped`].
#[derive(Default)]
pub(super) struct Passed {
    pub(super) events: Vec<(usize, Event)>,
    pub(super) dropped: [u64; 2],
}

/// One filter and change predicate, shared by the handlers that ask for
/// both alike, and the keys of the cached objects that meet the filter.
pub(super) struct Gate {
    pub(super) id: u64,
    resource: ResourceKey,
    filter: Option<Condition>,
    changes: Option<ChangePredicate>,
    /// Keys of the cached objects that meet the filter (with a filter).
    matching: HashSet<String>,
    /// Keys of the cached objects the filter was said to be a mistake on.
    reported: HashSet<String>,
    /// The hooks of the handlers that share the gate, by registration.
    hooks: Vec<(u64, MistakeHook)>,
}

impl Gate {
    pub(super) fn new(
        id: u64,
        resource: ResourceKey,
        filter: Option<Condition>,
        changes: Option<ChangePredicate>,
    ) -> Self {
        Self {
            id,
            resource,
            filter,
            changes,
            matching: HashSet::new(),
            reported: HashSet::new(),
            hooks: Vec::new(),
        }
    }

    /// Whether this gate filters as `filter` and `changes` say.
    pub(super) fn is(&self, filter: Option<&Condition>, changes: Option<&ChangePredicate>) -> bool {
        self.filter.as_ref() == filter && self.changes.as_ref() == changes
    }

    /// Tells registration `id`'s hook of the mistakes found from now on.
    pub(super) fn add_hook(&mut self, id: u64, hook: MistakeHook) {
        self.hooks.push((id, hook));
    }

    /// Forgets the hooks of registrations not in `live`.
    pub(super) fn keep_hooks(&mut self, live: impl Fn(u64) -> bool) {
        self.hooks.retain(|(id, _)| live(*id));
    }

    /// Takes the verdict of each cached object (a new gate over a filled
    /// cache): what it knows of the cache before any event.
    pub(super) fn fill(&mut self, objects: &[CachedObject]) {
        if self.filter.is_some() {
            for object in objects {
                self.offered(object);
            }
        }
    }

    /// Whether a cached object is in the handlers' view: for a replay to a
    /// late handler and for a resync.
    pub(super) fn admits(&self, object: &CachedObject) -> bool {
        self.filter.is_none() || object.key().is_some_and(|k| self.matching.contains(&k))
    }

    /// Takes the verdict of an object handed to the handlers as an initial
    /// Add outside the events (a snapshot's, deferred): whether it is in
    /// their view.
    pub(super) fn offered(&mut self, object: &CachedObject) -> bool {
        let Some(key) = object.key() else {
            return self.filter.is_none();
        };
        if self.filter.is_none() {
            return true;
        }
        let decoded = object.object();
        let meets = self.meets(&key, &decoded, &OnceCell::new());
        if meets {
            self.matching.insert(key);
        }
        meets
    }

    /// What the handlers get of a delta's `events`.
    pub(super) fn pass(&mut self, events: &[Event]) -> Passed {
        let mut passed = Passed::default();
        for (i, event) in events.iter().enumerate() {
            match self.pass_one(event) {
                Ok(event) => passed.events.push((i, event)),
                Err(why) => passed.dropped[why as usize] += 1,
            }
        }
        passed
    }

    /// What the handlers get of one event: the event, the Add or Delete it
    /// becomes for them (an object entering or leaving their view), or why
    /// nothing.
    pub(super) fn pass_one(&mut self, event: &Event) -> Result<Event, Dropped> {
        match event {
            Event::Add { object, .. } => self.enters(object).map(|()| event.clone()),
            Event::Delete { object, .. } => self.leaves(object).map(|()| event.clone()),
            Event::Update {
                old,
                new,
                is_resync,
            } => match self.moves(new)? {
                (true, true) if !is_resync && self.unchanged(old, new) => Err(Dropped::Unchanged),
                (true, true) => Ok(event.clone()),
                (false, true) => Ok(Event::Add {
                    object: new.clone(),
                    in_initial_list: false,
                    entered_shard: false,
                    entered_filter: true,
                }),
                (true, false) => Ok(Event::Delete {
                    object: new.clone(),
                    final_state_unknown: false,
                    left_shard: false,
                    left_filter: true,
                }),
                (false, false) => Err(Dropped::Condition),
            },
        }
    }

    /// An added object: in the handlers' view if it meets the filter.
    fn enters(&mut self, object: &CachedObject) -> Result<(), Dropped> {
        if self.filter.is_none() {
            return Ok(());
        }
        let key = object.key().ok_or(Dropped::Condition)?;
        if !self.meets(&key, &object.object(), &OnceCell::new()) {
            return Err(Dropped::Condition);
        }
        self.matching.insert(key);
        Ok(())
    }

    /// A deleted object: passed on if it was in the handlers' view.
    fn leaves(&mut self, object: &CachedObject) -> Result<(), Dropped> {
        if self.filter.is_none() {
            return Ok(());
        }
        let key = object.key().ok_or(Dropped::Condition)?;
        self.reported.remove(&key);
        if self.matching.remove(&key) {
            Ok(())
        } else {
            Err(Dropped::Condition)
        }
    }

    /// Whether an updated object was in the handlers' view and is now,
    /// the view taking its new state.
    fn moves(&mut self, new: &CachedObject) -> Result<(bool, bool), Dropped> {
        if self.filter.is_none() {
            return Ok((true, true));
        }
        let key = new.key().ok_or(Dropped::Condition)?;
        let was = self.matching.contains(&key);
        let is = self.meets(&key, &new.object(), &OnceCell::new());
        if is && !was {
            self.matching.insert(key);
        } else if was && !is {
            self.matching.remove(&key);
        }
        Ok((was, is))
    }

    /// Whether an update changes none of the change predicate's values (in
    /// a compact cache, two states compare by their digests or their
    /// bytes).
    fn unchanged(&self, old: &CachedObject, new: &CachedObject) -> bool {
        self.changes
            .as_ref()
            .is_some_and(|changes| !changes.changed(old, new))
    }

    /// Whether `object` meets the filter; a mistake is not met, and said
    /// once for its key.
    fn meets<'a>(
        &mut self,
        key: &str,
        object: &'a DynamicObject,
        input: &OnceCell<IndexInput<'a>>,
    ) -> bool {
        let Some(filter) = &self.filter else {
            return true;
        };
        let verdict = filter.evaluate(input.get_or_init(|| IndexInput::new(object)));
        if verdict.is_mistake() {
            if !self.reported.contains(key) {
                self.reported.insert(key.to_owned());
                self.say(key, filter.clone(), verdict);
            }
            return false;
        }
        verdict.is_met()
    }

    fn say(&self, key: &str, filter: Condition, verdict: Verdict) {
        let mistake = FilterMistake {
            resource: self.resource.clone(),
            key: key.to_owned(),
            filter,
            verdict,
        };
        tracing::warn!(
            resource = %mistake.resource,
            object = %mistake.key,
            filter = %mistake.filter,
            verdict = %mistake.verdict,
            "a handler's filter is not a boolean on an object, or fails on it; the object counts as not matching"
        );
        for (_, hook) in &self.hooks {
            // A hook that panics must not take the dispatch down.
            let _ = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| (hook.0)(&mistake)));
        }
    }
}

#[cfg(test)]
mod tests;
