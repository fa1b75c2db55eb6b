//! `kdi watch` over a resource set: a config file (reloaded when it changes
//! or on SIGHUP) or patterns given with `-r`. Informers come and go with
//! discovery, reloads and access; each change is said on stderr, and the
//! set's state is written to `--status-file` when given.

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::{Arc, RwLock};

use kube_dynamic_informer::cache::IndexFn;
use kube_dynamic_informer::declarative::{
    AccessPolicy, ReloadStatus, ResourceSet, SetEvent, SetMember, SkippedMember,
};
use kube_dynamic_informer::declarative::{InformerSet, ReloadTriggers};
use kube_dynamic_informer::informer::Registration;
use serde_json::{Value, json};
use tokio::sync::mpsc::UnboundedSender;
use tokio_util::sync::CancellationToken;

use crate::cluster::Cluster;
use crate::declared::Declared;
use crate::exit::Failure;
use crate::informers::{adjust, resource_set, start_and_wait};
use crate::output::say;
use crate::progress::{Membership, Progress, resource_label};
use crate::stderr::Stderr;
use crate::watch::{LineWriter, Shown, WatchArgs, add_printer, shown_indexes, stdout_closed};

/// What prints one member's events.
struct Printer {
    registration: Registration,
    shown: Shown,
}

struct Output<'a> {
    tx: UnboundedSender<String>,
    args: &'a WatchArgs,
    json: bool,
}

impl Output<'_> {
    fn indexes(&self, member: &SetMember) -> Arc<Vec<(String, IndexFn)>> {
        shown_indexes(self.args, &Declared::from_member(member).indexes)
    }

    /// Follows a member joining, changing or leaving: its printer, and the
    /// progress reporter (`joins`).
    fn follow(
        &self,
        event: &SetEvent,
        printers: &mut BTreeMap<(String, String), Printer>,
        joins: &UnboundedSender<Membership>,
    ) {
        match event {
            SetEvent::Added(m) => {
                let key = (m.entry.clone(), m.resource.clone());
                if let Some(old) = printers.insert(key, self.printer(m)) {
                    old.registration.remove();
                }
                let _ = joins.send(Membership::Joined(Declared::from_member(m)));
            }
            SetEvent::Updated(m) => {
                let key = (m.entry.clone(), m.resource.clone());
                if let Some(p) = printers.get(&key)
                    && let Ok(mut shown) = p.shown.write()
                {
                    *shown = self.indexes(m);
                }
            }
            SetEvent::Removed { member, .. } => {
                let key = (member.entry.clone(), member.resource.clone());
                if let Some(old) = printers.remove(&key) {
                    old.registration.remove();
                }
                let _ = joins.send(Membership::Left(
                    member.entry.clone(),
                    member.informer.clone(),
                ));
            }
            _ => {}
        }
    }

    fn printer(&self, m: &SetMember) -> Printer {
        let shown: Shown = Arc::new(RwLock::new(self.indexes(m)));
        let registration = add_printer(
            self.args,
            &m.entry,
            &m.informer,
            m.sensitive,
            shown.clone(),
            &self.tx,
        );
        Printer {
            registration,
            shown,
        }
    }

    /// Says a change of the set on stderr.
    fn say_event(&self, event: &SetEvent) {
        let (fields, words): (Value, String) = match event {
            SetEvent::Added(m) => (
                json!({ "informer": m.entry, "resource": m.resource, "set": "added" }),
                format!("kdi: {}: now watching {}", m.entry, m.resource),
            ),
            SetEvent::Updated(m) => (
                json!({ "informer": m.entry, "resource": m.resource, "set": "updated",
                        "indexes": m.indexes.keys().collect::<Vec<_>>() }),
                format!(
                    "kdi: {}: {}: indexes now {}",
                    m.entry,
                    m.resource,
                    m.indexes.keys().cloned().collect::<Vec<_>>().join(", ")
                ),
            ),
            SetEvent::Removed { member, reason } => (
                json!({ "informer": member.entry, "resource": member.resource, "set": "removed",
                        "reason": reason.to_string() }),
                format!(
                    "kdi: {}: stopped watching {}: {reason}",
                    member.entry, member.resource
                ),
            ),
            SetEvent::Skipped(s) => (skipped_json(s), skipped_words(s)),
            SetEvent::Reloaded(r) => (json!({ "reload": reload_json(r) }), reload_words(r)),
            _ => return,
        };
        if self.json {
            say(fields);
        } else {
            say(words);
        }
    }
}

fn skipped_json(s: &SkippedMember) -> Value {
    json!({ "informer": s.entry, "resource": s.resource, "set": "skipped", "reason": s.reason })
}

fn skipped_words(s: &SkippedMember) -> String {
    format!("kdi: skipping {} ({}): {}", s.entry, s.resource, s.reason)
}

fn reload_json(r: &ReloadStatus) -> Value {
    json!({
        "at": r.at_unix_seconds(),
        "hash": r.hash,
        "success": r.success,
        "errors": r.errors.iter().map(ToString::to_string).collect::<Vec<_>>(),
        "kept": r.kept,
        "added": r.added,
        "removed": r.removed,
        "replaced": r.replaced,
    })
}

fn reload_words(r: &ReloadStatus) -> String {
    if r.success {
        format!(
            "kdi: config reloaded ({}): {} kept, {} added, {} removed, {} replaced",
            r.hash, r.kept, r.added, r.removed, r.replaced
        )
    } else {
        let mut out = format!(
            "kdi: config refused ({}), the informers run on unchanged:",
            r.hash
        );
        for e in &r.errors {
            out.push_str(&format!("\n  {e}"));
        }
        out
    }
}

