//! `kdi serve` read by the clients of the control plane's own release, built
//! into testenv from the same modules: kubectl (`testenv kubectl`) and
//! client-go's dynamic shared informer (`testenv informers`), each checked
//! against the same client reading the API server.

use std::path::{Path, PathBuf};
use std::process::{Output, Stdio};
use std::time::Duration;

use k8s_openapi::api::core::v1::PodTemplate;
use kube_client::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, AsyncWriteExt, BufReader, Lines};
use tokio::process::{Child, ChildStdin, ChildStdout, Command};

use super::{Running, kubeconfig, stderr, stdout, widgets};
use crate::support::proxy::Proxy;
use crate::support::{self, User, controlplane};

/// How long one kubectl run may take.
const KUBECTL_DEADLINE: Duration = Duration::from_secs(60);

/// Runs kubectl (of the control plane's release) with this kubeconfig and
/// a discovery cache of its own under `dir`.
async fn kubectl(kubeconfig: &Path, dir: &Path, args: &[&str]) -> Output {
    let run = kubectl_command(kubeconfig, dir, args).output();
    match tokio::time::timeout(KUBECTL_DEADLINE, run).await {
        Ok(out) => out.expect("running testenv kubectl"),
        Err(_) => panic!("kubectl {args:?} did not end within {KUBECTL_DEADLINE:?}"),
    }
}

