//! The gate fed events directly: what a handler with a filter and a change
//! predicate receives, against the filter applied by hand.

use std::sync::Mutex;

use serde_json::json;

use super::*;
use crate::cache::store::{Storage, StoreWriter};

fn widget(name: &str, rv: u32, tier: &str, replicas: u32, phase: &str) -> Arc<DynamicObject> {
    Arc::new(
        serde_json::from_value(json!({
            "apiVersion": "example.com/v1", "kind": "Widget",
            "metadata": { "name": name, "namespace": "shop", "resourceVersion": rv.to_string(),
                          "labels": { "tier": tier } },
            "spec": { "replicas": replicas },
            "status": { "phase": phase }
        }))
        .expect("a widget"),
    )
}

fn add(object: &Arc<DynamicObject>) -> Event {
    Event::Add {
        object: CachedObject::from(object.clone()),
        in_initial_list: false,
        entered_shard: false,
        entered_filter: false,
    }
}

fn update(old: &Arc<DynamicObject>, new: &Arc<DynamicObject>) -> Event {
    Event::Update {
        old: CachedObject::from(old.clone()),
        new: CachedObject::from(new.clone()),
        is_resync: false,
    }
}

fn delete(object: &Arc<DynamicObject>, final_state_unknown: bool) -> Event {
    Event::Delete {
        object: CachedObject::from(object.clone()),
        final_state_unknown,
        left_shard: false,
        left_filter: false,
    }
}

fn gate(filter: Option<&str>, changes: Option<ChangePredicate>) -> Gate {
    Gate::new(
        1,
        ResourceKey::new("example.com", "v1", "widgets"),
        filter.map(|f| Condition::new(f).expect("a condition")),
        changes,
    )
}

/// `Kind name rv` of what passed, with `+` for an object entering the
/// view and `-` for one leaving it, `?` for a final state unknown.
fn said(passed: Result<Event, Dropped>) -> String {
    let event = match passed {
        Ok(event) => event,
        Err(why) => return format!("dropped: {why:?}"),
    };
    let o = event.object();
    let (name, rv) = (
        o.name().unwrap_or_default(),
        o.resource_version().unwrap_or_default(),
    );
    let mark = match &event {
        Event::Add {
            entered_filter: true,
            ..
        }
        | Event::Delete {
            left_filter: true, ..
        } => "*",
        Event::Delete {
            final_state_unknown: true,
            ..
        } => "?",
        _ => "",
    };
    format!("{} {name} {rv}{mark}", event.kind())
}

#[test]
fn objects_entering_and_leaving_the_filter_arrive_as_adds_and_deletes() {
    let mut g = gate(Some("metadata.labels.tier == 'web'"), None);
    let a1 = widget("a", 1, "web", 1, "Pending");
    let a2 = widget("a", 2, "db", 1, "Pending");
    let a3 = widget("a", 3, "db", 2, "Pending");
    let a4 = widget("a", 4, "web", 2, "Running");
    let a5 = widget("a", 5, "web", 3, "Running");
    let b1 = widget("b", 6, "db", 1, "Pending");
    let got: Vec<String> = [
        add(&a1),
        update(&a1, &a2),
        update(&a2, &a3),
        update(&a3, &a4),
        update(&a4, &a5),
        add(&b1),
        delete(&b1, false),
        delete(&a5, true),
    ]
    .iter()
    .map(|e| said(g.pass_one(e)))
    .collect();
    assert_eq!(
        got,
        [
            "Add a 1",
            // It left: a delete with the new state, the one that does not match.
            "Delete a 2*",
            "dropped: Condition",
            // It came back: an add of its new state.
            "Add a 4*",
            "Update a 5",
            "dropped: Condition",
            // A delete of an object the handler never had is not said.
            "dropped: Condition",
            // A tombstone of one it had is, as it is.
            "Delete a 5?",
        ]
    );
    assert!(g.matching.is_empty());
}

