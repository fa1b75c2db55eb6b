//! Handler filters and change predicates against a real kube-apiserver: a
//! filtered handler's events are the unfiltered handler's with the filter
//! applied by hand (an object entering or leaving it as an Add or a
//! Delete), through a relist after 410 and a late registration.

use std::collections::BTreeMap;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::core::v1::PodTemplate;
use kube_client::api::{Api, DeleteParams, Patch, PatchParams, PostParams};
use kube_core::DynamicObject;
use kube_dynamic_informer::cache::{CachedObject, ChangePredicate, Condition};
use kube_dynamic_informer::informer::{Event, HandlerOptions, Registration, SharedInformer};
use serde_json::{Value, json};
use tokio_util::sync::CancellationToken;

use crate::informer::Gated;
use crate::support::{self, pod_templates};

/// The filter of the handlers under test.
const WEB: &str = "metadata.labels.tier == 'web'";

/// A pod template of `tier` running `image`.
fn template(name: &str, tier: &str, image: &str) -> PodTemplate {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "tier": tier } },
        "template": { "spec": { "containers": [{ "name": "c", "image": image }] } }
    }))
    .expect("a pod template")
}

/// Every event a handler received, as it received it.
#[derive(Clone, Default)]
struct Log(Arc<Mutex<Vec<Event>>>);

impl Log {
    fn handler(&self) -> impl Fn(Event) + Send + Sync + 'static {
        let log = self.0.clone();
        move |e: Event| log.lock().unwrap().push(e)
    }

    fn events(&self) -> Vec<Event> {
        self.0.lock().unwrap().clone()
    }

    fn lines(&self) -> Vec<String> {
        self.events().iter().map(line).collect()
    }
}

fn name(o: &CachedObject) -> String {
    o.name().unwrap_or_default().to_owned()
}

fn rv(o: &CachedObject) -> String {
    o.resource_version().unwrap_or_default().to_owned()
}

/// An event as a line: what, which object, at which resourceVersion, and
/// its marks.
fn line(e: &Event) -> String {
    match e {
        Event::Add {
            object,
            in_initial_list,
            entered_filter,
            ..
        } => {
            let mark = match (in_initial_list, entered_filter) {
                (true, _) => " (initial)",
                (_, true) => " (entered)",
                _ => "",
            };
            format!("add {} {}{mark}", name(object), rv(object))
        }
        Event::Update { new, .. } => {
            format!("update {} {}", name(new), rv(new))
        }
        Event::Delete {
            object,
            final_state_unknown,
            left_filter,
            ..
        } => {
            let mark = match (final_state_unknown, left_filter) {
                (true, _) => " (tombstone)",
                (_, true) => " (left)",
                _ => "",
            };
            format!("delete {} {}{mark}", name(object), rv(object))
        }
    }
}

/// What a handler with the filter [`WEB`] (and, when `changes`, a change
/// predicate of `template` and the labels) receives of `events`, worked
/// out by hand as client-go's `FilteringResourceEventHandler` does: the
/// filter evaluated on each state, an update between a state that meets it
/// and one that does not an Add or a Delete (of the new state).
fn by_hand(events: &[Event], changes: bool) -> Vec<String> {
    let meets = |o: &DynamicObject| {
        o.metadata
            .labels
            .as_ref()
            .and_then(|l| l.get("tier"))
            .is_some_and(|t| t == "web")
    };
    let changed = |old: &DynamicObject, new: &DynamicObject| {
        !changes
            || old.data.get("template") != new.data.get("template")
            || old.metadata.labels != new.metadata.labels
    };
    let mut out = Vec::new();
    for e in events {
        match e {
            Event::Add { object, .. } | Event::Delete { object, .. } if meets(&object.object()) => {
                out.push(line(e));
            }
            Event::Add { .. } | Event::Delete { .. } => {}
            Event::Update { old, new, .. } => {
                let old = old.object();
                match (meets(&old), meets(&new.object())) {
                    (true, true) if changed(&old, &new.object()) => out.push(line(e)),
                    (true, true) | (false, false) => {}
                    (false, true) => out.push(format!("add {} {} (entered)", name(new), rv(new))),
                    (true, false) => out.push(format!("delete {} {} (left)", name(new), rv(new))),
                }
            }
        }
    }
    out
}

/// The objects `events` leave in a cache, by name.
fn cached_after(events: &[Event]) -> BTreeMap<String, CachedObject> {
    let mut cache = BTreeMap::new();
    for e in events {
        match e {
            Event::Add { object, .. } => {
                cache.insert(name(object), object.clone());
            }
            Event::Update { new, .. } => {
                cache.insert(name(new), new.clone());
            }
            Event::Delete { object, .. } => {
                cache.remove(&name(object));
            }
        }
    }
    cache
}

/// Waits until `log` holds an event whose line starts with `prefix`.
async fn until_logged(log: &Log, prefix: &str) {
    support::wait_for(&format!("{prefix:?}"), Duration::from_secs(60), || {
        let found = log.lines().iter().any(|l| l.starts_with(prefix));
        async move {
            if found {
                Ok(())
            } else {
                Err("not yet".to_string())
            }
        }
    })
    .await;
}

