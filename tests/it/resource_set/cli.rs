//! `kdi watch -f FILE` reloading its config while it runs, checked through
//! its output, its status file and the server's request counts.

use std::path::{Path, PathBuf};
use std::process::Stdio;
use std::time::Duration;

use kube_client::Client;
use kube_client::api::{Api, DynamicObject, Patch, PatchParams, PostParams};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt, BufReader};
use tokio::process::{Child, Command};
use tokio::sync::mpsc::{UnboundedReceiver, unbounded_channel};

use super::patterns::crd;
use crate::support::{self, User, wait_for};

/// Kubeconfig of `user` for the process (external clusters: the admin's).
pub fn kubeconfig(user: User) -> PathBuf {
    match support::env() {
        support::Env::Testenv { ready, .. } => ready.kubeconfig(user.name()).to_path_buf(),
        support::Env::External { kubeconfig } => kubeconfig.clone(),
    }
}

/// A kdi process whose stdout and stderr lines arrive on channels.
pub struct Kdi {
    child: Child,
    pub stdout: UnboundedReceiver<String>,
    pub stderr: UnboundedReceiver<String>,
    /// Every line read so far, for failure messages.
    seen: Vec<String>,
}

impl Kdi {
    pub fn start(user: User, args: &[&str]) -> Kdi {
        let mut child = Command::new(env!("CARGO_BIN_EXE_kdi"))
            .arg("--kubeconfig")
            .arg(kubeconfig(user))
            .args(args)
            .env_remove("KUBECONFIG")
            .env_remove("RUST_LOG")
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .kill_on_drop(true)
            .spawn()
            .expect("starting kdi");
        let forward = |pipe: Box<dyn tokio::io::AsyncRead + Unpin + Send>| {
            let (tx, rx) = unbounded_channel();
            tokio::spawn(async move {
                let mut lines = BufReader::new(pipe).lines();
                while let Ok(Some(line)) = lines.next_line().await {
                    if tx.send(line).is_err() {
                        return;
                    }
                }
            });
            rx
        };
        let stdout = forward(Box::new(child.stdout.take().unwrap()));
        let stderr = forward(Box::new(child.stderr.take().unwrap()));
        Kdi {
            child,
            stdout,
            stderr,
            seen: Vec::new(),
        }
    }

    /// The first stderr JSON line `wanted` accepts, within a minute.
    pub async fn stderr_json(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        Self::until(&mut self.stderr, &mut self.seen, what, |l| {
            serde_json::from_str::<Value>(l).ok().filter(|v| wanted(v))
        })
        .await
    }

    /// The first stdout event line `wanted` accepts, within a minute.
    pub async fn event(&mut self, what: &str, wanted: impl Fn(&Value) -> bool) -> Value {
        Self::until(&mut self.stdout, &mut self.seen, what, |l| {
            serde_json::from_str::<Value>(l).ok().filter(|v| wanted(v))
        })
        .await
    }

    async fn until<T>(
        rx: &mut UnboundedReceiver<String>,
        seen: &mut Vec<String>,
        what: &str,
        accept: impl Fn(&str) -> Option<T>,
    ) -> T {
        let deadline = tokio::time::Instant::now() + Duration::from_secs(60);
        loop {
            match tokio::time::timeout_at(deadline, rx.recv()).await {
                Ok(Some(line)) => {
                    seen.push(line.clone());
                    if let Some(found) = accept(&line) {
                        return found;
                    }
                }
                Ok(None) => panic!("kdi's output ended before {what}:\n{}", seen.join("\n")),
                Err(_) => panic!("no {what} within 60s; kdi said:\n{}", seen.join("\n")),
            }
        }
    }

    pub fn pid(&self) -> u32 {
        self.child.id().expect("kdi is running")
    }

    pub async fn stop(mut self) {
        let _ = self.child.start_kill();
        let _ = tokio::time::timeout(Duration::from_secs(30), self.child.wait()).await;
    }
}

/// Writes `text` to `path` whole (a reader never sees half of it).
pub fn write_atomically(path: &Path, text: &str) {
    let tmp = path.with_extension("tmp-write");
    std::fs::write(&tmp, text).unwrap();
    std::fs::rename(&tmp, path).unwrap();
}

