//! The words every other layer speaks: resource names and keys, scope,
//! object keys, label and field selectors, shard ranges and durations.
//!
//! Nothing here talks to a cluster or holds state; each type is a value
//! with its parser and its rules.
//!
//! ```
//! use std::collections::BTreeMap;
//! use kube_dynamic_informer::vocabulary::{ResourceName, Selector};
//!
//! let name: ResourceName = "deployments.v1.apps".parse()?;
//! assert_eq!(name.to_string(), "deployments.v1.apps");
//! let selector = Selector::parse("app in (web, api), !canary")?;
//! let labels = BTreeMap::from([("app".to_owned(), "web".to_owned())]);
//! assert!(selector.matches(&labels));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Resource names
//!
//! Naming Kubernetes resources: the [`ResourceKey`] that identifies one, and
//! the [`ResourceName`] a user types to find it.
//!
//! Users name resources the way kubectl taught them to: `pods`, `po`, `Pod`,
//! `deployments.apps`, `deployments.v1.apps`, `apps/v1/deployments`,
//! `widgets.example.com`. Most of these leave something out (the group, the
//! version, or whether the word is a plural, a kind or a short name), and only
//! the API server's discovery data can fill it in. So naming happens in two
//! steps:
//!
//! 1. [`ResourceName::parse`] turns the string into a list of
//!    [candidate interpretations](NameCandidate), in priority order, without
//!    talking to a server. The dotted form is syntactically ambiguous:
//!    `widgets.v1alpha1.example.com` is `resource.version.group`, but
//!    `widgets.example.com` is `resource.group`; as kubectl does, the first
//!    reading is preferred when the second segment looks like a Kubernetes
//!    version (`v1`, `v2beta1`, `v1alpha3`) and the other one otherwise.
//! 2. [`ResourceName::resolve`] picks one entry from what discovery reported
//!    ([`KnownResource`]s), trying the candidates in order. Within a candidate
//!    it matches, like kubectl, first the plural or singular name, then a short
//!    name, then the kind, all case-insensitively; a missing version means the
//!    group's preferred version; when several groups match, the core group
//!    wins (so `events` and `Event` are the core ones, as in kubectl), and
//!    otherwise the name is ambiguous and the error lists the choices. An
//!    unknown name gets a few suggestions.
//!
//! Resolved resources are identified by [`ResourceKey`], our own
//! group/version/resource triple: `kube_core::GroupVersionResource` carries a
//! private, serde-defaulted `api_version` field that takes part in equality
//! and hashing, so two values that look equal can differ as map keys.
//!
//! ```
//! use kube_dynamic_informer::vocabulary::{KnownResource, ResourceName};
//!
//! let known = [KnownResource {
//!     group: "apps".into(),
//!     version: "v1".into(),
//!     plural: "deployments".into(),
//!     singular: "deployment".into(),
//!     kind: "Deployment".into(),
//!     short_names: vec!["deploy".into()],
//!     namespaced: true,
//!     preferred_version: true,
//! }];
//! for typed in ["deploy", "Deployment", "deployments.apps", "apps/v1/deployments"] {
//!     let found = ResourceName::parse(typed)?.resolve(&known)?;
//!     assert_eq!(found.key().to_string(), "deployments.v1.apps");
//! }
//! # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
//! ```
//!
//! # Scope
//!
//! Where a resource's objects live and whether the server serves it: the
//! resource's [`Scope`], the [`Namespaces`] a cache covers, and
//! [`ResourceAvailability`].
//!
//! Discovery decides availability
//! ([`crate::factory::discovery::DiscoveryCache::availability`] keeps a channel of it
//! current); options, the list-watch, the reflector and the lister read
//! these. They live here, below all of them, so that each can name them
//! without importing another, and the one rule they share — no namespace
//! restriction on a cluster-scoped resource — is written once
//! ([`Scope::check`]).
//!
//! # Object keys
//!
//! Cache keys of objects, as client-go's `MetaNamespaceKeyFunc` makes them:
//! `namespace/name`, or `name` for cluster-scoped objects. The store, its
//! indexes, listers and the reflector all key objects this one way.
//!
//! # Selectors
//!
//! Kubernetes label selectors, parsed and matched locally.
//!
//! Listers filter the informer's cache by label selector, so the cache has to
//! understand exactly the selectors the API server understands: a selector that
//! the server would reject must be rejected here too, and one it accepts must
//! select the same objects. [`Selector::parse`] follows apimachinery's
//! `labels.Parse` token for token (including its corner cases, such as `in`
//! being an ordinary value outside the operator position and `x in ()` meaning
//! "x is the empty string"), and validates keys and values with the same rules
//! as the API server, so a typo is reported when the selector is declared rather
//! than as an empty list at run time.
//!
//! The grammar, as apimachinery documents it:
//!
//! ```text
//! <selector>     ::= "" | <requirement> | <requirement> "," <selector>
//! <requirement>  ::= KEY                          (the label exists)
//!                  | "!" KEY                      (the label does not exist)
//!                  | KEY ("=" | "==" | "!=") VALUE
//!                  | KEY ("in" | "notin") "(" VALUE ("," VALUE)* ")"
//!                  | KEY (">" | "<") INTEGER
//! ```
//!
//! Spaces, tabs, carriage returns and newlines may surround every token.
//!
//! Parse errors say what was expected, where (byte offset and 1-based
//! column), and what was found instead:
//!
//! ```
//! use kube_dynamic_informer::vocabulary::Selector;
//!
//! let err = Selector::parse("app in (a").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     r#"label selector "app in (a": expected ')' or ',' at column 10"#
//! );
//! ```
//!
//! Field selectors are evaluated by the server only (the set of selectable
//! fields depends on the resource), so there is no field selector type here;
//! [`validate_field_selector`] checks their syntax early instead.
//!
//! ## kube-core and k8s-openapi
//!
//! A [`Selector`] converts into the `kube_core::Selector` that kube-client
//! and kube-runtime take (`ListParams::labels_from`,
//! `watcher::Config::labels_from`) with `TryFrom`, one requirement per
//! `kube_core::Expression`:
//!
//! | Requirement | `kube_core::Expression` |
//! |---|---|
//! | `key=value`, `key==value` | `Equal(key, value)` |
//! | `key!=value` | `NotEqual(key, value)` |
//! | `key in (a,b)` | `In(key, {a, b})` |
//! | `key notin (a,b)` | `NotIn(key, {a, b})` |
//! | `key` | `Exists(key)` |
//! | `!key` | `DoesNotExist(key)` |
//! | `key>N`, `key<N` | none: [`VocabularyError::Inexpressible`] |
//!
//! Both types display the same string, so nothing is lost on the way; a
//! selector with `>` or `<` can still go to the server as a string
//! (`ListParams::labels`).
//!
//! The other way, the structured selectors of object specs convert into a
//! [`Selector`] with `TryFrom` (or [`Selector::from_label_selector`]): our
//! [`LabelSelector`], read from JSON without a Kubernetes version feature, and
//! k8s-openapi's `LabelSelector` from typed objects. `matchLabels` entries
//! become `key=value`, `matchExpressions` take `In`, `NotIn`, `Exists` and
//! `DoesNotExist`, and anything else is an error naming the key and the
//! operator or value at fault.
//!
//! ```
//! use k8s_openapi::apimachinery::pkg::apis::meta::v1::LabelSelector;
//! use kube_dynamic_informer::vocabulary::Selector;
//!
//! let spec = LabelSelector {
//!     match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
//!     ..LabelSelector::default()
//! };
//! let ours = Selector::try_from(&spec)?;
//! let for_kube_client = kube_core::Selector::try_from(&ours)?;
//! assert_eq!(for_kube_client.to_string(), "app=web");
//! # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
//! ```
//!
//! # Shard ranges
//!
//! Sharding: one resource's cache split across replicas, each keeping the
//! objects whose key hashes into its ranges.
//!
//! An object belongs to a shard by the 64-bit FNV-1a hash of its
//! `metadata.uid` (or `metadata.namespace`, [`ShardKey`]) — the hash the API
//! server's sharded list and watch use (`ShardedListAndWatch`, alpha since
//! Kubernetes 1.36). A [`ShardSelector`] is that key and a set of hash
//! ranges; it is sent as the `shardSelector` parameter of every list and
//! watch, written as the server reads it:
//!
//! ```text
//! shardRange(object.metadata.uid, '0x0000000000000000', '0x4000000000000000') || shardRange(...)
//! ```
//!
//! A server that applied it echoes it in the list's `metadata.shardInfo` and
//! sends only that part. A server that did not (the feature gate off, or an
//! older release) sends everything; the informer then drops the other
//! objects itself with the same hash, so the cache is the same either way,
//! and its [stats](crate::informer::reflector::ReflectorStats::shard_filtering) say
//! which happened.
//!
//! Two ways to choose the ranges:
//!
//! - **Static**: [`StaticShard`] — shard *I* of *N* equal parts of the hash
//!   space (`--shard 1/4` in `kdi`, `shard: 1/4` in a config file).
//! - **Dynamic**: a [`ShardGroup`](crate::declarative::shard_group::ShardGroup) — members coordinate through
//!   `coordination.k8s.io/v1` Leases and share a fixed number of slots; an
//!   informer of a member keeps the slots its member holds, and follows them
//!   as members join and leave. See [`shard_group`](crate::declarative) for the guarantees.
//!
//! # Durations
//!
//! Go-style durations (`30s`, `10m`, `1h30m`, `250ms`, `0`), as Kubernetes
//! writes them (`metav1.Duration`), for options and config files.
//!
//! Parsing is [`kube_core::Duration`]'s, behind a guard: kube-core's parser
//! panics on numbers no `Duration` can hold (`1e400h`, `nan` hours), and a
//! config file must never take the process down.

