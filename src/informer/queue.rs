//! One handler's queue of events: first in, first out, or coalesced by
//! object key so that its length is bounded by the number of objects.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::event::Event;
use crate::cache::store::CachedObject;
use crate::vocabulary::object_key::object_key;
use crate::vocabulary::shard::Settlement;

/// A queued event: ready, or a cached object to be decoded only when its
/// handler is about to run (a late handler's replay, a resync), so that a
/// queue of the whole cache holds handles, not decoded objects.
#[derive(Debug)]
pub(super) enum Queued {
    Ready(Event),
    /// An `Add` of a late handler's replay (`in_initial_list`).
    Replay(CachedObject),
    /// A resync's `Update` (`old` and `new` the same object).
    Resync(CachedObject),
}

impl Queued {
    /// The event to hand to the handler: decodes a replayed or resynced
    /// object (with compact storage; a pointer copy otherwise).
    pub(super) fn into_event(self) -> Event {
        match self {
            Queued::Ready(event) => event,
            Queued::Replay(cached) => Event::Add {
                object: cached.object(),
                in_initial_list: true,
                entered_shard: false,
                entered_filter: false,
            },
            Queued::Resync(cached) => Event::Update {
                new: cached.object(),
                old: cached,
                is_resync: true,
            },
        }
    }

    /// The event's object as a handle, and for an update (not a resync)
    /// the state before it: nothing decoded.
    pub(super) fn objects(&self) -> (CachedObject, Option<&CachedObject>) {
        match self {
            Queued::Ready(Event::Update {
                old,
                new,
                is_resync: false,
            }) => (CachedObject::from(new.clone()), Some(old)),
            Queued::Ready(event) => (CachedObject::from(event.object().clone()), None),
            Queued::Replay(cached) | Queued::Resync(cached) => (cached.clone(), None),
        }
    }

    /// The kind of event it is (see [`Event::kind`]).
    pub(super) fn kind(&self) -> &'static str {
        match self {
            Queued::Ready(event) => event.kind(),
            Queued::Replay(_) => "Add",
            Queued::Resync(_) => "Resync",
        }
    }

    fn key(&self) -> Option<String> {
        match self {
            Queued::Ready(event) => object_key(event.object()),
            Queued::Replay(cached) | Queued::Resync(cached) => cached.key(),
        }
    }
}

impl From<Event> for Queued {
    fn from(event: Event) -> Self {
        Queued::Ready(event)
    }
}

/// What a handler's queue holds, in delivery order.
#[derive(Debug)]
pub(super) enum Item {
    /// An event; [`Queued::into_event`] gives it to the handler.
    Event(Queued),
    /// All initial Adds were queued before this marker: once the consumer
    /// reaches it, the registration has synced.
    Synced,
    /// The `leftShard` deletes of a hand-over were queued before this
    /// marker: the consumer drops it once it reached it.
    Settlement(#[expect(dead_code, reason = "held until dropped")] Settlement),
}

/// A slot of the delivery order: an event, the place of a key's pending
/// events (coalescing queues), or the synced marker.
#[derive(Debug)]
enum Slot {
    Event(Queued),
    Key(Arc<str>),
    Synced,
    Settlement(Settlement),
}

/// A key's pending events in a coalescing queue: at most a delete (of the
/// state the handler last saw) followed by an add or update (of the latest
/// state).
#[derive(Debug, Default)]
struct Pending {
    delete: Option<Event>,
    upsert: Option<Queued>,
}

impl Pending {
    /// What is pending for a key with nothing queued yet.
    fn first(event: Queued) -> Self {
        match event {
            Queued::Ready(delete @ Event::Delete { .. }) => Self {
                delete: Some(delete),
                upsert: None,
            },
            other => Self {
                delete: None,
                upsert: Some(other),
            },
        }
    }

    fn len(&self) -> usize {
        usize::from(self.delete.is_some()) + usize::from(self.upsert.is_some())
    }

