//! Why a cache is not synced reads the same through every entry point: one
//! failure of each kind (401, 403, 404, 500, a refused connection), driven
//! through a shared informer, a factory, a resource set, a cluster set and
//! `kdi get`, gives one reason for each.
//!
//! The failures are the real server's: a token it does not know (401), a
//! user without a role (403), a resource nobody serves (404), a CRD version
//! whose conversion webhook cannot be reached (500), and a port nothing
//! listens on. A 429 goes through the same classification as the 500
//! (`NotSynced::from_failure`, unit-tested with 429): the real server's
//! flow control lets one request through even a level without seats, so it
//! cannot be produced on demand.

use std::path::{Path, PathBuf};
use std::time::Duration;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, ApiResource, DynamicObject, PostParams};
use kube_client::{Client, Config};
use kube_dynamic_informer::declarative::{ClusterSet, InformerSet, ResourceSet};
use kube_dynamic_informer::informer::{InformerError, SharedInformer, SyncPolicy};
use kube_dynamic_informer::vocabulary::{Namespaces, Scope};
use kube_dynamic_informer::{InformerFactory, InformerOptions};
use serde_json::json;

use crate::support::{self, User};

/// How long each entry point waits: the failures are there from the first
/// request, and only refusals end a wait early.
const WAIT: Duration = Duration::from_secs(4);

/// One failure, set up: who asks, for what.
struct Failure {
    /// The reason every entry point must give.
    reason: &'static str,
    /// The kubeconfig of whoever asks.
    kubeconfig: PathBuf,
    /// The resource, as named to the factory, the sets and `kdi`.
    name: String,
    /// The resource, for an informer made without discovery.
    resource: ApiResource,
    /// The namespace asked for.
    namespace: String,
}

impl Failure {
    async fn config(&self) -> Config {
        support::config_from_file(&self.kubeconfig).await
    }

    async fn client(&self) -> Client {
        Client::try_from(self.config().await).expect("building a client")
    }

    fn options(&self) -> InformerOptions {
        support::options().namespace(&self.namespace)
    }
}

/// The reason a shared informer made without discovery gives.
async fn through_an_informer(f: &Failure) -> String {
    let informer = SharedInformer::new(
        f.client().await,
        f.resource.clone(),
        Scope::Namespaced,
        f.options(),
    )
    .unwrap();
    let cancel = tokio_util::sync::CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    let err = informer
        .wait_for_sync_with(WAIT, SyncPolicy::GiveUpWhenRefused)
        .await
        .unwrap_err();
    cancel.cancel();
    match err {
        InformerError::NotSynced { reason, .. } => reason.reason().to_owned(),
        other => panic!("{}: the informer said {other:?}", f.reason),
    }
}

/// The reason a factory gives: when asked for the informer, or in its sync
/// report.
async fn through_a_factory(f: &Failure) -> String {
    let factory = InformerFactory::with_options(f.client().await, f.options());
    let reason = match factory.for_resource(f.name.as_str()).await {
        Err(e) => e.reason().to_owned(),
        Ok(_) => {
            factory.start().unwrap();
            let report = factory
                .wait_for_cache_sync_with(WAIT, SyncPolicy::GiveUpWhenRefused)
                .await;
            let why = report
                .failures()
                .next()
                .unwrap_or_else(|| panic!("{}: the factory synced", f.reason));
            why.reason().to_owned()
        }
    };
    factory.shutdown().await;
    reason
}

/// The reason a resource set gives: when built, or in its factory's report.
async fn through_a_resource_set(f: &Failure) -> String {
    let set = InformerSet::from_names(
        std::slice::from_ref(&f.name),
        Default::default(),
        &Namespaces::only([f.namespace.clone()]),
        &[],
        None,
    )
    .unwrap();
    match ResourceSet::new(f.client().await, set).await {
        Err(e) => e.reason().to_owned(),
        Ok(set) => {
            set.start().unwrap();
            let report = set
                .factory()
                .wait_for_cache_sync_with(WAIT, SyncPolicy::GiveUpWhenRefused)
                .await;
            let reason = report
                .failures()
                .next()
                .map(|why| why.reason().to_owned())
                .unwrap_or_else(|| panic!("{}: the resource set synced", f.reason));
            set.shutdown().await;
            reason
        }
    }
}

/// The reason a cluster set gives for the one cluster it holds.
async fn through_a_cluster_set(f: &Failure) -> String {
    let set = ClusterSet::new(f.options());
    set.add_cluster("only", f.config().await).unwrap();
    set.add_resource(f.name.as_str());
    set.start().unwrap();
    let report = set
        .wait_for_cache_sync_with(WAIT, SyncPolicy::GiveUpWhenRefused)
        .await;
    let reason = report
        .failures()
        .next()
        .map(|e| e.reason().to_owned())
        .unwrap_or_else(|| panic!("{}: the cluster set synced", f.reason));
    set.shutdown().await;
    reason
}