/// Writes the set's state to `path` (through a temporary file renamed over
/// it, so a reader never sees half of it).
async fn write_status(set: &ResourceSet, path: &Path) {
    let status = set.status().await;
    let members: Vec<Value> = status
        .members
        .iter()
        .map(|(m, s)| {
            json!({
                "informer": m.entry,
                "resource": m.resource,
                "served": resource_label(&m.informer),
                "fromPattern": m.from_pattern,
                "status": s.to_string(),
                "synced": m.informer.has_synced(),
                "objects": m.informer.lister().list_all().len(),
                "indexes": m.indexes.keys().collect::<Vec<_>>(),
                "namespaces": m.informer.informer().options().watch.namespaces.to_string(),
            })
        })
        .collect();
    let doc = json!({
        "members": members,
        "skipped": status.skipped.iter().map(skipped_json).collect::<Vec<_>>(),
        "lastReload": status.last_reload.as_ref().map(reload_json),
    });
    let tmp = path.with_extension("tmp");
    let text = format!("{doc:#}\n");
    if let Err(e) = std::fs::write(&tmp, text).and_then(|()| std::fs::rename(&tmp, path)) {
        say(format!(
            "kdi: cannot write the status file {}: {e}",
            path.display()
        ));
    }
}

/// Forbidden resources are left out with `--skip-forbidden` (and checked
/// again at its interval), else watched until allowed.
fn access_policy(args: &WatchArgs) -> AccessPolicy {
    if args.skip_forbidden {
        AccessPolicy::Skip {
            recheck: args.access_recheck,
        }
    } else {
        AccessPolicy::Watch
    }
}

/// Says, before starting, which entries were left out (not served under
/// `whenNotServed: skip`) and, unless they are skipped, which the user may
/// not watch: their informers retry until allowed.
async fn say_left_out(resource_set: &ResourceSet, json: bool, skip_forbidden: bool) {
    for s in resource_set.status().await.skipped {
        if json {
            say(skipped_json(&s));
        } else {
            say(format!("kdi: skipping {}: {}", s.entry, s.reason));
        }
    }
    if skip_forbidden {
        return;
    }
    for row in resource_set.check_access().await.rows {
        if let Some(denial) = row.denial() {
            if json {
                say(
                    json!({ "resource": row.resource.to_string(), "namespace": row.namespace, "access": "denied", "reason": denial }),
                );
            } else {
                say(format!(
                    "kdi: {denial}; its informer retries until allowed (--skip-forbidden leaves it out instead)"
                ));
            }
        }
    }
}

pub async fn watch_set(
    cluster: &Cluster,
    set: InformerSet,
    args: WatchArgs,
) -> Result<(), Failure> {
    let deadline = crate::stop::deadline(args.duration);
    let sel = &args.selection;
    let json = Stderr::process().json();
    let resource_set = resource_set(cluster, set, sel, access_policy(&args)).await?;
    let (members, mut events) = resource_set.subscribe().await;
    let declared: Vec<Declared> = members.iter().map(Declared::from_member).collect();
    say_left_out(&resource_set, json, args.skip_forbidden).await;
    let (tx, mut rx) = tokio::sync::mpsc::unbounded_channel::<String>();
    let output = Output {
        tx,
        args: &args,
        json,
    };
    let mut printers: BTreeMap<(String, String), Printer> = members
        .iter()
        .map(|m| ((m.entry.clone(), m.resource.clone()), output.printer(m)))
        .collect();
    let mut progress = Progress::new(&declared, Stderr::process().clone(), sel.progress_interval);
    let stop = crate::stop::stopped(deadline);
    start_and_wait(&resource_set, &mut progress, sel, false, || Ok(()), stop).await?;
    if let Some(path) = &args.status_file {
        write_status(&resource_set, path).await;
    }
    let stop_reporting = CancellationToken::new();
    let (joins, joined) = tokio::sync::mpsc::unbounded_channel();
    let reporting = tokio::spawn(progress.follow_set(stop_reporting.clone(), joined));

    let expired = crate::stop::stopped(deadline);
    tokio::pin!(expired);
    let closed = stdout_closed();
    tokio::pin!(closed);
    // The file is reloaded when it changes or at SIGHUP; each outcome
    // comes back as a Reloaded event.
    let stop_following = CancellationToken::new();
    let following = sel.config.clone().map(|path| {
        let sel = sel.clone();
        resource_set.follow_file(
            path,
            ReloadTriggers {
                check_every: Some(args.reload_check),
                on_sighup: true,
            },
            move |set| adjust(&sel, set).map_err(|e| e.message),
            stop_following.clone(),
        )
    });
    let mut writer = LineWriter::new(args.max_events);
    let result = loop {
        tokio::select! {
            line = rx.recv() => {
                let Some(line) = line else { break Ok(()) };
                match writer.write(&line) {
                    Ok(false) => {}
                    Ok(true) => break Ok(()),
                    Err(e) => break Err(e),
                }
            }
            event = events.recv() => {
                let Some(event) = event else { break Ok(()) };
                // Said once acted on (handlers, status file), so that what
                // follows the line sees the change.
                output.follow(&event, &mut printers, &joins);
                if let Some(path) = &args.status_file {
                    write_status(&resource_set, path).await;
                }
                output.say_event(&event);
            }
            () = &mut expired => break Ok(()),
            () = &mut closed => break Ok(()),
        }
    };
    stop_following.cancel();
    stop_reporting.cancel();
    if let Some(following) = following {
        let _ = following.await;
    }
    let _ = reporting.await;
    resource_set.shutdown().await;
    result
}