/// What the server counts for `resource` of `group` (its `/metrics`):
/// watches ended, lists answered, and watches open now. A long-running
/// request is counted in `apiserver_request_total` when it ends, so a
/// watch that stays open counts only among the open ones.
#[derive(Debug, PartialEq, Eq)]
struct Requests {
    watches_ended: u64,
    lists: u64,
    watches_open: u64,
}

async fn requests(admin: &Client, group: &str, resource: &str) -> Requests {
    let request = http::Request::get("/metrics").body(Vec::new()).unwrap();
    let text = admin.request_text(request).await.expect("reading /metrics");
    let (g, r) = (
        format!("group=\"{group}\""),
        format!("resource=\"{resource}\""),
    );
    let sum = |metric: &str, verb: &str| {
        let verb = format!("verb=\"{verb}\"");
        text.lines()
            .filter(|l| {
                l.starts_with(metric) && l.contains(&verb) && l.contains(&g) && l.contains(&r)
            })
            .filter_map(|l| l.rsplit(' ').next()?.trim().parse::<f64>().ok())
            .sum::<f64>() as u64
    };
    Requests {
        watches_ended: sum("apiserver_request_total{", "WATCH"),
        lists: sum("apiserver_request_total{", "LIST"),
        watches_open: sum("apiserver_longrunning_requests{", "WATCH"),
    }
}

fn status(path: &Path) -> Value {
    std::fs::read_to_string(path)
        .ok()
        .and_then(|t| serde_json::from_str(&t).ok())
        .unwrap_or(Value::Null)
}

fn members(status: &Value) -> Vec<(String, String)> {
    status["members"]
        .as_array()
        .into_iter()
        .flatten()
        .map(|m| {
            (
                m["informer"].as_str().unwrap_or_default().to_string(),
                m["resource"].as_str().unwrap_or_default().to_string(),
            )
        })
        .collect()
}

const HEADER: &str = "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\n";

