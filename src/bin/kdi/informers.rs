//! The informers a command runs: from a config file, from resources named
//! on the command line, or both; built, started and synced.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use clap::Args;
use kube_dynamic_informer::cache::Projection;
use kube_dynamic_informer::cache::Storage;
use kube_dynamic_informer::declarative::{
    AccessPolicy, DeclarativeError, InformerSet, Overlay, ResourceSet, SetMember, ShardGroupSpec,
};
use kube_dynamic_informer::factory::InformerFactory;
use kube_dynamic_informer::factory::ScopeFilter;
use kube_dynamic_informer::informer::{SnapshotOptions, SyncPolicy};
use kube_dynamic_informer::vocabulary::Namespaces;
use kube_dynamic_informer::vocabulary::{ShardKey, StaticShard, VocabularyError, error_chain};

use crate::cluster::Cluster;
use crate::exit::Failure;
use crate::parse_duration_arg;
use crate::progress::Progress;
use crate::stderr::Stderr;

/// What to watch: a config file, resources named on the command line, or
/// both.
#[derive(Args, Debug, Clone)]
pub struct Selection {
    /// Config file (YAML or JSON) declaring informers and indexes.
    #[arg(short = 'f', long = "config", value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// A resource to watch: plural, kind, short name, `plural.group`,
    /// `plural.version.group`, `group/version/plural`; or a pattern: a
    /// group glob (`'*'`, `'*.example.com'`), `category:qa`,
    /// `custom:GROUP-GLOB` (resources of CRDs), `group:apps`. Repeatable,
    /// or several separated by commas as kubectl takes them
    /// (`configmaps,deployments.apps`); a pattern with a colon takes the
    /// rest of the list as its own (`configmaps,category:qa,ops`). With
    /// `--config`, selects informers and patterns of the file by name or
    /// resource.
    #[arg(short = 'r', long = "resource", value_name = "RESOURCE", value_parser = parse_resource_list)]
    pub resources: Vec<ResourceList>,
    /// Only these namespaces (repeatable); default all.
    #[arg(short = 'n', long = "namespace", value_name = "NS")]
    pub namespaces: Vec<String>,
    /// Label selector, e.g. `app in (web, api),!canary`.
    #[arg(short = 'l', long = "selector", value_name = "SELECTOR")]
    pub label_selector: Option<String>,
    /// Field selector, e.g. `status.phase=Running`.
    #[arg(long = "field-selector", value_name = "SELECTOR")]
    pub field_selector: Option<String>,
    /// An index for resources named with `-r`: NAME=JMESPATH. Repeatable.
    #[arg(long = "define-index", value_name = "NAME=EXPR")]
    pub define_index: Vec<String>,
    /// Cache only metadata.
    #[arg(long)]
    pub metadata_only: bool,
    /// How caches hold their objects: `compact` (the default, a fraction of
    /// the memory) or `objects` (decoded: less CPU an update, fastest
    /// reads; see BENCHMARKS.md). Overrides the config file's `storage`.
    #[arg(long, value_enum, value_name = "MODE")]
    pub storage: Option<StorageArg>,
    /// Cache only this field of each object, and what is under it
    /// (repeatable): `spec.nodeName`, `status.conditions`,
    /// `metadata.labels["app.kubernetes.io/name"]`. apiVersion, kind and
    /// metadata name, namespace, uid, resourceVersion and deletionTimestamp
    /// are always kept; other metadata (labels, annotations, ...) only when
    /// named. Indexes and `--match` see only what is kept. Replaces the
    /// config file's `projection`.
    #[arg(long = "keep", value_name = "PATH")]
    pub keep: Vec<String>,
    /// Treat the objects as secrets: print only their `apiVersion`, `kind`
    /// and `metadata`, without the last-applied annotation, and redact index
    /// values (core Secrets always are; `--show-secrets` prints all).
    #[arg(long)]
    pub sensitive: bool,
    /// Leave resources out of the patterns given with `-r`: a plural,
    /// singular, kind or short name, alone or followed by `.GROUP`
    /// (`events`, `events.events.k8s.io`). Repeatable.
    #[arg(long = "exclude", value_name = "NAME")]
    pub exclude: Vec<String>,
    /// Keep only namespaced or only cluster-scoped resources in the
    /// patterns given with `-r`.
    #[arg(long = "scope", value_enum, value_name = "SCOPE")]
    pub scope: Option<ScopeArg>,
    /// Keep only shard INDEX of COUNT (from 0), e.g. `1/4`: run COUNT
    /// replicas, each with its own INDEX. Sent to the server as a shard
    /// selector; filtered here where the server cannot.
    #[arg(long, value_name = "INDEX/COUNT", value_parser = parse_shard_arg)]
    pub shard: Option<StaticShard>,
    /// The field a shard hashes: `uid` (objects spread evenly) or
    /// `namespace` (a namespace's objects stay together).
    #[arg(long, value_enum, value_name = "KEY")]
    pub shard_key: Option<ShardKeyArg>,
    /// Join this shard group: members share the objects through Leases and
    /// take over each other's part as they come and go (`kdi shard-role`
    /// prints the Role it needs).
    #[arg(long, value_name = "NAME", conflicts_with = "shard")]
    pub shard_group: Option<String>,
    /// The namespace of the shard group's Leases.
    #[arg(long, value_name = "NS", requires = "shard_group")]
    pub shard_group_namespace: Option<String>,
    /// This member's identity in the shard group (default: $POD_NAME, else
    /// $HOSTNAME).
    #[arg(long, value_name = "ID", requires = "shard_group")]
    pub shard_identity: Option<String>,
    /// How long the shard group's Leases stay valid without renewal.
    #[arg(long, value_name = "DURATION", requires = "shard_group")]
    pub lease_duration: Option<String>,
    /// Write each cache to a snapshot in this directory (when kdi stops and
    /// every `--snapshot-interval`), and start from it next time: no list
    /// of what the snapshot holds, only the changes since (warm restart).
    /// One directory per cluster. Secrets and `--sensitive` resources are
    /// not written.
    #[arg(long, value_name = "DIR")]
    pub snapshot_dir: Option<PathBuf>,
    /// How often a running kdi writes its snapshots.
    #[arg(long, default_value = "5m", value_parser = parse_duration_arg, requires = "snapshot_dir")]
    pub snapshot_interval: Duration,
    /// How long to wait for caches to sync; `0` waits for ever.
    #[arg(long, default_value = "60s", value_parser = parse_duration_arg)]
    pub timeout: Duration,
    /// How often to say again what informers are waiting for (access, a
    /// resource not served yet, a slow list) and how many objects their
    /// indexes failed on.
    #[arg(long, default_value = "30s", value_parser = parse_interval_arg)]
    pub progress_interval: Duration,
}