fn kubectl_command(kubeconfig: &Path, dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(controlplane::binary());
    command
        .arg("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig)
        .arg("--cache-dir")
        .arg(dir.join("kubectl-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// kubectl's stdout, failing the test when it did not succeed.
fn succeeded(what: &str, out: &Output) -> String {
    assert!(
        out.status.success(),
        "kubectl {what}: {}\nstdout:\n{}\nstderr:\n{}",
        out.status,
        stdout(out),
        stderr(out)
    );
    stdout(out)
}

/// `kdi serve` started with `args`, until its caches are synced; returns
/// the process and the kubeconfig it wrote.
async fn serve(kubeconfig_of_kdi: &Path, dir: &Path, args: &[&str]) -> (Running, PathBuf) {
    let out = dir.join("kdi.kubeconfig");
    let out_arg = out.display().to_string();
    let mut full = vec!["serve", "--kubeconfig-out", &out_arg];
    full.extend_from_slice(args);
    let mut running = Running::start_with(kubeconfig_of_kdi, &full, &[]);
    running
        .stderr_until("every cache synced", Duration::from_secs(60), |line| {
            line.contains("every cache synced")
        })
        .await;
    (running, out)
}

/// Sends SIGTERM and expects kdi to exit 0.
async fn terminate(running: Running) -> String {
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &running.child.id().unwrap().to_string()])
        .status()
        .expect("running kill");
    assert!(sent.success());
    let (code, _, err) = running.end().await;
    assert_eq!(code, Some(0), "{err}");
    err
}

#[tokio::test]
async fn kubectl_reads_kdi_serve_as_it_reads_the_api_server() {
    let (ns, resource) = widgets("serve-kubectl").await;
    let group = resource.trim_start_matches("widgets.v1.").to_string();
    let plural_group = format!("widgets.{group}");
    let dir = support::scratch_dir("serve-kubectl");
    std::fs::create_dir_all(&dir).unwrap();
    let admin = kubeconfig(User::Admin);
    let (running, served) = serve(&admin, &dir, &["-r", &plural_group, "-n", &ns]).await;

    // The same answers, by the names kubectl knows: the plural, the kind,
    // the short name; the API server needs the group to tell this CRD from
    // the other tests' widgets, kdi serves only this one.
    let direct = |args: Vec<String>| {
        let admin = admin.clone();
        let dir = dir.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(&admin, &dir.join("direct"), &args).await
        }
    };
    let through = |args: Vec<String>| {
        let served = served.clone();
        let dir = dir.clone();
        async move {
            let args: Vec<&str> = args.iter().map(String::as_str).collect();
            kubectl(&served, &dir.join("served"), &args).await
        }
    };
    let argv = |parts: &[&str]| parts.iter().map(|s| s.to_string()).collect::<Vec<_>>();

    for name in ["widgets", "widget", "wdg", plural_group.as_str()] {
        let out = through(argv(&["get", name, "-n", &ns, "-o", "name"])).await;
        assert_eq!(
            succeeded(&format!("get {name}"), &out),
            format!("widget.{group}/a\nwidget.{group}/b\nwidget.{group}/c\n"),
            "kubectl get {name}"
        );
    }
    let out = through(argv(&[
        "get", "wdg", "-n", &ns, "-l", "tier=red", "-o", "name",
    ]))
    .await;
    assert_eq!(
        succeeded("get -l", &out),
        format!("widget.{group}/a\nwidget.{group}/c\n")
    );
    let out = through(argv(&[
        "get",
        "wdg",
        "-n",
        &ns,
        "--field-selector",
        "metadata.name=b",
        "-o",
        "name",
    ]))
    .await;
    assert_eq!(
        succeeded("get --field-selector", &out),
        format!("widget.{group}/b\n")
    );
    // Malformed input is kubectl's error to print, from the server's Status.
    let out = through(argv(&["get", "wdg", "-n", &ns, "-l", "tier in (red"])).await;
    assert!(!out.status.success());
    assert!(
        stderr(&out).contains("unable to parse requirement")
            || stderr(&out).contains("labelSelector"),
        "{}",
        stderr(&out)
    );

    // One object as YAML and a list as JSON: byte for byte what the API
    // server gives.
    for format in ["yaml", "json"] {
        let from_kdi = succeeded(
            "get -o",
            &through(argv(&["get", "wdg", "a", "-n", &ns, "-o", format])).await,
        );
        let from_server = succeeded(
            "get -o (API server)",
            &direct(argv(&["get", &plural_group, "a", "-n", &ns, "-o", format])).await,
        );
        assert_eq!(from_kdi, from_server, "-o {format}");
    }
    let list = |out: &Output| -> Value {
        let mut list: Value = serde_json::from_str(&stdout(out)).unwrap();
        // The list's own resourceVersion is each server's; the items are
        // the same.
        list["metadata"] = json!({});
        list
    };
    let from_kdi = through(argv(&["get", "wdg", "-n", &ns, "-o", "json"])).await;
    let from_server = direct(argv(&["get", &plural_group, "-n", &ns, "-o", "json"])).await;
    succeeded("list -o json", &from_kdi);
    assert_eq!(list(&from_kdi), list(&from_server));
    // The table's header is the API server's.
    let header = |out: &Output| stdout(out).lines().next().unwrap_or_default().to_string();
    let from_kdi = through(argv(&["get", "wdg", "-n", &ns])).await;
    let from_server = direct(argv(&["get", &plural_group, "-n", &ns])).await;
    succeeded("get (table)", &from_kdi);
    assert_eq!(header(&from_kdi), header(&from_server));
    assert_eq!(
        stdout(&from_kdi).lines().count(),
        4,
        "{}",
        stdout(&from_kdi)
    );

    // Writes are refused, and change nothing.
    for write in [
        argv(&["delete", "wdg", "a", "-n", &ns]),
        argv(&["label", "wdg", "a", "-n", &ns, "x=y"]),
        argv(&["annotate", "wdg", "b", "-n", &ns, "x=y"]),
    ] {
        let out = through(write.clone()).await;
        assert!(!out.status.success(), "kubectl {write:?} succeeded");
        assert!(
            stderr(&out).contains("MethodNotAllowed") || stderr(&out).contains("read-only"),
            "kubectl {write:?}: {}",
            stderr(&out)
        );
    }
    let out = direct(argv(&["get", &plural_group, "-n", &ns, "-o", "name"])).await;
    assert_eq!(succeeded("get (API server)", &out).lines().count(), 3);

    // `--watch` through writes at the API server.
    let mut watch = kubectl_command(
        &served,
        &dir.join("served"),
        &[
            "get",
            "wdg",
            "-n",
            &ns,
            "--watch",
            "--output-watch-events",
            "-o",
            "jsonpath={.type} {.object.metadata.name} {.object.spec.color}{\"\\n\"}",
        ],
    );
    let mut watch = watch
        .stdout(Stdio::piped())
        .spawn()
        .expect("kubectl --watch");
    let mut lines = BufReader::new(watch.stdout.take().unwrap()).lines();
    let mut seen = Vec::new();
    read_until(&mut lines, &mut seen, "ADDED c red").await;
    let ar = kube_core::ApiResource::from_gvk_with_plural(
        &kube_core::GroupVersionKind::gvk(&group, "v1", "Widget"),
        "widgets",
    );
    let api = Api::<DynamicObject>::namespaced_with(support::admin().await, &ns, &ar);
    api.patch(
        "b",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "color": "green" } })),
    )
    .await
    .unwrap();
    read_until(&mut lines, &mut seen, "MODIFIED b green").await;
    api.delete("c", &DeleteParams::default()).await.unwrap();
    read_until(&mut lines, &mut seen, "DELETED c red").await;
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "d", json!({ "color": "white" })),
    )
    .await
    .unwrap();
    read_until(&mut lines, &mut seen, "ADDED d white").await;
    drop(lines);
    let _ = watch.kill().await;

    terminate(running).await;
}