fn web_filter() -> Condition {
    Condition::new(WEB).expect("a condition")
}

#[tokio::test]
async fn a_filtered_handler_gets_the_unfiltered_events_filtered_by_hand_through_a_relist_and_a_late_registration()
 {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "filter").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    for (name, tier) in [
        ("keep", "web"),
        ("touch", "web"),
        ("leave", "web"),
        ("enter", "db"),
        ("vanish", "web"),
        ("other", "db"),
    ] {
        api.create(&PostParams::default(), &template(name, tier, "busybox:1"))
            .await
            .unwrap();
    }
    // The watch is held back until the list's resourceVersion is compacted
    // away: what happens meanwhile reaches the handlers by a relist.
    let lw = Gated::pod_templates(&client, &ns, false, true);
    let informer = SharedInformer::with_list_watch(lw.clone(), pod_templates(), support::options());
    let all = Log::default();
    informer.add_handler(all.handler());
    let web = Log::default();
    let changes = ChangePredicate::new("template")
        .unwrap()
        .or(ChangePredicate::labels());
    let filtered: Registration = informer.add_handler_with(
        web.handler(),
        HandlerOptions::default()
            .name("web")
            .filter(web_filter())
            .changes(changes),
    );
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();

    let merge = |body: Value| Patch::Merge(body);
    let labels = |tier: &str| json!({ "metadata": { "labels": { "tier": tier } } });
    let image = |image: &str| json!({ "template": { "spec": { "containers": [{ "name": "c", "image": image }] } } });
    let note = json!({ "metadata": { "annotations": { "note": "seen" } } });
    let pp = PatchParams::default();
    api.delete("vanish", &DeleteParams::default())
        .await
        .unwrap();
    api.patch("leave", &pp, &merge(labels("db"))).await.unwrap();
    api.patch("enter", &pp, &merge(labels("web")))
        .await
        .unwrap();
    api.patch("touch", &pp, &merge(note.clone())).await.unwrap();
    api.patch("keep", &pp, &merge(image("busybox:2")))
        .await
        .unwrap();
    api.create(&PostParams::default(), &template("new", "web", "busybox:1"))
        .await
        .unwrap();
    api.create(
        &PostParams::default(),
        &template("newdb", "db", "busybox:1"),
    )
    .await
    .unwrap();
    let list_rv = lw.first_rv.lock().unwrap().clone().unwrap();
    support::wait_until_compacted(&api, &list_rv).await;
    lw.open_gate();
    // A relist's deletes come after its adds and updates.
    until_logged(&all, "delete vanish").await;
    assert!(informer.stats().relists_after_gone.load(Ordering::Relaxed) >= 1);
    until_logged(&web, "delete vanish").await;

    // Nothing is written now: a handler added late has the cache as it is.
    let cut = all.events().len();
    let late = Log::default();
    let late_registration = informer.add_handler_with(
        late.handler(),
        HandlerOptions::default().filter(web_filter()),
    );

    api.patch("keep", &pp, &merge(note)).await.unwrap();
    api.patch("enter", &pp, &merge(image("busybox:3")))
        .await
        .unwrap();
    api.patch("new", &pp, &merge(labels("db"))).await.unwrap();
    api.patch("newdb", &pp, &merge(labels("web")))
        .await
        .unwrap();
    api.delete("touch", &DeleteParams::default()).await.unwrap();
    api.create(
        &PostParams::default(),
        &template("last", "web", "busybox:1"),
    )
    .await
    .unwrap();
    for log in [&all, &web, &late] {
        until_logged(log, "add last").await;
    }

    let events = all.events();
    assert_eq!(web.lines(), by_hand(&events, true));
    // What the filters do, said plainly.
    let seen = web.lines();
    let has = |prefix: &str| seen.iter().any(|l| l.starts_with(prefix));
    assert!(
        has("delete vanish") && seen.iter().any(|l| l.ends_with("(tombstone)")),
        "{seen:?}"
    );
    assert!(
        has("delete leave") && has("add enter") && has("update keep"),
        "{seen:?}"
    );
    // A change of an annotation only, and objects while they are not web.
    assert!(!has("update touch") && !has("add other"), "{seen:?}");
    assert!(
        seen.iter()
            .filter(|l| l.starts_with("add newdb"))
            .all(|l| l.ends_with("(entered)")),
        "{seen:?}"
    );
    assert!(filtered.filtered() > 0);

    // The late handler: the web objects cached when it came, then the rest.
    let late_lines = late.lines();
    let (replayed, after): (Vec<String>, Vec<String>) = late_lines
        .into_iter()
        .partition(|l| l.ends_with("(initial)"));
    let mut replayed = replayed;
    replayed.sort();
    let mut expected: Vec<String> = cached_after(&events[..cut])
        .values()
        .filter(|o| o.labels().get("tier") == Some("web"))
        .map(|o| format!("add {} {} (initial)", name(o), rv(o)))
        .collect();
    expected.sort();
    assert_eq!(replayed, expected);
    assert_eq!(after, by_hand(&events[cut..], false));
    assert!(late_registration.has_synced());
    cancel.cancel();
}
