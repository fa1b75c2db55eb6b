//! The `namespace` index every cache has built in is named on the command
//! line like a declared one: `get --index namespace=NS`, `watch
//! --index-values namespace`, and among the indexes an unknown name is
//! answered with.

use serde_json::Value;

use super::{
    assert_exit, config_map, documented_exit, kdi, refused_before_contacting_the_cluster, stdout,
};
use crate::support::{self, User};

#[tokio::test]
async fn the_built_in_namespace_index_is_named_like_a_declared_one() {
    let client = support::admin().await;
    let a = support::namespace(&client, "cli-ns-index-a").await;
    let b = support::namespace(&client, "cli-ns-index-b").await;
    config_map(&client, &a, "in-a").await;
    config_map(&client, &b, "in-b").await;

    let by_namespace = format!("namespace={a}");
    for declared in [&[][..], &["--define-index", "byName=metadata.name"]] {
        let out = kdi(
            User::Admin,
            &[
                &["get", "-r", "configmaps", "-n", &a, "-n", &b],
                declared,
                &["--index", &by_namespace, "-o", "name"],
            ]
            .concat(),
        )
        .await;
        assert_exit(&out, documented_exit("Success"));
        let text = stdout(&out);
        let names: Vec<&str> = text.lines().collect();
        assert!(names.contains(&format!("{a}/in-a").as_str()), "{names:?}");
        assert!(
            names.iter().all(|n| n.starts_with(&format!("{a}/"))),
            "only {a}'s objects: {names:?}"
        );
    }

    let out = kdi(
        User::Admin,
        &[
            "watch",
            "-r",
            "configmaps",
            "-n",
            &a,
            "--index-values",
            "namespace",
            "--max-events",
            "1",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    assert_eq!(line["indexValues"]["namespace"], serde_json::json!([a]));

    // `all` is every declared index, as before: the namespace is in the
    // key already.
    let out = kdi(
        User::Admin,
        &[
            "watch",
            "-r",
            "configmaps",
            "-n",
            &a,
            "--define-index",
            "byName=metadata.name",
            "--index-values",
            "all",
            "--max-events",
            "1",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let line: Value = serde_json::from_str(stdout(&out).trim()).unwrap();
    let shown: Vec<&String> = line["indexValues"].as_object().unwrap().keys().collect();
    assert_eq!(shown, ["byName"], "{line}");
}

/// Checked before the cluster is contacted, as every index named is.
#[tokio::test]
async fn an_unknown_index_is_answered_with_the_built_in_one_among_those_there_are() {
    let cases: [(&[&str], &str); 4] = [
        (
            &["get", "-r", "pods", "--index", "byHost=a"],
            "--index \"byHost=a\": no informer has an index named \"byHost\"; the only index is the built-in namespace; declare others with --define-index NAME=JMESPATH",
        ),
        (
            &[
                "get",
                "-r",
                "pods",
                "--define-index",
                "byNode=spec.nodeName",
                "--index",
                "byHost=a",
            ],
            "no informer has an index named \"byHost\"; the indexes are namespace (built in), byNode",
        ),
        (
            &[
                "watch",
                "-r",
                "pods",
                "--define-index",
                "byNode=spec.nodeName",
                "--index-values",
                "byHost",
            ],
            "--index-values \"byHost\": no informer has an index named \"byHost\"; the indexes are namespace (built in), byNode, or `all` for the declared ones",
        ),
        (
            &[
                "get",
                "-r",
                "pods",
                "--define-index",
                "namespace=metadata.name",
            ],
            "--define-index \"namespace=metadata.name\": index name \"namespace\" is reserved: every informer has it built in",
        ),
    ];
    refused_before_contacting_the_cluster("ns-index", &cases).await;
}
