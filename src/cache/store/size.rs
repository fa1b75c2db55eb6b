//! How many bytes of heap a cache holds, estimated
//! ([`Store::approximate_bytes`](super::Store::approximate_bytes)).
//!
//! RSS says what the whole process holds; this says what one cache holds,
//! so that a program with many informers can tell which one grows. It is
//! an estimate, not an allocator's count: strings count their capacity,
//! vectors their capacity times their element's size, maps their entries
//! plus what their nodes or tables add, and every allocation
//! [`PER_ALLOCATION`] bytes for the allocator's header and rounding.
//!
//! - With [`Storage::Objects`](super::Storage::Objects) each
//!   `DynamicObject` is walked: metadata, `managedFields` and the
//!   `serde_json::Value` tree of its data (modelled on `serde_json`'s
//!   default `BTreeMap` maps).
//! - With [`Storage::Compact`](super::Storage::Compact) each object counts
//!   its one allocation: its header and its bytes. The keys and trees it
//!   shares with the other objects of its cache are not counted.
//! - Each object's key, its entry in the object map and its entries in the
//!   indexes are counted too.

use std::collections::BTreeMap;
use std::mem::size_of;
use std::sync::Arc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::ObjectMeta;
use kube_core::DynamicObject;
use serde_json::Value;

use super::cached::Held;
use super::{CachedObject, Entry, IndexData, Key, Members, State};

/// What the allocator adds to an allocation, on average: glibc's chunk
/// header and alignment, or jemalloc's rounding up to a size class.
const PER_ALLOCATION: usize = 16;

/// The entries a leaf of `std`'s B-tree maps has room for.
const BTREE_NODE_CAPACITY: usize = 11;

/// The entries a B-tree leaf holds on average: maps filled in key order, as
/// JSON maps and labels usually are, leave split leaves about half full.
const BTREE_NODE_FILL: usize = 6;

/// The counts an `Arc` allocation holds before its value.
const ARC_COUNTS: usize = 2 * size_of::<usize>();

/// What the cache's own structures hold: the object map, the keys and
/// the indexes, without the objects.
pub(super) fn bookkeeping(state: &State) -> usize {
    let objects = index_map::<Key, Entry>(state.objects.capacity())
        + state
            .objects
            .iter()
            .map(|(key, entry)| arc_str(key) + entry_values(entry))
            .sum::<usize>();
    objects + state.indexes.iter().map(index).sum::<usize>()
}

/// What one cached object holds.
pub(super) fn object(held: &CachedObject) -> usize {
    match &held.0 {
        Held::Object(object) => arc::<DynamicObject>() + dynamic_object(object),
        Held::Compact(entry) => entry.allocated(),
    }
}

/// The heap of a decoded object (its `Arc` allocation aside).
fn dynamic_object(object: &DynamicObject) -> usize {
    let types = object
        .types
        .as_ref()
        .map_or(0, |t| string(&t.api_version) + string(&t.kind));
    types + meta(&object.metadata) + value(&object.data)
}

fn meta(meta: &ObjectMeta) -> usize {
    let strings = optional_strings([
        &meta.name,
        &meta.namespace,
        &meta.uid,
        &meta.resource_version,
        &meta.generate_name,
        &meta.self_link,
    ]);
    let maps = [&meta.labels, &meta.annotations]
        .into_iter()
        .map(|map| map.as_ref().map_or(0, string_map))
        .sum::<usize>();
    let finalizers = meta.finalizers.as_ref().map_or(0, |f| {
        vec_of::<String>(f.capacity()) + f.iter().map(string).sum::<usize>()
    });
    let owners = meta.owner_references.as_ref().map_or(0, |owners| {
        vec_of::<k8s_openapi::apimachinery::pkg::apis::meta::v1::OwnerReference>(owners.capacity())
            + owners
                .iter()
                .map(|o| {
                    string(&o.api_version) + string(&o.kind) + string(&o.name) + string(&o.uid)
                })
                .sum::<usize>()
    });
    let managed = meta.managed_fields.as_ref().map_or(0, |entries| {
        vec_of::<k8s_openapi::apimachinery::pkg::apis::meta::v1::ManagedFieldsEntry>(
            entries.capacity(),
        ) + entries
            .iter()
            .map(|e| {
                optional_strings([
                    &e.api_version,
                    &e.fields_type,
                    &e.manager,
                    &e.operation,
                    &e.subresource,
                ]) + e.fields_v1.as_ref().map_or(0, |f| value(&f.0))
            })
            .sum::<usize>()
    });
    strings + maps + finalizers + owners + managed
}

