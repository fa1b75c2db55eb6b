//! What kubectl's users type and expect: resources listed with commas in
//! one `-r`, and names that say their resource when several are printed.

use k8s_openapi::api::apps::v1::Deployment;
use kube_client::api::{Api, PostParams};
use serde_json::{Value, json};

use super::{assert_exit, config_map, documented_exit, kdi, stderr, stdout};
use crate::support::{self, User};

async fn deployment(client: &kube_client::Client, ns: &str, name: &str) {
    let labels = json!({ "app": name });
    let d: Deployment = serde_json::from_value(json!({
        "metadata": { "name": name },
        "spec": {
            "replicas": 0,
            "selector": { "matchLabels": labels },
            "template": {
                "metadata": { "labels": labels },
                "spec": { "containers": [{ "name": "main", "image": "registry.invalid/web" }] },
            },
        },
    }))
    .unwrap();
    Api::<Deployment>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &d)
        .await
        .unwrap();
}

fn lines(out: &std::process::Output) -> Vec<String> {
    stdout(out).lines().map(String::from).collect()
}

#[tokio::test]
async fn resources_listed_with_commas_are_each_named_with_their_type() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-commas").await;
    config_map(&client, &ns, "settings").await;
    deployment(&client, &ns, "web").await;

    // One -r with a list is the same as -r repeated, and `-o name` says
    // each object's type as kubectl does: lowercase kind, and its group
    // outside the core one.
    let listed = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            "configmaps,deployments.apps",
            "-n",
            &ns,
            "-o",
            "name",
        ],
    )
    .await;
    assert_exit(&listed, documented_exit("Success"));
    // (A cluster with a controller manager adds kube-root-ca.crt.)
    let mut names: Vec<String> = lines(&listed)
        .into_iter()
        .filter(|n| !n.ends_with("/kube-root-ca.crt"))
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            format!("configmap/{ns}/settings"),
            format!("deployment.apps/{ns}/web"),
        ]
    );
    let repeated = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            "configmaps",
            "-r",
            "deployments.apps",
            "-n",
            &ns,
            "-o",
            "name",
        ],
    )
    .await;
    assert_exit(&repeated, documented_exit("Success"));
    assert_eq!(stdout(&repeated), stdout(&listed));

    // One resource: names as before, without the type.
    let one = kdi(
        User::Admin,
        &["get", "-r", "deploy", "-n", &ns, "-o", "name"],
    )
    .await;
    assert_exit(&one, documented_exit("Success"));
    assert_eq!(lines(&one), [format!("{ns}/web")]);

    // Every -r takes a list: watch's too.
    let watched = kdi(
        User::Admin,
        &[
            "watch",
            "-r",
            "cm,deploy",
            "-n",
            &ns,
            "--field-selector",
            "metadata.name!=kube-root-ca.crt",
            "--max-events",
            "2",
        ],
    )
    .await;
    assert_exit(&watched, documented_exit("Success"));
    let mut informers: Vec<String> = stdout(&watched)
        .lines()
        .map(|l| serde_json::from_str::<Value>(l).unwrap()["informer"].to_string())
        .collect();
    informers.sort();
    assert_eq!(informers, ["\"cm\"", "\"deploy\""]);
}

#[tokio::test]
async fn an_empty_name_in_a_list_of_resources_is_refused_naming_the_flag() {
    for list in ["configmaps,", ",configmaps", "configmaps,,secrets"] {
        let out = kdi(User::Admin, &["get", "-r", list]).await;
        assert_exit(&out, documented_exit("Invalid arguments"));
        let err = stderr(&out);
        assert!(
            err.contains("--resource") && err.contains("an empty name in the list"),
            "{list:?}: {err}"
        );
    }
}
