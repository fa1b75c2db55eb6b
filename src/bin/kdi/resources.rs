//! `kdi resources`: what discovery offers, and what a name designates.

use std::cmp::Reverse;

use clap::{Args, ValueEnum};
use kube_core::Version;
use kube_dynamic_informer::factory::{DiscoveryCache, DiscoverySnapshot};
use kube_dynamic_informer::factory::{FactoryError, InformerFactory, Resolution, ResourcePattern};
use kube_dynamic_informer::informer::InformerOptions;
use kube_dynamic_informer::vocabulary::KnownResource;
use serde_json::{Value, json};

use crate::cluster::Cluster;
use crate::exit::{Failure, code};
use crate::output;
use crate::output::{print_line, say, written};
use kube_dynamic_informer::vocabulary::error_chain;

#[derive(Args, Debug)]
pub struct ResourcesArgs {
    /// Names and patterns to explain: what each designates or matches, as
    /// `watch` and `get` resolve it, or why nothing. Without names, every
    /// resource is listed.
    #[arg(value_name = "NAME")]
    pub names: Vec<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = ResourcesFormat::Table)]
    pub output: ResourcesFormat,
    /// Show every served version, not only the preferred one.
    #[arg(long)]
    pub all_versions: bool,
}

#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum ResourcesFormat {
    Table,
    Json,
}

pub async fn resources(cluster: &Cluster, args: ResourcesArgs) -> Result<(), Failure> {
    let discovery = DiscoveryCache::new(cluster.client.clone());
    let snapshot = discovery
        .refresh()
        .await
        .map_err(|e| cluster.unreachable(&e))?;
    for u in snapshot.unavailable() {
        say(format!("kdi: not discovered: {u}"));
    }
    if !args.names.is_empty() {
        return explain(cluster, discovery, &args).await;
    }
    let mut rows: Vec<_> = snapshot
        .resources()
        .iter()
        .filter(|r| args.all_versions || r.preferred_version)
        .collect();
    // Versions in Kubernetes' order of priority: v2, v1, v1beta1, v1alpha1.
    rows.sort_by_cached_key(|r| {
        (
            r.group.clone(),
            r.plural.clone(),
            Reverse(Version::parse(&r.version).priority()),
        )
    });
    match args.output {
        ResourcesFormat::Json => {
            let list: Vec<_> = rows.iter().map(|r| describe_known(&snapshot, r)).collect();
            print_line(serde_json::to_string_pretty(&list).unwrap_or_default())?;
        }
        ResourcesFormat::Table => {
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|r| {
                    vec![
                        r.plural.clone(),
                        r.short_names.join(","),
                        r.key().api_version(),
                        r.namespaced.to_string(),
                        r.kind.clone(),
                    ]
                })
                .collect();
            written(output::print_table(
                &mut std::io::stdout().lock(),
                &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
                &table,
            ))?;
        }
    }
    Ok(())
}

/// A resource as the JSON output describes it.
fn describe_known(snapshot: &DiscoverySnapshot, r: &KnownResource) -> Value {
    json!({
        "name": r.plural,
        "shortNames": r.short_names,
        "apiVersion": r.key().api_version(),
        "group": r.group,
        "version": r.version,
        "namespaced": r.namespaced,
        "kind": r.kind,
        "watchable": snapshot.is_watchable(&r.key()),
        "fullName": r.key().to_string(),
    })
}

/// What a name comes to.
enum Answer {
    /// A served resource, in this version (one of `versions`, the
    /// preferred first).
    Served {
        resource: KnownResource,
        versions: Vec<String>,
    },
    /// Not served now; an informer waits for it.
    Waits { reason: String },
    /// A pattern (`category:`, `custom:`, `group:`, a group glob), as
    /// `watch` and `get` take it: the resources it selects now (`watch`
    /// follows the ones that appear later).
    Pattern { resources: Vec<KnownResource> },
    /// Nothing kdi can watch.
    Refused { reason: String },
}