/// Writes `#[must_use]` builder methods that each set one field:
/// `name(arg: Type) => value;` sets field `name` to `value`.
macro_rules! setters {
    ($($(#[$attr:meta])* $name:ident($arg:ident: $ty:ty) => $value:expr;)*) => {$(
        $(#[$attr])*
        #[must_use]
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$name = $value;
            self
        }
    )*};
    (in $part:ident: $($(#[$attr:meta])* $name:ident($arg:ident: $ty:ty) => $value:expr;)*) => {$(
        $(#[$attr])*
        #[must_use]
        pub fn $name(mut self, $arg: $ty) -> Self {
            self.$part.$name = $value;
            self
        }
    )*};
}
pub(crate) use setters;

pub(crate) mod duration;
pub(crate) mod error;
pub(crate) mod error_chain;
pub(crate) mod object_key;
pub(crate) mod resource;
pub(crate) mod scope;
pub(crate) mod selector;
pub(crate) mod shard;

pub use duration::{format_duration, parse_duration};
pub use error::VocabularyError;
pub use error_chain::error_chain;
pub use object_key::{key_from_parts, object_key};
pub use resource::{KnownResource, NameCandidate, ResourceKey, ResourceName};
pub use scope::{Namespaces, ResourceAvailability, Scope};
pub use selector::{
    LabelSelector, LabelSelectorRequirement, Labels, Operator, Requirement, Selector,
    validate_field_selector,
};
pub use shard::{
    HASH_SPACE_END, Handover, HandoverFollower, Settlement, ShardAssignment, ShardFiltering,
    ShardKey, ShardRange, ShardSelector, ShardSource, StaticShard, fnv1a_64,
};