#[test]
fn a_change_predicate_drops_the_updates_that_change_none_of_its_values() {
    let mut g = gate(None, Some(ChangePredicate::spec()));
    let a1 = widget("a", 1, "web", 1, "Pending");
    let a2 = widget("a", 2, "web", 1, "Running");
    let a3 = widget("a", 3, "web", 2, "Running");
    let resync = Event::resync(CachedObject::from(a3.clone()));
    let got: Vec<String> = [
        add(&a1),
        update(&a1, &a2),
        update(&a2, &a3),
        resync,
        delete(&a3, false),
    ]
    .iter()
    .map(|e| said(g.pass_one(e)))
    .collect();
    assert_eq!(
        got,
        [
            "Add a 1",
            "dropped: Unchanged",
            "Update a 3",
            // A resync is kept: the handler asked for one.
            "Resync a 3",
            "Delete a 3"
        ]
    );
}

#[test]
fn a_change_predicate_reads_the_stored_state_of_a_compact_cache_in_place() {
    let mut writer = StoreWriter::with_storage(Storage::Compact);
    let (a1, a2) = (
        widget("a", 1, "web", 1, "Pending"),
        widget("a", 2, "web", 1, "Running"),
    );
    writer.upsert(a1.clone());
    let (stored, old) = writer.upsert_held(a2).expect("keyed");
    let old = old.expect("replaced");
    assert!(old.compact().is_some() && stored.compact().is_some());
    let mut g = gate(None, Some(ChangePredicate::spec()));
    let event = Event::Update {
        old,
        new: stored,
        is_resync: false,
    };
    assert_eq!(said(g.pass_one(&event)), "dropped: Unchanged");
}

