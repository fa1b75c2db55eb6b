//! `kdi get`: the objects of a synced cache, by index value or selector.

use clap::Args;
use kube_dynamic_informer::declarative::InformerSet;
use kube_dynamic_informer::vocabulary::Selector;

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::informers::{Selection, start_and_sync, unknown_index};
use crate::output::{Format, print_objects, printable, written};

#[derive(Args, Debug)]
pub struct GetArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Objects with this index value: NAME=VALUE.
    #[arg(long, value_name = "NAME=VALUE", conflicts_with = "by_labels")]
    pub index: Option<String>,
    /// Filter the cache with this label selector (client-side; `-l` filters
    /// on the server).
    #[arg(long = "match", value_name = "SELECTOR", id = "by_labels")]
    pub by_labels: Option<String>,
    /// Output format.
    #[arg(short, long, value_enum, default_value_t = Format::Table)]
    pub output: Format,
    /// Print the content of Secrets and of resources the config marks
    /// `sensitive` (values, the last-applied annotation, index values)
    /// instead of redacting it.
    #[arg(long)]
    pub show_secrets: bool,
}

/// `--index` and `--match` as they are checked before the cluster is
/// contacted: the index named by some informer of the set, the selector
/// parsed.
pub fn check_query(set: &InformerSet, args: &GetArgs) -> Result<(), Failure> {
    if let Some(index) = &args.index {
        let (name, _) = index
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--index {index:?}: expected NAME=VALUE")))?;
        let declared: std::collections::BTreeSet<&String> = set
            .informers
            .iter()
            .flat_map(|i| i.indexes.keys())
            .chain(set.patterns.iter().flat_map(|p| p.indexes.keys()))
            .collect();
        if !declared.iter().any(|d| d.as_str() == name) {
            return Err(unknown_index(
                &format!("--index {index:?}"),
                name,
                &declared,
                false,
            ));
        }
    }
    if let Some(selector) = &args.by_labels {
        Selector::parse(selector)
            .map_err(|e| Failure::usage(format!("--match {selector:?}: {e}")))?;
    }
    Ok(())
}

pub async fn get(cluster: &Cluster, set: InformerSet, args: GetArgs) -> Result<(), Failure> {
    let (resource_set, informers, _progress) = start_and_sync(
        cluster,
        set,
        &args.selection,
        true,
        std::future::pending(),
        |_| Ok(()),
    )
    .await?;
    let mut objects = Vec::new();
    for declared in &informers {
        let (name, lister) = (&declared.name, declared.informer.lister());
        let redaction = declared.redaction(args.show_secrets);
        let found = match (&args.index, &args.by_labels) {
            (Some(index), _) => {
                let (index, value) = index.split_once('=').ok_or_else(|| {
                    Failure::usage(format!("--index {index:?}: expected NAME=VALUE"))
                })?;
                lister
                    .by_index(index, value)
                    .map_err(|e| Failure::usage(format!("{name}: {e}")))?
            }
            (None, Some(selector)) => lister
                .list(selector.as_str())
                .map_err(|e| Failure::usage(format!("{name}: {e}")))?,
            (None, None) => lister.list_all(),
        };
        // Printed from the cache as it is held: with compact storage,
        // nothing is decoded.
        objects.extend(found.into_iter().map(|o| printable(redaction, o)));
    }
    objects.sort_by_cached_key(|o| o.sort_key());
    let result = written(print_objects(
        &mut std::io::stdout().lock(),
        &objects,
        args.output,
    ));
    resource_set.shutdown().await;
    result
}