/// Resolves each name exactly as `watch` and `get` do (nothing is listed),
/// and says what it designates. Exit: 0 when every name is served, 3 when
/// one is not served yet, 2 when one designates nothing.
async fn explain(
    cluster: &Cluster,
    discovery: DiscoveryCache,
    args: &ResourcesArgs,
) -> Result<(), Failure> {
    let factory = InformerFactory::with_discovery(
        cluster.client.clone(),
        discovery.clone(),
        InformerOptions::default(),
    );
    let mut answers = Vec::new();
    for name in &args.names {
        match ResourcePattern::parse(name) {
            Ok(Some(pattern)) => {
                let resources = match discovery.custom_resources().await {
                    Ok(custom) => pattern.select_with(&discovery.snapshot(), &|group, plural| {
                        custom.contains(&(group.to_owned(), plural.to_owned()))
                    }),
                    Err(_) => pattern.select(&discovery.snapshot()),
                };
                answers.push((name, Answer::Pattern { resources }));
                continue;
            }
            Ok(None) => {}
            Err(e) => {
                answers.push((
                    name,
                    Answer::Refused {
                        reason: e.to_string(),
                    },
                ));
                continue;
            }
        }
        let answer = match factory.resolve(name.as_str()).await {
            Ok(Resolution::Served(resource)) => {
                let key = resource.key();
                let versions = discovery
                    .snapshot()
                    .versions_of(&key.group, &key.resource)
                    .iter()
                    .map(|r| r.version.clone())
                    .collect();
                Answer::Served { resource, versions }
            }
            Ok(Resolution::NotServed { reason, .. }) => Answer::Waits { reason },
            Ok(_) => Answer::Refused {
                reason: "not a resource kdi knows how to watch".into(),
            },
            Err(e @ FactoryError::Discovery { .. }) => {
                return Err(cluster.unreachable(&e));
            }
            Err(e) => Answer::Refused {
                reason: error_chain(&e),
            },
        };
        answers.push((name, answer));
    }
    print_answers(&answers, &discovery, args.output)?;
    let refused = answers
        .iter()
        .any(|(_, a)| matches!(a, Answer::Refused { .. }));
    let waits = answers
        .iter()
        .any(|(_, a)| matches!(a, Answer::Waits { .. }));
    match (refused, waits) {
        (true, _) => Err(Failure {
            code: code::USAGE,
            message: "a name designates nothing kdi can watch".into(),
        }),
        (false, true) => Err(Failure::not_synced("a name is not served (yet)")),
        (false, false) => Ok(()),
    }
}

/// Prints what each name designates, as a table or JSON.
fn print_answers(
    answers: &[(&String, Answer)],
    discovery: &DiscoveryCache,
    output: ResourcesFormat,
) -> Result<(), Failure> {
    match output {
        ResourcesFormat::Json => {
            let list: Vec<Value> = answers
                .iter()
                .map(|(name, answer)| match answer {
                    Answer::Served { resource, versions } => {
                        let mut v = describe_known(&discovery.snapshot(), resource);
                        v["input"] = json!(name);
                        v["served"] = json!(true);
                        v["servedVersions"] = json!(versions);
                        v
                    }
                    Answer::Waits { reason } => {
                        json!({ "input": name, "served": false, "waited": true, "reason": reason })
                    }
                    Answer::Refused { reason } => {
                        json!({ "input": name, "served": false, "waited": false, "reason": reason })
                    }
                    Answer::Pattern { resources } => json!({
                        "input": name,
                        "pattern": true,
                        "matches": resources.iter().map(|r| r.key().to_string()).collect::<Vec<_>>(),
                    }),
                })
                .collect();
            print_line(serde_json::to_string_pretty(&list).unwrap_or_default())?;
        }
        ResourcesFormat::Table => {
            for (name, answer) in answers {
                match answer {
                    Answer::Served {
                        resource: r,
                        versions,
                    } => {
                        let mut facts = vec![
                            format!("kind {}", r.kind),
                            if r.namespaced {
                                "namespaced"
                            } else {
                                "cluster-scoped"
                            }
                            .to_string(),
                            format!("served versions {}", versions.join(", ")),
                        ];
                        if !r.short_names.is_empty() {
                            facts.push(format!("short names {}", r.short_names.join(", ")));
                        }
                        print_line(format!("{name}: {} ({})", r.key(), facts.join("; ")))?;
                    }
                    Answer::Waits { reason } => print_line(format!(
                        "{name}: not served; watch and get wait for it: {reason}"
                    ))?,
                    Answer::Refused { reason } => {
                        print_line(format!("{name}: designates nothing: {reason}"))?
                    }
                    Answer::Pattern { resources } => {
                        let keys: Vec<String> =
                            resources.iter().map(|r| r.key().to_string()).collect();
                        print_line(format!(
                            "{name}: a pattern; it matches {} resource{} now{}{}",
                            keys.len(),
                            if keys.len() == 1 { "" } else { "s" },
                            if keys.is_empty() { "" } else { ": " },
                            keys.join(", ")
                        ))?;
                    }
                }
            }
        }
    }
    Ok(())
}
