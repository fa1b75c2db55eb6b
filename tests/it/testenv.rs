//! The control plane itself: what every other integration test relies on.

use std::collections::BTreeMap;
use std::time::Duration;

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::{ConfigMap, PodTemplate};
use kube_client::api::{
    Api, DynamicObject, ListParams, Patch, PatchParams, PostParams, WatchEvent, WatchParams,
};
use serde_json::json;

use crate::support::controlplane::{ControlPlane, Options};
use crate::support::{self, User};

/// The server is the release the control plane was built as, and that is
/// the one `KDI_TESTENV_VERSION` asks for: `scripts/compat` relies on it and
/// records the `server version:` line.
#[tokio::test]
async fn the_server_runs_the_release_asked_for() {
    let info = support::admin().await.apiserver_version().await.unwrap();
    println!("server version: {}", info.git_version);
    let v = support::server_version().await;
    assert!(
        info.git_version.starts_with(&format!("v{v}.")),
        "{} against {v}",
        info.git_version
    );
    assert!(support::server_at_least(v.minor, "its own release").await);
    if let support::Env::Testenv {
        ready,
        _process: process,
    } = support::env()
    {
        assert_eq!(info.git_version, ready.version, "the ready line's release");
        if process.is_some()
            && let Ok(asked) = std::env::var("KDI_TESTENV_VERSION")
        {
            let asked = if asked.starts_with('v') {
                asked
            } else {
                format!("v{asked}")
            };
            assert_eq!(info.git_version, asked, "KDI_TESTENV_VERSION");
        }
    }
}

#[test]
fn server_versions_ignore_provider_suffixes_and_order_by_release() {
    use support::ServerVersion;
    let v = |major, minor| Some(ServerVersion { major, minor });
    assert_eq!(ServerVersion::parse("1", "34"), v(1, 34));
    assert_eq!(ServerVersion::parse("1", "35+"), v(1, 35));
    assert_eq!(ServerVersion::parse("1", ""), None);
    assert!(v(1, 34) < v(1, 37) && v(1, 37) < v(2, 0));
    assert_eq!(v(1, 36).unwrap().to_string(), "1.36");
}

#[tokio::test]
async fn crd_is_served_then_objects_are_created_listed_and_watched() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "crd-basics").await;
    let ar = support::install_crd(&client, &support::widget_crd(&support::unique_group())).await;
    assert_eq!(ar.kind, "Widget");
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &ar);

    let list = api.list(&ListParams::default()).await.unwrap();
    let start_rv = list.metadata.resource_version.clone().unwrap();
    let mut watch = api
        .watch(&WatchParams::default(), &start_rv)
        .await
        .unwrap()
        .boxed();

    let objs = (0..20)
        .map(|i| support::widget(&ar, &format!("w{i}"), json!({ "size": i })))
        .collect();
    let created = support::create_many(&api, objs, 8).await;
    assert_eq!(created.len(), 20);

    let list = api.list(&ListParams::default()).await.unwrap();
    let mut names: Vec<_> = list
        .items
        .iter()
        .map(|o| o.metadata.name.clone().unwrap())
        .collect();
    names.sort();
    let mut want: Vec<_> = (0..20).map(|i| format!("w{i}")).collect();
    want.sort();
    assert_eq!(names, want);
    let sizes: BTreeMap<String, i64> = list
        .items
        .iter()
        .map(|o| {
            (
                o.metadata.name.clone().unwrap(),
                o.data["spec"]["size"].as_i64().unwrap(),
            )
        })
        .collect();
    assert_eq!(sizes["w7"], 7);

    let mut seen = Vec::new();
    tokio::time::timeout(Duration::from_secs(30), async {
        while seen.len() < 20 {
            match watch.try_next().await.unwrap().expect("watch ended early") {
                WatchEvent::Added(o) => seen.push(o.metadata.name.unwrap()),
                other => panic!("unexpected watch event {other:?}"),
            }
        }
    })
    .await
    .expect("20 Added events within 30s");
    seen.sort();
    assert_eq!(seen, want);
}

/// Resolves `podtemplates` (served from etcd without the watch cache in
/// testenv) and returns its API in a fresh namespace.
async fn uncached_api(client: &kube_client::Client, prefix: &str) -> Api<PodTemplate> {
    let ns = support::namespace(client, prefix).await;
    Api::namespaced(client.clone(), &ns)
}

