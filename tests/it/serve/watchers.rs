//! Clients that watch the served cache: kube-rs's `watcher` with both of its
//! initial list strategies, and a client that stops reading mid-watch.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{AsyncBufReadExt as _, StreamExt as _};
use kube_client::api::{
    Api, DeleteParams, DynamicObject, ListParams, Patch, PatchParams, PostParams,
};
use kube_runtime::watcher;
use serde_json::{Value, json};

use super::{client_of, serve_widgets};
use crate::support;
use kube_dynamic_informer::serve::ServeOptions;

/// Each object's name and resourceVersion.
type Versions = BTreeMap<String, String>;

fn versions_of<'a>(objects: impl IntoIterator<Item = &'a DynamicObject>) -> Versions {
    objects
        .into_iter()
        .map(|o| {
            (
                o.metadata.name.clone().unwrap_or_default(),
                o.metadata.resource_version.clone().unwrap_or_default(),
            )
        })
        .collect()
}

/// What a watcher's events say the objects are: the last complete initial
/// list, then every change after it.
#[derive(Default)]
struct Followed {
    initial: Option<Versions>,
    buffer: Versions,
    state: Versions,
    deleted: Vec<String>,
}

impl Followed {
    fn apply(&mut self, event: watcher::Event<DynamicObject>) {
        match event {
            watcher::Event::Init => self.buffer.clear(),
            watcher::Event::InitApply(o) => {
                self.buffer.extend(versions_of([&o]));
            }
            watcher::Event::InitDone => {
                self.state = std::mem::take(&mut self.buffer);
                self.initial.get_or_insert_with(|| self.state.clone());
            }
            watcher::Event::Apply(o) => self.state.extend(versions_of([&o])),
            watcher::Event::Delete(o) => {
                let name = o.metadata.name.unwrap_or_default();
                self.state.remove(&name);
                self.deleted.push(name);
            }
        }
    }
}

#[tokio::test]
async fn kube_rs_watchers_sync_through_the_served_cache_and_follow_writes() {
    let admin = support::admin().await;
    let served = serve_widgets(&admin, ServeOptions::default()).await;
    let client = client_of(&served.credentials).await;
    let direct: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), &served.ns, &served.widgets);
    let truth = || async { versions_of(&direct.list(&ListParams::default()).await.unwrap().items) };

    for (strategy, config) in [
        ("list then watch", watcher::Config::default()),
        (
            "streaming list",
            watcher::Config::default().streaming_lists(),
        ),
    ] {
        let api: Api<DynamicObject> =
            Api::namespaced_with(client.clone(), &served.ns, &served.widgets);
        let mut events = watcher::watcher(api, config).boxed();
        let mut followed = Followed::default();
        let mut follow_until = async |what: &str,
                                      want: Versions,
                                      deleted: Option<&str>,
                                      followed: &mut Followed| {
            let caught_up = async {
                while followed.initial.is_none()
                    || followed.state != want
                    || deleted.is_some_and(|d| !followed.deleted.iter().any(|n| n == d))
                {
                    match events.next().await {
                        Some(Ok(event)) => followed.apply(event),
                        Some(Err(e)) => panic!("{strategy}: the watcher failed: {e}"),
                        None => panic!("{strategy}: the watcher ended"),
                    }
                }
            };
            if tokio::time::timeout(Duration::from_secs(30), caught_up)
                .await
                .is_err()
            {
                panic!(
                    "{strategy}: {what}: the watcher holds {:?} (deleted {:?}), the API server {want:?}",
                    followed.state, followed.deleted
                );
            }
        };
        follow_until("the initial list", truth().await, None, &mut followed).await;
        assert_eq!(followed.initial.as_ref().unwrap().len(), 4, "{strategy}");

        let suffix = strategy.replace(' ', "-");
        direct
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "node": format!("n-{suffix}") } })),
            )
            .await
            .unwrap();
        let added = format!("added-{suffix}");
        direct
            .create(
                &PostParams::default(),
                &support::widget(&served.widgets, &added, json!({ "node": "n3" })),
            )
            .await
            .unwrap();
        direct
            .delete(&added, &DeleteParams::default())
            .await
            .unwrap();
        // The state of the API server, and the delete as a delete.
        follow_until("through writes", truth().await, Some(&added), &mut followed).await;
    }
    served.cancel.cancel();
}

#[tokio::test]
async fn a_client_that_stops_reading_mid_watch_falls_behind_to_a_410_while_others_are_served() {
    let admin = support::admin().await;
    let served = serve_widgets(&admin, ServeOptions::default().history(5)).await;
    let client = client_of(&served.credentials).await;
    let direct: Api<DynamicObject> =
        Api::namespaced_with(admin.clone(), &served.ns, &served.widgets);
    let cached: Api<DynamicObject> =
        Api::namespaced_with(client.clone(), &served.ns, &served.widgets);
    let from = cached
        .list(&ListParams::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();

    // A watch whose client reads nothing while 50 MiB of changes pass.
    let path = format!(
        "/apis/{}/v1/namespaces/{}/widgets?watch=true&resourceVersion={from}",
        served.widgets.group, served.ns
    );
    let stalled = client
        .request_stream(http::Request::get(&path).body(Vec::new()).unwrap())
        .await
        .unwrap();
    let blob = |n: usize| format!("{n:08}").repeat(64 * 1024);
    let updates = 100;
    let mut last = String::new();
    for n in 0..updates {
        let updated = direct
            .patch(
                "w1",
                &PatchParams::default(),
                &Patch::Merge(json!({ "spec": { "n": n, "blob": blob(n) } })),
            )
            .await
            .unwrap();
        last = updated.metadata.resource_version.unwrap();
    }
    // Meanwhile the server answers everyone else, from a cache that has
    // every change.
    support::wait_for(
        "the cache to hold the last update",
        Duration::from_secs(30),
        || async {
            let held = cached
                .get("w1")
                .await
                .map_err(|e| e.to_string())?
                .metadata
                .resource_version
                .unwrap_or_default();
            (held == last)
                .then_some(())
                .ok_or(format!("at {held}, not {last}"))
        },
    )
    .await;
    assert_eq!(
        cached
            .list(&ListParams::default())
            .await
            .unwrap()
            .items
            .len(),
        4
    );

    // Reading again: what was in flight, in order, then the 410 that says
    // to list again.
    let mut lines = stalled.lines();
    let mut modified = Vec::new();
    let status = tokio::time::timeout(Duration::from_secs(60), async {
        while let Some(line) = lines.next().await {
            let event: Value = serde_json::from_str(&line.unwrap()).unwrap();
            match event["type"].as_str() {
                Some("MODIFIED") => modified.push(event["object"]["spec"]["n"].as_u64().unwrap()),
                Some("ERROR") => return event["object"].clone(),
                other => panic!("unexpected event {other:?}"),
            }
        }
        panic!(
            "the watch ended without an error after {} events",
            modified.len()
        );
    })
    .await
    .expect("the stalled watch ends with an error once read");
    assert_eq!(status["code"], 410, "{status}");
    assert_eq!(status["reason"], "Expired", "{status}");
    assert!(
        modified.len() < updates,
        "the stalled watch fell behind: {} of {updates} changes reached it",
        modified.len()
    );
    let in_order: Vec<u64> = (0..modified.len() as u64).collect();
    assert_eq!(
        modified, in_order,
        "what reached it came in order, from the first"
    );
    served.cancel.cancel();
}