/// A JSON tree, walked without recursion: objects may nest deeper than a
/// stack would like.
fn value(root: &Value) -> usize {
    let mut total = 0;
    let mut pending = vec![root];
    while let Some(value) = pending.pop() {
        match value {
            Value::String(s) => total += string(s),
            Value::Array(items) => {
                total += vec_of::<Value>(items.capacity());
                pending.extend(items);
            }
            Value::Object(map) => {
                total += btree::<String, Value>(map.len());
                for (key, item) in map {
                    total += string(key);
                    pending.push(item);
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) => {}
        }
    }
    total
}

fn string_map(map: &BTreeMap<String, String>) -> usize {
    btree::<String, String>(map.len())
        + map
            .iter()
            .map(|(k, v)| string(k) + string(v))
            .sum::<usize>()
}

/// One allocation of `bytes`, if any.
fn heap(bytes: usize) -> usize {
    bytes + if bytes == 0 { 0 } else { PER_ALLOCATION }
}

/// The heap of the strings present among `strings`.
fn optional_strings<const N: usize>(strings: [&Option<String>; N]) -> usize {
    strings.into_iter().flatten().map(string).sum()
}

fn string(s: &String) -> usize {
    heap(s.capacity())
}

fn vec_of<T>(capacity: usize) -> usize {
    heap(capacity * size_of::<T>())
}

fn arc<T>() -> usize {
    heap(ARC_COUNTS + size_of::<T>())
}

fn arc_str(s: &Arc<str>) -> usize {
    heap(ARC_COUNTS + s.len())
}

/// The leaves of a B-tree map of `len` entries (its few inner nodes
/// aside): at least one, of full capacity, as `std` allocates them.
fn btree<K, V>(len: usize) -> usize {
    if len == 0 {
        return 0;
    }
    let leaves = len.div_ceil(BTREE_NODE_FILL);
    leaves * heap(BTREE_NODE_CAPACITY * (size_of::<K>() + size_of::<V>()) + 2 * size_of::<usize>())
}

/// An `IndexMap` with room for `capacity` entries: its entries (each with
/// its hash) and its hash table of positions (one control byte each, at
/// most 7/8 full).
fn index_map<K, V>(capacity: usize) -> usize {
    heap(capacity * (size_of::<usize>() + size_of::<K>() + size_of::<V>()))
        + heap(capacity * 8 / 7 * (size_of::<usize>() + 1))
}

/// A `HashMap` with room for `capacity` entries.
fn hash_map<K, V>(capacity: usize) -> usize {
    heap(capacity * 8 / 7 * (size_of::<K>() + size_of::<V>() + 1))
}

/// The values an entry is filed under, per index (the values themselves are
/// the indexes').
fn entry_values(entry: &Entry) -> usize {
    vec_of::<Box<[Arc<str>]>>(entry.values.len())
        + entry
            .values
            .iter()
            .map(|values| vec_of::<Arc<str>>(values.len()))
            .sum::<usize>()
}

/// One index: its values and, per value, its members.
fn index(index: &IndexData) -> usize {
    index_map::<Arc<str>, Members>(index.by_value.capacity())
        + index
            .by_value
            .iter()
            .map(|(value, members)| {
                arc_str(value)
                    + match members {
                        Members::One(..) => 0,
                        Members::Many(map) => hash_map::<Key, CachedObject>(map.capacity()),
                    }
            })
            .sum::<usize>()
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use kube_core::DynamicObject;
    use serde_json::json;

    use crate::cache::store::{Storage, Store, StoreWriter};

    const MODES: [Storage; 2] = [Storage::Objects, Storage::Compact];

    fn object(value: serde_json::Value) -> Arc<DynamicObject> {
        Arc::new(serde_json::from_value(value).unwrap())
    }

    /// The benchmark's Widget (bench/peers/data/widget.json).
    fn widget() -> serde_json::Value {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/bench/peers/data/widget.json");
        let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{path}: {e}"));
        serde_json::from_str(&text).unwrap()
    }

    /// `count` Widgets, each with its own name and uid.
    fn widgets(storage: Storage, count: usize) -> Store {
        let widget = widget();
        let mut writer = StoreWriter::with_storage(storage);
        for i in 0..count {
            let mut w = widget.clone();
            w["metadata"]["name"] = json!(format!("widget-{i}"));
            w["metadata"]["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
            writer.upsert(object(w));
        }
        writer.reader()
    }

    #[test]
    fn an_empty_store_counts_nothing() {
        for storage in MODES {
            let store = StoreWriter::with_storage(storage).reader();
            assert_eq!(store.approximate_bytes(), 0, "{storage:?}");
        }
    }

    #[test]
    fn a_megabyte_string_counts_at_least_a_megabyte() {
        const MIB: usize = 1 << 20;
        for storage in MODES {
            let mut writer = StoreWriter::with_storage(storage);
            let small = writer.reader().approximate_bytes();
            writer.upsert(object(json!({
                "apiVersion": "v1", "kind": "ConfigMap",
                "metadata": { "name": "big", "namespace": "shop", "labels": { "app": "web" } },
                "data": { "blob": "x".repeat(MIB) }
            })));
            let bytes = writer.reader().approximate_bytes();
            assert!(bytes >= small + MIB, "{storage:?}: {bytes}");
            // The megabyte, and not much besides.
            assert!(bytes < MIB + 64 * 1024, "{storage:?}: {bytes}");
            writer.delete("shop/big");
            assert!(
                writer.reader().approximate_bytes() < 64 * 1024,
                "{storage:?}"
            );
        }
    }

    #[test]
    fn deep_values_are_walked_without_recursion() {
        let mut deep = json!("leaf");
        for _ in 0..100_000 {
            deep = serde_json::Value::Array(vec![deep]);
        }
        assert!(super::value(&deep) >= 100_000 * size_of::<serde_json::Value>());
        // serde_json drops a value recursively; this one would overflow.
        std::mem::forget(deep);
    }

    /// A decoded Widget holds several times its JSON, a compact one well
    /// under half of it. For a person to judge (not asserted: RSS depends
    /// on what malloc had free): for these 1,000 Widgets the estimate is
    /// 24.8 MiB decoded and 1.0 MiB compact (1,039 bytes a Widget, its key
    /// and index entries included).
    /// Where the bytes of a cached Widget go in compact storage, with the
    /// side-by-side benchmark's three indexes beside the namespace index
    /// (BENCHMARKS.md, "Where a cached object's bytes go").
    #[test]
    #[ignore = "a measurement for BENCHMARKS.md: prints where a cached Widget's bytes go"]
    fn where_a_cached_widgets_bytes_go() {
        use super::{PER_ALLOCATION, arc_str, entry_values, index, index_map};
        use crate::cache::index::IndexFn;
        const COUNT: usize = 50_000;
        let widget = widget();
        let mut writer = StoreWriter::with_storage(Storage::Compact);
        for (name, path) in [
            ("app", "metadata.labels.app"),
            ("node", "spec.nodeName"),
            ("tag", "spec.tags"),
        ] {
            writer
                .reader()
                .add_index(name, IndexFn::jmespath(name, path).unwrap())
                .unwrap();
        }
        for i in 0..COUNT {
            let mut w = widget.clone();
            w["metadata"]["name"] = json!(format!("widget-{i:06}"));
            w["metadata"]["uid"] = json!(format!("00000000-0000-0000-0000-{i:012}"));
            w["metadata"]["namespace"] = json!(format!("bench-{}", i % 20));
            w["metadata"]["labels"]["app"] = json!(format!("app-{}", i % 100));
            w["spec"]["nodeName"] = json!(format!("node-{}", i % 1000));
            w["spec"]["tags"] = json!([format!("tag-{}", i % 50), format!("tag-{}", i % 7 + 50)]);
            writer.upsert(object(w));
        }
        let store = writer.reader();
        let state = store.shared.read();
        let per = |bytes: usize| bytes as f64 / COUNT as f64;
        let objects: usize = state.objects.values().map(|e| super::object(&e.held)).sum();
        let overhead = COUNT * PER_ALLOCATION;
        let map = index_map::<super::Key, super::Entry>(state.objects.capacity())
            + state.objects.keys().map(arc_str).sum::<usize>();
        let values: usize = state.objects.values().map(entry_values).sum();
        let indexes: usize = state.indexes.iter().map(index).sum();
        let tables = writer.table_bytes();
        let total = objects + overhead + map + values + indexes + tables;
        eprintln!("{COUNT} Widgets, bytes per object:");
        eprintln!("  object (header and bytes)   {:8.0}", per(objects));
        eprintln!("  its allocation's overhead   {:8.0}", per(overhead));
        eprintln!("  map entry and key           {:8.0}", per(map));
        eprintln!("  index values of the entry   {:8.0}", per(values));
        eprintln!("  index entries (4 indexes)   {:8.0}", per(indexes));
        eprintln!("  tables (keys, shared trees) {:8.0}", per(tables));
        eprintln!("  all                         {:8.0}", per(total));
        drop(state);
        assert_eq!(total, store.approximate_bytes() + overhead + tables);
    }

    #[test]
    fn widgets_count_what_each_storage_holds() {
        const COUNT: usize = 1_000;
        let json_len = COUNT * widget().to_string().len();
        let objects = widgets(Storage::Objects, COUNT).approximate_bytes();
        let compact = widgets(Storage::Compact, COUNT).approximate_bytes();
        assert!(objects > 4 * json_len, "{objects}");
        assert!(
            compact > json_len / 4 && compact < json_len / 2,
            "{compact}"
        );
        assert!(objects > 10 * compact, "{objects} vs {compact}");
    }
}