/// Reads kubectl's lines until `want`; fails the test after 30 s or at
/// the end of its output.
async fn read_until(lines: &mut Lines<BufReader<ChildStdout>>, seen: &mut Vec<String>, want: &str) {
    let read = async {
        while let Some(line) = lines.next_line().await.expect("reading kubectl") {
            seen.push(line.clone());
            if line == want {
                return true;
            }
        }
        false
    };
    match tokio::time::timeout(Duration::from_secs(30), read).await {
        Ok(true) => {}
        Ok(false) => panic!("kubectl --watch ended before {want:?}: {seen:?}"),
        Err(_) => panic!("no {want:?} from kubectl --watch: {seen:?}"),
    }
}

/// The oracle: `testenv informers`, client-go's dynamic shared informers
/// of the same release, one per server, asked through its stdin.
struct Informers {
    child: Child,
    stdin: ChildStdin,
    stdout: Lines<BufReader<ChildStdout>>,
}

impl Informers {
    fn start(resource: &str, ns: &str, kubeconfigs: &[(&str, &Path)]) -> Informers {
        let mut command = Command::new(controlplane::binary());
        command
            .args(["informers", "-resource", resource, "-namespace", ns])
            .stdin(Stdio::piped())
            .stdout(Stdio::piped())
            .stderr(Stdio::inherit())
            .kill_on_drop(true);
        for (name, path) in kubeconfigs {
            command
                .arg("-kubeconfig")
                .arg(format!("{name}={}", path.display()));
        }
        let mut child = command.spawn().expect("starting testenv informers");
        let stdin = child.stdin.take().unwrap();
        let stdout = BufReader::new(child.stdout.take().unwrap()).lines();
        Informers {
            child,
            stdin,
            stdout,
        }
    }

    async fn ask(&mut self, command: &str) -> Value {
        self.stdin
            .write_all(format!("{command}\n").as_bytes())
            .await
            .expect("writing to testenv informers");
        let line = tokio::time::timeout(Duration::from_secs(120), self.stdout.next_line())
            .await
            .unwrap_or_else(|_| panic!("no answer to {command:?}"))
            .expect("reading testenv informers")
            .unwrap_or_else(|| panic!("testenv informers ended before answering {command:?}"));
        serde_json::from_str(&line).unwrap_or_else(|e| panic!("{line:?}: {e}"))
    }

    /// Waits until every informer holds what the API server holds.
    async fn equal(&mut self, when: &str) -> u64 {
        let answer = self.ask("equal 60s").await;
        assert_eq!(answer["ok"], true, "{when}: {answer}");
        answer["objects"].as_u64().unwrap()
    }

    /// How many lists the informer `name` has made.
    async fn lists(&mut self, name: &str) -> u64 {
        let answer = self.ask("stats").await;
        answer["stats"][name]["lists"].as_u64().unwrap()
    }
}

impl Drop for Informers {
    fn drop(&mut self) {
        let _ = self.child.start_kill();
    }
}

/// A copy of `kubeconfig` that reaches the server through `proxy`.
fn via_proxy(kubeconfig: &Path, proxy: &Proxy, dir: &Path) -> PathBuf {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    let server = text
        .lines()
        .find_map(|l| l.trim().strip_prefix("server: "))
        .expect("the kubeconfig names a server")
        .trim_matches('"')
        .to_string();
    let path = dir.join("via-proxy.kubeconfig");
    std::fs::write(&path, text.replace(&server, &proxy.url())).unwrap();
    path
}

