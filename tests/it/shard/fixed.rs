//! Static shards: N informers, each with shard I of N, over one namespace.

use std::collections::HashMap;
use std::sync::atomic::Ordering;
use std::time::Duration;

use kube_client::Client;
use kube_client::api::{Api, DeleteParams, DynamicObject, ListParams, PostParams};
use kube_dynamic_informer::informer::SharedInformer;
use kube_dynamic_informer::vocabulary::Scope;
use kube_dynamic_informer::vocabulary::{ShardFiltering, ShardKey, StaticShard};
use tokio_util::sync::CancellationToken;

use super::{admin, configmaps};
use crate::support;

const SHARDS: u32 = 4;
const OBJECTS: usize = 2_000;

/// The names each informer's cache holds.
fn cached(informers: &[SharedInformer]) -> Vec<Vec<String>> {
    informers
        .iter()
        .map(|i| {
            let mut names: Vec<String> = i
                .store()
                .list_all()
                .iter()
                .map(|o| o.name().unwrap_or_default().to_owned())
                .collect();
            names.sort();
            names
        })
        .collect()
}

/// Every object of `server` in exactly one cache, and nothing else.
fn partition_problem(caches: &[Vec<String>], server: &[String]) -> Option<String> {
    let mut holders: HashMap<&str, usize> = HashMap::new();
    for cache in caches {
        for name in cache {
            *holders.entry(name).or_default() += 1;
        }
    }
    let twice: Vec<_> = holders.iter().filter(|(_, n)| **n > 1).collect();
    if !twice.is_empty() {
        return Some(format!(
            "{} objects in more than one cache, e.g. {:?}",
            twice.len(),
            twice[0]
        ));
    }
    let missing: Vec<_> = server
        .iter()
        .filter(|n| !holders.contains_key(n.as_str()))
        .collect();
    let extra: Vec<_> = holders
        .keys()
        .filter(|n| !server.iter().any(|s| s == *n))
        .collect();
    if !missing.is_empty() || !extra.is_empty() {
        return Some(format!(
            "union differs from the server: {} missing (e.g. {:?}), {} not on the server (e.g. {:?})",
            missing.len(),
            missing.first(),
            extra.len(),
            extra.first()
        ));
    }
    None
}

async fn server_names(api: &Api<DynamicObject>) -> Vec<String> {
    let mut names: Vec<String> = api
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .filter_map(|o| o.metadata.name)
        .collect();
    names.sort();
    names
}

async fn four_shards(client: Client, gate: bool) {
    let ns = support::namespace(&client, if gate { "shard-on" } else { "shard-off" }).await;
    let cm = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &cm);
    support::create_many(
        &api,
        (0..OBJECTS)
            .map(|i| DynamicObject::new(&format!("cm{i}"), &cm))
            .collect(),
        16,
    )
    .await;
    let cancel = CancellationToken::new();
    let informers: Vec<SharedInformer> = (0..SHARDS)
        .map(|i| {
            SharedInformer::new(
                client.clone(),
                cm.clone(),
                Scope::Namespaced,
                support::options()
                    .namespace(&ns)
                    .shard(StaticShard::new(i, SHARDS).unwrap())
                    .shard_key(ShardKey::Uid),
            )
            .unwrap()
        })
        .collect();
    for i in &informers {
        i.start(cancel.clone()).unwrap();
    }
    for i in &informers {
        i.wait_for_sync(Duration::from_secs(60)).await.unwrap();
    }
    let server = server_names(&api).await;
    assert_eq!(server.len(), OBJECTS);
    let caches = cached(&informers);
    if let Some(problem) = partition_problem(&caches, &server) {
        panic!("after the list: {problem}");
    }
    for (n, cache) in caches.iter().enumerate() {
        // 500 expected per shard; a uniform hash keeps each well within this.
        assert!(
            (300..700).contains(&cache.len()),
            "shard {n} holds {} of {OBJECTS}",
            cache.len()
        );
    }
    let (want, other) = if gate {
        (ShardFiltering::Server, ShardFiltering::Client)
    } else {
        (ShardFiltering::Client, ShardFiltering::Server)
    };
    for (n, i) in informers.iter().enumerate() {
        let stats = i.stats();
        assert_eq!(stats.shard_filtering(), Some(want), "shard {n}");
        assert_eq!(
            stats.shard_selector(),
            Some(
                StaticShard::new(u32::try_from(n).unwrap(), SHARDS)
                    .unwrap()
                    .selector(ShardKey::Uid)
            ),
            "shard {n}"
        );
        let other_pages = match other {
            ShardFiltering::Server => &stats.shard_pages_filtered_by_server,
            ShardFiltering::Client => &stats.shard_pages_filtered_by_client,
        };
        assert_eq!(other_pages.load(Ordering::Relaxed), 0, "shard {n}");
        let dropped = stats.shard_objects_dropped.load(Ordering::Relaxed);
        if gate {
            // The server sent only this shard's objects.
            assert_eq!(
                dropped, 0,
                "shard {n}: the server sent other shards' objects"
            );
        } else {
            assert_eq!(
                usize::try_from(dropped).unwrap(),
                OBJECTS - caches[n].len(),
                "shard {n}: every other object was received and dropped here"
            );
        }
    }

    // Live changes reach exactly one cache.
    let dropped_before: Vec<u64> = informers
        .iter()
        .map(|i| i.stats().shard_objects_dropped.load(Ordering::Relaxed))
        .collect();
    for i in 0..40 {
        api.create(
            &PostParams::default(),
            &DynamicObject::new(&format!("late{i}"), &cm),
        )
        .await
        .unwrap();
    }
    for i in 0..40 {
        api.delete(&format!("cm{i}"), &DeleteParams::default())
            .await
            .unwrap();
    }
    let server = server_names(&api).await;
    support::wait_for(
        "the caches to follow the changes",
        Duration::from_secs(30),
        || {
            let problem = partition_problem(&cached(&informers), &server);
            async move { problem.map_or(Ok(()), Err) }
        },
    )
    .await;
    if gate {
        for (n, i) in informers.iter().enumerate() {
            assert_eq!(
                i.stats().shard_objects_dropped.load(Ordering::Relaxed),
                dropped_before[n],
                "shard {n}: the watch sent other shards' objects"
            );
        }
    }
    cancel.cancel();
}

/// With the gate on, each informer asks for its part and the server sends
/// only that part, list and watch alike.
#[tokio::test]
async fn four_static_shards_split_a_resource_on_the_server() {
    let Some(client) = admin(true).await else {
        return;
    };
    four_shards(client, true).await;
}

/// With the gate off the server sends everything; the caches are the same,
/// filtered here.
#[tokio::test]
async fn four_static_shards_split_a_resource_on_the_client_when_the_server_cannot() {
    let client = admin(false).await.unwrap();
    four_shards(client, false).await;
}
