//! Indexed, shared informers for any Kubernetes resource chosen at run time.
//!
//! `kube-dynamic-informer` keeps an in-memory, indexed, always-current copy of
//! any Kubernetes resource — built-in or custom — named at run time, with no
//! generated types. Objects are [`kube_core::DynamicObject`]s, indexes are
//! JMESPath expressions (or Rust closures), and one informer per resource
//! serves any number of event handlers.
//!
//! # The factory
//!
//! An [`InformerFactory`] turns resource names — `deploy`, `Deployment`,
//! `deployments.apps`, `apps/v1/deployments`, `widgets.v1.example.com` —
//! into shared informers through API discovery, one per resource and
//! options, each with its [`Lister`]. It follows CRDs as they are installed
//! and deleted, and says per resource why a cache is not synced (403, not
//! served, timed out). Run the same thing against your cluster with
//! `cargo run --example watch_crd_by_name -- deploy`.
//!
//! ```no_run
//! use std::time::Duration;
//! use kube_dynamic_informer::cache::IndexFn;
//! use kube_dynamic_informer::informer::Event;
//! use kube_dynamic_informer::{InformerFactory, InformerOptions};
//!
//! #[tokio::main]
//! async fn main() -> Result<(), Box<dyn std::error::Error>> {
//!     let client = kube_client::Client::try_default().await?;
//!     let factory = InformerFactory::with_options(
//!         client,
//!         InformerOptions::default().strip_managed_fields(),
//!     );
//!     // Any resource, by any name kubectl accepts.
//!     let pods = factory.for_resource("po").await?;
//!     pods.informer()
//!         .add_index("node", IndexFn::jmespath("node", "spec.nodeName")?)?;
//!     pods.informer().add_handler(|e: Event| {
//!         println!("{} {:?}", e.kind(), e.object().name());
//!     });
//!     // Only metadata, for a resource whose bulk is in its data.
//!     let secrets = factory
//!         .for_resource_with("secrets", |o| o.metadata_only(true))
//!         .await?;
//!
//!     factory.start()?;
//!     let report = factory.wait_for_cache_sync(Duration::from_secs(30)).await;
//!     for why in report.failures() {
//!         eprintln!("not synced: {why}"); // e.g. "pods.v1: forbidden (403)..."
//!     }
//!     let web = pods.lister().namespace("shop")?.list("app=web,tier in (front,edge)")?;
//!     let on_node = pods.lister().by_index("node", "node-1")?;
//!     println!(
//!         "{} web pods, {} on node-1, {} secrets",
//!         web.len(),
//!         on_node.len(),
//!         secrets.lister().list_all().len()
//!     );
//!     factory.shutdown().await;
//!     Ok(())
//! }
//! ```
//!
//! # Rules instead of lists
//!
//! A [`factory::ResourcePattern`] designates resources by group glob
//! (`*.example.com`), category (`qa`, `all`) or origin (defined by a CRD),
//! with `include`/`exclude` and a scope filter;
//! [`InformerFactory::for_pattern`] makes informers for what it selects now.
//! A [`declarative::ResourceSet`] runs the informers and patterns of a
//! config file and keeps them right while they run: it follows discovery
//! (CRDs that start or stop matching), applies a changed config without
//! touching what did not change, and can leave out what the user may not
//! watch ([`factory::AccessCheck`]) until access is granted.
//!
//! # Waiting for a state
//!
//! A [`informer::Wait`] waits until a [`cache::Condition`] (a JMESPath
//! expression that is true or false, or one of `kubectl wait`'s forms) is
//! true of all, any or none of some objects — one by name, or those a
//! selector, a namespace or an index value picks — of one or several
//! informers, or until they are deleted; answered from the caches as
//! events arrive, and, when the time runs out, with each object that does
//! not hold yet and why. kube-runtime's `await_condition` does this for one
//! object of a typed resource; `kdi wait` does it from the command line.
//!
//! ```no_run
//! # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
//! use std::time::Duration;
//! use kube_dynamic_informer::informer::{Objects, WaitFor};
//!
//! let deployments = factory.for_resource("deployments.apps").await?;
//! factory.start()?;
//! let ready = WaitFor::condition("status.readyReplicas == spec.replicas")?;
//! deployments.wait_until("shop/web", ready, Duration::from_secs(120)).await?;
//! deployments.wait_until(Objects::all(), WaitFor::parse("condition=Available")?, Duration::from_secs(120)).await?;
//! # Ok(()) }
//! ```
//!
//! # Which events a handler wants
//!
//! A handler may declare the objects it wants (a [`cache::Condition`]) and
//! the updates it cares about (a [`cache::ChangePredicate`]: `spec`,
//! `metadata.generation`, `metadata.labels`, any expression whose value
//! must change), in code ([`informer::HandlerOptions::filter`],
//! [`informer::HandlerOptions::changes`]), in a config file (`filter:` and
//! `changes:` of an entry) or with `kdi watch --filter/--changes`. An
//! object that starts or stops matching arrives as an Add or a Delete, as
//! client-go's `FilteringResourceEventHandler` does; the rest never reaches
//! the handler's queue (see the [informer docs](informer#filters-and-change-predicates)).
//!
//! ```no_run
//! # fn demo(deployments: kube_dynamic_informer::InformerHandle) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_dynamic_informer::prelude::*;
//!
//! let options = HandlerOptions::default()
//!     .filter(Condition::new("metadata.labels.tier == 'web'")?)
//!     .changes(ChangePredicate::generation());
//! deployments.informer().add_handler_with(|e: Event| println!("{} {:?}", e.kind(), e.object().name()), options);
//! # Ok(()) }
//! ```
//!
//! # For client-go users
//!
//! What client-go calls a dynamic shared informer factory, handing out a
//! generic informer and lister per resource, is here under these names
//! (searching these docs for the client-go name finds ours):
//!
//! | client-go | here |
//! |---|---|
//! | `dynamicinformer.DynamicSharedInformerFactory` | [`InformerFactory`] |
//! | `informers.GenericInformer` (`ForResource`) | [`InformerHandle`] ([`InformerFactory::for_resource`]) |
//! | `cache.GenericLister` | [`Lister`] (and [`cache::NamespaceLister`]) |
//! | `cache.SharedIndexInformer` | [`informer::SharedInformer`] |
//! | `cache.NewInformer` / `NewIndexerInformer` | [`informer::Informer`] (one handler, no sharing) |
//! | `cache.Indexers`, `cache.IndexFunc` | [`cache::IndexFn`], added with [`informer::SharedInformer::add_index`] |
//! | `cache.ResourceEventHandler` (`ResourceEventHandlerFuncs`) | [`informer::EventHandler`] (any `Fn(Event)`), receiving [`informer::Event`] |
//! | `cache.WaitForCacheSync` | [`InformerFactory::wait_for_cache_sync`] (a [`factory::CacheSyncReport`]: why not, per resource), [`informer::SharedInformer::wait_for_sync`] |
//! | `HasSynced` | [`informer::SharedInformer::has_synced`] |
//! | `cache.Store`, `cache.Indexer` | [`cache::Store`] (read-only; the informer writes it) |
//! | `cache.MetaNamespaceKeyFunc` | [`vocabulary::object_key`] |
//! | `cache.DeletedFinalStateUnknown` | [`informer::Event::Delete`] with `final_state_unknown: true` |
//! | `cache.FilteringResourceEventHandler` | [`informer::HandlerOptions::filter`] |
//! | `workqueue.TypedRateLimitingInterface` | [`reconcile::WorkQueue`] of [`reconcile::ObjectRef`] keys |
//! | `workqueue.DefaultControllerRateLimiter` | [`reconcile::default_controller`] ([`reconcile::ItemExponentialBackoff`], [`reconcile::TokenBucket`], [`reconcile::MaxOf`]) |
//! | controller-runtime's `Reconciler` and `builder` (`For`, `Owns`, `Watches`) | [`reconcile::Controller`] (`watch`, `owns`, `watch_set`) running a function of a [`reconcile::Context`] that answers a [`reconcile::Action`] |
//!
//! # The layers
//!
//! Each module is one layer of the library and imports only the ones above
//! it in this list:
//!
//! | module | what it holds | its error |
//! |---|---|---|
//! | [`vocabulary`] | resource names and keys, scope, selectors, shard ranges, durations | [`vocabulary::VocabularyError`] |
//! | [`wire`] | listing and watching, decoding | [`wire::ListWatchError`] |
//! | [`cache`] | the store and its indexes, conditions, change predicates, compact storage, projections, transforms, listers | [`cache::CacheError`] |
//! | [`informer`] | the shared informer, its handlers, the reflector, options, status | [`informer::InformerError`] |
//! | [`factory`] | the informer factory, discovery, resource patterns, access checks | [`factory::FactoryError`] |
//! | [`declarative`] | config files, resource sets, cluster sets, shard groups | [`declarative::DeclarativeError`] |
//! | [`reconcile`] | work queues of object keys, rate limiters for retries, controllers running reconcile functions over them | [`reconcile::ReconcileError`] |
//! | `serve` (feature `serve`) | the caches served through the Kubernetes API (`kdi serve`) | `serve::ServeError` |
//!
//! Each layer has one error type, whose variants name what was refused and
//! why; an error of a layer above holds the one below it as its source.
//! [`prelude`] imports the names most programs use, with the errors of the
//! cache, the informer and the factory.
//!
//! # Notes
//!
//! ## What metadata-only mode saves
//!
//! Measured on 2,000 ConfigMaps with 2 KiB of data each, against the bundled
//! kube-apiserver v1.37.2 (JSON bodies of lists in pages of 500; cache size
//! as the serialised JSON of the cached objects):
//!
//! | | list traffic | cache |
//! |---|---:|---:|
//! | full objects | 4,883 KiB | 4,952 KiB |
//! | full, `managedFields` stripped | 4,883 KiB | 4,513 KiB (91 %) |
//! | metadata only | 959 KiB (20 %) | 909 KiB (18 %) |
//! | metadata only, `managedFields` stripped | 959 KiB (20 %) | 470 KiB (9.5 %) |
//!
//! Stripping `managedFields` cuts memory but not traffic; metadata-only mode
//! cuts both. Reproduce with
//! `cargo test --test it metadata_only_saving -- --ignored --nocapture`.
#![deny(missing_docs)]
#![forbid(unsafe_code)]

