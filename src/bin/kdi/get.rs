//! `kdi get`: the objects of a synced cache, by index value or selector.

use clap::Args;
use kube_dynamic_informer::cache::Redaction;
use kube_dynamic_informer::cache::{CachedObject, Lister};
use kube_dynamic_informer::declarative::{AccessPolicy, InformerSet, ResourceSet, SetMember};
use kube_dynamic_informer::vocabulary::{
    ResourceAvailability, ResourceName, Selector, error_chain,
};

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::indexes::IndexNames;
use crate::informers::{Selection, open, read_and_end, start_and_wait};
use crate::output::{Format, Origin, print_objects, printable, say, written};

#[derive(Args, Debug)]
pub struct GetArgs {
    #[command(flatten)]
    pub selection: Selection,
    /// Objects with this index value: NAME=VALUE, NAME an index the
    /// informers declare or `namespace`, built into every cache.
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
    /// Wait (up to --timeout) for a resource that is not served even when
    /// its name resembles one that is: a CRD about to be installed. Without
    /// it, such a name fails at once with what discovery offers instead
    /// ("did you mean ..."); a name that resembles nothing served is waited
    /// for either way.
    #[arg(long)]
    pub wait_for_crd: bool,
}

impl GetArgs {
    /// The objects of the informer `name` that `--index` or `--match` asks
    /// for, all when neither (both were checked by [`check_query`]).
    pub fn query(&self, name: &str, lister: &Lister) -> Result<Vec<CachedObject>, Failure> {
        let found = match (&self.index, &self.by_labels) {
            (Some(index), _) => {
                let (index, value) = index.split_once('=').unwrap_or((index, ""));
                lister.by_index(index, value)
            }
            (None, Some(selector)) => lister.list(selector.as_str()),
            (None, None) => return Ok(lister.list_all()),
        };
        found.map_err(|e| Failure::usage(format!("{name}: {}", error_chain(&e))))
    }
}

/// `--index` and `--match` as they are checked before the cluster is
/// contacted: the index named one that some informer of the set has (the
/// built-in `namespace` one included), the selector parsed.
pub fn check_query(set: &InformerSet, args: &GetArgs) -> Result<(), Failure> {
    if let Some(index) = &args.index {
        let (name, _) = index
            .split_once('=')
            .ok_or_else(|| Failure::usage(format!("--index {index:?}: expected NAME=VALUE")))?;
        IndexNames::of(set).check(&format!("--index {index:?}"), name, false)?;
    }
    if let Some(selector) = &args.by_labels {
        Selector::parse(selector)
            .map_err(|e| Failure::usage(format!("--match {selector:?}: {e}")))?;
    }
    Ok(())
}

pub async fn get(cluster: &Cluster, set: InformerSet, args: GetArgs) -> Result<(), Failure> {
    let origin = Origin::of(&set, false);
    let sel = &args.selection;
    let patterns = !set.patterns.is_empty();
    let (resource_set, members) = open(cluster, set, sel, AccessPolicy::Watch).await?;
    read_and_end(&resource_set, &members, patterns);
    for s in resource_set.status().await.skipped {
        say(format!("kdi: skipping {}: {}", s.entry, s.reason));
    }
    let ready = || refuse_near_misses(&resource_set, &members, args.wait_for_crd);
    start_and_wait(
        &resource_set,
        &members,
        sel,
        true,
        ready,
        std::future::pending(),
    )
    .await?;
    let mut objects = Vec::new();
    for m in &members {
        let redaction =
            Redaction::for_resource(&m.informer.resource(), m.sensitive, args.show_secrets);
        let found = args.query(&m.entry, &m.informer.lister())?;
        // Printed from the cache as it is held: with compact storage,
        // nothing is decoded.
        objects.extend(
            found
                .into_iter()
                .map(|o| (String::new(), printable(redaction, o))),
        );
    }
    objects.sort_by_cached_key(|(_, o)| o.sort_key());
    let result = written(print_objects(
        &mut std::io::stdout().lock(),
        &objects,
        origin,
        args.output,
    ));
    resource_set.shutdown().await;
    result
}

/// A one-shot `get` of a resource that is not served, named like one that
/// is (`widgetz.example.com` beside `widgets.v1.example.com`): most likely
/// a typo, which discovery already answers. Said at once, unless the user
/// asked to wait for a CRD to appear (`--wait-for-crd`).
fn refuse_near_misses(
    set: &ResourceSet,
    members: &[SetMember],
    wait_for_crd: bool,
) -> Result<(), Failure> {
    if wait_for_crd {
        return Ok(());
    }
    let snapshot = set.factory().discovery().snapshot();
    for m in members {
        let key = m.informer.resource();
        let named = if key.group.is_empty() {
            key.resource.clone()
        } else {
            format!("{}.{}", key.resource, key.group)
        };
        let Ok(name) = ResourceName::parse(&named) else {
            continue;
        };
        if snapshot.resembling(&name).is_empty() {
            continue;
        }
        if let ResourceAvailability::NotServed { reason } = snapshot.availability_of_name(&name) {
            return Err(Failure::usage(format!(
                "{}: {reason} (--wait-for-crd waits for it to be installed)",
                m.entry
            )));
        }
    }
    Ok(())
}