impl Selection {
    /// The resources (or entries of the config file) named with `-r`, in
    /// the order given.
    pub fn resource_names(&self) -> Vec<String> {
        self.resources
            .iter()
            .flat_map(|l| l.0.iter().cloned())
            .collect()
    }
}

/// The names one `-r` gives: one, or several separated by commas.
#[derive(Clone, Debug)]
pub struct ResourceList(Vec<String>);

/// Splits `-r`'s value at its commas: a resource name never holds one. A
/// pattern with a colon (`category:qa,ops`, `group:apps,batch`) has a list
/// of its own, so it takes the rest of the value.
fn parse_resource_list(value: &str) -> Result<ResourceList, String> {
    let mut names = Vec::new();
    let mut rest = value;
    loop {
        let (name, after) = match rest.split_once(',') {
            Some((name, _)) if name.contains(':') => (rest, None),
            Some((name, after)) => (name, Some(after)),
            None => (rest, None),
        };
        if name.trim().is_empty() {
            return Err("an empty name in the list; separate names with single commas".into());
        }
        names.push(name.to_owned());
        match after {
            Some(after) => rest = after,
            None => return Ok(ResourceList(names)),
        }
    }
}

/// `--storage`: the values of [`Storage`].
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum StorageArg {
    /// Decoded objects.
    Objects,
    /// Compact objects.
    Compact,
}

impl From<StorageArg> for Storage {
    fn from(arg: StorageArg) -> Storage {
        match arg {
            StorageArg::Objects => Storage::Objects,
            StorageArg::Compact => Storage::Compact,
        }
    }
}

/// `--scope`: the values of [`ScopeFilter`].
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ScopeArg {
    /// Namespaced resources.
    Namespaced,
    /// Cluster-scoped resources.
    Cluster,
}

/// `--shard-key`: the values of [`ShardKey`].
#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum ShardKeyArg {
    /// `metadata.uid`.
    Uid,
    /// `metadata.namespace`.
    Namespace,
}

impl From<ShardKeyArg> for ShardKey {
    fn from(arg: ShardKeyArg) -> ShardKey {
        match arg {
            ShardKeyArg::Uid => ShardKey::Uid,
            ShardKeyArg::Namespace => ShardKey::Namespace,
        }
    }
}

fn parse_shard_arg(s: &str) -> Result<StaticShard, String> {
    s.parse().map_err(|e: VocabularyError| e.to_string())
}

pub fn parse_interval_arg(s: &str) -> Result<Duration, String> {
    match parse_duration_arg(s)? {
        Duration::ZERO => Err("the interval must be longer than 0".into()),
        d => Ok(d),
    }
}

