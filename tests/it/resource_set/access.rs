//! A user who may watch one CRD in one namespace only: the access table
//! says so, a set that skips what is forbidden watches exactly that, and
//! access granted while it runs starts the rest.

use std::time::Duration;

use kube_client::Client;
use kube_client::api::{Api, DynamicObject, PostParams};
use kube_dynamic_informer::declarative::{AccessPolicy, ResourceSet, SetEvent};
use kube_dynamic_informer::declarative::{InformerSet, PatternSpec};
use kube_dynamic_informer::factory::ResourcePattern;
use kube_dynamic_informer::vocabulary::Namespaces;
use serde_json::json;

use super::patterns::{crd, next_change};
use crate::support::{self, User, wait_for};

/// Lets Alice get, list and watch `plural` of `group` in `ns`.
pub async fn grant(admin: &Client, ns: &str, group: &str, plural: &str) {
    let name = format!("alice-reads-{plural}");
    support::grant_read(admin, ns, User::Alice, group, plural, &name).await;
}

/// Two CRDs of one group and two namespaces, each with one object.
pub struct Fixture {
    pub group: String,
    pub ns_a: String,
    pub ns_b: String,
}

pub async fn fixture(admin: &Client) -> Fixture {
    let group = support::unique_group();
    let ns_a = support::namespace(admin, "set-access-a").await;
    let ns_b = support::namespace(admin, "set-access-b").await;
    for (plural, kind) in [("widgets", "Widget"), ("gadgets", "Gadget")] {
        let ar = support::install_crd(admin, &crd(&group, plural, kind, true)).await;
        for ns in [&ns_a, &ns_b] {
            Api::<DynamicObject>::namespaced_with(admin.clone(), ns, &ar)
                .create(
                    &PostParams::default(),
                    &support::widget(&ar, &format!("{plural}-1"), json!({})),
                )
                .await
                .unwrap();
        }
    }
    grant(admin, &ns_a, &group, "widgets").await;
    Fixture { group, ns_a, ns_b }
}

fn config(f: &Fixture) -> InformerSet {
    let mut spec = PatternSpec::new("crds", ResourcePattern::default().groups([f.group.clone()]));
    spec.options =
        crate::support::options().namespaces(Namespaces::only([f.ns_a.clone(), f.ns_b.clone()]));
    InformerSet {
        api_version: kube_dynamic_informer::declarative::API_VERSION.into(),
        kind: kube_dynamic_informer::declarative::KIND.into(),
        defaults: crate::support::options(),
        informers: Vec::new(),
        patterns: vec![spec],
        clusters: Default::default(),
        shard_group: None,
    }
}

/// Keys of the objects a member's cache holds.
fn cached(m: &kube_dynamic_informer::declarative::SetMember) -> Vec<String> {
    let mut keys: Vec<String> = m
        .informer
        .lister()
        .list_all()
        .iter()
        .map(|o| {
            format!(
                "{}/{}",
                o.namespace().unwrap_or_default(),
                o.name().unwrap_or_default()
            )
        })
        .collect();
    keys.sort();
    keys
}