#[test]
fn a_filter_that_is_not_a_boolean_is_not_met_and_said_once_per_object() {
    let told = Arc::new(Mutex::new(Vec::new()));
    let mut g = gate(Some("status.phase"), None);
    let hook = told.clone();
    g.add_hook(
        7,
        MistakeHook(Arc::new(move |m: &FilterMistake| {
            hook.lock().unwrap().push(m.to_string());
        })),
    );
    let a1 = widget("a", 1, "web", 1, "Pending");
    let a2 = widget("a", 2, "web", 1, "Running");
    assert_eq!(said(g.pass_one(&add(&a1))), "dropped: Condition");
    assert_eq!(said(g.pass_one(&update(&a1, &a2))), "dropped: Condition");
    assert_eq!(
        *told.lock().unwrap(),
        [r#"filter 'status.phase' on widgets.v1.example.com shop/a: not a boolean: "Pending""#]
    );
    // Deleted and created again: another object, said again.
    g.pass_one(&delete(&a2, false)).unwrap_err();
    g.pass_one(&add(&a1)).unwrap_err();
    assert_eq!(told.lock().unwrap().len(), 2);
    // A hook that panics is caught.
    g.add_hook(8, MistakeHook(Arc::new(|_: &FilterMistake| panic!("hook"))));
    g.pass_one(&add(&widget("b", 3, "web", 1, "x")))
        .unwrap_err();
    assert_eq!(told.lock().unwrap().len(), 3);
}

#[test]
fn a_late_handler_is_replayed_and_resynced_only_what_meets_the_filter() {
    let mut writer = StoreWriter::with_storage(Storage::Compact);
    for (name, tier) in [("a", "web"), ("b", "db"), ("c", "web")] {
        writer.upsert(widget(name, 1, tier, 1, "Pending"));
    }
    let cached = writer.reader().list_all();
    let mut g = gate(Some("metadata.labels.tier == 'web'"), None);
    g.fill(&cached);
    let mut admitted: Vec<String> = cached
        .iter()
        .filter(|o| g.admits(o))
        .filter_map(CachedObject::key)
        .collect();
    admitted.sort();
    assert_eq!(admitted, ["shop/a", "shop/c"]);
    // Without a filter, everything.
    assert!(
        cached
            .iter()
            .all(|o| gate(None, Some(ChangePredicate::spec())).admits(o))
    );
}

/// A small deterministic generator (a linear congruential one): the same
/// sequence in every run, so that a failure can be replayed.
struct Dice(u64);

impl Dice {
    fn roll(&mut self, sides: u64) -> u64 {
        self.0 = self
            .0
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        (self.0 >> 33) % sides
    }
}

/// client-go's `FilteringResourceEventHandler` over the same events, the
/// filter evaluated on both states of every update, and the change
/// predicate compared by hand.
fn by_hand(filter: &Condition, event: &Event) -> Option<String> {
    let meets = |o: &DynamicObject| filter.evaluate_object(o).is_met();
    let spec = |o: &DynamicObject| o.data.get("spec").cloned();
    let name = |o: &DynamicObject| o.metadata.name.clone().unwrap_or_default();
    let rv = |o: &DynamicObject| o.metadata.resource_version.clone().unwrap_or_default();
    match event {
        Event::Add { object, .. } => {
            let object = &*object.object();
            meets(object).then(|| format!("Add {} {}", name(object), rv(object)))
        }
        Event::Delete {
            object,
            final_state_unknown,
            ..
        } => meets(&object.object()).then(|| {
            let object = &*object.object();
            let mark = if *final_state_unknown { "?" } else { "" };
            format!("Delete {} {}{mark}", name(object), rv(object))
        }),
        Event::Update { old, new, .. } => {
            let (old, new) = (&*old.object(), &*new.object());
            match (meets(old), meets(new)) {
                (true, true) if spec(old) == spec(new) => None,
                (true, true) => Some(format!("Update {} {}", name(new), rv(new))),
                (false, true) => Some(format!("Add {} {}*", name(new), rv(new))),
                (true, false) => Some(format!("Delete {} {}*", name(new), rv(new))),
                (false, false) => None,
            }
        }
    }
}

#[test]
fn the_gate_gives_what_the_filter_applied_by_hand_gives_on_any_sequence() {
    let filter = "metadata.labels.tier == 'web' && spec.replicas > `1`";
    for storage in [Storage::Objects, Storage::Compact] {
        for seed in 0..20 {
            let mut dice = Dice(seed);
            let mut writer = StoreWriter::with_storage(storage);
            let mut g = gate(Some(filter), Some(ChangePredicate::spec()));
            let condition = Condition::new(filter).unwrap();
            let mut live: Vec<Option<Arc<DynamicObject>>> = vec![None; 4];
            let (mut got, mut want) = (Vec::new(), Vec::new());
            for rv in 1..300 {
                let slot = usize::try_from(dice.roll(4)).unwrap();
                let name = format!("w{slot}");
                let mut next = || {
                    let tier = ["web", "db"][usize::try_from(dice.roll(2)).unwrap()];
                    widget(
                        &name,
                        rv,
                        tier,
                        1 + u32::try_from(dice.roll(3)).unwrap(),
                        ["a", "b"][usize::try_from(dice.roll(2)).unwrap()],
                    )
                };
                let next = next();
                let event = match (&live[slot], dice.roll(5)) {
                    (None, _) => {
                        writer.upsert(next.clone());
                        live[slot] = Some(next.clone());
                        add(&next)
                    }
                    (Some(current), 0) => {
                        writer.remove(&format!("shop/{name}"));
                        let gone = current.clone();
                        live[slot] = None;
                        delete(&gone, dice.roll(2) == 0)
                    }
                    (Some(_), _) => {
                        let (stored, old) = writer.upsert_held(next.clone()).unwrap();
                        live[slot] = Some(next.clone());
                        let event = Event::Update {
                            old: old.unwrap(),
                            new: stored,
                            is_resync: false,
                        };
                        got.extend(g.pass_one(&event).ok().map(|e| said(Ok(e))));
                        want.extend(by_hand(&condition, &event));
                        continue;
                    }
                };
                got.extend(g.pass_one(&event).ok().map(|e| said(Ok(e))));
                want.extend(by_hand(&condition, &event));
            }
            assert_eq!(got, want, "{storage:?}, seed {seed}");
            assert!(!got.is_empty());
        }
    }
}