/// The informer set the arguments describe.
pub fn informer_set(sel: &Selection) -> Result<InformerSet, Failure> {
    let mut set = match &sel.config {
        Some(path) => InformerSet::load_file(path).map_err(|e| Failure::usage(e.to_string()))?,
        None => {
            let names = sel.resource_names();
            if names.is_empty() {
                return Err(Failure::usage(
                    "name resources with -r RESOURCE or a config file with -f FILE",
                ));
            }
            let mut indexes = BTreeMap::new();
            for d in &sel.define_index {
                let (name, expr) = d.split_once('=').ok_or_else(|| {
                    Failure::usage(format!("--define-index {d:?}: expected NAME=JMESPATH"))
                })?;
                crate::indexes::check_definable(&format!("--define-index {d:?}"), name)?;
                indexes.insert(name.to_string(), expr.to_string());
            }
            let scope = sel.scope.map(|s| match s {
                ScopeArg::Namespaced => ScopeFilter::Namespaced,
                ScopeArg::Cluster => ScopeFilter::Cluster,
            });
            // -n names the namespaces of the resources named with -r: on a
            // cluster-scoped one they are refused, as in a config file.
            let namespaces = namespaces(sel).unwrap_or_default();
            InformerSet::from_names(&names, indexes, &namespaces, &sel.exclude, scope).map_err(
                |e| match e {
                    DeclarativeError::Pattern { .. } => {
                        Failure::usage(format!("-r {}", error_chain(&e)))
                    }
                    DeclarativeError::FilterWithoutPattern => {
                        Failure::usage(format!("--exclude and --scope: {e}"))
                    }
                    e => Failure::usage(error_chain(&e)),
                },
            )?
        }
    };
    adjust(sel, &mut set)?;
    Ok(set)
}

/// The namespaces of `-n`, if any.
fn namespaces(sel: &Selection) -> Option<Namespaces> {
    (!sel.namespaces.is_empty()).then(|| Namespaces::only(sel.namespaces.iter().cloned()))
}

/// The command line's settings over a config file's: `-r` selecting
/// entries, namespaces, selectors, storage, `--keep`, `--sensitive`, shards.
pub fn adjust(sel: &Selection, set: &mut InformerSet) -> Result<(), Failure> {
    let names = sel.resource_names();
    if sel.config.is_some() && !names.is_empty() {
        set.select(&names).map_err(Failure::usage)?;
    }
    let projection = match sel.keep.as_slice() {
        [] => None,
        paths => Some(Projection::new(paths).map_err(|e| Failure::usage(format!("--keep: {e}")))?),
    };
    let shard_group = match &sel.shard_group {
        Some(name) => Some(ShardGroupSpec {
            name: name.clone(),
            namespace: sel.shard_group_namespace.clone().ok_or_else(|| {
                Failure::usage("--shard-group needs --shard-group-namespace, where its Leases are")
            })?,
            identity: sel.shard_identity.clone(),
            lease_duration: sel.lease_duration.clone(),
            slots: None,
        }),
        None => None,
    };
    let overlay = Overlay {
        // Over a config file, -n restricts the whole set (its defaults);
        // resources named with -r have it already.
        namespaces: sel.config.as_ref().and_then(|_| namespaces(sel)),
        label_selector: sel.label_selector.clone(),
        field_selector: sel.field_selector.clone(),
        metadata_only: sel.metadata_only,
        storage: sel.storage.map(Into::into),
        projection,
        sensitive: sel.sensitive,
        shard: sel.shard,
        shard_key: sel.shard_key.map(Into::into),
        shard_group,
        snapshot: sel
            .snapshot_dir
            .as_ref()
            .map(|dir| SnapshotOptions::new(dir).interval(sel.snapshot_interval)),
    };
    set.overlay(&overlay).map_err(Failure::usage)
}

/// The resource set of `set` (see [`resource_set`]), not started, and its
/// members in the order they were named (the set keeps them by entry and
/// resource).
pub async fn open(
    cluster: &Cluster,
    set: InformerSet,
    sel: &Selection,
    policy: AccessPolicy,
) -> Result<(ResourceSet, Vec<SetMember>), Failure> {
    let order: Vec<String> = set
        .informers
        .iter()
        .map(|i| i.name().to_owned())
        .chain(set.patterns.iter().map(|p| p.name.clone()))
        .collect();
    let resource_set = resource_set(cluster, set, sel, policy).await?;
    let mut members = resource_set.members().await;
    members.sort_by_key(|m| order.iter().position(|n| *n == m.entry));
    Ok((resource_set, members))
}