/// With [`AccessPolicy::Skip`], Alice's set watches widgets in the one
/// namespace she may, leaves gadgets out, and — once granted widgets in
/// the other namespace and gadgets in the first — widens the one and starts
/// the other at its next check.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn skipping_forbidden_resources_watches_exactly_what_is_allowed_then_more() {
    let admin = support::admin().await;
    let f = fixture(&admin).await;
    let alice = support::client(User::Alice).await;
    let policy = AccessPolicy::Skip {
        recheck: Duration::from_secs(1),
    };
    let set = ResourceSet::with_policy(alice, config(&f), policy)
        .await
        .unwrap();
    let (members, mut events) = set.subscribe().await;
    let widgets_key = format!("widgets.v1.{}", f.group);
    let gadgets_key = format!("gadgets.v1.{}", f.group);
    assert_eq!(members.len(), 1, "{members:?}");
    let widgets = &members[0];
    assert_eq!(widgets.resource, widgets_key);
    assert_eq!(
        widgets.informer.informer().options().watch.namespaces,
        Namespaces::only([f.ns_a.clone()])
    );
    let skipped = set.status().await.skipped;
    assert_eq!(skipped.len(), 1, "{skipped:?}");
    assert_eq!(skipped[0].resource, gadgets_key);
    assert!(
        skipped[0].reason.contains("list denied"),
        "{}",
        skipped[0].reason
    );

    set.start().unwrap();
    wait_for(
        "widgets of the allowed namespace",
        Duration::from_secs(30),
        || async {
            let keys = cached(widgets);
            if widgets.informer.has_synced() && keys == [format!("{}/widgets-1", f.ns_a)] {
                Ok(())
            } else {
                Err(format!("{keys:?}, {}", widgets.informer.status()))
            }
        },
    )
    .await;

    grant(&admin, &f.ns_b, &f.group, "widgets").await;
    grant(&admin, &f.ns_a, &f.group, "gadgets").await;
    // Within a few checks: widgets widened to both namespaces (a new
    // informer), gadgets started in the one namespace allowed.
    let mut now_watched = std::collections::BTreeMap::new();
    while now_watched.len() < 2 {
        match next_change(&mut events).await {
            SetEvent::Added(m) => {
                now_watched.insert(m.resource.clone(), m);
            }
            SetEvent::Removed { member, .. } => assert_eq!(member.resource, widgets_key),
            other => panic!("unexpected {other:?}"),
        }
    }
    let widened = &now_watched[&widgets_key];
    assert_eq!(
        widened.informer.informer().options().watch.namespaces,
        Namespaces::only([f.ns_a.clone(), f.ns_b.clone()])
    );
    let gadgets = &now_watched[&gadgets_key];
    assert_eq!(
        gadgets.informer.informer().options().watch.namespaces,
        Namespaces::only([f.ns_a.clone()])
    );
    wait_for("both caches right", Duration::from_secs(30), || async {
        let (w, g) = (cached(widened), cached(gadgets));
        let want_w = vec![
            format!("{}/widgets-1", f.ns_a),
            format!("{}/widgets-1", f.ns_b),
        ];
        let want_g = vec![format!("{}/gadgets-1", f.ns_a)];
        if w == want_w && g == want_g {
            Ok(())
        } else {
            Err(format!("{w:?} {g:?}"))
        }
    })
    .await;
    assert!(set.status().await.skipped.is_empty());
    set.shutdown().await;
}

