//! `kdi check --cluster`: whether the informers of config files could be
//! listed and watched, as the API server answers for the current user.

use kube_dynamic_informer::declarative::InformerSet;
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::factory::{AccessCheck, AccessTable};
use kube_dynamic_informer::vocabulary::{ResourceName, Scope, error_chain};

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::output::{print_line, say};

/// Prints the access table of `sets` (file name, set); fails with
/// [`crate::exit::code::NOT_SYNCED`] when anything is denied.
pub async fn check_cluster(
    cluster: &Cluster,
    sets: &[(String, InformerSet)],
) -> Result<(), Failure> {
    let mut checks: Vec<AccessCheck> = Vec::new();
    // The library's rule, said as loading the file says it.
    let mut refused: Vec<String> = Vec::new();
    for (file, set) in sets {
        let factory = InformerFactory::with_options(cluster.client.clone(), set.defaults.clone());
        let snapshot = factory
            .discovery()
            .refresh()
            .await
            .map_err(|e| cluster.unreachable(&e))?;
        for spec in &set.informers {
            let found = ResourceName::parse(&spec.resource)
                .ok()
                .and_then(|n| n.resolve(snapshot.resources()).ok().cloned());
            if let Some(known) = &found
                && !known.namespaced
                && spec.options.watch.namespaces != set.defaults.watch.namespaces
                && let Err(e) = Scope::Cluster.check(known.key(), &spec.options.watch.namespaces)
            {
                refused.push(format!("{file}: {}: {e}", spec.name()));
                continue;
            }
            match found {
                Some(known) => checks.push(AccessCheck::new(
                    known.key(),
                    known.namespaced,
                    spec.options.watch.namespaces.clone(),
                )),
                None => say(format!(
                    "kdi: {file}: {}: {} is not served; its access cannot be checked",
                    spec.name(),
                    spec.resource
                )),
            }
        }
        for pattern in &set.patterns {
            let selected = factory.matching(&pattern.pattern).await.map_err(|e| {
                Failure::cluster(format!(
                    "{file}: pattern {:?}: {}",
                    pattern.name,
                    error_chain(&e)
                ))
            })?;
            if selected.is_empty() {
                say(format!(
                    "kdi: {file}: pattern {:?} selects nothing now",
                    pattern.name
                ));
            }
            for known in selected {
                checks.push(AccessCheck::new(
                    known.key(),
                    known.namespaced,
                    pattern.options.watch.namespaces.clone(),
                ));
            }
        }
    }
    if !refused.is_empty() {
        return Err(Failure::usage(refused.join("\n")));
    }
    checks.dedup();
    let table = AccessTable::check(&cluster.client, &checks).await;
    print_line(table.render().trim_end())?;
    let denied: Vec<String> = table.rows.iter().filter_map(|r| r.denial()).collect();
    if denied.is_empty() {
        return Ok(());
    }
    Err(Failure::not_synced(format!(
        "{} of {} may not be listed and watched:\n  {}",
        denied.len(),
        table.rows.len(),
        denied.join("\n  ")
    )))
}
