//! A config file's `shardGroup` in a resource set: the set joins the group,
//! its informers keep the member's slots, and shutting the set down hands
//! the slots over at once.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use k8s_openapi::api::core::v1::ConfigMap;
use kube_client::api::{Api, ListParams, PostParams};
use kube_dynamic_informer::declarative::{InformerSet, ResourceSet, SHARD_GROUP_LABEL};

use crate::support::{self, wait_for};

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_config_with_a_shard_group_shards_its_informers_and_leaves_the_group_at_shutdown() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "set-shard").await;
    let cms: Api<ConfigMap> = Api::namespaced(admin.clone(), &ns);
    for i in 0..10 {
        let cm: ConfigMap = serde_json::from_value(serde_json::json!({
            "metadata": { "name": format!("cm-{i}") }
        }))
        .unwrap();
        cms.create(&PostParams::default(), &cm).await.unwrap();
    }
    let group = format!("g{}", support::suffix());
    let text = format!(
        "apiVersion: kube-dynamic-informer.io/v1alpha1\n\
         kind: InformerSet\n\
         shardGroup: {{name: {group}, namespace: {ns}, identity: solo, slots: 4, leaseDuration: 5s}}\n\
         informers:\n\
         - resource: configmaps\n\
         \x20 namespaces: [{ns}]\n"
    );
    let config = InformerSet::load_str(&text, "shard.yaml").unwrap();
    let set = ResourceSet::new(admin.clone(), config).await.unwrap();
    let members = set.members().await;
    assert_eq!(members.len(), 1);
    let informer = members[0].informer.clone();
    assert!(
        informer.options().cache.shard_group.is_some(),
        "the informer keeps the member's slots"
    );
    set.start().unwrap();
    // Alone in the group, the member holds every slot: every object.
    wait_for(
        "the lone member to cache everything",
        Duration::from_secs(60),
        || {
            let informer = informer.clone();
            async move {
                let cached = informer.lister().list_all().len();
                if informer.has_synced() && cached == 10 {
                    Ok(())
                } else {
                    Err(format!("{cached} cached, {}", informer.status()))
                }
            }
        },
    )
    .await;
    let leases: Api<Lease> = Api::namespaced(admin.clone(), &ns);
    let held_by_solo = || async {
        let list = leases
            .list(&ListParams::default().labels(&format!("{SHARD_GROUP_LABEL}={group}")))
            .await
            .unwrap();
        list.items
            .iter()
            .filter(|l| l.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some("solo"))
            .count()
    };
    assert!(
        held_by_solo().await > 0,
        "the member holds Leases while it runs"
    );
    set.shutdown().await;
    assert_eq!(
        held_by_solo().await,
        0,
        "every Lease is let go at shutdown, not left to expire"
    );
}
