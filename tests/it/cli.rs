//! The `kdi` command line, run as a process against the real server, with its
//! output parsed.

use std::path::PathBuf;
use std::process::{Output, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::{ConfigMap, Secret};
use kube_client::api::{Api, DynamicObject, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader, Lines};
use tokio::process::{Child, ChildStderr, ChildStdout, Command};

use crate::support::{self, User};

mod filter;
mod kubectl_habits;
mod namespace_index;
mod scope;
mod serve;
mod serve_clients;
mod shard;
mod snapshot;
mod stop;
mod terminal;
mod wait;

/// Kubeconfig of `user` for the process (external clusters: the admin's).
fn kubeconfig(user: User) -> PathBuf {
    match support::env() {
        support::Env::Testenv { ready, .. } => ready.kubeconfig(user.name()).to_path_buf(),
        support::Env::External { kubeconfig } => kubeconfig.clone(),
    }
}

/// How long any kdi run of these tests may take.
const DEADLINE: Duration = Duration::from_secs(120);

/// Runs `kdi` with `args` as `user`, to its end.
async fn kdi(user: User, args: &[&str]) -> Output {
    kdi_with(kubeconfig(user), args).await
}

/// Runs `kdi` with `args` and this kubeconfig, to its end; fails the test
/// if that takes longer than [`DEADLINE`].
pub(crate) async fn kdi_with(kubeconfig: PathBuf, args: &[&str]) -> Output {
    let run = command(&kubeconfig, args).output();
    match tokio::time::timeout(DEADLINE, run).await {
        Ok(out) => out.expect("running kdi"),
        Err(_) => panic!("kdi {args:?} did not end within {DEADLINE:?}"),
    }
}

fn command(kubeconfig: &std::path::Path, args: &[&str]) -> Command {
    let mut command = Command::new(env!("CARGO_BIN_EXE_kdi"));
    command
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .args(args)
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// A kdi process running while the test acts, its output read line by line.
struct Running {
    child: Child,
    /// `None` once closed.
    stdout: Option<Lines<BufReader<ChildStdout>>>,
    stderr: Lines<BufReader<ChildStderr>>,
    /// Every stderr line read so far.
    stderr_seen: Vec<String>,
}

impl Running {
    fn start(user: User, args: &[&str], env: &[(&str, &str)]) -> Running {
        Running::start_with(&kubeconfig(user), args, env)
    }

    /// As [`Running::start`], with this kubeconfig.
    fn start_with(kubeconfig: &std::path::Path, args: &[&str], env: &[(&str, &str)]) -> Running {
        let mut command = command(kubeconfig, args);
        command
            .envs(env.iter().copied())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        let mut child = command.spawn().expect("starting kdi");
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        let stderr = BufReader::new(child.stderr.take().unwrap()).lines();
        Running {
            child,
            stdout: Some(stdout),
            stderr,
            stderr_seen: Vec::new(),
        }
    }

    /// Reads stderr until a line satisfies `wanted`; fails the test at the
    /// end of stderr or after `within`.
    async fn stderr_until(
        &mut self,
        what: &str,
        within: Duration,
        mut wanted: impl FnMut(&str) -> bool,
    ) {
        let read = async {
            while let Some(line) = self.stderr.next_line().await.expect("reading stderr") {
                self.stderr_seen.push(line.clone());
                if wanted(&line) {
                    return true;
                }
            }
            false
        };
        match tokio::time::timeout(within, read).await {
            Ok(true) => {}
            Ok(false) => panic!(
                "stderr ended before {what}:\n{}",
                self.stderr_seen.join("\n")
            ),
            Err(_) => panic!(
                "no {what} within {within:?}; stderr:\n{}",
                self.stderr_seen.join("\n")
            ),
        }
    }

    /// Reads one line of stdout, then closes it, as `head -1` does.
    async fn first_line_then_close(&mut self) -> String {
        let mut stdout = self.stdout.take().expect("stdout open");
        match tokio::time::timeout(DEADLINE, stdout.next_line()).await {
            Ok(Ok(Some(line))) => line,
            other => panic!("no first line: {other:?}"),
        }
    }

    /// Waits for the process to end; returns its exit code and the rest of
    /// its stdout and stderr.
    async fn end(mut self) -> (Option<i32>, String, String) {
        let rest = async {
            let mut out = String::new();
            if let Some(stdout) = &mut self.stdout {
                while let Some(line) = stdout.next_line().await.expect("reading stdout") {
                    out.push_str(&line);
                    out.push('\n');
                }
            }
            while let Some(line) = self.stderr.next_line().await.expect("reading stderr") {
                self.stderr_seen.push(line);
            }
            let status = self.child.wait().await.expect("waiting for kdi");
            (status.code(), out)
        };
        match tokio::time::timeout(DEADLINE, rest).await {
            Ok((code, out)) => (code, out, self.stderr_seen.join("\n")),
            Err(_) => panic!(
                "kdi did not end within {DEADLINE:?}; stderr:\n{}",
                self.stderr_seen.join("\n")
            ),
        }
    }
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

/// The `ApiResource` of `widgets` by its full name.
fn widget_resource(full: &str) -> kube_client::core::ApiResource {
    let group = full.strip_prefix("widgets.v1.").expect("a widgets.v1 name");
    kube_client::core::ApiResource {
        group: group.to_string(),
        version: "v1".into(),
        api_version: format!("{group}/v1"),
        kind: "Widget".into(),
        plural: "widgets".into(),
    }
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

    // Every version, in Kubernetes' order of priority.
    let out = kdi(User::Admin, &["resources", "--all-versions", "-o", "json"]).await;
    assert_exit(&out, documented_exit("Success"));
    let list: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    let hpa: Vec<&str> = list
        .iter()
        .filter(|r| r["name"] == "horizontalpodautoscalers")
        .map(|r| r["version"].as_str().unwrap())
        .collect();
    assert_eq!(hpa, ["v2", "v1"]);

    // What names designate, as watch and get resolve them, and why not.
    let group = full.strip_prefix("widgets.v1.").unwrap();
    let out = kdi(
        User::Admin,
        &["resources", "deploy", &format!("wdg.{group}"), &full],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let lines: Vec<String> = stdout(&out).lines().map(String::from).collect();
    assert!(
        lines[0].starts_with("deploy: deployments.v1.apps (kind Deployment; namespaced"),
        "{lines:?}"
    );
    assert!(
        lines[1].starts_with(&format!("wdg.{group}: {full} (kind Widget")),
        "{lines:?}"
    );
    assert!(
        lines[2].starts_with(&format!("{full}: {full}")),
        "{lines:?}"
    );
    // Patterns are names too, as watch and get take them: what they match.
    let out = kdi(
        User::Admin,
        &["resources", "category:all", &format!("group:{group}")],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let lines: Vec<String> = stdout(&out).lines().map(String::from).collect();
    assert!(
        lines[0].starts_with("category:all: a pattern; it matches")
            && lines[0].contains("deployments.v1.apps"),
        "{lines:?}"
    );
    assert_eq!(
        lines[1],
        format!("group:{group}: a pattern; it matches 1 resource now: {full}"),
        "{lines:?}"
    );
    let out = kdi(User::Admin, &["resources", "-o", "json", "category:"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let out = kdi(User::Admin, &["resources", "deploymnts"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stdout(&out).contains("did you mean deployments.v1.apps"),
        "{}",
        stdout(&out)
    );
    let waited = format!("widgets.{}", support::unique_group());
    let out = kdi(User::Admin, &["resources", "-o", "json", &waited]).await;
    assert_exit(&out, documented_exit("not served"));
    let answer: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(answer[0]["waited"], true, "{answer:?}");
    assert!(
        answer[0]["reason"]
            .as_str()
            .is_some_and(|r| r.contains(&format!("{waited} is not served"))),
        "{answer:?}"
    );
}

#[tokio::test]
async fn get_prints_the_same_from_a_compact_cache_in_every_format() {
    let (ns, full) = widgets("cli-compact").await;
    for extra in [
        &["-o", "json"][..],
        &["-o", "yaml"],
        &["-o", "name"],
        &["-o", "table"],
        &["--match", "tier=blue", "-o", "json"],
        &[
            "--define-index",
            "color=spec.color",
            "--index",
            "color=red",
            "-o",
            "json",
        ],
    ] {
        let base = ["get", "-r", full.as_str(), "-n", ns.as_str()];
        let objects = kdi(User::Admin, &[&base[..], extra].concat()).await;
        let compact = kdi(
            User::Admin,
            &[&base[..], extra, &["--storage", "compact"]].concat(),
        )
        .await;
        assert_exit(&objects, documented_exit("Success"));
        assert_exit(&compact, documented_exit("Success"));
        assert!(!stdout(&objects).trim().is_empty(), "{extra:?}");
        assert_eq!(stdout(&compact), stdout(&objects), "{extra:?}");
    }
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

#[tokio::test]
async fn get_and_watch_keep_only_the_fields_named_with_keep() {
    let (ns, full) = widgets("cli-keep").await;
    // The widget as kept: identity, its spec (only a color), and the labels
    // asked for.
    let expect_kept = |object: &Value, labels: Option<Value>| {
        let uid = &object["metadata"]["uid"];
        let rv = &object["metadata"]["resourceVersion"];
        assert!(uid.is_string() && rv.is_string(), "{object}");
        let name = object["metadata"]["name"].as_str().unwrap();
        let color = if name == "b" { "blue" } else { "red" };
        let mut expected = json!({
            "apiVersion": widget_resource(&full).api_version,
            "kind": "Widget",
            "metadata": { "name": name, "namespace": ns, "uid": uid, "resourceVersion": rv },
            "spec": { "color": color },
        });
        if let Some(labels) = labels {
            expected["metadata"]["labels"] = labels;
        }
        assert_eq!(*object, expected);
    };
    let out = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            &full,
            "-n",
            &ns,
            "-o",
            "json",
            "--keep",
            "spec.color",
            "--keep",
            "metadata.labels['tier']",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let objects: Vec<Value> = serde_json::from_str(&stdout(&out)).unwrap();
    assert_eq!(objects.len(), 3);
    for object in &objects {
        let tier = object["spec"]["color"].clone();
        expect_kept(object, Some(json!({ "tier": tier })));
    }

    let out = kdi(
        User::Admin,
        &[
            "watch",
            "-r",
            &full,
            "-n",
            &ns,
            "--object",
            "--max-events",
            "3",
            "--keep",
            "spec",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let lines: Vec<Value> = stdout(&out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap())
        .collect();
    assert_eq!(lines.len(), 3);
    for line in &lines {
        expect_kept(&line["object"], None);
    }

    let out = kdi(User::Admin, &["get", "-r", &full, "--keep", "spec/color"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains(r#"--keep: projection path "spec/color", column 5"#),
        "{}",
        stderr(&out)
    );
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
    // A 403 is final for a one-shot command: it does not wait out its
    // ten-minute timeout.
    let within = Duration::from_secs(30);
    let out = tokio::time::timeout(
        within,
        kdi(
            User::Alice,
            &["get", "-r", "configmaps", "-n", &ns, "--timeout", "10m"],
        ),
    )
    .await
    .unwrap_or_else(|_| panic!("kdi get waited on a 403 for more than {within:?}"));
    assert_exit(&out, documented_exit("access denied"));
    let err = stderr(&out);
    // The server's answer, once, without debug dump or backoff lines.
    assert_eq!(err.matches("cannot list").count(), 1, "{err}");
    assert!(
        !err.contains("Status {") && !err.contains("retry"),
        "no debug dump, no backoff: {err}"
    );
    // stderr is not a terminal here: the failure is a JSON line.
    let line: Value = err
        .lines()
        .find_map(|l| serde_json::from_str(l).ok())
        .unwrap_or_else(|| panic!("no JSON line in stderr: {err}"));
    assert_eq!(line["synced"], false);
    assert_eq!(line["status"], "forbidden");
    assert_eq!(line["resource"], "configmaps.v1");
    // Who may not do what, where.
    let reason = line["reason"].as_str().unwrap();
    for part in [
        format!("User \"{}\"", User::Alice.subject_name()),
        "cannot list resource \"configmaps\"".to_string(),
        format!("namespace \"{ns}\""),
        "403".to_string(),
    ] {
        assert!(reason.contains(&part), "{part:?} in {reason}");
    }
}

/// Parses the JSON lines of kdi's stderr.
fn json_lines(text: &[String]) -> Vec<Value> {
    text.iter()
        .filter_map(|l| serde_json::from_str(l).ok())
        .collect()
}

#[tokio::test]
async fn watch_waits_for_access_saying_so_once_then_at_its_interval() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's ordinary users as kubeconfigs");
        return;
    }
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "cli-wait-access").await;
    let watch = |interval: &str, extra: &[&str]| {
        let mut args = extra.to_vec();
        args.extend([
            "watch",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--timeout",
            "0",
            "--max-events",
            "1",
            "--progress-interval",
            interval,
        ]);
        // With -v, the informer's log shows every failed list.
        Running::start(
            User::Alice,
            &args,
            &[(
                "RUST_LOG",
                "kube_dynamic_informer::informer::reflector=warn",
            )],
        )
    };
    let mut once = watch("1h", &["-v"]);
    let mut reminded = watch("1s", &[]);

    let failed_lists = std::cell::Cell::new(0);
    once.stderr_until("three failed lists", Duration::from_secs(60), |l| {
        if l.contains("list/watch failed") && l.contains("configmaps.v1") {
            failed_lists.set(failed_lists.get() + 1);
        }
        failed_lists.get() >= 3
    })
    .await;
    let said: Vec<Value> = json_lines(&once.stderr_seen)
        .into_iter()
        .filter(|l| l["status"] == "forbidden")
        .collect();
    assert_eq!(said.len(), 1, "said once, not at every retry: {said:?}");
    let reason = said[0]["reason"].as_str().unwrap();
    assert!(
        reason.contains(&User::Alice.subject_name()) && reason.contains(&ns),
        "{reason}"
    );
    assert!(
        !once.stderr_seen.iter().any(|l| l.contains('\u{1b}')),
        "no colours off a terminal"
    );
    reminded
        .stderr_until("a reminder", Duration::from_secs(30), |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|l| {
                l["status"] == "forbidden" && l["waitingSeconds"].as_u64() >= Some(1)
            })
        })
        .await;

    // Access granted while they run: both sync by themselves.
    config_map(&admin, &ns, "granted").await;
    support::grant_configmap_read(&admin, &ns, User::Alice).await;
    for running in [once, reminded] {
        let (code, out, err) = running.end().await;
        assert_eq!(code, Some(documented_exit("Success")), "{err}");
        let event: Value = serde_json::from_str(out.trim()).unwrap();
        assert_eq!(event["key"], format!("{ns}/granted"));
        let said = json_lines(&err.lines().map(String::from).collect::<Vec<_>>());
        assert_eq!(
            said.last().map(|l| &l["status"]),
            Some(&json!("synced")),
            "the wait's end is said: {err}"
        );
    }
}

async fn config_map(client: &kube_client::Client, ns: &str, name: &str) {
    let cm: ConfigMap = serde_json::from_value(json!({ "metadata": { "name": name } })).unwrap();
    Api::<ConfigMap>::namespaced(client.clone(), ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
}

#[tokio::test]
async fn contexts_and_bad_arguments() {
    if !support::is_testenv() {
        eprintln!("skipped: relies on testenv's kubeconfig contexts");
        return;
    }
    // At least one namespace labelled kdi-test=true, whatever ran before.
    support::namespace(&support::admin().await, "cli-contexts").await;
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
    assert!(
        stderr(&out).contains(
            "--context \"nope\": the kubeconfig has no such context; its contexts are admin@testenv"
        ),
        "{}",
        stderr(&out)
    );
    // A KUBECONFIG that names no file is said once, plainly.
    let missing = tokio::process::Command::new(env!("CARGO_BIN_EXE_kdi"))
        .args(["get", "-r", "pods"])
        .env("KUBECONFIG", "/nonexistent/kdi-kubeconfig")
        .env_remove("RUST_LOG")
        .output()
        .await
        .unwrap();
    assert_exit(&missing, documented_exit("Invalid arguments"));
    assert_eq!(
        stderr(&missing).trim(),
        "kdi: KUBECONFIG=/nonexistent/kdi-kubeconfig: no such file"
    );
    let out = kdi(
        User::Admin,
        &[
            "watch",
            "-r",
            "configmaps",
            "--index-values",
            "nosuch",
            "--duration",
            "1s",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains(
            "--index-values \"nosuch\": no informer has an index named \"nosuch\"; the only index is the built-in namespace; declare others with --define-index"
        ),
        "{}",
        stderr(&out)
    );
    let out = kdi(User::Admin, &["get"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let out = kdi(User::Admin, &["get", "-r", "no-such-things"]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert_eq!(
        stderr(&out).matches("no-such-things").count(),
        1,
        "named once: {}",
        stderr(&out)
    );
}

#[tokio::test]
async fn an_unreachable_cluster_exits_with_the_server_and_the_cause() {
    let (kubeconfig, port) = support::unreachable_kubeconfig("unreachable");
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
    let _ = std::fs::remove_dir_all(kubeconfig.parent().unwrap());
}

/// Names that designate nothing get help that fits: a category is named
/// as one, an unrelated short name is not suggested, and a name without a
/// group says how to wait for a CRD not installed yet.
#[tokio::test]
async fn names_that_designate_nothing_get_fitting_help() {
    let all = kdi(User::Admin, &["get", "-r", "all"]).await;
    assert_exit(&all, documented_exit("Invalid arguments"));
    assert!(
        stderr(&all).contains("\"all\" is a category, not a resource: name it category:all"),
        "{}",
        stderr(&all)
    );
    let nothing = kdi(User::Admin, &["get", "-r", "nosuchthing"]).await;
    assert_exit(&nothing, documented_exit("Invalid arguments"));
    let err = stderr(&nothing);
    assert!(
        !err.contains("ingresses"),
        "nothing unrelated suggested: {err}"
    );
    assert!(!err.contains("did you mean"), "{err}");
    assert!(err.contains("named as plural.group"), "{err}");
    let typo = kdi(User::Admin, &["get", "-r", "configmap"]).await;
    assert_exit(&typo, documented_exit("Success"));
    let near = kdi(User::Admin, &["get", "-r", "confgmaps"]).await;
    assert!(
        stderr(&near).contains("did you mean configmaps.v1"),
        "{}",
        stderr(&near)
    );
    // A plural.group discovery already answers (a served group, a typo of
    // its plural) fails at once, not after the timeout (exit 3), unless the
    // user waits for a CRD on purpose.
    let (_ns, full) = widgets("cli-typo").await;
    let group = full.strip_prefix("widgets.v1.").unwrap();
    let typo = format!("widgetz.{group}");
    let out = kdi(User::Admin, &["get", "-r", &typo]).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let err = stderr(&out);
    assert!(err.contains(&format!("did you mean {full}")), "{err}");
    assert!(err.contains("--wait-for-crd"), "{err}");
    let out = kdi(
        User::Admin,
        &["get", "-r", &typo, "--wait-for-crd", "--timeout", "1s"],
    )
    .await;
    assert_exit(&out, documented_exit("not served"));
}

/// Runs each of `cases` (arguments, and what stderr says) with a
/// kubeconfig of a cluster that cannot be reached: each is a usage error
/// said before the cluster is contacted.
async fn refused_before_contacting_the_cluster(name: &str, cases: &[(&[&str], &str)]) {
    let (kubeconfig, _) = support::unreachable_kubeconfig(name);
    for (args, says) in cases {
        let out = kdi_with(kubeconfig.clone(), args).await;
        assert_exit(&out, documented_exit("Invalid arguments"));
        let err = stderr(&out);
        assert!(err.contains(says), "{args:?}: {err}");
        assert!(
            !err.contains("127.0.0.1"),
            "{args:?}: nothing was asked of the cluster: {err}"
        );
    }
    let _ = std::fs::remove_dir_all(kubeconfig.parent().unwrap());
}

/// Arguments are checked before the cluster is contacted: an index no
/// informer declares and a selector that does not parse are usage errors,
/// said in the words typed, even with a cluster that cannot be reached.
#[tokio::test]
async fn get_checks_its_query_before_contacting_the_cluster() {
    let cases: [(&[&str], &str); 3] = [
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
            &["get", "-r", "pods", "--index", "byHost=a"],
            "the only index is the built-in namespace",
        ),
        (
            &["get", "-r", "pods", "--match", "tier in (gold"],
            "--match \"tier in (gold\"",
        ),
    ];
    refused_before_contacting_the_cluster("early", &cases).await;
}

#[tokio::test]
async fn a_crd_named_by_plural_and_group_is_waited_for_then_watched_in_its_preferred_version() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "cli-plural-group").await;
    let group = support::unique_group();
    let name = format!("widgets.{group}");

    // Before its CRD exists the name is waited for, not refused; when the
    // timeout passes, kdi says which cache did not sync and why.
    // (--wait-for-crd: other tests' Widget CRDs of other groups are served,
    // which a one-shot get would take the name for a typo of.)
    let out = kdi(
        User::Admin,
        &[
            "get",
            "-r",
            &name,
            "-n",
            &ns,
            "--timeout",
            "2s",
            "--wait-for-crd",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("not served"));
    let err = stderr(&out);
    let line: Value = err
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .find(|l| l["synced"] == false)
        .unwrap_or_else(|| panic!("no JSON line with synced false in stderr: {err}"));
    assert_eq!(line["status"], "notServed", "{line}");
    assert_eq!(line["resource"], name.as_str(), "{line}");
    assert!(
        line["reason"]
            .as_str()
            .is_some_and(|r| r.contains(&format!("{name} is not served"))),
        "{line}"
    );
    let last = err.lines().last().unwrap_or_default();
    assert!(
        last.starts_with("kdi: ") && last.contains(&name) && last.contains("not served"),
        "the last line says what did not sync: {err}"
    );

    // `watch` waits, and lists the version the CRD prefers once installed.
    let mut watch = Running::start(
        User::Admin,
        &[
            "watch",
            "-r",
            &name,
            "-n",
            &ns,
            "--timeout",
            "0",
            "--max-events",
            "1",
        ],
        &[],
    );
    watch
        .stderr_until("the informer waiting", Duration::from_secs(30), |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|l| l["status"] == "notServed")
        })
        .await;
    let mut crd = serde_json::to_value(support::widget_crd(&group)).unwrap();
    let mut beta = crd["spec"]["versions"][0].clone();
    beta["name"] = json!("v1beta1");
    beta["storage"] = json!(false);
    crd["spec"]["versions"]
        .as_array_mut()
        .unwrap()
        .insert(0, beta);
    let crd = serde_json::from_value(crd).unwrap();
    let ar = support::install_crd(&admin, &crd).await;
    let api = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &ar);
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "w1", json!({ "color": "red" })),
    )
    .await
    .unwrap();
    let (code, out, err) = watch.end().await;
    assert_eq!(code, Some(documented_exit("Success")), "{err}");
    let event: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(event["type"], "Add", "{event}");
    assert_eq!(event["key"], format!("{ns}/w1"), "{event}");
    assert_eq!(event["resource"], format!("widgets.v1.{group}"), "{event}");

    // A version the CRD does not serve is refused, naming those it does.
    let out = kdi(
        User::Admin,
        &["get", "-r", &format!("widgets.v2.{group}"), "-n", &ns],
    )
    .await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    let err = stderr(&out);
    assert!(
        err.contains("v1, v1beta1") && err.contains(&name),
        "served versions and the versionless name: {err}"
    );
}

#[tokio::test]
async fn config_problems_are_said_once_with_what_to_do() {
    let dir = std::env::temp_dir().join(format!("kdi-config-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let write = |name: &str, text: &str| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path.to_str().unwrap().to_string()
    };
    const HEADER: &str = "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\n";
    let enumeration = write(
        "enum.yaml",
        &format!("{HEADER}informers:\n  - resource: pods\n    whenNotServed: sometimes\n"),
    );
    let empty = write("empty.yaml", "# nothing yet\n");
    let missing = dir.join("missing.yaml").to_str().unwrap().to_string();
    let indexes: String = (0..1000)
        .map(|i| format!("      i{i}: metadata.name\n"))
        .collect();
    let many = write(
        "many.yaml",
        &format!("{HEADER}informers:\n  - resource: pods\n    indexes:\n{indexes}"),
    );
    for (file, expected) in [
        (
            &enumeration,
            format!(
                "{enumeration}:5:20: informers[0].whenNotServed: \"sometimes\" is not one of \"wait\", \"skip\", \"fail\""
            ),
        ),
        (&empty, format!("{empty}: the file is empty;")),
        (&missing, format!("{missing}: cannot read the file: ")),
        (
            &many,
            format!(
                "{many}:6:7: informers[0].indexes: an object of 1000 entries: at most 100 are allowed"
            ),
        ),
    ] {
        // `check`, and `get` before it needs a cluster: one line each.
        let out = kdi(User::Admin, &["check", file]).await;
        assert_exit(&out, documented_exit("Invalid arguments"));
        assert_eq!(stdout(&out).lines().count(), 1, "{}", stdout(&out));
        assert!(stdout(&out).starts_with(&expected), "{}", stdout(&out));
        let out = kdi_with(
            PathBuf::from("/nonexistent/kubeconfig"),
            &["get", "-f", file],
        )
        .await;
        assert_exit(&out, documented_exit("Invalid arguments"));
        assert_eq!(stderr(&out).lines().count(), 1, "{}", stderr(&out));
        assert!(
            stderr(&out).starts_with(&format!("kdi: {expected}")),
            "{}",
            stderr(&out)
        );
    }
    // The same limit on the command line.
    let defined: Vec<String> = (0..=100)
        .map(|i| format!("--define-index=i{i}=metadata.name"))
        .collect();
    let mut args = vec!["get", "-r", "pods"];
    args.extend(defined.iter().map(String::as_str));
    let out = kdi_with(PathBuf::from("/nonexistent/kubeconfig"), &args).await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains("at most 100 are allowed per informer"),
        "{}",
        stderr(&out)
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test]
async fn index_failures_are_shown_by_get_and_watch() {
    let (ns, full) = widgets("cli-index-failures").await;
    // `spec` is an object: the expression fails on every widget.
    let indexes = [
        "--define-index",
        "whole=spec",
        "--define-index",
        "color=spec.color",
    ];
    let failures = |lines: &[String]| -> Option<u64> {
        json_lines(lines)
            .iter()
            .rev()
            .find_map(|l| l["indexFailures"]["whole"].as_u64())
    };

    let out = kdi(
        User::Admin,
        &[
            &["get", "-r", &full, "-n", &ns, "--index", "color=red"][..],
            &indexes,
        ]
        .concat(),
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    assert_eq!(stdout(&out).lines().count(), 3, "{}", stdout(&out));
    let err: Vec<String> = stderr(&out).lines().map(String::from).collect();
    assert_eq!(failures(&err), Some(3), "{err:?}");

    let mut watch = Running::start(
        User::Admin,
        &[
            &["watch", "-r", &full, "-n", &ns, "--progress-interval", "1s"][..],
            &indexes,
        ]
        .concat(),
        &[],
    );
    watch
        .stderr_until("the failures after sync", Duration::from_secs(30), |l| {
            serde_json::from_str::<Value>(l).is_ok_and(|l| l["indexFailures"]["whole"] == 3)
        })
        .await;
    let ar = widget_resource(&full);
    Api::<DynamicObject>::namespaced_with(support::admin().await, &ns, &ar)
        .create(
            &PostParams::default(),
            &support::widget(&ar, "d", json!({ "color": "green" })),
        )
        .await
        .unwrap();
    watch
        .stderr_until(
            "the failure on a new object",
            Duration::from_secs(30),
            |l| serde_json::from_str::<Value>(l).is_ok_and(|l| l["indexFailures"]["whole"] == 4),
        )
        .await;

    // An index named for --index-values must exist.
    let out = kdi(
        User::Admin,
        &[
            &["watch", "-r", &full, "-n", &ns, "--index-values", "size"][..],
            &indexes,
        ]
        .concat(),
    )
    .await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains("\"size\"") && stderr(&out).contains("color, whole"),
        "{}",
        stderr(&out)
    );
}

#[tokio::test]
async fn watch_ends_when_its_output_is_closed() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-closed").await;
    config_map(&client, &ns, "only").await;
    // One object, then nothing changes: the end can only come from the
    // closed pipe, not from writing the next event.
    let mut watch = Running::start(
        User::Admin,
        &["watch", "-r", "configmaps", "-n", &ns, "--timeout", "0"],
        &[],
    );
    let first: Value = serde_json::from_str(&watch.first_line_then_close().await).unwrap();
    assert_eq!(first["key"], format!("{ns}/only"));
    let (code, _, err) = watch.end().await;
    assert_eq!(code, Some(documented_exit("closed output")), "{err}");
}

#[tokio::test]
async fn get_into_a_closed_pipe_ends_quietly() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-closed-get").await;
    // More than a pipe holds (64 KiB), so kdi is still writing when the
    // pipe closes.
    let api = Api::<ConfigMap>::namespaced(client, &ns);
    futures::future::try_join_all((0..200).map(|i| {
        let cm: ConfigMap = serde_json::from_value(json!({
            "metadata": { "name": format!("cm-{i}") },
            "data": { "filler": "x".repeat(1024) },
        }))
        .unwrap();
        let api = api.clone();
        async move { api.create(&PostParams::default(), &cm).await }
    }))
    .await
    .unwrap();
    let mut get = Running::start(
        User::Admin,
        &["get", "-r", "configmaps", "-n", &ns, "-o", "yaml"],
        &[],
    );
    get.first_line_then_close().await;
    let (code, _, err) = get.end().await;
    assert_eq!(code, Some(documented_exit("closed output")), "{err}");
    assert!(!err.contains("panicked"), "{err}");
}

#[tokio::test]
async fn watch_serves_metrics_in_the_prometheus_format() {
    use support::prometheus::{Sample, parse_exposition, scrape};
    let (ns, full) = widgets("cli-metrics").await;
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let addr = format!("127.0.0.1:{port}");
    let mut watch = Running::start(
        User::Admin,
        &[
            "watch",
            "-r",
            &full,
            "-n",
            &ns,
            "--define-index",
            "color=spec.color",
            "--metrics-addr",
            &addr,
        ],
        &[],
    );
    let value = |samples: &[Sample], name: &str, extra: &[(&str, &str)]| -> Option<f64> {
        samples
            .iter()
            .find(|s| {
                s.name == name
                    && s.labels.get("resource").map(String::as_str) == Some(full.as_str())
                    && extra
                        .iter()
                        .all(|(k, v)| s.labels.get(*k).map(String::as_str) == Some(*v))
            })
            .map(|s| s.value)
    };
    // Synced with the three widgets, and their Adds handed to kdi's printer.
    let (samples, types) = support::wait_for("metrics of the synced cache", DEADLINE, || async {
        let body = scrape(&addr).await.ok_or("nothing listening yet")?;
        let (samples, types) = parse_exposition(&body);
        let printed = value(
            &samples,
            "kdi_handler_events_delivered_total",
            &[("handler", "print"), ("type", "Add")],
        );
        let objects = value(&samples, "kdi_informer_objects", &[]);
        if objects == Some(3.0) && printed == Some(3.0) {
            Ok((samples, types))
        } else {
            Err(format!("objects {objects:?}, printed {printed:?}"))
        }
    })
    .await;
    assert_eq!(
        value(&samples, "kdi_informer_lists_total", &[("reason", "first")]),
        Some(1.0)
    );
    assert_eq!(
        value(
            &samples,
            "kdi_informer_objects",
            &[("namespace", ns.as_str())]
        ),
        Some(3.0)
    );
    assert!(value(&samples, "kdi_informer_list_bytes_total", &[]).unwrap() > 0.0);
    assert!(value(&samples, "kdi_informer_sync_duration_seconds", &[]).unwrap() > 0.0);
    assert!(value(&samples, "kdi_informer_resource_version", &[]).unwrap() > 0.0);
    assert!(value(&samples, "kdi_informer_last_event_timestamp_seconds", &[]).unwrap() > 1.7e9);
    assert_eq!(value(&samples, "kdi_informer_stale", &[]), Some(0.0));
    assert_eq!(
        value(
            &samples,
            "kdi_handler_processing_seconds_count",
            &[("handler", "print")]
        ),
        Some(3.0)
    );
    assert!(
        value(
            &samples,
            "kdi_handler_processing_seconds_bucket",
            &[("handler", "print"), ("le", "+Inf")]
        )
        .is_some(),
        "a histogram with buckets"
    );
    for (name, kind) in [
        ("kdi_informer_objects", "gauge"),
        ("kdi_informer_lists_total", "counter"),
        ("kdi_informer_watch_starts_total", "counter"),
        ("kdi_handler_processing_seconds", "histogram"),
        ("kdi_handler_backlog", "gauge"),
    ] {
        assert_eq!(types.get(name).map(String::as_str), Some(kind), "{name}");
    }
    // The index fails on an object whose spec.color is an object: a new
    // such widget shows as an event received and an index failure.
    let client = support::admin().await;
    let api = Api::<DynamicObject>::namespaced_with(client, &ns, &widget_resource(&full));
    api.create(
        &PostParams::default(),
        &support::widget(&widget_resource(&full), "d", json!({ "color": { "r": 1 } })),
    )
    .await
    .unwrap();
    support::wait_for("the new widget in the metrics", DEADLINE, || async {
        let (samples, _) = parse_exposition(&scrape(&addr).await.ok_or("nothing listening")?);
        let objects = value(&samples, "kdi_informer_objects", &[]);
        let added = value(&samples, "kdi_informer_events_received_total", &[("type", "added")]);
        let printed = value(&samples, "kdi_handler_events_delivered_total", &[("handler", "print"), ("type", "Add")]);
        let failures = value(&samples, "kdi_informer_index_failures_total", &[("index", "color")]);
        if objects == Some(4.0) && added >= Some(1.0) && printed == Some(4.0) && failures >= Some(1.0) {
            Ok(())
        } else {
            Err(format!("objects {objects:?}, added {added:?}, printed {printed:?}, index failures {failures:?}"))
        }
    })
    .await;
    let _ = watch.first_line_then_close().await;
    let (code, _, err) = watch.end().await;
    assert_eq!(code, Some(documented_exit("closed output")), "{err}");
}

#[tokio::test]
async fn a_metrics_address_in_use_is_refused_before_anything_else() {
    let taken = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = taken.local_addr().unwrap().to_string();
    let out = kdi(
        User::Admin,
        &["watch", "-r", "configmaps", "--metrics-addr", &addr],
    )
    .await;
    assert_exit(&out, documented_exit("Invalid arguments"));
    assert!(
        stderr(&out).contains("--metrics-addr") && stderr(&out).contains(&addr),
        "{}",
        stderr(&out)
    );
}

/// The README's first program (examples/first_program.rs, which `cargo
/// test` builds) runs against the bundled control plane as written: it
/// syncs the ConfigMaps of the cluster and queries its index.
#[tokio::test]
async fn the_readme_first_program_runs_against_the_control_plane() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "first-program").await;
    let api: kube_client::Api<k8s_openapi::api::core::v1::ConfigMap> =
        kube_client::Api::namespaced(admin, &ns);
    let web: k8s_openapi::api::core::v1::ConfigMap = serde_json::from_value(json!({
        "metadata": { "name": "web", "labels": { "app": "web" } }
    }))
    .unwrap();
    api.create(&Default::default(), &web).await.unwrap();
    // Examples are built beside the test binaries: target/<profile>/examples.
    let program = std::env::current_exe()
        .unwrap()
        .parent()
        .and_then(|deps| deps.parent())
        .map(|profile| profile.join("examples").join("first_program"))
        .unwrap();
    if !program.exists() {
        // Built by `cargo test` with no target named; with `--test it`, here.
        let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
        let built = Command::new(cargo)
            .args(["build", "--example", "first_program", "--features", "cli"])
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .status()
            .await
            .expect("running cargo");
        assert!(built.success(), "building examples/first_program.rs");
    }
    let run = Command::new(&program)
        .env("KUBECONFIG", kubeconfig(User::Admin))
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let out = tokio::time::timeout(DEADLINE, run)
        .await
        .expect("the first program ends")
        .expect("running the first program");
    let printed = String::from_utf8_lossy(&out.stdout);
    assert!(
        out.status.success(),
        "{}\n{}",
        printed,
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(printed.lines().any(|l| l == "Add web"), "{printed}");
    assert!(
        printed.lines().any(|l| l.ends_with(" ConfigMaps cached")),
        "{printed}"
    );
    let labelled = printed
        .lines()
        .find_map(|l| l.strip_suffix(" labelled app=web"))
        .and_then(|n| n.parse::<usize>().ok())
        .unwrap_or_else(|| panic!("no 'N labelled app=web' line: {printed}"));
    assert!(labelled >= 1, "{printed}");
}