/// For a command that reads and ends (`get`, `wait`): when every member is
/// served and no pattern may match more, the factory does not follow
/// discovery (no CRD or APIService watch, no periodic re-read): the command
/// makes no request beyond the first read of discovery and its informers'
/// lists and watches. A member not served yet keeps it following, to start
/// once its CRD is installed.
pub fn read_and_end(resource_set: &ResourceSet, members: &[SetMember], patterns: bool) {
    if !patterns
        && !members.is_empty()
        && members.iter().all(|m| m.informer.api_resource().is_some())
    {
        resource_set.factory().follow_discovery(false);
    }
}

/// Starts `resource_set` once `ready` says so, and waits for the caches of
/// its `members` until `stop` (a watch's `--duration`, SIGINT, SIGTERM),
/// saying how it goes on stderr (see [`Progress::wait_for_sync`]); the
/// report goes on with the progress returned. A `one_shot` command fails
/// at the first 403; others wait for access. A set that did not sync is
/// shut down.
pub async fn start_and_wait(
    resource_set: &ResourceSet,
    members: &[SetMember],
    sel: &Selection,
    one_shot: bool,
    ready: impl FnOnce() -> Result<(), Failure>,
    stop: impl std::future::Future<Output = ()>,
) -> Result<Progress, Failure> {
    let mut progress = Progress::new(members, Stderr::process().clone(), sel.progress_interval);
    let synced = async {
        ready()?;
        resource_set.start().map_err(Failure::cluster)?;
        let timeout = (!sel.timeout.is_zero()).then_some(sel.timeout);
        let policy = if one_shot {
            SyncPolicy::GiveUpWhenRefused
        } else {
            SyncPolicy::KeepWaiting
        };
        // The library decides; kdi says what happens meanwhile.
        let verdict = resource_set
            .factory()
            .wait_for_cache_sync_with(timeout.unwrap_or(Duration::MAX), policy);
        progress.wait_for_sync(verdict, timeout, one_shot).await
    };
    let outcome = tokio::select! {
        outcome = synced => outcome,
        () = stop => Err(Failure::stopped("stopped before every cache synced")),
    };
    if outcome.is_err() {
        resource_set.shutdown().await;
    }
    outcome.map(|()| progress)
}

/// The resource set of `set` (not started): discovery is read first, so
/// that a cluster that does not answer says so; a resource not served under
/// `whenNotServed: fail` is a cache that cannot sync (exit 3), any other
/// problem a mistake in what was asked (exit 2). Errors in a config file
/// are located in it.
pub async fn resource_set(
    cluster: &Cluster,
    set: InformerSet,
    sel: &Selection,
    policy: AccessPolicy,
) -> Result<ResourceSet, Failure> {
    let factory = InformerFactory::with_options(cluster.client.clone(), set.defaults.clone());
    factory
        .discovery()
        .refresh()
        .await
        .map_err(|e| cluster.unreachable(&e))?;
    let text = sel
        .config
        .as_ref()
        .and_then(|f| std::fs::read_to_string(f).ok());
    let source = sel.config.as_deref().zip(text.as_deref());
    ResourceSet::in_factory(factory, set, policy, source)
        .await
        .map_err(|e| {
            // Located in the file when there is one; resources named with
            // -r are named by the messages themselves.
            let message = match source {
                Some(_) => e.to_string(),
                None => e
                    .problems()
                    .iter()
                    .map(|c| c.message.as_str())
                    .collect::<Vec<_>>()
                    .join("\n"),
            };
            // The cluster's answer, or a mistake in what was asked.
            match e.reason() {
                "notServed" | "forbidden" => Failure::not_synced(message),
                "failed" => Failure::usage(message),
                _ => Failure::cluster(message),
            }
        })
}

#[cfg(test)]
mod tests {
    use super::parse_resource_list;

    fn names(value: &str) -> Result<Vec<String>, String> {
        parse_resource_list(value).map(|l| l.0)
    }

    #[test]
    fn a_comma_separated_list_names_several_resources() {
        assert_eq!(names("configmaps").unwrap(), ["configmaps"]);
        assert_eq!(
            names("configmaps,deployments.apps,apps/v1/replicasets").unwrap(),
            ["configmaps", "deployments.apps", "apps/v1/replicasets"]
        );
        assert_eq!(names("*.example.com,cm").unwrap(), ["*.example.com", "cm"]);
    }

    #[test]
    fn a_pattern_with_a_colon_keeps_the_rest_of_the_list() {
        assert_eq!(names("category:qa,ops").unwrap(), ["category:qa,ops"]);
        assert_eq!(
            names("configmaps,group:apps,batch").unwrap(),
            ["configmaps", "group:apps,batch"]
        );
    }

    #[test]
    fn an_empty_name_in_the_list_is_refused() {
        for value in [
            "",
            ",configmaps",
            "configmaps,",
            "configmaps,,pods",
            " , pods",
        ] {
            let refused = names(value).expect_err(value);
            assert!(refused.contains("an empty name"), "{value:?}: {refused}");
        }
    }
}
