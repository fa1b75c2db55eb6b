//! The cache: the [`Store`] and its indexes ([`IndexFn`]), conditions over
//! its objects ([`Condition`]) and over their changes
//! ([`ChangePredicate`]), the compact form
//! objects can be kept in ([`Storage`]), the [`Projection`] and
//! [`Transform`] applied before an object is cached, and the [`Lister`]
//! that reads it by label selector, namespace and index.
//!
//! # The store
//!
//! The informer's cache: a thread-safe key → object map with named indexes.
//!
//! ## Reader and writer
//!
//! As in kube-runtime, the cache is split in two handles over the same data:
//!
//! - [`StoreWriter`] is the only handle that changes objects. It is not
//!   `Clone`; the informer's task owns it and applies watch events and
//!   relists to it.
//! - [`Store`] is a cheap `Clone` read handle handed to everybody else. It
//!   gives out [`CachedObject`] handles, so nobody can modify a cached object
//!   (client-go returns mutable pointers and its docs have to ask users not
//!   to write through them). The one thing a reader may change is the set of
//!   indexes ([`Store::add_index`]), which never changes an object.
//!
//! ## Storage
//!
//! With [`Storage::Compact`] (the default) the store holds each object in
//! the compact form of [`crate::cache`] — a fraction of the memory — next to
//! a `Weak` of the decoded object it was built from (the one event handlers
//! got): readers get that same `Arc` while anyone still holds it, and
//! otherwise a decode of their own (microseconds an object), not
//! remembered, so that it is freed whole when they drop it. With
//! [`Storage::Objects`] every object is held once, in an `Arc`; the store,
//! every event handler and every query result share it.
//!
//! Every read — [`Store::get`], [`Store::list_all`], [`Store::by_index`],
//! [`Lister::list`] and the namespace views — returns [`CachedObject`]s:
//! handles (a pointer copy in either storage) that read an object's fields,
//! a JSON pointer or its JSON text in place, and give the whole
//! `DynamicObject` on demand ([`CachedObject::object`]). No read decodes
//! the cache: a program decodes the objects it asks for, one at a time. A
//! late handler's replay and a resync queue handles too, and decode each
//! object just before its handler runs. BENCHMARKS.md measures both modes
//! side by side.
//!
//! ## Lists
//!
//! A list arrives page by page ([`StoreWriter::begin_list`],
//! [`StoreWriter::list_page`], [`StoreWriter::end_list`]): into an empty
//! cache each page is applied as it comes, so a first sync never holds the
//! whole list; a relist of a filled cache is applied at once at its end,
//! keeping meanwhile only the keys of the unchanged objects and the changed
//! objects, never a second copy of the cache.
//!
//! ## Keys
//!
//! An object's key is `namespace/name`, or `name` for a cluster-scoped object
//! (client-go's `MetaNamespaceKeyFunc`); see [`object_key`](crate::vocabulary::object_key) and
//! [`key_from_parts`](crate::vocabulary::key_from_parts).
//!
//! ## Indexes
//!
//! A named index files each object under zero or more string values computed
//! by an [`IndexFn`] (many-to-many: one pod can be under each of its label
//! keys, and one value holds many pods). The [`NAMESPACE_INDEX`] is always
//! there. Indexes can be added at any time; existing objects are indexed at
//! once. When an index function fails on an object — an expression that
//! returns an object, a closure returning an error — that object is left out
//! of that index, the index's failure counter ([`Store::index_failures`]) is
//! incremented and a `tracing` warning names the index, the object and the
//! error. Nothing in the store panics.
//!
//! ### Memory use
//!
//! Each key is one `Arc<str>` allocation shared by the object map and every
//! index entry that refers to it; each distinct index value is one `Arc<str>`
//! shared by the value map and the objects filed under it. A value held by a
//! single object costs no map allocation. Objects are never copied.
//!
//! An index entry holds the object's `Arc` next to its key, so
//! [`Store::by_index`] clones pointers it already holds instead of looking
//! each key up again in the object map. That pointer costs 8 bytes a bucket in
//! the map of a value held by several objects, and nothing for a value held by
//! one. Updates pay for it too: an update that leaves an object's index values
//! alone still swaps the `Arc` in each index entry of that object.
//!
//! ### Locking
//!
//! One `parking_lot::RwLock` guards the data: reads run in parallel, and every
//! read method takes the lock once, so a result (for instance [`Store::list_all`])
//! is a consistent snapshot with respect to writer operations. Index functions
//! are evaluated *before* the write lock is taken; the lock is held only to
//! move prepared values into the maps. Each object's JMESPath indexes are
//! evaluated against one conversion of the object (see [`IndexInput`]).
//!
//! ## Example
//!
//! ```
//! use std::sync::Arc;
//! use kube_core::DynamicObject;
//! use kube_dynamic_informer::cache::IndexFn;
//! use kube_dynamic_informer::cache::StoreWriter;
//!
//! let pod = |ns: &str, name: &str, node: &str| -> Arc<DynamicObject> {
//!     Arc::new(serde_json::from_value(serde_json::json!({
//!         "apiVersion": "v1", "kind": "Pod",
//!         "metadata": { "name": name, "namespace": ns, "resourceVersion": "1" },
//!         "spec": { "nodeName": node }
//!     })).unwrap())
//! };
//!
//! let mut writer = StoreWriter::new();
//! let store = writer.reader(); // Clone + Send + Sync, hand it out freely
//! store.add_index("by-node", IndexFn::jmespath("by-node", "spec.nodeName")?)?;
//!
//! writer.upsert(pod("shop", "web-0", "node-1"));
//! writer.upsert(pod("shop", "web-1", "node-2"));
//! writer.upsert(pod("kube-system", "dns-0", "node-1"));
//!
//! let on_node_1 = store.index_keys("by-node", "node-1")?;
//! assert_eq!(on_node_1.len(), 2);
//! assert_eq!(store.by_index("namespace", "shop")?.len(), 2);
//! assert!(store.get("shop/web-0").is_some());
//!
//! // A relist: afterwards the store holds exactly these objects.
//! let outcome = writer.replace(vec![pod("shop", "web-0", "node-1")]);
//! assert_eq!((outcome.added.len(), outcome.updated.len(), outcome.deleted.len(), outcome.unchanged), (0, 0, 2, 1));
//! assert_eq!(store.keys(), ["shop/web-0"]);
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Indexes
//!
//! Index functions: what an object is filed under in a named index.
//!
//! An index maps each cached object to **zero or more** string values
//! (many-to-many, as in client-go: an index over label keys files a pod under
//! every one of its label keys). An [`IndexFn`] computes those values. There
//! are three kinds:
//!
//! - a **JMESPath expression** ([`IndexFn::jmespath`]), so indexes can be
//!   declared as strings in a configuration file;
//! - a **Rust closure** ([`IndexFn::closure`], [`IndexFn::closure_infallible`])
//!   for anything an expression cannot say;
//! - the built-in **namespace** index ([`IndexFn::namespace`]), present in every
//!   store under the name [`NAMESPACE_INDEX`].
//!
//! ## How a result becomes index values
//!
//! | expression result | index values |
//! |---|---|
//! | string | that string |
//! | number | its one spelling (below): `3`, `1.5` |
//! | boolean | `true` or `false` |
//! | array | one value per element; nested arrays are flattened, `null` elements skipped |
//! | `null`, missing field, empty array | none: the object is not in that index |
//! | object (also inside an array) | an [`CacheError::IndexEvaluation`] for that object |
//!
//! Values are returned in result order and may repeat; the store keeps each
//! distinct value once per object.
//!
//! An object's values depend only on that object and the expression: they
//! are what the JMESPath specification gives on the object (as the `jmespath`
//! crate evaluates it, mapped as above), never on which other indexes were
//! evaluated on the same [`IndexInput`] before.
//!
//! ### Numbers
//!
//! JSON and JMESPath have one kind of number, so `3`, `3.0`, `30e-1` and
//! `3e0` are the same value, and each value is filed under one text:
//!
//! - a number with no fractional part, from -2^63 to 2^64 - 1, as its
//!   integer text: `3`, `3.0` and `3e0` give `"3"`, `1e3` gives `"1000"`,
//!   `-0` gives `"0"`. Exact: an integer written without a fraction or an
//!   exponent keeps all its digits (`9007199254740993`);
//! - any other number (with a fraction, or beyond that range) in the
//!   shortest form that reads back as the same double: `1.5`, `0.1`, `1e-7`,
//!   `2e+19`.
//!
//! The rule covers numbers an expression computes (`abs`, `sum`, `avg`,
//! `ceil` and `floor` compute in floating point, yet ``sum([`1`, `2`])``
//! gives `"3"`) and the text `to_string` makes (`to_string(spec.replicas)` is
//! `"3"` for `3` and for `3.0`). `avg([])` gives no value (the specification
//! says `null`).
//!
//! ### Functions
//!
//! The functions of the JMESPath specification, and two of JMESPath
//! Community's: `lower(string)` and `upper(string)`, so that an expression
//! can compare text without regard to case.
//!
//! ## Checked when compiled
//!
//! [`IndexFn::jmespath`] rejects, naming the index and the position, an
//! expression that does not parse ([`CacheError::ExpressionSyntax`]) and one that
//! calls a function in a way that fails on every object
//! ([`CacheError::ExpressionFunction`]): an unknown function (`lenght(@)`), a wrong
//! number of arguments, or a literal argument of the wrong type
//! (`abs('x')`). What depends on the object (`abs(spec.name)` where the name
//! is a string) fails for that object only, as an [`CacheError::IndexEvaluation`].
//!
//! ## Why there is an [`IndexInput`]
//!
//! The `jmespath` crate evaluates expressions over its own `Variable` tree.
//! Its convenient `search(&value)` converts the whole input into that tree on
//! every call, which for a 5 KB pod costs a hundred times more than the
//! evaluation itself. An [`IndexInput`] wraps one object for all the indexes of
//! a store and converts lazily, and only once, what the expressions read:
//!
//! - Plain field paths (`metadata.labels.app`, `spec.nodeName`,
//!   `metadata."namespace"`) are recognised when the expression is compiled and
//!   evaluated directly on the [`DynamicObject`](kube_core::DynamicObject)'s `metadata` and `data`,
//!   without any conversion.
//! - For other expressions, compilation works out which parts of the object
//!   the expression can observe (`spec.containers[].image` observes
//!   `spec.containers` and nothing else; `keys(@)` observes everything), and
//!   only those parts are converted. Each converted part is kept in the
//!   input for the following expressions.
//!
//! The unit tests check both against the `jmespath` crate's own result on a
//! full conversion, for fixed edge cases and for generated objects and
//! expressions; `tests/index_props.rs` checks that generated expressions
//! give the same values on one shared input in any order, on fresh inputs,
//! and by the documented rules on the crate's own evaluation. `cargo bench
//! --bench index` measures the difference.
//!
//! ## Limits
//!
//! Nothing here panics, whatever the expression or the object. Expressions are
//! limited to [`MAX_EXPRESSION_LEN`] bytes and, unless they are plain field
//! paths (read without recursion), to [`MAX_EXPRESSION_DEPTH`] levels of
//! nesting, because the `jmespath` crate evaluates recursively and a deeply
//! nested expression would otherwise overflow the stack (which aborts the
//! process rather than panicking). A panic inside a user closure is
//! caught and reported as an evaluation error.
//!
//! # Conditions
//!
//! A [`Condition`] is a JMESPath expression over one object that is true or
//! false: `status.readyReplicas == spec.replicas`, `status.phase ==
//! 'Running'`. It is compiled by the compiler of index expressions and
//! checked as they are (a syntax error or an impossible call is refused with
//! its position, as [`CacheError::ExpressionSyntax`] and
//! [`CacheError::ExpressionFunction`]), and evaluated on an [`IndexInput`],
//! the one conversion of an object that every index and condition evaluated
//! on it shares. Only `true` holds; a `null` (a field not there yet) does
//! not; any other value, or an error on that object, does not either and is
//! a mistake to report ([`Verdict`]). The forms of `kubectl wait --for`
//! translate into conditions: `condition=Ready`,
//! `jsonpath={.status.phase}=Running` ([`Condition::from_kubectl`]).
//!
//! ```
//! use kube_dynamic_informer::cache::{Condition, Verdict};
//!
//! let job: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "batch/v1", "kind": "Job",
//!     "metadata": { "name": "migrate", "namespace": "shop" },
//!     "status": { "succeeded": 1, "conditions": [{ "type": "Complete", "status": "True" }] }
//! }))?;
//! let done = Condition::new("status.succeeded >= `1`")?;
//! assert_eq!(done.evaluate_object(&job), Verdict::Met);
//! let complete = Condition::from_kubectl("condition=complete")?;
//! assert!(complete.evaluate_object(&job).is_met());
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! Conditions are also what a handler filters its events by
//! ([`HandlerOptions::filter`](crate::informer::HandlerOptions::filter)).
//!
//! # Change predicates
//!
//! A [`ChangePredicate`] says which updates of an object matter: those that
//! change the value of one of its JMESPath expressions (`spec`,
//! `metadata.generation`, `metadata.labels`, any expression), compiled and
//! refused as conditions are ([`CacheError::ExpressionSyntax`]). A plain field
//! path is read in place in both states of the object, in either storage;
//! in a compact cache, a `spec` written alike in both compares by its
//! bytes, and once a handler watches it, each object written keeps a
//! digest of its `spec`, so that an update that leaves it alone is told
//! apart by two digests without reading either state: telling a status
//! update from a change of `spec` decodes nothing and costs a small part
//! of delivering the event. A handler given one
//! ([`HandlerOptions::changes`](crate::informer::HandlerOptions::changes))
//! receives only the updates it lets through.
//!
//! ```
//! use kube_dynamic_informer::cache::ChangePredicate;
//!
//! let desired = ChangePredicate::generation().or(ChangePredicate::labels());
//! assert_eq!(desired.to_string(), "metadata.generation, metadata.labels");
//! ```
//!
//! # Listers
//!
//! Listers: read views over an informer's cache, by label selector, by name,
//! by namespace and by index.
//!
//! A [`Lister`] answers from memory, never from the API server. It takes a
//! label selector in the API server's own syntax (`app=web`, `tier!=db`,
//! `env in (prod,staging)`, `!canary`, parsed by [`crate::vocabulary`], whose
//! errors say what is wrong and where), and scopes to one namespace through
//! the namespace index rather than by scanning every object.
//!
//! ```
//! use std::sync::Arc;
//! use kube_dynamic_informer::vocabulary::Scope;
//! use kube_dynamic_informer::cache::Lister;
//! use kube_dynamic_informer::vocabulary::ResourceKey;
//! use kube_dynamic_informer::cache::StoreWriter;
//!
//! let pod = |ns: &str, name: &str, app: &str| Arc::new(serde_json::from_value(serde_json::json!({
//!     "apiVersion": "v1", "kind": "Pod",
//!     "metadata": { "name": name, "namespace": ns, "labels": { "app": app } }
//! })).unwrap());
//! let mut writer = StoreWriter::new();
//! writer.upsert(pod("shop", "web-0", "web"));
//! writer.upsert(pod("shop", "db-0", "db"));
//! writer.upsert(pod("blog", "web-0", "web"));
//!
//! let pods = Lister::new(writer.reader(), ResourceKey::new("", "v1", "pods"), Scope::Namespaced);
//! assert_eq!(pods.list("app=web")?.len(), 2);
//! assert_eq!(pods.list("app notin (web)")?.len(), 1);
//! let shop = pods.namespace("shop")?;
//! assert_eq!(shop.list("app in (web, db)")?.len(), 2);
//! assert!(shop.get("db-0").is_some());
//! assert!(pods.get("blog/web-0").is_some());
//!
//! let err = pods.list("app in (web").unwrap_err();
//! // The error and its cause, each said once.
//! assert_eq!(
//!     kube_dynamic_informer::vocabulary::error_chain(&err),
//!     r#"listing pods.v1: label selector "app in (web": expected ')' or ',' at column 12"#
//! );
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! # Compact storage
//!
//! A compact form for cached objects: what the store holds instead of a
//! decoded [`DynamicObject`](kube_core::DynamicObject) with
//! [`Storage::Compact`] (see "In the
//! store" below).
//!
//! A decoded `DynamicObject` keeps its data — and every `fieldsV1` tree of its
//! `managedFields` — as `serde_json::Value`s, whose maps are `BTreeMap`s: the
//! smallest B-tree node costs 632 bytes, so a 2.5 KB Widget costs ~24.5 KB.
//! [`CompactObject`] holds the same object, exactly, in a fraction of that:
//!
//! - **one allocation**: a small header (the store's tables, the last
//!   decoded copy handed out) and the object's bytes, behind a thin pointer;
//! - **bytes in the snapshot's layout**: each value a tag and its content,
//!   arrays and maps with their byte length so that a read steps over what
//!   it does not need; a snapshot file holds these bytes as they are, and a
//!   warm start reads them back as they are, once checked;
//! - **keys numbered per store** ([`Interner`]): object keys, label and
//!   annotation keys, and the strings that repeat from object to object
//!   (`apiVersion`, `kind`, the namespace, field managers) are a number
//!   (one byte for the first 64) into tables the objects of a store share;
//! - **`fieldsV1` trees shared between objects**: a tree seen a second time
//!   (objects written by the same manager with the same fields, which is
//!   most of them) is stored once in the tables, and objects refer to it;
//! - **metadata as `ObjectMeta` serialises it**: its fields in order, with
//!   the well-known keys at fixed numbers so that reading a name or a label
//!   compares numbers; timestamps keep their nanoseconds, so that
//!   `to_object()` gives back exactly the `ObjectMeta` it was built from.
//!
//! Reads that need no `DynamicObject` are zero-copy ([`CompactObject::name`],
//! [`CompactObject::labels`], [`CompactObject::pointer`], ...), and
//! [`CompactObject::write_json`] writes the JSON from the bytes; a read that
//! needs the whole object decodes it ([`CompactObject::to_object`]), which
//! [`CompactEntry`] avoids while someone still holds the previous copy.
//!
//! Exactness: `CompactObject::from_object(&o, ..).to_object() == o` for every
//! `o`, numbers keeping their representation (`3.0` stays a float, `-0.0`
//! keeps its sign, `u64::MAX` and `i64::MIN` stay integers), and
//! [`CompactObject::write_json`] writes the bytes `serde_json::to_vec(&o)`
//! writes. Nothing here panics on any input: every read of the bytes is
//! bounds-checked, and bytes read back from a file are checked whole before
//! an object is made of them. Recursion is as deep as the object, as in
//! `serde_json` itself (the wire decodes objects up to `MAX_OBJECT_DEPTH`
//! levels deep).
//!
//! The tables only grow, up to a bound (65,472 keys of up to 128 bytes,
//! 65,472 trees, 8 MiB of keys and 64 MiB of trees); past it, a key or tree
//! is written into each object that has it. They are freed with the store.
//!
//! ## What it costs
//!
//! `cargo bench --bench compact` (50k Widgets of the benchmark, ~2.4 KB of
//! JSON each with managedFields; glibc's bytes in use per object, tables
//! included): see BENCHMARKS.md, "Compact object representations".
//!
//! ## In the store
//!
//! With [`Storage::Compact`] the store keeps
//! a [`CompactEntry`] per object and one [`Interner`] beside its writer.
//! Event handlers get handles on the entry, as readers do. A watched
//! object is built straight from the JSON text the server sent
//! ([`CompactObject::from_json`]): no `DynamicObject` is made for it. A
//! listed one is decoded first, and the entry remembers that
//! `Arc<DynamicObject>` (which the informer holds until its handler filters
//! have read it). A read that needs the whole object calls
//! [`CompactEntry::get`], which hands out the `Arc` remembered while anyone
//! holds it, and decodes one otherwise, remembered in turn. Label selectors, index filtering, keys and
//! `kdi get` read the compact object without decoding
//! ([`CachedObject`]). The writer frees what
//! dead `Weak`s keep (~460 B per object) in passes amortised over its writes
//! ([`StoreWriter::forget_dropped`](crate::cache::store::StoreWriter::forget_dropped)),
//! and an informer every few seconds, so that the memory of the event
//! objects handlers held comes back on a resource nobody writes.
//!
//! # Projections
//!
//! Projections: the fields of each object a cache keeps.
//!
//! Most programs read a few fields of the objects they watch (a node name, a
//! few labels, some conditions) and cache the whole object anyway. A
//! [`Projection`] names the fields to keep, as paths; everything else is
//! dropped as each list page and watch event arrives, before the object is
//! cached, as `managedFields` stripping is (see [`crate::cache`]). It
//! cuts cache memory, not network traffic.
//!
//! ```
//! use kube_dynamic_informer::cache::Projection;
//!
//! let projection = Projection::new([
//!     "spec.nodeName",
//!     "status.conditions",
//!     r#"metadata.labels["app.kubernetes.io/name"]"#,
//! ])?;
//! let object: kube_core::DynamicObject = serde_json::from_value(serde_json::json!({
//!     "apiVersion": "v1", "kind": "Pod",
//!     "metadata": {
//!         "name": "web-1", "namespace": "shop", "resourceVersion": "42",
//!         "labels": { "app.kubernetes.io/name": "web", "tier": "front" },
//!     },
//!     "spec": { "nodeName": "node-1", "containers": [{ "name": "web" }] },
//!     "status": { "phase": "Running", "conditions": [{ "type": "Ready" }] },
//! }))?;
//! let kept = serde_json::to_value(projection.apply(object))?;
//! assert_eq!(kept, serde_json::json!({
//!     "apiVersion": "v1", "kind": "Pod",
//!     "metadata": {
//!         "name": "web-1", "namespace": "shop", "resourceVersion": "42",
//!         "labels": { "app.kubernetes.io/name": "web" },
//!     },
//!     "spec": { "nodeName": "node-1" },
//!     "status": { "conditions": [{ "type": "Ready" }] },
//! }));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```
//!
//! ## Paths
//!
//! A path is a list of fields, separated by dots: `spec.nodeName`,
//! `spec.template.spec.containers`. A field named with other characters than
//! ASCII letters, digits, `_` and `-` — a label key such as
//! `app.kubernetes.io/name` — is written in brackets, quoted with `"` or `'`:
//! `metadata.labels["app.kubernetes.io/name"]`, `metadata.annotations['a/b']`
//! (inside the quotes, `\"`, `\'` and `\\` stand for the character after
//! the backslash).
//!
//! - A path keeps its whole subtree: `metadata.labels` keeps every label,
//!   `spec` the whole spec.
//! - A path ends at an array at the latest: an array is kept whole, and the
//!   fields of its elements cannot be chosen. A path that goes on past an
//!   array (`spec.containers.image`) keeps nothing of it, as the same
//!   expression gives nothing in a JMESPath index.
//! - A path to a field an object does not have keeps nothing of that object
//!   and is no error; a parent object is kept only when something under it
//!   is.
//! - Paths may overlap: `metadata.labels` and `metadata.labels["app"]`
//!   together keep every label. Projections that keep the same fields are
//!   equal whatever the order and overlaps of their paths, so equal requests
//!   share one informer in a [factory](crate::factory).
//!
//! ## Always kept
//!
//! [`ALWAYS_KEPT`] fields are kept whatever the paths say: `apiVersion`,
//! `kind`, `metadata.name`, `metadata.namespace`, `metadata.uid`,
//! `metadata.resourceVersion` (what identifies an object and its version: the
//! cache is keyed by namespace and name, and an update is told from a resync
//! by the resourceVersion) and `metadata.deletionTimestamp` (whether the
//! object is being deleted, which most readers need and which costs a few
//! bytes). Every other metadata field — `labels`, `annotations`,
//! `ownerReferences`, `finalizers`, `creationTimestamp`, `managedFields`, ... —
//! is kept only when a path names it. An empty list of paths keeps only these
//! fields.
//!
//! ## What reads the projected object
//!
//! Everything that reads the cache does: event handlers, indexes, listers.
//! An index over a field that is not kept finds no value, and a lister's
//! label selector (`lister.list("app=web")`) matches against the labels that
//! are kept: keep `metadata.labels` to select on labels in the cache. The
//! selectors of [`InformerOptions`](crate::informer::options::InformerOptions) are
//! applied by the server and see whole objects. An object is updated in the
//! cache, and handlers get an update event, whenever its resourceVersion
//! changes, even when no kept field did.
//!
//! # Transforms
//!
//! Transforms: what is done to each object before it is cached.
//!
//! Stripping `metadata.managedFields` is the classic one (it is often the
//! largest part of an object and rarely read); it is an option of its own
//! ([`InformerOptions::strip_managed_fields`](crate::informer::options::InformerOptions::strip_managed_fields)).
//! Keeping only chosen fields is another, declared as a
//! [`Projection`] ([`InformerOptions::projection`](crate::informer::options::InformerOptions::projection)).
//! Anything else is a [`Transform`]: a function with a name. The name is what
//! makes two requests for the same resource share one informer: functions
//! cannot be compared, names can. The steps run in that order: stripping,
//! projection, then the transform, which sees the projected object.
//!
//! Transforms run in the reflector as objects arrive, list pages included,
//! so an untransformed page is dropped before the next one is requested: a
//! list's peak memory is that of the transformed objects, not of the raw
//! list. They cut cache memory, not network traffic.

pub(crate) mod change;
pub(crate) mod compact;
pub(crate) mod condition;
pub(crate) mod error;
pub(crate) mod index;
pub(crate) mod jsonpath;
pub(crate) mod lister;
pub(crate) mod projection;
pub(crate) mod redaction;
pub(crate) mod store;
pub(crate) mod transform;

pub use change::ChangePredicate;
pub use compact::{
    ArrayRef, CompactEntry, CompactObject, Interner, ManagedFieldView, ObjectIter, ObjectRef,
    OwnerRefView, StrMap, StrMapIter, ValueRef,
};
pub use condition::{Condition, Verdict};
pub use error::{CacheError, ExpressionOf};
pub use index::{
    IndexFn, IndexInput, MAX_EXPRESSION_DEPTH, MAX_EXPRESSION_LEN, NAMESPACE_INDEX,
    check_index_name,
};
pub use lister::{Lister, NamespaceLister, ToSelector};
pub use projection::{ALWAYS_KEPT, MAX_PATH_FIELDS, Projection};
pub use redaction::Redaction;
pub use store::{
    CachedObject, ReplaceOutcome, Storage, Store, StoreWriter, SyncPoint, compare_resource_versions,
};
pub use transform::{Transform, TransformFn};