pub mod cache;
pub mod declarative;
pub mod factory;
pub mod informer;
pub mod reconcile;
#[cfg(feature = "serve")]
pub mod serve;
pub mod vocabulary;
pub mod wire;

pub use cache::Lister;
pub use factory::{DiscoveryCache, InformerFactory, InformerHandle};
pub use informer::InformerOptions;

/// The names most programs use, in one import:
/// `use kube_dynamic_informer::prelude::*;`.
pub mod prelude {
    pub use crate::cache::CacheError;
    pub use crate::cache::change::ChangePredicate;
    pub use crate::cache::condition::Condition;
    pub use crate::cache::index::IndexFn;
    pub use crate::cache::lister::Lister;
    pub use crate::cache::projection::Projection;
    pub use crate::cache::store::{CachedObject, Storage};
    pub use crate::cache::transform::Transform;
    pub use crate::factory::discovery::DiscoveryCache;
    pub use crate::factory::{CacheSyncReport, FactoryError, InformerFactory, InformerHandle};
    pub use crate::informer::options::InformerOptions;
    pub use crate::informer::{
        Event, EventHandler, HandlerOptions, InformerError, InformerStatus, Objects,
        SharedInformer, SnapshotOptions, Wait, WaitFor,
    };
    pub use crate::reconcile::{Action, Context, Controller, ObjectRef, ReconcileError};
    pub use crate::vocabulary::resource::ResourceKey;
    pub use crate::vocabulary::scope::{Namespaces, Scope};
    pub use kube_core::{ApiResource, DynamicObject};
}
