//! The declarative layer: informers described rather than built — config
//! files ([`InformerSet`]), resource sets that keep a file's informers
//! running as the file and the cluster change ([`ResourceSet`]), cluster
//! sets over many clusters ([`ClusterSet`]), and shard groups that split a
//! resource between the members of a deployment ([`ShardGroup`]).
//!
//! # Config files
//!
//! Declarative informers: a YAML or JSON file that lists what to watch and
//! how to index it.
//!
//! Generic tools (dashboards, policy engines, inventories) are configured,
//! not recompiled: the resources they watch and the indexes they query come
//! from a file. The file is versioned and strict, and its JSON Schema
//! (`schemas/informer-set.schema.json`, generated from the types here) lets
//! editors check it as it is typed.
//!
//! ```yaml
//! apiVersion: kube-dynamic-informer.io/v1alpha1
//! kind: InformerSet
//! defaults:
//!   stripManagedFields: true
//!   resync: 10m
//! informers:
//!   - resource: pods
//!     namespaces: [shop]
//!     labelSelector: "app in (web, api)"
//!     indexes:
//!       node: spec.nodeName
//!       labelKeys: keys(metadata.labels)
//!   - resource: widgets.example.com
//!     whenNotServed: wait
//!     projection:
//!       - spec.color
//!       - status.conditions
//!       - metadata.labels["app.kubernetes.io/name"]
//! ```
//!
//! An informer's options are the fields of [`InformerOptions`](crate::informer::InformerOptions), in camelCase.
//! `projection` lists the fields each cached object keeps (see
//! [`Projection`](crate::cache::Projection) for the paths and what is always kept); in a flow list
//! (`projection: [spec.color, metadata.labels]`) a path with brackets is
//! quoted, since `[` and `]` delimit the list there.
//!
//! Loading is strict: unknown fields, duplicate informer names or index
//! names, bad selectors, bad durations, bad projection paths and bad
//! JMESPath expressions are all rejected, and **every** problem in the file
//! is reported at once, each with file, line and column and the offending
//! value ([`DeclarativeError`]).
//!
//! # Resource sets
//!
//! Resource sets: the informers a config declares, kept in step with the
//! cluster's discovery and with the config itself while they run.
//!
//! A [`ResourceSet`] runs the informers of an [`InformerSet`] — those named
//! one by one and those its [patterns](crate::factory) select — in one
//! [`InformerFactory`](crate::factory::InformerFactory), and keeps them right as things change:
//!
//! - **Discovery**: when a CRD starts to match a pattern (it is installed,
//!   or a new served version becomes the preferred one), its informer is
//!   created and started; when one stops matching or disappears, its
//!   informer is stopped and its cache freed. Each change is a [`SetEvent`].
//! - **Config**: [`ResourceSet::apply`] (or [`reload_file`](ResourceSet::reload_file))
//!   applies a new config to the running set. An informer whose entry,
//!   resource and options are unchanged keeps running, with its cache and
//!   watch connection; indexes added to it are added in place. An informer
//!   whose options changed (or lost or changed an index) is replaced;
//!   one no longer declared is stopped. A config with any error — in the
//!   file, or a resource it names that the cluster refuses — is refused
//!   whole, every error located, and the running set is left as it was.
//! - **Access** (optional, [`AccessPolicy`]): informers for resources the
//!   user may not list and watch are not started but reported, and checked
//!   again periodically; they start once allowed.
//!
//! The result of the last reload (time, content hash, success, errors) is
//! [`ResourceSet::last_reload`], for status pages and metrics.
//!
//! ## Example
//!
//! ```no_run
//! # async fn demo(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_dynamic_informer::declarative::InformerSet;
//! use kube_dynamic_informer::declarative::{ResourceSet, SetEvent};
//!
//! let set = ResourceSet::from_file(client, "examples/configs/example-crds-pattern.yaml").await?;
//! let (members, mut events) = set.subscribe().await;
//! for m in &members {
//!     println!("watching {} for {}", m.resource, m.entry);
//! }
//! set.start()?;
//! // Later, when the file changed:
//! match set.reload_file("examples/configs/example-crds-pattern.yaml").await {
//!     Ok(done) => println!("reloaded: {} added, {} removed", done.added, done.removed),
//!     Err(refused) => eprintln!("{refused}"), // every problem, with file:line:column
//! }
//! while let Some(event) = events.recv().await {
//!     match event {
//!         SetEvent::Added(m) => println!("now watching {}", m.resource),
//!         SetEvent::Removed { member, reason } => println!("stopped {}: {reason}", member.resource),
//!         _ => {}
//!     }
//! }
//! # Ok(()) }
//! ```
//!
//! # Cluster sets
//!
//! Many clusters from one process: the same resources watched in every
//! cluster of a set, with one merged view.
//!
//! A [`ClusterSet`] holds named clusters, each with its own client,
//! [`DiscoveryCache`](crate::factory::discovery::DiscoveryCache) and
//! [`InformerFactory`](crate::factory::InformerFactory), all sharing the process's runtime and handler pool.
//! Resources are named once ([`ClusterSet::add_resource`]) and resolved in
//! each cluster through that cluster's discovery: a CRD installed in one
//! cluster and not in another is synced in the first and
//! [`Pending`](crate::informer::InformerStatus::Pending) in the second, and
//! follows the CRD in each as it comes and goes.
//!
//! ## One cluster never holds up the others
//!
//! Resolving a resource reads discovery, which needs the cluster. Every
//! cluster therefore resolves its resources in a task of its own, retried
//! with backoff while the cluster cannot be reached; nothing in the set
//! waits for one cluster before serving another. A cluster that cannot be
//! reached is reported as [`DeclarativeError::Unreachable`] by
//! [`ClusterSet::wait_for_cache_sync`] and as
//! [`ResourceState::Unresolved`] by [`ClusterSet::status`], and starts
//! serving as soon as it answers.
//!
//! ## The merged view
//!
//! - Handlers added with [`ClusterSet::add_handler`] receive a
//!   [`ClusterEvent`] — the event and the cluster it comes from — for every
//!   resource of every cluster, present and future.
//! - [`ClusterSet::lister`] reads one resource across every cluster
//!   ([`ClusterLister`]): keys carry the cluster (`cluster/namespace/name`),
//!   [`ClusterLister::by_index`] queries the index in every cluster, and
//!   [`ClusterLister::cluster`] gives one cluster's own [`Lister`](crate::cache::lister::Lister).
//! - [`ClusterSet::wait_for_cache_sync`] answers once per cluster and
//!   resource, with the reason for each failure ([`ClusterSyncReport`]).
//!
//! Clusters are added and removed at any time. [`ClusterSet::remove_cluster`]
//! stops the cluster's informers, drops the set's hold on their caches, and
//! no handler call for that cluster starts afterwards.
//!
//! ## Credentials
//!
//! Each cluster's [`kube_client::Config`] is used as it is (exec plugins,
//! client certificates, tokens). The set prints no part of it: errors,
//! statuses and logs carry the cluster's name, and the client's error text,
//! which names the server but never a credential.
//!
//! ## Example
//!
//! ```no_run
//! # async fn demo() -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use kube_client::config::Kubeconfig;
//! use kube_dynamic_informer::declarative::{ClusterSet, clusters_from_contexts};
//! use kube_dynamic_informer::InformerOptions;
//!
//! let set = ClusterSet::new(InformerOptions::default().strip_managed_fields());
//! set.add_resource("deploy");
//! set.add_resource("widgets.example.com");
//! let kubeconfig = Kubeconfig::read()?;
//! for (name, config) in clusters_from_contexts(&kubeconfig, &["east".into(), "west".into()]).await? {
//!     set.add_cluster(name, config)?;
//! }
//! set.add_handler(|e| println!("{} {} {:?}", e.cluster, e.event.kind(), e.event.object().name()));
//! set.start()?;
//! let report = set.wait_for_cache_sync(Duration::from_secs(30)).await;
//! for failure in report.failures() {
//!     eprintln!("{failure}");
//! }
//! for object in set.lister("deploy").list_all() {
//!     println!("{}", object.key());
//! }
//! set.shutdown().await;
//! # Ok(()) }
//! ```
//!
//! # Shard groups
//!
//! [`ShardGroup`]: replicas that split resources between them, coordinated
//! by `coordination.k8s.io/v1` Leases.
//!
//! The hash space is cut into a fixed number of **slots** (32 by default,
//! the same for every member). Each member
//!
//! - holds a **member Lease** `<group>-member-<hash of identity>`, labelled
//!   with the group, renewed every third of the lease duration;
//! - reads the group's Leases at each renewal — and at once when its watch
//!   of them shows another member joining or leaving, or a slot released —
//!   and computes, from the live members, which slots are its own:
//!   **rendezvous hashing** (each slot goes to the member with the highest
//!   hash of member and slot), so a member joining or leaving moves about
//!   1/N of the slots and nothing else;
//! - takes a slot by writing its identity into the **slot Lease**
//!   `<group>-slot-<n>` — only when that Lease is free (released, or never
//!   created) or expired — and renews it while the slot stays its own; a slot
//!   that is no longer its own is given up first and released after.
//!
//! Every write is conditional on the resourceVersion read, so two members
//! racing for a slot cannot both win. Liveness is judged by the reader's
//! clock (a Lease whose resourceVersion has not changed for a lease
//! duration, as seen here, is expired), never by comparing clocks.
//!
//! ## Guarantees
//!
//! - **No two live members hold a slot at once.** A member gives up a slot
//!   (its informers drop the slot's objects) once its last successful
//!   renewal of it is two thirds of a lease duration old; another member
//!   takes it only after seeing the Lease unchanged for a whole lease
//!   duration. Clocks need not agree, only run at about the same rate, and
//!   a member's task must run within a third of a lease duration of its
//!   deadline (a process stalled longer than that — swapped out, stopped —
//!   can still serve a slot another member has taken).
//! - **No slot stays unheld for longer than a lease duration**, plus the
//!   request times: a holder that stops renewing (it crashed, or is cut off)
//!   gives its slots up two thirds of a lease duration after its last
//!   renewal, and the others take them after seeing its Leases unchanged
//!   for a lease duration, at their next pass — within a lease duration and
//!   two renew intervals of that last renewal (5 s of a 3 s lease in the
//!   tests). A released slot (a member leaving, or no longer the slot's
//!   owner) is taken as soon as its new owner's watch shows the release,
//!   at the latest at its next pass.
//!   The new holder's informers then list the slot: one sync more.
//! - A member that cannot renew its Leases (the API server unreachable, its
//!   permissions revoked) gives up every slot by the deadline above and
//!   reports [`MemberStatus::LostLease`]; it takes slots again once it can
//!   renew.
//! - **Handlers of two live members never hold an object at once.** A
//!   member giving a slot up (to a joining member, or leaving) first
//!   removes the slot's objects from its informers' caches, waits until
//!   each of their handlers has received the `leftShard` deletes, and only
//!   then releases the Lease; the new holder lists the slot afterwards. A
//!   handler stuck for a renew interval (a third of the lease duration)
//!   does not hold the group up: the slot is released anyway and
//!   [`MemberStatus::Active`]'s `late_handover` says so. A member that dies
//!   or is cut off has no handlers left to tell; its slots move once its
//!   Leases expire, as above.
//!
//! A member that joins a running group starts with the slots no one holds:
//! its informers sync with those (often none), and receive the others'
//! objects as adds (`entered_shard`) once their holders release them.
//!
//! ## Permissions
//!
//! A member needs, in the group's namespace, the Role [`rbac_role`] prints
//! (`kdi shard-role -n NAMESPACE`), bound to its service account:
//!
//! ```yaml
//! apiVersion: rbac.authorization.k8s.io/v1
//! kind: Role
//! metadata:
//!   name: kube-dynamic-informer-shard-group
//!   namespace: NAMESPACE
//! rules:
//!   - apiGroups: [coordination.k8s.io]
//!     resources: [leases]
//!     verbs: [get, list, watch, create, update, delete]
//! ```
//!
//! and, as any informer, `list` and `watch` on the resources it caches.
//!
//! A member's informers follow its slots: objects of a slot it gives up
//! reach handlers as deletes with `left_shard = true` (nothing was deleted
//! on the server), objects of a slot it takes as adds with
//! `entered_shard = true` (see [`Event`](crate::informer::Event)).

