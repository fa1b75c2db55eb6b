//! One handler's queue of events: first in, first out, or coalesced by
//! object key so that its length is bounded by the number of objects.

use std::collections::{HashMap, VecDeque};
use std::sync::Arc;

use super::event::Event;
use crate::cache::store::CachedObject;
use crate::vocabulary::shard::Settlement;

/// The object an event is about as a handle, and for an update (not a
/// resync) the state before it: nothing decoded.
pub(super) fn objects(event: &Event) -> (&CachedObject, Option<&CachedObject>) {
    match event {
        Event::Update {
            old,
            new,
            is_resync: false,
        } => (new, Some(old)),
        event => (event.object(), None),
    }
}

/// What a handler's queue holds, in delivery order.
#[derive(Debug)]
pub(super) enum Item {
    /// An event.
    Event(Event),
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
    Event(Event),
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
    upsert: Option<Event>,
}

impl Pending {
    /// What is pending for a key with nothing queued yet.
    fn first(event: Event) -> Self {
        match event {
            delete @ Event::Delete { .. } => Self {
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
    fn merge(&mut self, event: Event) {
        match event {
            // A resync re-delivers the current state; whatever is pending
            // already delivers that state or a newer one.
            Event::Update {
                is_resync: true, ..
            } => {}
            Event::Update { new, .. } => self.upsert = Some(self.updated_to(new)),
            add @ Event::Add { .. } => self.upsert = Some(add),
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
    fn updated_to(&mut self, new: CachedObject) -> Event {
        match self.upsert.take() {
            Some(Event::Add {
                in_initial_list,
                entered_shard,
                entered_filter,
                ..
            }) => Event::Add {
                object: new,
                in_initial_list,
                entered_shard,
                entered_filter,
            },
            Some(Event::Update { old, .. }) => Event::Update {
                old,
                new,
                is_resync: false,
            },
            // An update after a pending delete cannot come from one
            // informer (a recreated object arrives as an add); keep it.
            Some(Event::Delete { .. }) | None => Event::Update {
                old: new.clone(),
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
    pub(super) fn push(&mut self, event: Event) -> isize {
        let key = self.pending.as_ref().and_then(|_| event.object().key());
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
                    out.extend(p.delete.map(Item::Event));
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

    fn decoded(name: &str, rv: u32) -> Arc<DynamicObject> {
        let o: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": name, "namespace": "ns", "resourceVersion": rv.to_string() }
        }))
        .unwrap();
        Arc::new(o)
    }
    fn obj(name: &str, rv: u32) -> CachedObject {
        CachedObject::from(decoded(name, rv))
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
            old: obj(name, old),
            new: obj(name, new),
            is_resync: false,
        }
    }
    fn resync(name: &str, rv: u32) -> Event {
        let object = obj(name, rv);
        Event::Update {
            old: object.clone(),
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
                    let rv = |o: &CachedObject| o.resource_version().unwrap().to_owned();
                    let name = e.object().name().unwrap().to_owned();
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
            assert_eq!(q.push(e), 1);
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
        q.push(update("a", 1, 2));
        q.push(add("b", 5));
        q.push(update("a", 2, 3));
        q.push(update("b", 5, 6));
        q.push(update("a", 3, 4));
        assert_eq!(q.len(), 2, "one pending event per key");
        assert_eq!(drain(&mut q), ["Update a 1>4", "Add b 6"]);
    }

    #[test]
    fn coalescing_never_drops_a_delete() {
        let mut q = Queue::new(true);
        // Seen by the handler as 1, then updated and deleted.
        q.push(update("a", 1, 2));
        q.push(delete("a", 3));
        // Added and deleted before the handler got to it.
        q.push(add("b", 4));
        q.push(delete("b", 5));
        // Deleted, recreated, updated: the delete, then the latest state.
        q.push(delete("c", 6));
        q.push(add("c", 7));
        q.push(update("c", 7, 8));
        // ...and deleted again: the first delete stands for both.
        q.push(delete("d", 9));
        q.push(add("d", 10));
        q.push(delete("d", 11));
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
        q.push(add("a", 1));
        q.push(add("b", 2));
        q.push_synced();
        q.push(resync("a", 1));
        q.push(resync("c", 3));
        q.push(update("b", 2, 4));
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
                q.push(update(key, round, round + 1));
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
            q.push(add(&format!("o{i}"), i));
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
    fn replayed_and_resynced_objects_fold_like_any_event() {
        let mut q = Queue::new(true);
        q.push(Event::replay(cached(&decoded("a", 1))));
        q.push(Event::replay(cached(&decoded("b", 1))));
        q.push(Event::resync(cached(&decoded("c", 1))));
        // A change of a replayed object keeps it an initial Add of the new
        // state; a resync of anything pending is folded away; a change of a
        // pending resync becomes an update from the state the handler saw.
        q.push(update("a", 1, 2));
        q.push(Event::resync(cached(&decoded("b", 1))));
        q.push(update("c", 1, 3));
        assert_eq!(q.len(), 3);
        let mut items = Vec::new();
        q.take(usize::MAX, &mut items);
        let events: Vec<Event> = items
            .into_iter()
            .filter_map(|item| match item {
                Item::Event(e) => Some(e),
                _ => None,
            })
            .collect();
        assert!(matches!(
            &events[0],
            Event::Add { object, in_initial_list: true, .. }
                if object.resource_version() == Some("2")
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
                if old.resource_version() == Some("1") && new.resource_version() == Some("3")
        ));
    }

    #[test]
    fn a_queued_compact_object_waits_as_a_handle_and_decodes_when_asked() {
        let mut q = Queue::new(false);
        let object = decoded("a", 7);
        q.push(Event::replay(cached(&object)));
        drop(object);
        let mut items = Vec::new();
        q.take(1, &mut items);
        let Some(Item::Event(Event::Add { object, .. })) = items.pop() else {
            panic!("a replay is an Add");
        };
        assert_eq!(object.storage(), crate::cache::store::Storage::Compact);
        assert_eq!(object.object().metadata.name.as_deref(), Some("a"));
    }
}
