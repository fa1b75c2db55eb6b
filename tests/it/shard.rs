//! Sharded informers against a real kube-apiserver, with the
//! `ShardedListAndWatch` gate on (a control plane of their own, started
//! once) and off (the shared one): static shards and shard groups.

mod fixed;
mod group;

use std::sync::OnceLock;

use kube_client::Client;
use kube_client::api::ApiResource;

use crate::support::{self, controlplane};

/// The control plane with `ShardedListAndWatch` on, started on first use
/// and kept for the life of the test binary. `None` when the tests run
/// against an external cluster or an already running testenv.
fn gated_plane() -> Option<&'static controlplane::Ready> {
    static PLANE: OnceLock<
        Option<(
            controlplane::Ready,
            std::sync::Mutex<controlplane::ControlPlane>,
        )>,
    > = OnceLock::new();
    PLANE
        .get_or_init(|| {
            if !support::is_testenv() {
                return None;
            }
            let opts = controlplane::Options {
                apiserver_args: vec!["--feature-gates=ShardedListAndWatch=true".into()],
                ..controlplane::Options::default()
            };
            let cp = controlplane::ControlPlane::start(&opts).unwrap_or_else(|e| panic!("{e}"));
            Some((cp.ready().clone(), std::sync::Mutex::new(cp)))
        })
        .as_ref()
        .map(|(ready, _)| ready)
}

/// An admin client configuration of the server with the gate on (`gate`)
/// or off; `None` (the test skips) when no gated server can be started here.
async fn admin_config(gate: bool) -> Option<kube_client::Config> {
    if !gate {
        return Some(support::config(support::User::Admin).await);
    }
    if !support::server_at_least(36, "the ShardedListAndWatch gate").await {
        return None;
    }
    let ready = tokio::task::spawn_blocking(|| gated_plane().cloned())
        .await
        .unwrap();
    let Some(ready) = ready else {
        eprintln!("skipped: starts a local testenv with the ShardedListAndWatch gate on");
        return None;
    };
    Some(support::config_from_file(ready.kubeconfig("admin")).await)
}

/// An admin client of the server with the gate on (`gate`) or off, checked
/// to be so; `None` as for [`admin_config`].
async fn admin(gate: bool) -> Option<Client> {
    let client = Client::try_from(admin_config(gate).await?).unwrap();
    let enabled = support::feature_enabled(&client, "ShardedListAndWatch").await;
    if gate {
        assert_eq!(
            enabled,
            Some(true),
            "the server reports ShardedListAndWatch on"
        );
    } else {
        // A release before 1.36 does not know the gate: off too.
        assert_ne!(
            enabled,
            Some(true),
            "the server reports ShardedListAndWatch off"
        );
    }
    Some(client)
}

fn configmaps() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}