#[cfg(feature = "config")]
pub(crate) mod cluster_set;
#[cfg(feature = "config")]
pub(crate) mod config;
pub(crate) mod error;
#[cfg(feature = "config")]
pub(crate) mod resource_set;
pub(crate) mod shard_group;
pub(crate) mod sources;

#[cfg(feature = "config")]
pub use cluster_set::{
    ClusterEvent, ClusterLister, ClusterObject, ClusterSet, ClusterSyncReport, ClusterSyncResult,
    ResourceState, RetryDelays,
};
#[cfg(feature = "config")]
pub use config::{
    API_VERSION, ClustersConfig, ConfigProblem, InformerSet, InformerSpec, KIND, MAX_CHANGES,
    MAX_INDEXES, Overlay, PatternSpec, Position, ShardGroupSpec, json_schema, pointer_path,
    position_of,
};
pub use error::DeclarativeError;
#[cfg(feature = "config")]
pub use resource_set::{
    AccessPolicy, ReloadStatus, ReloadTriggers, Removal, ResourceSet, SetEvent, SetMember,
    SetStatus, SkippedMember,
};
pub use shard_group::{
    MAX_SLOTS, MemberStatus, SHARD_GROUP_LABEL, SHARD_ROLE_LABEL, ShardGroup, ShardGroupConfig,
    rbac_role, rendezvous,
};
pub use sources::{
    all_contexts, clusters_from_all_contexts, clusters_from_contexts, clusters_from_dir,
};