/// A running `kdi watch -f FILE`: adding an index, removing an informer,
/// adding one, breaking the file and fixing it are each applied (or
/// refused) while it runs, as its stderr, stdout and status file show; the
/// informer left unchanged throughout keeps its one watch (the server
/// counts no new WATCH request for it).
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reloads_apply_while_watch_runs_and_unchanged_informers_keep_their_watch() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "set-reload").await;
    let group = support::unique_group();
    let widgets_ar = support::install_crd(&admin, &crd(&group, "widgets", "Widget", true)).await;
    let gadgets_ar = support::install_crd(&admin, &crd(&group, "gadgets", "Gadget", true)).await;
    let widgets = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &widgets_ar);
    let gadgets = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &gadgets_ar);
    widgets
        .create(
            &PostParams::default(),
            &support::widget(&widgets_ar, "w1", json!({ "color": "red" })),
        )
        .await
        .unwrap();

    let dir = std::env::temp_dir().join(format!("kdi-reload-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("set.yaml");
    let status_file = dir.join("status.json");
    let widgets_entry = format!(
        "  - name: widgets\n    match: {{ groups: [\"{group}\"], exclude: [gadgets] }}\n    namespaces: [{ns}]\n"
    );
    let config_maps = format!("  - name: cms\n    resource: configmaps\n    namespaces: [{ns}]\n");
    write_atomically(
        &file,
        &format!("{HEADER}informers:\n{config_maps}patterns:\n{widgets_entry}"),
    );

    let metrics_addr = format!(
        "127.0.0.1:{}",
        std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port()
    );
    // The last reload's result as the metrics show it: (successful, errors).
    let reload_metrics = || async {
        let body = support::prometheus::scrape(&metrics_addr)
            .await
            .ok_or("nothing listening")?;
        let (samples, _) = support::prometheus::parse_exposition(&body);
        let get = |name| support::prometheus::value(&samples, name, &[]);
        match (
            get("kdi_config_last_reload_successful"),
            get("kdi_config_last_reload_errors"),
        ) {
            (Some(ok), Some(errors)) => Ok::<_, String>((ok, errors)),
            other => Err(format!("no reload series yet: {other:?}")),
        }
    };
    let mut kdi = Kdi::start(
        User::Admin,
        &[
            "watch",
            "-f",
            file.to_str().unwrap(),
            "--index-values",
            "all",
            "--reload-check",
            "200ms",
            "--status-file",
            status_file.to_str().unwrap(),
            "--metrics-addr",
            &metrics_addr,
        ],
    );
    let w1 = format!("{ns}/w1");
    kdi.event("the initial widget", |v| v["key"] == w1).await;
    wait_for("the status file", Duration::from_secs(30), || async {
        let found = members(&status(&status_file));
        if found.len() == 2 {
            Ok(())
        } else {
            Err(format!("{found:?}"))
        }
    })
    .await;
    assert_eq!(status(&status_file)["lastReload"]["success"], true);
    // The watch follows the list at once, but not before the first event.
    let before = wait_for(
        "the widgets watch open",
        Duration::from_secs(30),
        || async {
            let now = requests(&admin, &group, "widgets").await;
            if now.watches_open == 1 {
                Ok(now)
            } else {
                Err(format!("{now:?}"))
            }
        },
    )
    .await;

    // 1. An index added to the widgets pattern: added in place.
    let widgets_indexed = widgets_entry.clone() + "    indexes: { color: spec.color }\n";
    write_atomically(
        &file,
        &format!("{HEADER}informers:\n{config_maps}patterns:\n{widgets_indexed}"),
    );
    kdi.stderr_json("the widgets informer updated", |v| {
        v["set"] == "updated" && v["informer"] == "widgets"
    })
    .await;
    let reload = kdi
        .stderr_json("the reload adding an index", |v| v["reload"].is_object())
        .await;
    assert_eq!(reload["reload"]["success"], true, "{reload}");
    assert_eq!(reload["reload"]["kept"], 2, "{reload}");
    assert_eq!(reload["reload"]["replaced"], 0, "{reload}");
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "color": "blue" } })),
        )
        .await
        .unwrap();
    let line = kdi
        .event("the update with its new index value", |v| {
            v["key"] == w1 && v["type"] == "Update"
        })
        .await;
    assert_eq!(line["indexValues"]["color"], json!(["blue"]), "{line}");

    // 2. The configmaps informer removed.
    write_atomically(&file, &format!("{HEADER}patterns:\n{widgets_indexed}"));
    kdi.stderr_json("the configmaps informer removed", |v| {
        v["set"] == "removed" && v["informer"] == "cms"
    })
    .await;
    wait_for(
        "the status without cms",
        Duration::from_secs(30),
        || async {
            let found = members(&status(&status_file));
            if found.iter().all(|(i, _)| i != "cms") {
                Ok(())
            } else {
                Err(format!("{found:?}"))
            }
        },
    )
    .await;

    // 3. An informer added: gadgets.
    let gadgets_entry =
        format!("  - name: gadgets\n    resource: gadgets.{group}\n    namespaces: [{ns}]\n");
    let fixed = format!("{HEADER}informers:\n{gadgets_entry}patterns:\n{widgets_indexed}");
    write_atomically(&file, &fixed);
    kdi.stderr_json("the gadgets informer added", |v| {
        v["set"] == "added" && v["informer"] == "gadgets"
    })
    .await;
    gadgets
        .create(
            &PostParams::default(),
            &support::widget(&gadgets_ar, "g1", json!({})),
        )
        .await
        .unwrap();
    let g1 = format!("{ns}/g1");
    kdi.event("the new gadget", |v| v["key"] == g1).await;

    // 4. A broken file: refused whole, each problem located; nothing changes.
    let broken = format!(
        "{HEADER}informers:\n{gadgets_entry}  - resource: configmaps\n    colour: blue\npatterns:\n{widgets_indexed}    labelSelector: \"a in (b\"\n"
    );
    write_atomically(&file, &broken);
    let refused = kdi
        .stderr_json("the broken file refused", |v| {
            v["reload"]["success"] == false
        })
        .await;
    let errors: Vec<String> = refused["reload"]["errors"]
        .as_array()
        .unwrap()
        .iter()
        .map(|e| e.as_str().unwrap().to_string())
        .collect();
    let at = file.display().to_string();
    assert_eq!(errors.len(), 2, "{errors:?}");
    assert!(
        errors[0].starts_with(&format!("{at}:8:5: ")) && errors[0].contains("colour"),
        "{errors:?}"
    );
    assert!(
        errors[1].starts_with(&format!("{at}:14:20: ")) && errors[1].contains("labelSelector"),
        "{errors:?}"
    );
    // The status file is written just after the line is said.
    let after_refusal = wait_for(
        "the refusal in the status file",
        Duration::from_secs(30),
        || async {
            let now = status(&status_file);
            if now["lastReload"]["success"] == false {
                Ok(now)
            } else {
                Err(now.to_string())
            }
        },
    )
    .await;
    assert_eq!(members(&after_refusal).len(), 2, "{after_refusal}");
    assert_eq!(
        reload_metrics().await.unwrap(),
        (0.0, 2.0),
        "the refusal in the metrics"
    );
    widgets
        .patch(
            "w1",
            &PatchParams::default(),
            &Patch::Merge(json!({ "spec": { "color": "green" } })),
        )
        .await
        .unwrap();
    let line = kdi
        .event("an update while the broken file is in place", |v| {
            v["key"] == w1 && v["indexValues"]["color"] == json!(["green"])
        })
        .await;
    assert_eq!(line["informer"], "widgets");

    // A resource the cluster does not serve is refused too, located.
    let unknown = format!(
        "{HEADER}informers:\n{gadgets_entry}  - resource: nosuchthings.v1.{group}\n    whenNotServed: fail\npatterns:\n{widgets_indexed}"
    );
    write_atomically(&file, &unknown);
    let refused = kdi
        .stderr_json("the unserved resource refused", |v| {
            v["reload"]["success"] == false
        })
        .await;
    let errors = refused["reload"]["errors"].to_string();
    assert!(
        errors.contains(&format!("{at}:7:15: informers[1].resource")),
        "{errors}"
    );

    // 5. Fixed: applied, and nothing needed to change.
    write_atomically(&file, &fixed);
    let applied = kdi
        .stderr_json("the fixed file applied", |v| v["reload"]["success"] == true)
        .await;
    assert_eq!(applied["reload"]["kept"], 2, "{applied}");
    assert_eq!(applied["reload"]["added"], 0, "{applied}");
    wait_for(
        "the fix in the metrics",
        Duration::from_secs(30),
        || async {
            match reload_metrics().await? {
                (1.0, 0.0) => Ok(()),
                other => Err(format!("{other:?}")),
            }
        },
    )
    .await;

    // SIGHUP reloads at once: the same file, nothing to change.
    let hup = std::process::Command::new("kill")
        .args(["-HUP", &kdi.pid().to_string()])
        .status()
        .unwrap();
    assert!(hup.success());
    let again = kdi
        .stderr_json("the reload on SIGHUP", |v| v["reload"].is_object())
        .await;
    assert_eq!(again["reload"]["success"], true, "{again}");
    assert_eq!(
        again["reload"]["hash"], applied["reload"]["hash"],
        "{again}"
    );

    // Options changed: the gadgets informer is replaced by one with them.
    let gadgets_selected = format!(
        "  - name: gadgets\n    resource: gadgets.{group}\n    namespaces: [{ns}]\n    labelSelector: app=gadget\n"
    );
    write_atomically(
        &file,
        &format!("{HEADER}informers:\n{gadgets_selected}patterns:\n{widgets_indexed}"),
    );
    kdi.stderr_json("the old gadgets informer removed", |v| {
        v["set"] == "removed" && v["informer"] == "gadgets"
    })
    .await;
    kdi.stderr_json("the new gadgets informer added", |v| {
        v["set"] == "added" && v["informer"] == "gadgets"
    })
    .await;
    let replaced = kdi
        .stderr_json("the reload replacing gadgets", |v| v["reload"].is_object())
        .await;
    assert_eq!(replaced["reload"]["replaced"], 1, "{replaced}");
    assert_eq!(replaced["reload"]["kept"], 1, "{replaced}");

    // Through all of it the widgets informer kept its watch.
    assert_eq!(requests(&admin, &group, "widgets").await, before);
    kdi.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}

