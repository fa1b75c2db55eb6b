//! The `kdi` command line, run as a process against the real server, with its
//! output parsed.

use std::path::PathBuf;
use std::process::{Command, Output};

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_client::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};

use crate::support::{self, User};

/// Kubeconfig of `user` for the process (external clusters: the admin's).
fn kubeconfig(user: User) -> PathBuf {
    match support::env() {
        support::Env::Testenv { ready, .. } => ready.kubeconfig(user.name()).to_path_buf(),
        support::Env::External { kubeconfig } => kubeconfig.clone(),
    }
}

/// Runs `kdi` with `args` as `user` (off the async runtime: it blocks).
async fn kdi(user: User, args: &[&str]) -> Output {
    kdi_with(kubeconfig(user), args).await
}

/// Runs `kdi` with `args` and this kubeconfig.
async fn kdi_with(kubeconfig: PathBuf, args: &[&str]) -> Output {
    let args: Vec<String> = args.iter().map(|s| s.to_string()).collect();
    tokio::task::spawn_blocking(move || {
        Command::new(env!("CARGO_BIN_EXE_kdi"))
            .arg("--kubeconfig")
            .arg(&kubeconfig)
            .args(&args)
            .env_remove("KUBECONFIG")
            .output()
            .expect("running kdi")
    })
    .await
    .unwrap()
}

fn stdout(o: &Output) -> String {
    String::from_utf8_lossy(&o.stdout).into_owned()
}

fn stderr(o: &Output) -> String {
    String::from_utf8_lossy(&o.stderr).into_owned()
}

/// The exit code README.md's table gives to the one row whose meaning
/// contains `meaning`: the tests hold kdi to what the README promises.
fn documented_exit(meaning: &str) -> i32 {
    let readme = std::fs::read_to_string(support::controlplane::repo_root().join("README.md"))
        .expect("reading README.md");
    let rows: Vec<(i32, &str)> = readme
        .lines()
        .skip_while(|l| !l.starts_with("| Exit code |"))
        .skip(2)
        .take_while(|l| l.starts_with('|'))
        .filter_map(|l| {
            let mut cells = l.trim_matches('|').split('|').map(str::trim);
            Some((cells.next()?.parse().ok()?, cells.next()?))
        })
        .collect();
    let found: Vec<i32> = rows
        .iter()
        .filter(|(_, m)| m.contains(meaning))
        .map(|(code, _)| *code)
        .collect();
    match found.as_slice() {
        [code] => *code,
        _ => panic!(
            "README's exit code table has {} rows saying {meaning:?}: {rows:?}",
            found.len()
        ),
    }
}

fn assert_exit(o: &Output, code: i32) {
    assert_eq!(
        o.status.code(),
        Some(code),
        "exit status; stdout:\n{}\nstderr:\n{}",
        stdout(o),
        stderr(o)
    );
}

/// A CRD with widgets red/blue/red in a fresh namespace; returns (namespace,
/// full resource name).
async fn widgets(prefix: &str) -> (String, String) {
    let client = support::admin().await;
    let ns = support::namespace(&client, prefix).await;
    let group = support::unique_group();
    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let api = Api::<DynamicObject>::namespaced_with(client, &ns, &ar);
    let mut objs = Vec::new();
    for (name, color) in [("a", "red"), ("b", "blue"), ("c", "red")] {
        let mut w = support::widget(&ar, name, json!({ "color": color }));
        w.metadata.labels = Some([("tier".to_string(), color.to_string())].into());
        objs.push(w);
    }
    support::create_many(&api, objs, 3).await;
    (ns, format!("widgets.v1.{group}"))
}

