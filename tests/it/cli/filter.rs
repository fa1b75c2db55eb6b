//! `kdi watch --filter/--changes`, and a config file's `filter:` and
//! `changes:`: only the events that pass are printed, an object entering
//! or leaving the filter as an Add or a Delete.

use std::time::Duration;

use kube_client::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};

use super::{
    DEADLINE, Running, assert_exit, documented_exit, kdi, stderr, widget_resource, widgets,
};
use crate::support::{self, User};

impl Running {
    /// The next `n` JSON lines of stdout; fails the test when stdout ends
    /// first or after [`DEADLINE`].
    async fn json_lines(&mut self, n: usize) -> Vec<Value> {
        let stdout = self.stdout.as_mut().expect("stdout open");
        let mut lines = Vec::new();
        while lines.len() < n {
            match tokio::time::timeout(DEADLINE, stdout.next_line()).await {
                Ok(Ok(Some(line))) => lines.push(serde_json::from_str(&line).expect("a JSON line")),
                other => panic!("{} of {n} lines, then {other:?}: {lines:?}", lines.len()),
            }
        }
        lines
    }
}

/// `type name` of a line, with `+` for an object entering the filter and
/// `-` for one leaving it.
fn said(line: &Value) -> String {
    let name = line["key"]
        .as_str()
        .unwrap_or_default()
        .rsplit('/')
        .next()
        .unwrap_or_default();
    let mark = if line["enteredFilter"] == true {
        " +"
    } else if line["leftFilter"] == true {
        " -"
    } else {
        ""
    };
    format!("{} {name}{mark}", line["type"].as_str().unwrap_or_default())
}

#[tokio::test]
async fn watch_prints_only_what_the_filter_and_the_changes_let_through() {
    // Widgets a (red), b (blue), c (red), each labelled tier=<color>.
    let (ns, full) = widgets("cli-filter").await;
    let red = "metadata.labels.tier == 'red'";
    let dir = std::env::temp_dir().join(format!("kdi-filter-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let config = dir.join("widgets.yaml");
    std::fs::write(
        &config,
        format!(
            "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\ninformers:\n  - resource: {full}\n    namespaces: [{ns}]\n    filter: \"{red}\"\n    changes: [spec]\n"
        ),
    )
    .unwrap();
    let max = "6";
    let mut flags = Running::start(
        User::Admin,
        &[
            "watch",
            "-r",
            &full,
            "-n",
            &ns,
            "--filter",
            red,
            "--changes",
            "spec",
            "--max-events",
            max,
        ],
        &[],
    );
    let mut file = Running::start(
        User::Admin,
        &["watch", "-f", config.to_str().unwrap(), "--max-events", max],
        &[],
    );
    for run in [&mut flags, &mut file] {
        let mut initial: Vec<String> = run.json_lines(2).await.iter().map(said).collect();
        initial.sort();
        assert_eq!(initial, ["Add a", "Add c"]);
    }

    let client = support::admin().await;
    let api = Api::<DynamicObject>::namespaced_with(client, &ns, &widget_resource(&full));
    let patch = |name: &'static str, body: Value| {
        let api = api.clone();
        async move {
            api.patch(name, &PatchParams::default(), &Patch::Merge(body))
                .await
                .unwrap_or_else(|e| panic!("patching {name}: {e}"));
        }
    };
    // Status only, then an annotation: spec unchanged, nothing printed.
    api.patch_status(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "phase": "Busy" } })),
    )
    .await
    .unwrap();
    patch(
        "a",
        json!({ "metadata": { "annotations": { "seen": "yes" } } }),
    )
    .await;
    patch("a", json!({ "spec": { "color": "dark red" } })).await;
    patch("b", json!({ "metadata": { "labels": { "tier": "red" } } })).await;
    patch("c", json!({ "metadata": { "labels": { "tier": "blue" } } })).await;
    let mut d = support::widget(&widget_resource(&full), "d", json!({ "color": "red" }));
    d.metadata.labels = Some([("tier".to_string(), "red".to_string())].into());
    api.create(&PostParams::default(), &d).await.unwrap();

    for run in [flags, file] {
        let (code, out, err) = run.end().await;
        assert_eq!(code, Some(documented_exit("Success")), "{err}");
        let rest: Vec<String> = out
            .lines()
            .map(|l| said(&serde_json::from_str(l).unwrap()))
            .collect();
        assert_eq!(
            rest,
            ["Update a", "Add b +", "Delete c -", "Add d"],
            "{out}"
        );
    }
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn a_filter_that_is_not_a_boolean_is_said_once_per_object_and_a_bad_one_refused() {
    let (ns, full) = widgets("cli-filter-mistake").await;
    let mut run = Running::start(
        User::Admin,
        &[
            "watch",
            "-r",
            &full,
            "-n",
            &ns,
            "--filter",
            "metadata.labels.tier",
        ],
        &[],
    );
    // Off a terminal, stderr says it as JSON lines.
    let mut said: Vec<Value> = Vec::new();
    run.stderr_until(
        "a mistake said for each widget",
        Duration::from_secs(60),
        |l| {
            if let Ok(line) = serde_json::from_str::<Value>(l)
                && line["state"] == "notBoolean"
            {
                said.push(line);
            }
            said.len() == 3
        },
    )
    .await;
    let mut keys: Vec<&str> = said.iter().filter_map(|l| l["key"].as_str()).collect();
    keys.sort_unstable();
    assert_eq!(
        keys,
        [format!("{ns}/a"), format!("{ns}/b"), format!("{ns}/c")]
    );
    let b = said.iter().find(|l| l["key"] == format!("{ns}/b")).unwrap();
    assert_eq!(b["detail"], "not a boolean: \"blue\"", "{b}");
    assert_eq!(b["filter"], "metadata.labels.tier");
    // Once per object: a changed is not said again, so the next line is d's.
    let client = support::admin().await;
    let api = Api::<DynamicObject>::namespaced_with(client, &ns, &widget_resource(&full));
    let tier = |t: &str| json!({ "metadata": { "labels": { "tier": t } } });
    api.patch("a", &PatchParams::default(), &Patch::Merge(tier("green")))
        .await
        .unwrap();
    let mut d = support::widget(&widget_resource(&full), "d", json!({}));
    d.metadata.labels = Some([("tier".to_string(), "pink".to_string())].into());
    api.create(&PostParams::default(), &d).await.unwrap();
    let mut next = None;
    run.stderr_until("the next mistake", Duration::from_secs(60), |l| {
        next = serde_json::from_str::<Value>(l)
            .ok()
            .filter(|line| line["state"] == "notBoolean");
        next.is_some()
    })
    .await;
    assert_eq!(next.unwrap()["key"], format!("{ns}/d"));
    drop(run);

    let out = kdi(User::Admin, &["watch", "-r", &full, "--filter", "status.["]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains("--filter: condition 'status.[' invalid at column"),
        "{}",
        stderr(&out)
    );
    let out = kdi(
        User::Admin,
        &["watch", "-r", &full, "--changes", "lenght(spec)"],
    )
    .await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains("--changes: change expression 'lenght(spec)' invalid at column 0"),
        "{}",
        stderr(&out)
    );
}
