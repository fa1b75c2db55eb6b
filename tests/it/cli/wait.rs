//! `kdi wait` against kubectl's `wait` (of the control plane's release,
//! `testenv kubectl`) on the same objects: the same forms hold or time
//! out alike, with kdi's exit codes and lines; deletions and a CRD
//! installed while waiting.

use std::collections::BTreeSet;
use std::path::Path;
use std::process::{Output, Stdio};
use std::time::Duration;

use kube_client::api::{Api, DeleteParams, DynamicObject, Patch, PatchParams};
use serde_json::{Value, json};
use tokio::process::Command;

use super::{Running, assert_exit, documented_exit, kdi, kubeconfig, stderr, stdout};
use crate::support::{self, User, controlplane};

/// How long one kubectl run may take.
const KUBECTL_DEADLINE: Duration = Duration::from_secs(90);

fn kubectl_command(dir: &Path, args: &[&str]) -> Command {
    let mut command = Command::new(controlplane::binary());
    command
        .arg("kubectl")
        .arg("--kubeconfig")
        .arg(kubeconfig(User::Admin))
        .arg("--cache-dir")
        .arg(dir.join("kubectl-cache"))
        .args(args)
        .env_remove("KUBECONFIG")
        .stdin(Stdio::null())
        .kill_on_drop(true);
    command
}

/// Runs kubectl (of the control plane's release) as the admin, to its end.
async fn kubectl(dir: &Path, args: &[&str]) -> Output {
    let run = kubectl_command(dir, args).output();
    match tokio::time::timeout(KUBECTL_DEADLINE, run).await {
        Ok(out) => out.expect("running testenv kubectl"),
        Err(_) => panic!("kubectl {args:?} did not end within {KUBECTL_DEADLINE:?}"),
    }
}

/// The JSON lines of kdi's stdout.
fn lines(out: &Output) -> Vec<Value> {
    stdout(out)
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{l:?}: {e}")))
        .collect()
}

/// `(name, state)` of each line.
fn states(out: &Output) -> BTreeSet<(String, String)> {
    lines(out)
        .iter()
        .map(|l| {
            (
                l["name"].as_str().unwrap_or_default().to_owned(),
                l["state"].as_str().unwrap_or_default().to_owned(),
            )
        })
        .collect()
}

/// The names kubectl says the condition was met for
/// (`widget.GROUP/NAME condition met`).
fn kubectl_met(out: &Output) -> BTreeSet<String> {
    stdout(out)
        .lines()
        .filter_map(|l| l.strip_suffix(" condition met"))
        .map(|l| l.rsplit('/').next().unwrap_or_default().to_owned())
        .collect()
}

fn names(list: &[&str]) -> BTreeSet<String> {
    list.iter().map(|s| (*s).to_owned()).collect()
}

/// Widgets `a` (Ready, Running), `b` (not Ready, Pending) and `c` (no
/// status) in a fresh namespace, labelled `tier`; returns (namespace,
/// full resource name, the widgets' API).
async fn fixture(prefix: &str) -> (String, String, Api<DynamicObject>) {
    let client = support::admin().await;
    let ns = support::namespace(&client, prefix).await;
    let group = support::unique_group();
    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let api = Api::<DynamicObject>::namespaced_with(client, &ns, &ar);
    let mut objects = Vec::new();
    for (name, tier) in [("a", "front"), ("b", "front"), ("c", "back")] {
        let mut w = support::widget(&ar, name, json!({ "replicas": 2 }));
        w.metadata.labels = Some([("tier".to_string(), tier.to_string())].into());
        objects.push(w);
    }
    support::create_many(&api, objects, 3).await;
    for (name, ready, phase) in [("a", "True", "Running"), ("b", "False", "Pending")] {
        let status = json!({ "status": {
            "phase": phase,
            "readyReplicas": if ready == "True" { 2 } else { 1 },
            "conditions": [{ "type": "Ready", "status": ready }]
        }});
        api.patch_status(name, &PatchParams::default(), &Patch::Merge(status))
            .await
            .unwrap();
    }
    (ns, format!("widgets.v1.{group}"), api)
}

