//! How `kdi watch` stops: at `--duration` however far it got, and at SIGINT
//! or SIGTERM (how Kubernetes stops a pod) with its informers stopped and
//! its shard group left at once.

use std::time::Duration;

use k8s_openapi::api::coordination::v1::Lease;
use kube_client::api::{Api, ListParams};
use kube_dynamic_informer::declarative::SHARD_GROUP_LABEL;

use super::Running;
use crate::support::{self, User, wait_for};

/// `--duration` counts from the start: a resource that is not served does
/// not hold the command past it.
#[tokio::test]
async fn watch_duration_bounds_the_wait_for_a_resource_not_served() {
    let resource = format!("widgets.{}", support::unique_group());
    let running = Running::start(
        User::Admin,
        &[
            "watch",
            "-r",
            &resource,
            "--duration",
            "3s",
            "--timeout",
            "0",
            "--max-events",
            "10",
        ],
        &[],
    );
    let (code, _, err) = running.end().await;
    assert_eq!(code, Some(0), "{err}");
    assert!(err.contains("stopped before every cache synced"), "{err}");
}

/// The slot Leases of a shard group's namespace held by `identity`.
async fn held_by(leases: &Api<Lease>, group: &str, identity: &str) -> usize {
    let list = leases
        .list(&ListParams::default().labels(&format!("{SHARD_GROUP_LABEL}={group}")))
        .await
        .unwrap();
    list.items
        .iter()
        .filter(|l| l.spec.as_ref().and_then(|s| s.holder_identity.as_deref()) == Some(identity))
        .count()
}

/// SIGTERM ends a shard group member's watch with 0, and its Leases are
/// released when it exits, not left to expire.
#[tokio::test]
async fn sigterm_ends_a_watch_and_hands_the_shard_group_over_at_once() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "cli-sigterm").await;
    let group = format!("g{}", support::suffix());
    let running = Running::start(
        User::Admin,
        &[
            "watch",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--shard-group",
            &group,
            "--shard-group-namespace",
            &ns,
            "--shard-identity",
            "term",
            "--lease-duration",
            "60s",
        ],
        &[],
    );
    let leases: Api<Lease> = Api::namespaced(admin.clone(), &ns);
    wait_for(
        "the member to hold slots",
        Duration::from_secs(60),
        || async {
            match held_by(&leases, &group, "term").await {
                0 => Err("no slot held yet".to_owned()),
                _ => Ok(()),
            }
        },
    )
    .await;
    let pid = running.child.id().expect("kdi is running").to_string();
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &pid])
        .status()
        .expect("running kill");
    assert!(sent.success());
    let (code, _, err) = running.end().await;
    assert_eq!(code, Some(0), "SIGTERM is a normal stop: {err}");
    assert_eq!(
        held_by(&leases, &group, "term").await,
        0,
        "the Leases are released on exit (they last 60 s otherwise)"
    );
}