#[tokio::test]
async fn client_go_informers_through_kdi_serve_stay_equal_to_the_api_servers_through_a_410() {
    if !support::is_testenv() {
        eprintln!("skipped: needs testenv's short compaction and uncached podtemplates");
        return;
    }
    let client = support::admin().await;
    let ns = support::namespace(&client, "serve-client-go").await;
    let api = Api::<PodTemplate>::namespaced(client.clone(), &ns);
    for name in ["keep", "change", "vanish"] {
        api.create(&PostParams::default(), &support::pod_template(name))
            .await
            .unwrap();
    }
    let dir = support::scratch_dir("serve-client-go");
    std::fs::create_dir_all(&dir).unwrap();
    let config = support::config(User::Admin).await;
    let proxy = Proxy::start(crate::reliability::server_addr(&config)).await;
    let kdi_kubeconfig = via_proxy(&kubeconfig(User::Admin), &proxy, &dir);
    let (running, served) = serve(&kdi_kubeconfig, &dir, &["-r", "podtemplates", "-n", &ns]).await;

    let admin = kubeconfig(User::Admin);
    let mut informers = Informers::start(
        "/v1/podtemplates",
        &ns,
        &[("direct", admin.as_path()), ("served", served.as_path())],
    );
    assert_eq!(informers.equal("after the first list").await, 3);
    // client-go lists with a streaming list from 1.35 on (the client
    // feature WatchListClient), as the control plane's release is.
    let streams = support::server_version().await
        >= (support::ServerVersion {
            major: 1,
            minor: 35,
        });
    let stats = informers.ask("stats").await;
    assert_eq!(
        stats["stats"]["served"]["streamingLists"].as_u64() >= Some(1),
        streams,
        "client-go synced from kdi with a streaming list: {stats}"
    );

    // Writes.
    api.patch(
        "change",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "changed": "once" } } })),
    )
    .await
    .unwrap();
    api.create(&PostParams::default(), &support::pod_template("new"))
        .await
        .unwrap();
    api.delete("vanish", &DeleteParams::default())
        .await
        .unwrap();
    assert_eq!(informers.equal("through writes").await, 3);
    let lists_before = informers.lists("served").await;

    // A 410 at the API server: kdi is cut off while its last
    // resourceVersion is compacted away, so it lists again; its own
    // history starts over, and the informer reading it lists again too.
    let last_seen = api
        .list(&Default::default())
        .await
        .unwrap()
        .metadata
        .resource_version
        .unwrap();
    proxy.set_refusing(true);
    proxy.cut();
    api.patch(
        "change",
        &PatchParams::default(),
        &Patch::Merge(json!({ "metadata": { "labels": { "changed": "twice" } } })),
    )
    .await
    .unwrap();
    api.delete("keep", &DeleteParams::default()).await.unwrap();
    api.create(&PostParams::default(), &support::pod_template("unseen"))
        .await
        .unwrap();
    support::wait_until_compacted(&api, &last_seen).await;
    proxy.set_refusing(false);
    // The pacer of the compaction wait is one more template.
    assert_eq!(informers.equal("after the 410").await, 4);
    let lists_after = informers.lists("served").await;
    assert!(
        lists_after > lists_before,
        "the informer reading kdi listed again ({lists_before} lists before, {lists_after} after)"
    );

    terminate(running).await;
}

/// A free port of 127.0.0.1, for a kdi that restarts on the same address.
fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port()
}

#[tokio::test]
async fn client_go_informers_through_kdi_serve_stay_equal_through_a_warm_restart_of_kdi() {
    let (ns, resource) = widgets("serve-client-go-warm").await;
    let group = resource.trim_start_matches("widgets.v1.").to_string();
    let plural_group = format!("widgets.{group}");
    let dir = support::scratch_dir("serve-client-go-warm");
    std::fs::create_dir_all(&dir).unwrap();
    let listen = format!("127.0.0.1:{}", free_port());
    let snapshots = dir.join("snapshots").display().to_string();
    let credentials = dir.join("credentials").display().to_string();
    let args = [
        "-r",
        &plural_group,
        "-n",
        &ns,
        "--listen",
        &listen,
        // The CA and token of the first start, kept for the second: the
        // kubeconfig written once stays good.
        "--credentials-dir",
        &credentials,
        "--snapshot-dir",
        &snapshots,
    ];
    let admin = kubeconfig(User::Admin);
    let (running, served) = serve(&admin, &dir, &args).await;
    let mut informers = Informers::start(
        &format!("{group}/v1/widgets"),
        &ns,
        &[("direct", admin.as_path()), ("served", served.as_path())],
    );
    assert_eq!(informers.equal("after the first list").await, 3);

    // kdi stops (writing its snapshot), the API server changes meanwhile,
    // kdi starts again on the same address from the snapshot: client-go's
    // informer reconnects by itself and stays equal.
    terminate(running).await;
    let ar = kube_core::ApiResource::from_gvk_with_plural(
        &kube_core::GroupVersionKind::gvk(&group, "v1", "Widget"),
        "widgets",
    );
    let api = Api::<DynamicObject>::namespaced_with(support::admin().await, &ns, &ar);
    api.patch(
        "a",
        &PatchParams::default(),
        &Patch::Merge(json!({ "spec": { "color": "while-kdi-was-down" } })),
    )
    .await
    .unwrap();
    api.delete("b", &DeleteParams::default()).await.unwrap();
    let first_kubeconfig = std::fs::read_to_string(&served).unwrap();
    let (running, _) = serve(&admin, &dir, &args).await;
    assert_eq!(
        std::fs::read_to_string(&served).unwrap(),
        first_kubeconfig,
        "the second start writes the kubeconfig of the first"
    );
    #[cfg(unix)]
    for file in ["ca.key", "token"] {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(dir.join("credentials").join(file))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o777, 0o600, "{file}");
    }
    assert!(
        running
            .stderr_seen
            .iter()
            .any(|l| l.contains("resumed from a snapshot")),
        "kdi started from its snapshot:\n{}",
        running.stderr_seen.join("\n")
    );
    api.create(
        &PostParams::default(),
        &support::widget(&ar, "after-restart", json!({ "color": "new" })),
    )
    .await
    .unwrap();
    assert_eq!(informers.equal("after a warm restart of kdi").await, 3);
    terminate(running).await;
}
