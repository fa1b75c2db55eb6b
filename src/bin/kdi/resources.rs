//! `kdi resources`: what discovery offers.

use clap::{Args, ValueEnum};
use kube_dynamic_informer::discovery::DiscoveryCache;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::output;

#[derive(Args, Debug)]
pub struct ResourcesArgs {
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
        eprintln!("kdi: not discovered: {u}");
    }
    let mut rows: Vec<_> = snapshot
        .resources()
        .iter()
        .filter(|r| args.all_versions || r.preferred_version)
        .collect();
    rows.sort_by(|a, b| (&a.group, &a.plural, &a.version).cmp(&(&b.group, &b.plural, &b.version)));
    match args.output {
        ResourcesFormat::Json => {
            let list: Vec<_> = rows
                .iter()
                .map(|r| {
                    serde_json::json!({
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
                })
                .collect();
            println!(
                "{}",
                serde_json::to_string_pretty(&list).unwrap_or_default()
            );
        }
        ResourcesFormat::Table => {
            let table: Vec<[String; 5]> = rows
                .iter()
                .map(|r| {
                    [
                        r.plural.clone(),
                        r.short_names.join(","),
                        r.key().api_version(),
                        r.namespaced.to_string(),
                        r.kind.clone(),
                    ]
                })
                .collect();
            output::print_table(
                &["NAME", "SHORTNAMES", "APIVERSION", "NAMESPACED", "KIND"],
                &table,
            );
        }
    }
    Ok(())
}
