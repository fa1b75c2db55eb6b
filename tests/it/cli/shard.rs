//! `kdi` with static shards and shard groups, and its refusals of bad ones.

use std::collections::BTreeSet;

use kube_client::api::{Api, DynamicObject};

use super::{assert_exit, documented_exit, kdi, stderr, stdout};
use crate::support::{self, User};

fn configmaps() -> kube_client::core::ApiResource {
    kube_client::core::ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "ConfigMap".into(),
        plural: "configmaps".into(),
    }
}

fn names(out: &std::process::Output) -> Vec<String> {
    stdout(out).lines().map(str::to_owned).collect()
}

/// Four `kdi get --shard I/4` runs print every object once between them;
/// a lone member of a shard group prints them all.
#[tokio::test]
async fn get_with_shards_prints_each_object_in_one_shard() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-shard").await;
    let cm = configmaps();
    let api = Api::<DynamicObject>::namespaced_with(client.clone(), &ns, &cm);
    support::create_many(
        &api,
        (0..60)
            .map(|i| DynamicObject::new(&format!("cm{i}"), &cm))
            .collect(),
        8,
    )
    .await;
    let everything = kdi(
        User::Admin,
        &["get", "-r", "configmaps", "-n", &ns, "-o", "name"],
    )
    .await;
    assert_exit(&everything, documented_exit("Success"));
    let all: BTreeSet<String> = names(&everything).into_iter().collect();
    assert_eq!(all.len(), 60, "{all:?}");

    let mut seen = Vec::new();
    for i in 0..4 {
        let shard = format!("{i}/4");
        let out = kdi(
            User::Admin,
            &[
                "get",
                "-r",
                "configmaps",
                "-n",
                &ns,
                "--shard",
                &shard,
                "-o",
                "name",
            ],
        )
        .await;
        assert_exit(&out, documented_exit("Success"));
        seen.extend(names(&out));
    }
    let union: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(seen.len(), union.len(), "an object printed by two shards");
    assert_eq!(union, all);

    let by_namespace = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--shard",
            "0/1",
            "--shard-key",
            "namespace",
            "-o",
            "name",
        ],
    )
    .await;
    assert_exit(&by_namespace, documented_exit("Success"));
    assert_eq!(names(&by_namespace).len(), all.len());

    let member = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--shard-group",
            "cli",
            "--shard-group-namespace",
            &ns,
            "--shard-identity",
            "solo",
            "--lease-duration",
            "3s",
            "-o",
            "name",
        ],
    )
    .await;
    assert_exit(&member, documented_exit("Success"));
    let member_names: BTreeSet<String> = names(&member).into_iter().collect();
    assert_eq!(member_names, all, "a lone member holds every slot");
}

/// Bad shards, keys and groups are usage errors that say what is wrong.
#[tokio::test]
async fn bad_shards_are_refused_with_the_reason() {
    let cases: [(&[&str], &str); 6] = [
        (&["--shard", "4/4"], "out of range for 4 shards"),
        (&["--shard", "0/0"], "at least 1"),
        (&["--shard", "one/4"], "INDEX/COUNT"),
        (&["--shard-key", "name"], "name"),
        (
            &[
                "--shard-group",
                "Bad_Name",
                "--shard-group-namespace",
                "default",
                "--shard-identity",
                "a",
            ],
            "shard group name \"Bad_Name\"",
        ),
        (&["--shard-group", "ok"], "--shard-group-namespace"),
    ];
    for (extra, want) in cases {
        let out = kdi(
            User::Admin,
            &[&["get", "-r", "configmaps"][..], extra].concat(),
        )
        .await;
        assert_exit(&out, documented_exit("Invalid arguments"));
        assert!(stderr(&out).contains(want), "{extra:?}: {}", stderr(&out));
    }
    let dir = std::env::temp_dir().join(format!("kdi-shard-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("bad.yaml");
    std::fs::write(
        &file,
        "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\n\
         shardGroup: {name: Group, namespace: default}\n\
         informers:\n  - resource: pods\n    shard: 3/2\n",
    )
    .unwrap();
    let out = kdi(User::Admin, &["check", file.to_str().unwrap()]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let text = stdout(&out);
    assert!(
        text.contains("shard index 3 is out of range for 2 shards"),
        "{text}"
    );
    assert!(text.contains("shard group name \"Group\""), "{text}");
}

/// `kdi shard-role` prints the Role a member needs.
#[tokio::test]
async fn shard_role_prints_the_role_a_member_needs() {
    let out = kdi(User::Admin, &["shard-role", "-n", "monitoring"]).await;
    assert_exit(&out, documented_exit("Success"));
    let role: serde_json::Value = serde_saphyr::from_str(&stdout(&out)).unwrap();
    assert_eq!(role["kind"], "Role");
    assert_eq!(role["metadata"]["namespace"], "monitoring");
    assert_eq!(role["rules"][0]["resources"][0], "leases");
}

/// A member that may not write its Lease does not sync, and kdi says why
/// when it gives up.
#[tokio::test]
async fn a_member_without_the_role_says_why_it_does_not_sync() {
    if !support::is_testenv() {
        eprintln!("skipped: plays an ordinary user of testenv");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-shard-rbac").await;
    let out = kdi(
        User::Alice,
        &[
            "get",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--shard-group",
            "cli",
            "--shard-group-namespace",
            &ns,
            "--shard-identity",
            "alice",
            "--timeout",
            "5s",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("A cache did not sync"));
    let text = stderr(&out);
    assert!(
        text.contains("waiting for its shard group's slots"),
        "{text}"
    );
    assert!(text.contains("forbidden"), "the reason, 403: {text}");
}