/// Patterns on the command line: `-r group:GROUP` selects every resource
/// of the group, `--exclude` leaves one out.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn get_with_a_pattern_and_an_exclusion() {
    let admin = support::admin().await;
    let f = super::access::fixture(&admin).await;
    let pattern = format!("group:{}", f.group);
    let run = |extra: &'static [&'static str]| {
        let mut args = vec![
            "get",
            "-r",
            pattern.as_str(),
            "-n",
            f.ns_a.as_str(),
            "-o",
            "name",
        ];
        args.extend_from_slice(extra);
        let args: Vec<String> = args.into_iter().map(String::from).collect();
        async move {
            let out = Command::new(env!("CARGO_BIN_EXE_kdi"))
                .arg("--kubeconfig")
                .arg(kubeconfig(User::Admin))
                .args(&args)
                .env_remove("KUBECONFIG")
                .output()
                .await
                .unwrap();
            assert_eq!(
                out.status.code(),
                Some(0),
                "{}",
                String::from_utf8_lossy(&out.stderr)
            );
            String::from_utf8_lossy(&out.stdout).into_owned()
        }
    };
    // `check` counts patterns, without a cluster.
    let example = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/examples/configs/example-crds-pattern.yaml"
    );
    let out = Command::new(env!("CARGO_BIN_EXE_kdi"))
        .args(["check", example])
        .output()
        .await
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout),
        format!("{example}: ok (0 informers, 2 patterns)\n")
    );
    // A pattern may match several resources: each name says its own.
    assert_eq!(
        run(&[]).await,
        format!(
            "gadget.{1}/{0}/gadgets-1\nwidget.{1}/{0}/widgets-1\n",
            f.ns_a, f.group
        )
    );
    assert_eq!(
        run(&["--exclude", "gadgets"]).await,
        format!("widget.{}/{}/widgets-1\n", f.group, f.ns_a)
    );
}