#[tokio::test]
async fn kubectls_forms_hold_or_time_out_as_kubectl_says() {
    let (ns, full, _api) = fixture("cli-wait-forms").await;
    let group = full.strip_prefix("widgets.v1.").unwrap();
    let kubectl_type = format!("widgets.{group}");
    let dir = support::scratch_dir("cli-wait-forms");
    std::fs::create_dir_all(&dir).unwrap();
    // (--for, objects, met by kubectl and kdi); the rest time out.
    let cases: &[(&str, &[&str], &[&str])] = &[
        ("condition=Ready", &["a"], &["a"]),
        ("condition=ready=TRUE", &["a"], &["a"]),
        ("condition=Ready=False", &["b"], &["b"]),
        ("condition=Ready", &["a", "b"], &["a"]),
        ("jsonpath={.status.phase}=Running", &["a"], &["a"]),
        ("jsonpath={.status.phase}=Running", &["b"], &[]),
        ("jsonpath={.status.readyReplicas}=2", &["a"], &["a"]),
        (
            r#"jsonpath={.status.conditions[?(@.type=="Ready")].status}=True"#,
            &["a"],
            &["a"],
        ),
        ("jsonpath={.status.phase}", &["a", "b"], &["a", "b"]),
        ("jsonpath={.status.phase}", &["c"], &[]),
        ("create", &["a", "c"], &["a", "c"]),
    ];
    for (form, objects, met) in cases {
        let for_arg = format!("--for={form}");
        let mut kubectl_args = vec!["-n", &ns, "wait", &for_arg, "--timeout=2s"];
        let targets: Vec<String> = objects
            .iter()
            .map(|o| format!("{kubectl_type}/{o}"))
            .collect();
        kubectl_args.extend(targets.iter().map(String::as_str));
        let by_kubectl = kubectl(&dir, &kubectl_args).await;

        let mut kdi_args = vec!["wait", "-r", &full, "-n", &ns, &for_arg, "--timeout", "2s"];
        kdi_args.extend(objects.iter().copied());
        let by_kdi = kdi(User::Admin, &kdi_args).await;

        let all_met = met.len() == objects.len();
        assert_eq!(
            by_kubectl.status.success(),
            all_met,
            "kubectl {kubectl_args:?}: {}{}",
            stdout(&by_kubectl),
            stderr(&by_kubectl)
        );
        if all_met {
            assert_exit(&by_kdi, documented_exit("Success"));
            assert_eq!(kubectl_met(&by_kubectl), names(met), "{form}");
            let printed: BTreeSet<String> =
                states(&by_kdi).into_iter().map(|(name, _)| name).collect();
            assert_eq!(printed, names(met), "{form}: {}", stdout(&by_kdi));
            assert!(lines(&by_kdi).iter().all(|l| l["holds"] == true));
        } else {
            assert_eq!(by_kubectl.status.code(), Some(1), "{form}");
            assert!(
                stderr(&by_kubectl).contains("timed out waiting for the condition"),
                "{}",
                stderr(&by_kubectl)
            );
            assert_exit(&by_kdi, documented_exit("timed out"));
            // Exactly the objects that did not hold, each with why.
            let not_met: BTreeSet<String> = objects
                .iter()
                .filter(|o| !met.contains(o))
                .map(|o| (*o).to_owned())
                .collect();
            let printed: BTreeSet<String> =
                states(&by_kdi).into_iter().map(|(name, _)| name).collect();
            assert_eq!(printed, not_met, "{form}: {}", stdout(&by_kdi));
            assert!(
                stderr(&by_kdi).contains("kdi: timed out after"),
                "{}",
                stderr(&by_kdi)
            );
        }
    }
}

