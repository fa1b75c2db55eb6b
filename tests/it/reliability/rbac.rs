//! Access granted, revoked and granted again while an informer runs.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use kube_client::api::{Api, DeleteParams, DynamicObject, PostParams};
use kube_dynamic_informer::informer::{InformerError, InformerStatus, NotSynced, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use serde_json::json;
use tokio_util::sync::CancellationToken;

use super::{Tracker, config_map_maker, configmaps, converge};
use crate::support::{self, User, wait_for};

fn binding() -> RoleBinding {
    serde_json::from_value(json!({
        "metadata": { "name": "alice-reads-configmaps" },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": "read-configmaps" },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": User::Alice.subject_name() }]
    }))
    .unwrap()
}

async fn status_matching(
    informer: &SharedInformer,
    what: &str,
    want: impl Fn(&InformerStatus) -> bool,
) -> InformerStatus {
    wait_for(what, Duration::from_secs(30), || async {
        let s = informer.status();
        if want(&s) { Ok(s) } else { Err(s.to_string()) }
    })
    .await
}

fn is_403(s: &InformerStatus) -> bool {
    matches!(
        s,
        InformerStatus::BackingOff {
            code: Some(403),
            ..
        }
    )
}

/// Forbidden at first: the status and `wait_for_sync` name the 403. A role
/// binding lets the same informer sync. Revoking it is reported once the
/// watch is re-established (Kubernetes does not end running watches on RBAC
/// changes; a short watch timeout makes that soon), while the cache stays
/// served. Granting again brings the changes made meanwhile.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn access_denied_granted_revoked_and_granted_again_is_reported_and_recovered() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "rel-rbac").await;
    let ar = configmaps();
    let as_admin = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &ar);
    support::create_many(
        &as_admin,
        (0..3)
            .map(|i| config_map_maker(8)(&ar, &format!("cm-{i}"), 0))
            .collect(),
        3,
    )
    .await;

    let hook_codes: Arc<Mutex<Vec<Option<u16>>>> = Arc::default();
    let codes = hook_codes.clone();
    let options = crate::support::options()
        .namespace(&ns)
        .backoff(super::quick_backoff())
        .min_watch_timeout(Duration::from_secs(2));
    let alice = support::client(User::Alice).await;
    let informer = SharedInformer::new(alice, ar.clone(), Scope::Namespaced, options).unwrap();
    informer.on_error(move |e: &InformerError| {
        codes.lock().unwrap().push(e.code());
    });
    let tracker = Tracker::default();
    informer.add_handler(tracker.handler());
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();

    // Denied.
    let status = status_matching(&informer, "a 403 in the status", is_403).await;
    assert!(status.to_string().contains("forbidden"), "{status}");
    let err = informer
        .wait_for_sync(Duration::from_secs(2))
        .await
        .unwrap_err();
    match &err {
        InformerError::NotSynced {
            reason: NotSynced::Forbidden { .. },
            ..
        } => {}
        other => panic!("expected not synced for the 403, got {other:?}"),
    }
    let text = err.to_string();
    assert!(
        text.contains("configmaps.v1") && text.contains("forbidden"),
        "{text}"
    );
    assert!(hook_codes.lock().unwrap().contains(&Some(403)));

    // Granted: the same informer syncs.
    let role: Role = serde_json::from_value(json!({
        "metadata": { "name": "read-configmaps" },
        "rules": [{ "apiGroups": [""], "resources": ["configmaps"], "verbs": ["get", "list", "watch"] }]
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    let bindings = Api::<RoleBinding>::namespaced(admin.clone(), &ns);
    bindings
        .create(&PostParams::default(), &binding())
        .await
        .unwrap();
    informer
        .wait_for_sync(Duration::from_secs(30))
        .await
        .unwrap();
    converge(&informer, &tracker, &as_admin, Duration::from_secs(30)).await;

    // Revoked while the watch runs: reported when the watch is re-established.
    bindings
        .delete("alice-reads-configmaps", &DeleteParams::default())
        .await
        .unwrap();
    let status = status_matching(&informer, "the revocation to be reported", is_403).await;
    match status {
        InformerStatus::BackingOff { synced_before, .. } => assert!(synced_before),
        other => unreachable!("{other}"),
    }
    assert!(informer.has_synced(), "the cache stays served");
    assert_eq!(informer.store().len(), 3);
    // Changes the informer cannot see while revoked.
    as_admin
        .create(&PostParams::default(), &config_map_maker(8)(&ar, "late", 1))
        .await
        .unwrap();
    as_admin
        .delete("cm-0", &DeleteParams::default())
        .await
        .unwrap();

    // Granted again: caught up without a restart.
    bindings
        .create(&PostParams::default(), &binding())
        .await
        .unwrap();
    let server = converge(&informer, &tracker, &as_admin, Duration::from_secs(30)).await;
    assert!(server.contains_key(&format!("{ns}/late")));
    assert_eq!(tracker.deletes_of(&format!("{ns}/cm-0")).0, 1);
    status_matching(&informer, "synced", |s| *s == InformerStatus::Synced).await;
    assert_eq!(tracker.problems(), Vec::<String>::new());
    cancel.cancel();
}
