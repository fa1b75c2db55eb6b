//! `kdi --snapshot-dir`: warm restarts from the command line, and snapshots
//! that stay whole when kdi is killed while writing them.

use std::path::Path;
use std::time::Duration;

use kube_client::api::{Api, DynamicObject, Patch, PatchParams};
use kube_dynamic_informer::informer::{SharedInformer, SnapshotOptions, SnapshotStart};
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

use super::{Running, assert_exit, documented_exit, kdi, stderr};
use crate::snapshot::first_file;
use crate::support::{self, User, wait_for};

fn configmaps() -> kube_client::core::ApiResource {
    kube_client::core::ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&())
}

async fn namespace_with(prefix: &str, n: usize) -> (String, Api<DynamicObject>) {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, prefix).await;
    let api = Api::<DynamicObject>::namespaced_with(admin, &ns, &configmaps());
    support::create_many(
        &api,
        (0..n)
            .map(|i| DynamicObject::new(&format!("cm{i}"), &configmaps()))
            .collect(),
        16,
    )
    .await;
    (ns, api)
}

/// The inode of the snapshot file: a new one at each write.
fn inode(dir: &Path) -> Option<u64> {
    use std::os::unix::fs::MetadataExt;
    Some(std::fs::metadata(first_file(dir)?).ok()?.ino())
}

/// The second `kdi get` with a snapshot directory starts from the first
/// one's snapshot and says so.
#[tokio::test]
async fn get_starts_from_the_snapshot_of_the_last_run() {
    let (ns, _) = namespace_with("cli-snap", 7).await;
    let dir = support::scratch_dir("cli-snapshot-get");
    let dir_arg = dir.to_string_lossy().into_owned();
    let args = [
        "get",
        "-r",
        "configmaps",
        "-n",
        &ns,
        "-o",
        "name",
        "--snapshot-dir",
        &dir_arg,
    ];
    let first = kdi(User::Admin, &args).await;
    assert_exit(&first, documented_exit("Success"));
    assert!(first_file(&dir).is_some(), "{}", stderr(&first));
    let second = kdi(User::Admin, &args).await;
    assert_exit(&second, documented_exit("Success"));
    assert!(
        stderr(&second).contains("resumed from a snapshot"),
        "first: {}\nsecond: {}",
        stderr(&first),
        stderr(&second)
    );
    assert_eq!(
        String::from_utf8_lossy(&first.stdout),
        String::from_utf8_lossy(&second.stdout)
    );
    let _ = std::fs::remove_dir_all(&dir);
}

/// kdi killed with SIGKILL while it writes snapshots over and over leaves a
/// whole snapshot every time: the next start resumes from it.
#[tokio::test]
async fn a_kdi_killed_while_writing_snapshots_leaves_a_whole_one() {
    let (ns, api) = namespace_with("cli-snap-kill", 300).await;
    let dir = support::scratch_dir("cli-snapshot-kill");
    let dir_arg = dir.to_string_lossy().into_owned();
    // Changes keep coming, so that snapshots are written all the time.
    let stop = CancellationToken::new();
    let churn = {
        let (api, stop) = (api.clone(), stop.clone());
        tokio::spawn(async move {
            let mut i = 0u64;
            while !stop.is_cancelled() {
                let patch = serde_json::json!({ "data": { "n": i.to_string() } });
                let _ = api
                    .patch(
                        &format!("cm{}", i % 300),
                        &PatchParams::default(),
                        &Patch::Merge(&patch),
                    )
                    .await;
                i += 1;
            }
        })
    };
    for round in 0..3 {
        let mut running = Running::start(
            User::Admin,
            &[
                "watch",
                "-r",
                "configmaps",
                "-n",
                &ns,
                "--snapshot-dir",
                &dir_arg,
                "--snapshot-interval",
                "1ms",
            ],
            &[],
        );
        running
            .stderr_until("the synced line", Duration::from_secs(60), |l| {
                l.contains("synced")
            })
            .await;
        wait_for("a snapshot file", Duration::from_secs(30), || {
            let written = first_file(&dir).is_some();
            async move {
                if written {
                    Ok(())
                } else {
                    Err("none yet".to_owned())
                }
            }
        })
        .await;
        // Let a few writes replace the file (each a new inode), then kill.
        let mut seen = std::collections::BTreeSet::new();
        wait_for("snapshots to be rewritten", Duration::from_secs(30), || {
            if let Some(inode) = inode(&dir) {
                seen.insert(inode);
            }
            let n = seen.len();
            async move {
                if n > 2 + round {
                    Ok(())
                } else {
                    Err(format!("{n} versions seen"))
                }
            }
        })
        .await;
        running.child.start_kill().unwrap();
        let _ = running.end().await;

        let informer = SharedInformer::new(
            support::admin().await,
            configmaps(),
            Scope::Namespaced,
            support::options()
                .namespace(&ns)
                .snapshot(SnapshotOptions::new(&dir).interval(Duration::ZERO)),
        )
        .unwrap();
        let cancel = CancellationToken::new();
        let task = informer.start(cancel.clone()).unwrap();
        informer
            .wait_for_sync(Duration::from_secs(60))
            .await
            .unwrap();
        match informer.stats().snapshot_start() {
            Some(SnapshotStart::Resumed { objects: 300, .. }) => {}
            other => panic!("round {round}: resumed from a whole snapshot: {other:?}"),
        }
        cancel.cancel();
        task.await.unwrap();
    }
    stop.cancel();
    churn.await.unwrap();
    let _ = std::fs::remove_dir_all(&dir);
}