#[tokio::test]
async fn watch_from_a_compacted_resource_version_is_gone() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction interval");
        return;
    }
    let client = support::admin().await;
    let api = uncached_api(&client, "compaction").await;
    let first = api
        .create(&PostParams::default(), &support::pod_template("pt"))
        .await
        .unwrap();
    let old_rv = first.metadata.resource_version.unwrap();
    for i in 0..5 {
        let patch = json!({ "metadata": { "labels": { "round": i.to_string() } } });
        api.patch("pt", &PatchParams::default(), &Patch::Merge(&patch))
            .await
            .unwrap();
    }
    // Compaction runs every COMPACTION and removes revisions older than the
    // previous run: within a few intervals the old revision is gone.
    let status = support::wait_for(
        "a watch from a compacted resourceVersion to be refused with 410",
        support::COMPACTION * 6,
        || {
            let api = api.clone();
            let old_rv = old_rv.clone();
            async move {
                let result = api.watch(&WatchParams::default().timeout(2), &old_rv).await;
                match result {
                    Err(kube_client::Error::Api(s)) if s.code == 410 => Ok(*s),
                    Err(e) => Err(format!("watch failed otherwise: {e}")),
                    Ok(stream) => {
                        let mut stream = stream.boxed();
                        while let Some(ev) = stream.try_next().await.map_err(|e| e.to_string())? {
                            if let WatchEvent::Error(s) = ev {
                                if s.code == 410 {
                                    return Ok(*s);
                                }
                                return Err(format!("watch error {s:?}"));
                            }
                        }
                        Err("watch from the old revision still served events".into())
                    }
                }
            }
        },
    )
    .await;
    assert_eq!(status.code, 410);
    assert!(
        ["Expired", "Gone"].contains(&status.reason.as_str()),
        "reason {:?}",
        status.reason
    );
}

#[tokio::test]
async fn ordinary_user_is_forbidden_until_a_role_binding_grants_access() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "rbac").await;
    let alice = support::client(User::Alice).await;
    let as_alice = Api::<ConfigMap>::namespaced(alice.clone(), &ns);

    match as_alice.list(&ListParams::default()).await {
        Err(kube_client::Error::Api(s)) => assert_eq!(s.code, 403, "{s:?}"),
        other => panic!("alice listed configmaps without a role: {other:?}"),
    }

    support::grant_configmap_read(&admin, &ns, User::Alice).await;

    support::wait_for(
        "alice to be allowed to list configmaps",
        Duration::from_secs(30),
        || {
            let as_alice = as_alice.clone();
            async move {
                as_alice
                    .list(&ListParams::default())
                    .await
                    .map_err(|e| e.to_string())
            }
        },
    )
    .await;

    // Bob still has nothing.
    let bob = Api::<ConfigMap>::namespaced(support::client(User::Bob).await, &ns);
    match bob.list(&ListParams::default()).await {
        Err(kube_client::Error::Api(s)) => assert_eq!(s.code, 403),
        other => panic!("bob listed configmaps without a role: {other:?}"),
    }
}

#[tokio::test]
async fn restart_on_the_same_data_dir_keeps_objects_and_resource_versions() {
    if !support::is_testenv() {
        eprintln!("skipped: needs a local testenv to restart");
        return;
    }
    let dir = tempdir("restart");
    let opts = Options {
        data_dir: Some(dir.clone()),
        ..support::local_options()
    };
    let cp = ControlPlane::start(&opts).unwrap();
    let port = cp.port();
    let kubeconfig = cp.ready().kubeconfig("admin").to_path_buf();

    let client =
        kube_client::Client::try_from(support::config_from_file(&kubeconfig).await).unwrap();
    let ns = support::namespace(&client, "restart").await;
    let cms = Api::<ConfigMap>::namespaced(client.clone(), &ns);
    let mut before = BTreeMap::new();
    for i in 0..10 {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": { "name": format!("cm{i}") }, "data": { "i": i.to_string() }
        }))
        .unwrap();
        let created = cms.create(&PostParams::default(), &cm).await.unwrap();
        before.insert(
            created.metadata.name.unwrap(),
            created.metadata.resource_version.unwrap(),
        );
    }
    drop(cms);
    drop(client);

    let status = cp.stop();
    assert!(
        status.success(),
        "testenv exited with {status} on a graceful stop"
    );

    let cp = ControlPlane::start(&Options {
        port: Some(port),
        ..opts
    })
    .unwrap();
    assert_eq!(cp.port(), port);
    // The kubeconfig written before the restart still works.
    let client =
        kube_client::Client::try_from(support::config_from_file(&kubeconfig).await).unwrap();
    let cms = Api::<ConfigMap>::namespaced(client, &ns);
    let list = cms.list(&ListParams::default()).await.unwrap();
    let after: BTreeMap<_, _> = list
        .items
        .iter()
        .map(|c| {
            (
                c.metadata.name.clone().unwrap(),
                c.metadata.resource_version.clone().unwrap(),
            )
        })
        .collect();
    assert_eq!(after, before);
    assert_eq!(
        list.items
            .iter()
            .find(|c| c.metadata.name.as_deref() == Some("cm3"))
            .unwrap()
            .data
            .as_ref()
            .unwrap()["i"],
        "3"
    );
    assert!(cp.stop().success());
    let _ = std::fs::remove_dir_all(&dir);
}