    /// Folds `event` into what is pending for its key.
    fn merge(&mut self, event: Queued) {
        let event = match event {
            // A resync re-delivers the current state; whatever is pending
            // already delivers that state or a newer one.
            Queued::Resync(_)
            | Queued::Ready(Event::Update {
                is_resync: true, ..
            }) => return,
            replay @ Queued::Replay(_) => {
                self.upsert = Some(replay);
                return;
            }
            Queued::Ready(event) => event,
        };
        match event {
            Event::Update { new, .. } => self.upsert = Some(Queued::Ready(self.updated_to(new))),
            add @ Event::Add { .. } => self.upsert = Some(Queued::Ready(add)),
            delete @ Event::Delete { .. } => {
                // The handler never sees the state it was not yet handed; the
                // first pending delete carries the state it did see.
                self.upsert = None;
                if self.delete.is_none() {
                    self.delete = Some(delete);
                }
            }
        }
    }

    /// The pending add or update once it is brought to `new`.
    fn updated_to(&mut self, new: Arc<kube_core::DynamicObject>) -> Event {
        match self.upsert.take() {
            Some(Queued::Ready(Event::Add {
                in_initial_list,
                entered_shard,
                entered_filter,
                ..
            })) => Event::Add {
                object: new,
                in_initial_list,
                entered_shard,
                entered_filter,
            },
            Some(Queued::Replay(_)) => Event::Add {
                object: new,
                in_initial_list: true,
                entered_shard: false,
                entered_filter: false,
            },
            Some(Queued::Ready(Event::Update { old, .. })) => Event::Update {
                old,
                new,
                is_resync: false,
            },
            Some(Queued::Resync(cached)) => Event::Update {
                old: cached,
                new,
                is_resync: false,
            },
            // An update after a pending delete cannot come from one
            // informer (a recreated object arrives as an add); keep it.
            Some(Queued::Ready(Event::Delete { .. })) | None => Event::Update {
                old: CachedObject::decoded(new.clone()),
                new,
                is_resync: false,
            },
        }
    }
}

/// A handler's queue.
#[derive(Debug, Default)]
pub(super) struct Queue {
    order: VecDeque<Slot>,
    /// Pending events by key; `None` for a first-in-first-out queue.
    pending: Option<HashMap<Arc<str>, Pending>>,
    /// Events queued (not markers).
    len: usize,
}

impl Queue {
    /// An empty queue; `coalesce` folds a key's queued events together.
    pub(super) fn new(coalesce: bool) -> Self {
        Self {
            pending: coalesce.then(HashMap::new),
            ..Self::default()
        }
    }

    /// Events waiting (a coalescing queue counts what is left after folding).
    #[cfg(test)]
    pub(super) fn len(&self) -> usize {
        self.len
    }

    pub(super) fn is_empty(&self) -> bool {
        self.order.is_empty()
    }

    /// Queues an event; returns how much the backlog grew (0 or 1, or less
    /// when coalescing folded events together: the change may be negative).
    pub(super) fn push(&mut self, event: Queued) -> isize {
        let key = self.pending.as_ref().and_then(|_| event.key());
        let (Some(pending), Some(key)) = (&mut self.pending, key) else {
            self.order.push_back(Slot::Event(event));
            self.len += 1;
            return 1;
        };
        let key: Arc<str> = key.into();
        if let Some(p) = pending.get_mut(&key) {
            let before = p.len();
            p.merge(event);
            let after = p.len();
            self.len = self.len + after - before;
            return isize::try_from(after).unwrap_or(0) - isize::try_from(before).unwrap_or(0);
        }
        let p = Pending::first(event);
        let n = p.len();
        pending.insert(key.clone(), p);
        self.order.push_back(Slot::Key(key));
        self.len += n;
        isize::try_from(n).unwrap_or(0)
    }

    pub(super) fn push_synced(&mut self) {
        self.order.push_back(Slot::Synced);
    }

    pub(super) fn push_settlement(&mut self, settlement: Settlement) {
        self.order.push_back(Slot::Settlement(settlement));
    }

    /// Moves up to `max` items, in order, into `out`.
    pub(super) fn take(&mut self, max: usize, out: &mut Vec<Item>) {
        while out.len() < max {
            let Some(slot) = self.order.pop_front() else {
                return;
            };
            match slot {
                Slot::Event(e) => {
                    self.len -= 1;
                    out.push(Item::Event(e));
                }
                Slot::Synced => out.push(Item::Synced),
                Slot::Settlement(s) => out.push(Item::Settlement(s)),
                Slot::Key(key) => {
                    let Some(p) = self.pending.as_mut().and_then(|m| m.remove(&key)) else {
                        continue;
                    };
                    self.len -= p.len();
                    out.extend(p.delete.map(|e| Item::Event(Queued::Ready(e))));
                    out.extend(p.upsert.map(Item::Event));
                }
            }
        }
    }

