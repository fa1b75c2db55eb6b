//! What `kdi watch` says of its set as it changes (a config file reloaded,
//! patterns following discovery, access granted or withdrawn): each change
//! on stderr, and the set's state in `--status-file` when given.

use std::path::Path;

use kube_dynamic_informer::declarative::{ReloadStatus, ResourceSet, SetEvent, SkippedMember};
use serde_json::{Value, json};

use crate::output::say;
use crate::progress::resource_label;
use crate::stderr::Stderr;

/// Says a change of the set on stderr.
pub fn say_event(event: &SetEvent, json: bool) {
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
    if json {
        say(fields);
    } else {
        say(words);
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
pub async fn write_status(set: &ResourceSet, path: &Path) {
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

/// Says, before starting, which entries were left out (not served under
/// `whenNotServed: skip`) and, unless they are skipped, which the user may
/// not watch: their informers retry until allowed.
pub async fn say_left_out(resource_set: &ResourceSet, skip_forbidden: bool) {
    let json = Stderr::process().json();
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