/// A killed testenv cannot remove its temporary data dir (about 120 MB of
/// etcd files); the suite kills control planes on purpose, so the support
/// code removes it, and a machine running the suite often keeps its disk.
#[tokio::test]
async fn a_killed_control_plane_leaves_no_temporary_data_behind() {
    if !support::is_testenv() {
        eprintln!("skipped: needs a local testenv to kill");
        return;
    }
    let cp = tokio::task::spawn_blocking(|| ControlPlane::start(&support::local_options()))
        .await
        .unwrap()
        .unwrap();
    let dir = cp.ready().data_dir.clone();
    assert!(
        dir.join("etcd").is_dir(),
        "{} has no etcd data",
        dir.display()
    );
    tokio::task::spawn_blocking(move || cp.kill())
        .await
        .unwrap();
    assert!(!dir.exists(), "{} is left after a kill", dir.display());
}

#[tokio::test]
async fn every_listening_socket_is_on_loopback() {
    let pid = match support::env() {
        support::Env::Testenv { ready, .. } => ready.pid,
        support::Env::External { .. } => {
            eprintln!("skipped: inspects the local testenv process");
            return;
        }
    };
    // Make sure the server is up and serving before looking.
    support::admin().await.apiserver_version().await.unwrap();
    let sockets = listening_sockets(pid);
    assert!(
        sockets.len() >= 2,
        "expected kube-apiserver and etcd listeners, found {sockets:?}"
    );
    for (addr, port) in &sockets {
        assert!(
            addr == "127.0.0.1" || addr == "::1",
            "testenv (pid {pid}) listens on {addr}:{port}"
        );
    }
}

/// The local addresses of TCP sockets in LISTEN state owned by `pid`, read
/// from /proc.
fn listening_sockets(pid: u32) -> Vec<(String, u16)> {
    let mut inodes = std::collections::HashSet::new();
    for entry in std::fs::read_dir(format!("/proc/{pid}/fd"))
        .unwrap()
        .flatten()
    {
        if let Ok(target) = std::fs::read_link(entry.path()) {
            let t = target.to_string_lossy();
            if let Some(inode) = t.strip_prefix("socket:[").and_then(|s| s.strip_suffix(']')) {
                inodes.insert(inode.to_string());
            }
        }
    }
    let mut out = Vec::new();
    for (file, v6) in [("/proc/net/tcp", false), ("/proc/net/tcp6", true)] {
        let text = std::fs::read_to_string(file).unwrap_or_default();
        for line in text.lines().skip(1) {
            let f: Vec<&str> = line.split_whitespace().collect();
            if f.len() < 10 || f[3] != "0A" || !inodes.contains(f[9]) {
                continue;
            }
            let (addr_hex, port_hex) = f[1].split_once(':').unwrap();
            let port = u16::from_str_radix(port_hex, 16).unwrap();
            out.push((decode_addr(addr_hex, v6), port));
        }
    }
    out
}

fn decode_addr(hex: &str, v6: bool) -> String {
    let bytes: Vec<u8> = (0..hex.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&hex[i..i + 2], 16).unwrap())
        .collect();
    if !v6 {
        return std::net::Ipv4Addr::new(bytes[3], bytes[2], bytes[1], bytes[0]).to_string();
    }
    // /proc prints IPv6 as four little-endian 32-bit words.
    let mut b = [0u8; 16];
    for w in 0..4 {
        for i in 0..4 {
            b[w * 4 + i] = bytes[w * 4 + 3 - i];
        }
    }
    let ip = std::net::Ipv6Addr::from(b);
    match ip.to_ipv4_mapped() {
        Some(v4) => v4.to_string(),
        None => ip.to_string(),
    }
}

fn tempdir(prefix: &str) -> std::path::PathBuf {
    let dir = support::controlplane::repo_root()
        .join("target/testenv/tmp")
        .join(format!(
            "{prefix}-{}-{}",
            std::process::id(),
            support::suffix()
        ));
    std::fs::create_dir_all(&dir).unwrap();
    dir
}