/// `kdi get`'s exit code, and the reason of its JSON line on stderr (or,
/// when it failed before any informer ran, its message).
#[cfg(feature = "cli")]
async fn through_kdi_get(f: &Failure) -> (i32, String) {
    let args = ["get", "-r", &f.name, "-n", &f.namespace, "--timeout", "4s"];
    let out = crate::cli::kdi_with(f.kubeconfig.clone(), &args).await;
    let stderr = String::from_utf8_lossy(&out.stderr).into_owned();
    let said = stderr
        .lines()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .find_map(|l| l["status"].as_str().map(str::to_owned))
        .unwrap_or(stderr);
    (out.status.code().unwrap_or(-1), said)
}

/// A copy of `user`'s kubeconfig whose token the server does not know.
fn with_unknown_token(dir: &Path) -> PathBuf {
    let admin = support::kubeconfig_path(User::Admin);
    let text = std::fs::read_to_string(&admin).unwrap();
    let text: String = text
        .lines()
        .map(|l| match l.trim_start().strip_prefix("token: ") {
            Some(_) => "    token: not-a-token-the-server-knows".to_owned(),
            None => l.to_owned(),
        })
        .collect::<Vec<_>>()
        .join("\n");
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join("kubeconfig");
    std::fs::write(&path, text).unwrap();
    path
}

/// A CRD whose v2 is converted by a webhook nobody listens for: listing v2
/// with a v1 object stored answers 500.
fn unconvertible_crd(group: &str) -> CustomResourceDefinition {
    let version = |name: &str, storage: bool| {
        json!({
            "name": name, "served": true, "storage": storage,
            "schema": { "openAPIV3Schema": {
                "type": "object", "x-kubernetes-preserve-unknown-fields": true
            }}
        })
    };
    serde_json::from_value(json!({
        "metadata": { "name": format!("gadgets.{group}") },
        "spec": {
            "group": group,
            "names": { "plural": "gadgets", "singular": "gadget", "kind": "Gadget", "listKind": "GadgetList" },
            "scope": "Namespaced",
            "versions": [version("v1", true), version("v2", false)],
            "conversion": {
                "strategy": "Webhook",
                "webhook": {
                    "conversionReviewVersions": ["v1"],
                    "clientConfig": { "url": "https://127.0.0.1:1/convert" }
                }
            }
        }
    }))
    .unwrap()
}

/// Every failure, set up against the test cluster.
async fn failures() -> Vec<Failure> {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "why-not").await;
    let configmaps = ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&());
    // A group with nothing served: kdi takes a name in a group that serves
    // other resources for a typo.
    let nothing_served = support::unique_group();
    let unserved = ApiResource {
        group: nothing_served.clone(),
        version: "v1".into(),
        api_version: format!("{nothing_served}/v1"),
        kind: "Unservedthing".into(),
        plural: "unservedthings".into(),
    };
    let group = support::unique_group();
    let gadgets = support::install_crd(&admin, &unconvertible_crd(&group)).await;
    Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &gadgets)
        .create(
            &PostParams::default(),
            &support::widget(&gadgets, "stored-as-v1", json!({})),
        )
        .await
        .unwrap();
    let v2 = ApiResource {
        version: "v2".into(),
        api_version: format!("{group}/v2"),
        ..gadgets.clone()
    };
    let scratch = support::scratch_dir("why-not");
    let (nobody, _) = support::unreachable_kubeconfig("why-not-refused");
    let failure =
        |reason, kubeconfig, name: &str, resource: &ApiResource, namespace: &str| Failure {
            reason,
            kubeconfig,
            name: name.to_owned(),
            resource: resource.clone(),
            namespace: namespace.to_owned(),
        };
    vec![
        failure(
            "unauthorized",
            with_unknown_token(&scratch),
            "configmaps",
            &configmaps,
            &ns,
        ),
        failure(
            "forbidden",
            support::kubeconfig_path(User::Alice),
            "configmaps",
            &configmaps,
            &ns,
        ),
        failure(
            "notServed",
            support::kubeconfig_path(User::Admin),
            &format!("unservedthings.v1.{nothing_served}"),
            &unserved,
            &ns,
        ),
        failure(
            "serverError",
            support::kubeconfig_path(User::Admin),
            &format!("gadgets.v2.{group}"),
            &v2,
            &ns,
        ),
        failure("unreachable", nobody, "configmaps", &configmaps, &ns),
    ]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn every_entry_point_gives_one_reason_for_each_failure() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's users and its flow-control settings");
        return;
    }
    let mut wrong = Vec::new();
    for f in failures().await {
        let said = [
            ("informer", through_an_informer(&f).await),
            ("factory", through_a_factory(&f).await),
            ("resource set", through_a_resource_set(&f).await),
            ("cluster set", through_a_cluster_set(&f).await),
        ];
        for (entry, reason) in said {
            if reason != f.reason {
                wrong.push(format!("{} through {entry}: {reason}", f.reason));
            }
        }
        #[cfg(feature = "cli")]
        {
            // The cluster's refusal of discovery ends kdi before any
            // informer (exit 1, the reason in its message); a cache that
            // did not sync is exit 3, the reason in its JSON line.
            let (code, said) = through_kdi_get(&f).await;
            let expected = match f.reason {
                "unauthorized" | "unreachable" => 1,
                _ => 3,
            };
            let reads = said == f.reason || said.contains(&format!(": {}: ", f.reason));
            if code != expected || !reads {
                wrong.push(format!("{} through kdi get: exit {code}, {said}", f.reason));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}