/// `kdi watch -f` over a file naming a resource not served, under
/// `whenNotServed: fail`: exit 3 (a cache that cannot sync), the entry
/// located.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_refuses_an_unserved_resource_it_may_not_wait_for_with_exit_3() {
    let dir = std::env::temp_dir().join(format!("kdi-unserved-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("set.yaml");
    let group = support::unique_group();
    write_atomically(
        &file,
        &format!(
            "{HEADER}informers:\n  - resource: nosuchthings.v1.{group}\n    whenNotServed: fail\n"
        ),
    );
    let out = Command::new(env!("CARGO_BIN_EXE_kdi"))
        .arg("--kubeconfig")
        .arg(kubeconfig(User::Admin))
        .args(["watch", "-f", file.to_str().unwrap()])
        .env_remove("KUBECONFIG")
        .output()
        .await
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(3), "{stderr}");
    assert!(
        stderr.starts_with(&format!(
            "kdi: {}:4:15: informers[0].resource: ",
            file.display()
        )),
        "{stderr}"
    );
    let _ = std::fs::remove_dir_all(dir);
}

/// `kdi watch -f FILE -r NAME` keeps selecting by name on reloads: a file
/// that no longer has the entry named is refused, saying so.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_reload_that_drops_the_entry_selected_on_the_command_line_is_refused() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "set-reload-select").await;
    let dir = std::env::temp_dir().join(format!("kdi-reload-select-{}", support::suffix()));
    std::fs::create_dir_all(&dir).unwrap();
    let file = dir.join("set.yaml");
    write_atomically(
        &file,
        &format!(
            "{HEADER}informers:\n  - name: cms\n    resource: configmaps\n    namespaces: [{ns}]\n"
        ),
    );
    let mut kdi = Kdi::start(
        User::Admin,
        &[
            "watch",
            "-f",
            file.to_str().unwrap(),
            "-r",
            "cms",
            "--reload-check",
            "200ms",
        ],
    );
    // Running once its first event is out.
    let cm: k8s_openapi::api::core::v1::ConfigMap =
        serde_json::from_value(json!({ "metadata": { "name": "cm" } })).unwrap();
    Api::namespaced(admin.clone(), &ns)
        .create(&PostParams::default(), &cm)
        .await
        .unwrap();
    let key = format!("{ns}/cm");
    kdi.event("the config map", |v| v["key"] == key.as_str())
        .await;
    write_atomically(
        &file,
        &format!(
            "{HEADER}informers:\n  - name: other\n    resource: configmaps\n    namespaces: [{ns}]\n"
        ),
    );
    let refused = kdi
        .stderr_json("the reload refused", |v| v["reload"]["success"] == false)
        .await;
    assert!(
        refused["reload"]["errors"]
            .to_string()
            .contains("no informer of the config file is named cms"),
        "{refused}"
    );
    kdi.stop().await;
    let _ = std::fs::remove_dir_all(dir);
}