#[tokio::test]
async fn a_timeout_prints_each_object_not_done_with_why() {
    let (ns, full, _api) = fixture("cli-wait-timeout").await;
    let out = kdi(
        User::Admin,
        &[
            "wait",
            "-r",
            &full,
            "-n",
            &ns,
            "--for",
            "status.readyReplicas == spec.replicas",
            // Checked once, as kubectl checks with `--timeout=0`.
            "--timeout",
            "0",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("timed out"));
    assert_eq!(
        states(&out),
        [("b".into(), "notMet".into()), ("c".into(), "notMet".into())]
            .into_iter()
            .collect()
    );
    for line in lines(&out) {
        assert_eq!(line["resource"], full.as_str());
        assert_eq!(line["namespace"], ns.as_str());
        assert_eq!(line["holds"], false);
    }
    let err = stderr(&out);
    assert!(
        err.contains("2 of 3 objects do not hold 'status.readyReplicas == spec.replicas'"),
        "{err}"
    );
    let once = kdi(
        User::Admin,
        &[
            "wait",
            "-r",
            &full,
            "-n",
            &ns,
            "a",
            "--for",
            "status.readyReplicas == spec.replicas",
            "--timeout",
            "0",
        ],
    )
    .await;
    assert_exit(&once, documented_exit("Success"));

    // Not a boolean: said, and not met.
    let out = kdi(
        User::Admin,
        &[
            "wait",
            "-r",
            &full,
            "-n",
            &ns,
            "a",
            "--for",
            "status.phase",
            "--timeout",
            "1s",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("timed out"));
    assert_eq!(
        lines(&out),
        [json!({
            "resource": full, "namespace": ns, "name": "a", "holds": false,
            "state": "notBoolean", "detail": "not a boolean: \"Running\""
        })]
    );
    // Said on stderr as it was found, once.
    let said: Vec<Value> = stderr(&out)
        .lines()
        .filter_map(|l| serde_json::from_str::<Value>(l).ok())
        .filter(|l| l["state"] == "notBoolean")
        .collect();
    assert_eq!(
        said,
        [json!({
            "resource": full, "namespace": ns, "name": "a",
            "state": "notBoolean", "detail": "not a boolean: \"Running\""
        })]
    );

    // --any holds with one, --none does not while one holds.
    let ready = ["--for", "status.readyReplicas == spec.replicas"];
    let base = [
        "wait",
        "-r",
        full.as_str(),
        "-n",
        ns.as_str(),
        "--timeout",
        "1s",
    ];
    let any = kdi(User::Admin, &[&base[..], &ready, &["--any"]].concat()).await;
    assert_exit(&any, documented_exit("Success"));
    assert_eq!(
        states(&any),
        [("a".into(), "met".into())].into_iter().collect()
    );
    let none = kdi(User::Admin, &[&base[..], &ready, &["--none"]].concat()).await;
    assert_exit(&none, documented_exit("timed out"));
    assert_eq!(
        states(&none),
        [("a".into(), "met".into())].into_iter().collect()
    );
    let none = kdi(
        User::Admin,
        &[&base[..], &["--for", "status.phase == 'Failed'", "--none"]].concat(),
    )
    .await;
    assert_exit(&none, documented_exit("Success"));
    // A selector: only the objects it selects.
    let front = kdi(
        User::Admin,
        &[
            &base[..],
            &["-l", "tier=front", "--for", "jsonpath={.status.phase}"],
        ]
        .concat(),
    )
    .await;
    assert_exit(&front, documented_exit("Success"));
    assert_eq!(
        states(&front),
        [("a".into(), "met".into()), ("b".into(), "met".into())]
            .into_iter()
            .collect()
    );
}

#[tokio::test]
async fn mistakes_in_what_is_waited_for_are_refused_before_the_cluster_is_asked() {
    for (args, says) in [
        (
            &["wait", "-r", "pods", "--for", "status.phase =="][..],
            "--for \"status.phase ==\": condition 'status.phase ==' invalid at column 15",
        ),
        (
            &["wait", "-r", "pods", "--for", "jsonpath={..name}"],
            "recursive descent (..) has no JMESPath equivalent",
        ),
        (
            &["wait", "-r", "pods", "--for", "condition="],
            "the condition's type is missing",
        ),
        (
            &["wait", "-r", "pods", "--for", "delete", "default/web"],
            "objects are named by their name alone",
        ),
        (
            &["wait", "-r", "pods,configmaps", "--for", "delete", "web"],
            "objects named on the command line are of one resource",
        ),
        (
            &["wait", "-r", "pods", "--for", "create", "--index", "x"],
            "expected NAME=VALUE",
        ),
    ] {
        let (kubeconfig, _) = support::unreachable_kubeconfig("cli-wait-usage");
        let out = super::kdi_with(kubeconfig, args).await;
        assert_exit(&out, documented_exit("Invalid arguments"));
        assert!(stderr(&out).contains(says), "{args:?}: {}", stderr(&out));
    }
}

#[tokio::test]
async fn delete_and_create_while_waiting_end_kdis_wait_as_kubectls() {
    let (ns, full, api) = fixture("cli-wait-delete").await;
    let group = full.strip_prefix("widgets.v1.").unwrap();
    let dir = support::scratch_dir("cli-wait-delete");
    std::fs::create_dir_all(&dir).unwrap();
    let a = format!("widgets.{group}/a");
    let b = format!("widgets.{group}/b");
    let mut kubectl_deleted = kubectl_command(
        &dir,
        &["-n", &ns, "wait", "--for=delete", &a, &b, "--timeout=60s"],
    )
    .stdout(Stdio::piped())
    .stderr(Stdio::piped())
    .spawn()
    .unwrap();
    let mut deleted = Running::start(
        User::Admin,
        &[
            "wait",
            "-r",
            &full,
            "-n",
            &ns,
            "a",
            "b",
            "--for=delete",
            "--timeout",
            "60s",
            "--progress-interval",
            "1s",
        ],
        &[],
    );
    // Progress while it waits: how many of how many are gone.
    deleted
        .stderr_until("a progress line", Duration::from_secs(30), |line| {
            serde_json::from_str::<Value>(line)
                .is_ok_and(|l| l["waiting"] == "delete" && l["objects"] == 2 && l["holding"] == 0)
        })
        .await;
    for name in ["a", "b"] {
        api.delete(name, &DeleteParams::default()).await.unwrap();
    }
    let (code, out, err) = deleted.end().await;
    assert_eq!(code, Some(documented_exit("Success")), "{out}\n{err}");
    let printed: BTreeSet<(String, String)> = out
        .lines()
        .map(|l| {
            let l: Value = serde_json::from_str(l).unwrap();
            (
                l["name"].as_str().unwrap().to_owned(),
                l["state"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        printed,
        [
            ("a".into(), "missing".into()),
            ("b".into(), "missing".into())
        ]
        .into_iter()
        .collect()
    );
    let by_kubectl = tokio::time::timeout(KUBECTL_DEADLINE, kubectl_deleted.wait())
        .await
        .expect("kubectl ends")
        .unwrap();
    assert!(
        by_kubectl.success(),
        "kubectl wait --for=delete: {by_kubectl}"
    );

    // Waiting for the deletion of what is not there holds at once, as
    // kubectl's; so does --for delete over a selection with nothing left.
    let out = kdi(
        User::Admin,
        &[
            "wait",
            "-r",
            &full,
            "-n",
            &ns,
            "a",
            "--for",
            "delete",
            "--timeout",
            "5s",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    let out = kdi(
        User::Admin,
        &[
            "wait",
            "-r",
            &full,
            "-n",
            &ns,
            "-l",
            "tier=front",
            "--for",
            "delete",
            "--timeout",
            "5s",
        ],
    )
    .await;
    assert_exit(&out, documented_exit("Success"));
    assert_eq!(stdout(&out), "");
}

#[tokio::test]
async fn a_wait_on_a_crd_installed_while_waiting_holds_once_it_is() {
    let client = support::admin().await;
    let ns = support::namespace(&client, "cli-wait-crd").await;
    let group = support::unique_group();
    let resource = format!("widgets.{group}");
    let mut waiting = Running::start(
        User::Admin,
        &[
            "wait",
            "-r",
            &resource,
            "-n",
            &ns,
            "w1",
            "--for",
            "status.ready",
            "--timeout",
            "90s",
        ],
        &[],
    );
    waiting
        .stderr_until(
            "the resource said not served",
            Duration::from_secs(30),
            |line| serde_json::from_str::<Value>(line).is_ok_and(|l| l["status"] == "notServed"),
        )
        .await;
    let ar = support::install_crd(&client, &support::widget_crd(&group)).await;
    let api = Api::<DynamicObject>::namespaced_with(client, &ns, &ar);
    support::create_many(&api, vec![support::widget(&ar, "w1", json!({}))], 1).await;
    api.patch_status(
        "w1",
        &PatchParams::default(),
        &Patch::Merge(json!({ "status": { "ready": true } })),
    )
    .await
    .unwrap();
    let (code, out, err) = waiting.end().await;
    assert_eq!(code, Some(documented_exit("Success")), "{out}\n{err}");
    let line: Value = serde_json::from_str(out.trim()).unwrap();
    assert_eq!(line["name"], "w1");
    assert_eq!(line["state"], "met");
    assert_eq!(line["resource"], format!("widgets.v1.{group}"));
}

/// kdi's stdout on a pseudo-terminal (util-linux's `script`), stderr left
/// out; `None` where `script` is not installed.
async fn stdout_on_terminal(args: &[&str]) -> Option<(Option<i32>, String)> {
    let quoted: Vec<String> = args.iter().map(|a| format!("'{a}'")).collect();
    let line = format!(
        "{} --kubeconfig '{}' {} 2>/dev/null",
        env!("CARGO_BIN_EXE_kdi"),
        kubeconfig(User::Admin).display(),
        quoted.join(" "),
    );
    let run = Command::new("script")
        .args(["--quiet", "--return", "--command", &line, "/dev/null"])
        .env("TERM", "dumb")
        .env("SHELL", "/bin/sh")
        .env_remove("KUBECONFIG")
        .env_remove("RUST_LOG")
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output();
    let ran = match tokio::time::timeout(KUBECTL_DEADLINE, run).await {
        Ok(Ok(ran)) => ran,
        Ok(Err(e)) if e.kind() == std::io::ErrorKind::NotFound => return None,
        Ok(Err(e)) => panic!("running script: {e}"),
        Err(_) => panic!("kdi {args:?} on a terminal did not end"),
    };
    let text = String::from_utf8_lossy(&ran.stdout).replace("\r\n", "\n");
    Some((ran.status.code(), text))
}

#[tokio::test]
async fn on_a_terminal_kdi_prints_kubectls_lines() {
    let (ns, full, _api) = fixture("cli-wait-terminal").await;
    let group = full.strip_prefix("widgets.v1.").unwrap();
    let dir = support::scratch_dir("cli-wait-terminal");
    std::fs::create_dir_all(&dir).unwrap();
    let (a, b) = (format!("widgets.{group}/a"), format!("widgets.{group}/b"));
    let by_kubectl = kubectl(
        &dir,
        &["-n", &ns, "wait", "--for=jsonpath={.status.phase}", &a, &b],
    )
    .await;
    assert!(by_kubectl.status.success(), "{}", stderr(&by_kubectl));
    let Some((code, by_kdi)) = stdout_on_terminal(&[
        "wait",
        "-r",
        &full,
        "-n",
        &ns,
        "a",
        "b",
        "--for=jsonpath={.status.phase}",
    ])
    .await
    else {
        eprintln!("skipped: no `script` (util-linux) to give kdi a terminal");
        return;
    };
    assert_eq!(code, Some(documented_exit("Success")));
    assert_eq!(by_kdi, stdout(&by_kubectl));
    assert_eq!(
        by_kdi,
        format!("widget.{group}/a condition met\nwidget.{group}/b condition met\n")
    );
}