#[tokio::test]
async fn check_accepts_good_files_and_lists_every_problem_in_bad_ones() {
    let root = support::controlplane::repo_root();
    let good = root.join("examples/configs/pods-and-deployments.yaml");
    let out = kdi(User::Admin, &["check", good.to_str().unwrap()]).await;
    assert_exit(&out, documented_exit("Success"));
    assert!(
        stdout(&out).contains("ok (3 informers)"),
        "{}",
        stdout(&out)
    );

    let dir = std::env::temp_dir().join(format!("kdi-check-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let bad = dir.join("bad.yaml");
    std::fs::write(
        &bad,
        "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\ninformers:\n  - resource: pods\n    labelSelector: \"a in (\"\n    colour: red\n    indexes: { x: \"spec.[\" }\n",
    )
    .unwrap();
    let out = kdi(User::Admin, &["check", bad.to_str().unwrap()]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let text = stdout(&out);
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 3, "one line per problem:\n{text}");
    assert!(
        lines[0].contains("bad.yaml:5:20") && lines[0].contains("label selector"),
        "{text}"
    );
    assert!(
        lines[1].contains("bad.yaml:6:5") && lines[1].contains("colour"),
        "{text}"
    );
    assert!(
        lines[2].contains("bad.yaml:7:19") && lines[2].contains("index \"x\""),
        "{text}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn resources_lists_built_in_and_custom_resources() {
    let (_ns, full) = widgets("cli-resources").await;
    let out = kdi(User::Admin, &["resources", "-o", "json"]).await;
    assert_exit(&out, documented_exit("Success"));
    let list: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let cm = list
        .iter()
        .find(|r| r["name"] == "configmaps")
        .expect("configmaps listed");
    assert_eq!(cm["shortNames"], json!(["cm"]));
    assert_eq!(cm["namespaced"], json!(true));
    assert_eq!(cm["apiVersion"], "v1");
    assert!(
        list.iter().any(|r| r["fullName"] == full.as_str()),
        "{full} listed"
    );
    let table = kdi(User::Admin, &["resources"]).await;
    assert_exit(&table, documented_exit("Success"));
    assert!(stdout(&table).starts_with("NAME"), "{}", stdout(&table));
}

#[tokio::test]
async fn get_by_index_and_by_selector_in_every_format() {
    let (ns, full) = widgets("cli-get").await;
    let base = [
        "get",
        "-r",
        full.as_str(),
        "-n",
        ns.as_str(),
        "--define-index",
        "color=spec.color",
    ];

    let out = kdi(
        User::Admin,
        &[&base[..], &["--index", "color=red", "-o", "json"]].concat(),
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let objects: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let names: Vec<&str> = objects
        .iter()
        .map(|o| o["metadata"]["name"].as_str().unwrap())
        .collect();
    assert_eq!(names, ["a", "c"]);
    assert_eq!(objects[0]["kind"], "Widget");

    let out = kdi(
        User::Admin,
        &[&base[..], &["--match", "tier=blue", "-o", "name"]].concat(),
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    assert_eq!(stdout(&out).trim(), format!("{ns}/b"));

    // Server-side selector, YAML output.
    let out = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            &full,
            "-n",
            &ns,
            "-l",
            "tier in (red)",
            "-o",
            "yaml",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let objects: Vec<Value> = serde_saphyr::from_str(&stdout(&out)).unwrap();
    assert_eq!(objects.len(), 2);

    let out = kdi(User::Admin, &["get", "-r", &full, "-n", &ns]).await;
    assert_exit(&out, documented_exit("Success"));
    let text = stdout(&out);
    assert!(text.starts_with("NAMESPACE"), "{text}");
    assert_eq!(text.lines().count(), 4, "{text}");

    // An unknown index is a usage error naming the index.
    let out = kdi(User::Admin, &[&base[..], &["--index", "size=3"]].concat()).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(stderr(&out).contains("size"), "{}", stderr(&out));
}

#[tokio::test]
async fn watch_prints_json_lines_with_index_values() {
    let (ns, full) = widgets("cli-watch").await;
    let out = kdi(
        User::Admin,
        &[
            "watch",
            "-r",
            &full,
            "-n",
            &ns,
            "--define-index",
            "color=spec.color",
            "--index-values",
            "color",
            "--object",
            "--max-events",
            "3",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    let mut keys: Vec<String> = lines
        .iter()
        .map(|l| l["key"].as_str().unwrap().to_string())
        .collect();
    keys.sort();
    assert_eq!(
        keys,
        [format!("{ns}/a"), format!("{ns}/b"), format!("{ns}/c")]
    );
    for l in &lines {
        assert_eq!(l["type"], "Add");
        assert_eq!(l["initial"], true);
        assert_eq!(l["resource"], full.as_str());
        assert!(l["resourceVersion"].as_str().is_some());
        assert_eq!(l["indexValues"]["color"][0], l["object"]["spec"]["color"]);
    }
}

/// The annotation `kubectl apply` leaves on what it applies: the manifest as
/// written, `stringData` in plain text included.
fn last_applied(manifest: &Value) -> (String, String) {
    (
        "kubectl.kubernetes.io/last-applied-configuration".to_string(),
        format!("{manifest}\n"),
    )
}

#[tokio::test]
async fn secret_content_is_printed_in_no_output_mode_unless_asked() {
    const PLAIN: &str = "hunter2-very-secret";
    const BASE64: &str = "aHVudGVyMi12ZXJ5LXNlY3JldA";
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-secret").await;
    let applied = json!({
        "apiVersion": "v1", "kind": "Secret",
        "metadata": { "annotations": {}, "name": "s", "namespace": ns },
        "stringData": { "password": PLAIN },
    });
    let (key, value) = last_applied(&applied);
    let mut secret: Secret = serde_json::from_value(applied).unwrap();
    secret.metadata.annotations = Some([(key, value)].into());
    Api::<Secret>::namespaced(client.clone(), &ns)
        .create(&PostParams::default(), &secret)
        .await
        .unwrap();
    // A ConfigMap that the user marks sensitive, also applied with kubectl.
    let applied_cm = json!({
        "apiVersion": "v1", "kind": "ConfigMap",
        "metadata": { "annotations": {}, "name": "c", "namespace": ns },
        "data": { "token": PLAIN },
    });
    let (key, value) = last_applied(&applied_cm);
    let mut cm: ConfigMap = serde_json::from_value(applied_cm).unwrap();
    cm.metadata.annotations = Some([(key, value)].into());
    Api::<ConfigMap>::namespaced(client, &ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();

    let watch = |resource: &'static str, extra: &'static [&'static str]| {
        let ns = ns.clone();
        async move {
            let mut args = vec!["watch", "-r", resource, "-n", &ns, "--max-events", "1"];
            args.extend_from_slice(extra);
            kdi(User::Admin, &args).await
        }
    };
    let get = |resource: &'static str, extra: &'static [&'static str]| {
        let ns = ns.clone();
        async move {
            let mut args = vec!["get", "-r", resource, "-n", &ns];
            args.extend_from_slice(extra);
            kdi(User::Admin, &args).await
        }
    };
    let mut outputs = vec![
        ("watch secret", watch("secrets", &[]).await),
        (
            "watch secret --object",
            watch("secrets", &["--object"]).await,
        ),
        (
            "watch secret --object --metadata-only",
            watch("secrets", &["--object", "--metadata-only"]).await,
        ),
        (
            "watch secret --index-values",
            watch(
                "secrets",
                &[
                    "--define-index",
                    "pw=data.password",
                    "--index-values",
                    "all",
                    "--object",
                ],
            )
            .await,
        ),
        (
            "watch configmap --sensitive",
            watch(
                "configmaps",
                &[
                    "--define-index",
                    "t=data.token",
                    "--index-values",
                    "all",
                    "--object",
                    "--sensitive",
                ],
            )
            .await,
        ),
    ];
    for format in ["json", "yaml", "table", "name"] {
        let format: &'static str = format;
        let args: &'static [&'static str] = match format {
            "json" => &["-o", "json"],
            "yaml" => &["-o", "yaml"],
            "table" => &["-o", "table"],
            _ => &["-o", "name"],
        };
        outputs.push((format, get("secrets", args).await));
    }
    outputs.push((
        "get secret -o json --metadata-only",
        get("secrets", &["-o", "json", "--metadata-only"]).await,
    ));
    outputs.push((
        "get configmap -o yaml --sensitive",
        get("configmaps", &["-o", "yaml", "--sensitive"]).await,
    ));
    for (what, out) in &outputs {
        assert_exit(out, documented_exit("Success"));
        let text = format!("{}{}", stdout(out), stderr(out));
        assert!(!stdout(out).is_empty(), "{what}: printed nothing");
        assert!(
            !text.contains(PLAIN) && !text.contains(BASE64),
            "{what}: secret leaked:\n{text}"
        );
    }
    // The redacted modes still say what they left out.
    let object_line: Value = serde_json::from_str(stdout(&outputs[1].1).trim()).unwrap();
    assert!(
        object_line["object"]["data"]["password"]
            .as_str()
            .is_some_and(|v| v.contains("redacted")),
        "{object_line}"
    );
    let index_line: Value = serde_json::from_str(stdout(&outputs[3].1).trim()).unwrap();
    assert!(
        index_line["indexValues"]["pw"][0]
            .as_str()
            .is_some_and(|v| v.contains("redacted")),
        "{index_line}"
    );
    let cm_line: Value = serde_json::from_str(stdout(&outputs[4].1).trim()).unwrap();
    assert_eq!(cm_line["object"]["metadata"]["name"], "c", "{cm_line}");

    // --show-secrets prints everything.
    let out = get("secrets", &["-o", "json", "--show-secrets"]).await;
    assert_exit(&out, documented_exit("Success"));
    let objects: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(objects[0]["data"]["password"], format!("{BASE64}=="));
    assert!(stdout(&out).contains(PLAIN), "{}", stdout(&out));
    let out = watch(
        "secrets",
        &[
            "--define-index",
            "pw=data.password",
            "--index-values",
            "all",
            "--show-secrets",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    assert!(stdout(&out).contains(BASE64), "{}", stdout(&out));
}

#[tokio::test]
async fn a_forbidden_resource_exits_3_with_the_reason() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's ordinary users as kubeconfigs");
        return;
    }
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "cli-forbidden").await;
    let out = kdi(
        User::Alice,
        &["get", "-r", "configmaps", "-n", &ns, "--timeout", "3s"],
    )
    .await;
    assert_exit(&out, documented_exit("did not sync"));
    let err = stderr(&out);
    assert!(err.contains("403") || err.contains("forbidden"), "{err}");
    assert!(err.contains("configmaps"), "{err}");
    // stderr is not a terminal here: the failure is a JSON line.
    let line: Value = err
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON line in stderr: {err}"));
    assert_eq!(line["synced"], false);
    assert_eq!(line["resource"], "configmaps.v1");
    assert!(line["reason"].as_str().unwrap().contains("403"), "{line}");
}

#[tokio::test]
async fn contexts_and_bad_arguments() {
    if !support::is_testenv() {
        eprintln!("skipped: relies on testenv's kubeconfig contexts");
        return;
    }
    let out = kdi(
        User::Admin,
        &[
            "--context",
            "admin@testenv",
            "get",
            "-r",
            "namespaces",
            "-l",
            "kdi-test=true",
            "-o",
            "name",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    assert!(!stdout(&out).is_empty());
    let out = kdi(User::Admin, &["--context", "nope", "resources"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(stderr(&out).contains("nope"), "{}", stderr(&out));
    let out = kdi(User::Admin, &["get"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let out = kdi(User::Admin, &["get", "-r", "no-such-things"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(stderr(&out).contains("no-such-things"), "{}", stderr(&out));
}

#[tokio::test]
async fn an_unreachable_cluster_exits_with_the_server_and_the_cause() {
    // A port nothing listens on any more.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dir = std::env::temp_dir().join(format!("kdi-unreachable-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters: [{{ name: c, cluster: {{ server: \"https://127.0.0.1:{port}\" }} }}]\n\
             users: [{{ name: u, user: {{ token: t }} }}]\n\
             contexts: [{{ name: c, context: {{ cluster: c, user: u }} }}]\n"
        ),
    )
    .unwrap();
    for args in [
        &["get", "-r", "pods"][..],
        &["watch", "-r", "pods"],
        &["resources"],
    ] {
        let out = kdi_with(kubeconfig.clone(), args).await;
        assert_exit(&out, documented_exit("cannot be reached"));
        let err = stderr(&out);
        assert!(
            err.contains(&format!("https://127.0.0.1:{port}")),
            "{args:?}: the server is named: {err}"
        );
        assert!(
            err.contains("os error"),
            "{args:?}: the operating system's reason is given: {err}"
        );
        assert_eq!(err.lines().count(), 1, "{args:?}: one line: {err}");
    }
    let _ = std::fs::remove_dir_all(dir);
}