/// `kdi check --cluster` as Alice: one row per resource and namespace,
/// `yes` only for widgets in her namespace; exit 3 naming what is denied.
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn check_cluster_prints_the_access_table() {
    let admin = support::admin().await;
    let f = fixture(&admin).await;
    let dir = std::env::temp_dir().join(format!("kdi-access-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("set.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\npatterns:\n  - name: crds\n    match: {{ groups: [\"{}\"] }}\n    namespaces: [{}, {}]\n",
            f.group, f.ns_a, f.ns_b
        ),
    )
    .unwrap();
    let out = tokio::process::Command::new(env!("CARGO_BIN_EXE_kdi"))
        .arg("--kubeconfig")
        .arg(super::cli::kubeconfig(User::Alice))
        .args(["check", "--cluster", file.to_str().unwrap()])
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stdout = String::from_utf8_lossy(&out.stdout);
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stdout}\n{stderr}");
    let rows: Vec<Vec<&str>> = stdout
        .lines()
        .skip_while(|l| !l.starts_with("RESOURCE"))
        .map(|l| l.split_whitespace().collect())
        .collect();
    let (g, a, b) = (f.group.as_str(), f.ns_a.as_str(), f.ns_b.as_str());
    let gadgets = format!("gadgets.v1.{g}");
    let widgets = format!("widgets.v1.{g}");
    assert_eq!(
        rows,
        [
            vec!["RESOURCE", "NAMESPACE", "LIST", "WATCH"],
            vec![gadgets.as_str(), a, "no", "no"],
            vec![gadgets.as_str(), b, "no", "no"],
            vec![widgets.as_str(), a, "yes", "yes"],
            vec![widgets.as_str(), b, "no", "no"],
        ],
        "{stdout}"
    );
    assert!(
        stderr.contains("3 of 4 may not be listed and watched"),
        "{stderr}"
    );
    assert!(
        stderr.contains(&format!("{widgets} in namespace {b}: list denied")),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `kdi watch -f` as Alice says before starting what she may not watch;
/// with `--skip-forbidden` it leaves gadgets out and watches widgets in
/// her namespace.
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_says_what_is_denied_or_skips_it() {
    use super::cli::Kdi;
    let admin = support::admin().await;
    let f = fixture(&admin).await;
    let dir = std::env::temp_dir().join(format!("kdi-access-watch-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("set.yaml");
    std::fs::write(
        &file,
        format!(
            "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\npatterns:\n  - name: crds\n    match: {{ groups: [\"{}\"] }}\n    namespaces: [{}, {}]\n",
            f.group, f.ns_a, f.ns_b
        ),
    )
    .unwrap();
    let path = file.to_str().unwrap();

    let mut kdi = Kdi::start(User::Alice, &["watch", "-f", path, "--timeout", "0"]);
    let gadgets = format!("gadgets.v1.{}", f.group);
    let denied = kdi
        .stderr_json("gadgets said denied", |v| {
            v["access"] == "denied"
                && v["resource"] == gadgets.as_str()
                && v["namespace"] == f.ns_a.as_str()
        })
        .await;
    assert!(
        denied["reason"].as_str().unwrap().contains("list denied"),
        "{denied}"
    );
    kdi.stop().await;

    let mut kdi = Kdi::start(User::Alice, &["watch", "-f", path, "--skip-forbidden"]);
    let skipped = kdi
        .stderr_json("gadgets skipped", |v| v["set"] == "skipped")
        .await;
    assert_eq!(skipped["resource"], gadgets.as_str(), "{skipped}");
    let ours = format!("{}/widgets-1", f.ns_a);
    let line = kdi
        .event("the widget Alice may see", |v| v["type"] == "Add")
        .await;
    assert_eq!(line["key"], ours.as_str(), "{line}");
    kdi.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// `kdi -v watch` as Alice, who may not list CRDs or APIServices: the
/// discovery that follows them in the background says once, for each, that
/// it does not, and no warning about them follows (they were retried, and
/// warned about, every backoff before).
#[cfg(feature = "cli")]
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn discovery_says_once_what_it_may_not_follow() {
    use super::cli::Kdi;
    let admin = support::admin().await;
    let f = fixture(&admin).await;
    let widgets = format!("widgets.v1.{}", f.group);
    let mut kdi = Kdi::start(User::Alice, &["-v", "watch", "-r", &widgets, "-n", &f.ns_a]);
    kdi.event("the widget Alice may see", |v| v["type"] == "Add")
        .await;
    let mut lines = Vec::new();
    let said = |lines: &[String], resource: &str| {
        lines
            .iter()
            .filter(|l| l.contains(&format!("not following {resource}: forbidden (403)")))
            .count()
    };
    let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
    while said(&lines, "customresourcedefinitions") == 0 || said(&lines, "apiservices") == 0 {
        match tokio::time::timeout_at(deadline, kdi.stderr.recv()).await {
            Ok(Some(line)) => lines.push(line),
            Ok(None) | Err(_) => panic!(
                "kdi did not say that discovery does not follow CRDs and APIServices; stderr:\n{}",
                lines.join("\n")
            ),
        }
    }
    // Whatever else it printed meanwhile, and until it stops.
    while let Ok(line) = kdi.stderr.try_recv() {
        lines.push(line);
    }
    kdi.stop().await;
    assert_eq!(said(&lines, "customresourcedefinitions"), 1, "{lines:#?}");
    assert_eq!(said(&lines, "apiservices"), 1, "{lines:#?}");
    let warned: Vec<&String> = lines
        .iter()
        .filter(|l| {
            l.contains("list/watch failed")
                && (l.contains("customresourcedefinitions") || l.contains("apiservices"))
        })
        .collect();
    assert!(warned.is_empty(), "{warned:#?}");
}