    /// Drops everything queued.
    pub(super) fn clear(&mut self) {
        self.order.clear();
        if let Some(p) = &mut self.pending {
            p.clear();
        }
        self.len = 0;
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_core::DynamicObject;

    fn obj(name: &str, rv: u32) -> Arc<DynamicObject> {
        let mut o: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": "ns", "resourceVersion": rv.to_string() }
        }))
        .unwrap();
        o.metadata.resource_version = Some(rv.to_string());
        Arc::new(o)
    }
    fn add(name: &str, rv: u32) -> Event {
        Event::Add {
            object: obj(name, rv),
            in_initial_list: false,
            entered_shard: false,
            entered_filter: false,
        }
    }
    fn update(name: &str, old: u32, new: u32) -> Event {
        Event::Update {
            old: CachedObject::decoded(obj(name, old)),
            new: obj(name, new),
            is_resync: false,
        }
    }
    fn resync(name: &str, rv: u32) -> Event {
        let object = obj(name, rv);
        Event::Update {
            old: CachedObject::decoded(object.clone()),
            new: object,
            is_resync: true,
        }
    }
    fn delete(name: &str, rv: u32) -> Event {
        Event::Delete {
            object: obj(name, rv),
            final_state_unknown: false,
            left_shard: false,
            left_filter: false,
        }
    }

    /// `kind name rv` (`old>new` for updates) of everything queued.
    fn drain(q: &mut Queue) -> Vec<String> {
        let mut items = Vec::new();
        q.take(usize::MAX, &mut items);
        assert_eq!(q.len(), 0);
        items
            .into_iter()
            .map(|item| match item {
                Item::Synced => "synced".to_owned(),
                Item::Settlement(_) => "settlement".to_owned(),
                Item::Event(e) => {
                    let e = e.into_event();
                    let rv = |o: &Arc<DynamicObject>| o.metadata.resource_version.clone().unwrap();
                    let name = e.object().metadata.name.clone().unwrap();
                    match &e {
                        Event::Update { old, new, .. } => {
                            let old = old.resource_version().unwrap_or_default();
                            format!("{} {name} {old}>{}", e.kind(), rv(new))
                        }
                        _ => format!("{} {name} {}", e.kind(), rv(e.object())),
                    }
                }
            })
            .collect()
    }

    #[test]
    fn a_plain_queue_keeps_every_event_in_order() {
        let mut q = Queue::new(false);
        for e in [
            add("a", 1),
            update("a", 1, 2),
            resync("a", 2),
            delete("a", 3),
        ] {
            assert_eq!(q.push(e.into()), 1);
        }
        assert_eq!(q.len(), 4);
        assert_eq!(
            drain(&mut q),
            ["Add a 1", "Update a 1>2", "Resync a 2>2", "Delete a 3"]
        );
    }

    #[test]
    fn coalescing_keeps_the_latest_state_and_the_old_the_handler_saw() {
        let mut q = Queue::new(true);
        q.push(update("a", 1, 2).into());
        q.push(add("b", 5).into());
        q.push(update("a", 2, 3).into());
        q.push(update("b", 5, 6).into());
        q.push(update("a", 3, 4).into());
        assert_eq!(q.len(), 2, "one pending event per key");
        assert_eq!(drain(&mut q), ["Update a 1>4", "Add b 6"]);
    }

    #[test]
    fn coalescing_never_drops_a_delete() {
        let mut q = Queue::new(true);
        // Seen by the handler as 1, then updated and deleted.
        q.push(update("a", 1, 2).into());
        q.push(delete("a", 3).into());
        // Added and deleted before the handler got to it.
        q.push(add("b", 4).into());
        q.push(delete("b", 5).into());
        // Deleted, recreated, updated: the delete, then the latest state.
        q.push(delete("c", 6).into());
        q.push(add("c", 7).into());
        q.push(update("c", 7, 8).into());
        // ...and deleted again: the first delete stands for both.
        q.push(delete("d", 9).into());
        q.push(add("d", 10).into());
        q.push(delete("d", 11).into());
        assert_eq!(
            drain(&mut q),
            [
                "Delete a 3",
                "Delete b 5",
                "Delete c 6",
                "Add c 8",
                "Delete d 9"
            ]
        );
    }

    #[test]
    fn coalescing_drops_resyncs_of_pending_objects_and_keeps_order_and_markers() {
        let mut q = Queue::new(true);
        q.push(add("a", 1).into());
        q.push(add("b", 2).into());
        q.push_synced();
        q.push(resync("a", 1).into());
        q.push(resync("c", 3).into());
        q.push(update("b", 2, 4).into());
        assert_eq!(q.len(), 3);
        assert_eq!(
            drain(&mut q),
            ["Add a 1", "Add b 4", "synced", "Resync c 3>3"]
        );
    }

    #[test]
    fn a_coalescing_queue_is_bounded_by_the_number_of_keys() {
        let mut q = Queue::new(true);
        for round in 0..1000u32 {
            for key in ["a", "b", "c"] {
                q.push(update(key, round, round + 1).into());
            }
        }
        assert_eq!(q.len(), 3);
        assert_eq!(
            drain(&mut q),
            ["Update a 0>1000", "Update b 0>1000", "Update c 0>1000"]
        );
    }

    #[test]
    fn taking_in_turns_resumes_where_it_stopped() {
        let mut q = Queue::new(true);
        for i in 0..5 {
            q.push(add(&format!("o{i}"), i).into());
        }
        let mut first = Vec::new();
        q.take(2, &mut first);
        assert_eq!(first.len(), 2);
        assert_eq!(q.len(), 3);
        assert_eq!(drain(&mut q), ["Add o2 2", "Add o3 3", "Add o4 4"]);
        assert!(q.is_empty());
    }

    /// A handle on `object` as a compact store holds it.
    fn cached(object: &Arc<DynamicObject>) -> CachedObject {
        let mut writer =
            crate::cache::store::StoreWriter::with_storage(crate::cache::store::Storage::Compact);
        writer.upsert(object.clone());
        writer.reader().list_all().remove(0)
    }

    #[test]
    fn replayed_and_resynced_objects_wait_as_handles_and_fold_like_events() {
        let mut q = Queue::new(true);
        q.push(Queued::Replay(cached(&obj("a", 1))));
        q.push(Queued::Replay(cached(&obj("b", 1))));
        q.push(Queued::Resync(cached(&obj("c", 1))));
        assert!(matches!(
            q.order.front(),
            Some(Slot::Key(_)) | Some(Slot::Event(Queued::Replay(_)))
        ));
        // A change of a replayed object keeps it an initial Add of the new
        // state; a resync of anything pending is folded away; a change of a
        // pending resync becomes an update from the state the handler saw.
        q.push(update("a", 1, 2).into());
        q.push(Queued::Resync(cached(&obj("b", 1))));
        q.push(update("c", 1, 3).into());
        assert_eq!(q.len(), 3);
        let mut items = Vec::new();
        q.take(usize::MAX, &mut items);
        let events: Vec<Event> = items
            .into_iter()
            .filter_map(|item| match item {
                Item::Event(e) => Some(e.into_event()),
                _ => None,
            })
            .collect();
        assert!(matches!(
            &events[0],
            Event::Add { object, in_initial_list: true, .. }
                if object.metadata.resource_version.as_deref() == Some("2")
        ));
        assert!(matches!(
            &events[1],
            Event::Add {
                in_initial_list: true,
                ..
            }
        ));
        assert!(matches!(
            &events[2],
            Event::Update { old, new, is_resync: false }
                if old.resource_version() == Some("1")
                    && new.metadata.resource_version.as_deref() == Some("3")
        ));
    }

    #[test]
    fn a_plain_queue_decodes_a_replayed_object_only_when_it_is_taken() {
        let mut q = Queue::new(false);
        let object = obj("a", 7);
        q.push(Queued::Replay(cached(&object)));
        drop(object);
        let mut items = Vec::new();
        q.take(1, &mut items);
        let Some(Item::Event(Queued::Replay(handle))) = items.pop() else {
            panic!("a replayed object waits as a handle");
        };
        let Event::Add { object, .. } = Queued::Replay(handle).into_event() else {
            panic!("a replay is an Add");
        };
        assert_eq!(object.metadata.name.as_deref(), Some("a"));
    }
}
