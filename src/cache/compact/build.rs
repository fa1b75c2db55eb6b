//! Writing an object's bytes (see [`node`](super::node) for the layout).
//!
//! An object is a flags byte (bit 0: it has its type fields), `apiVersion`
//! and `kind` as key references when it has them, its metadata as a map,
//! then its data (everything else, a map unless the object is odd). The
//! metadata map holds the fields `ObjectMeta` serialises, in the order it
//! serialises them (which is sorted), so that the JSON written from it is
//! `serde_json`'s.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use kube_core::DynamicObject;
use serde_json::{Number, Value};

use super::Interner;
use super::node::*;
use super::table::id;

/// Builds the bytes of objects, with the keys and trees of one interner.
pub(super) struct Builder<'i> {
    interner: &'i mut Interner,
    /// A `fieldsV1` tree, written apart to be looked up.
    tree: Vec<u8>,
}

impl<'i> Builder<'i> {
    pub(super) fn new(interner: &'i mut Interner, tree: Vec<u8>) -> Self {
        Builder { interner, tree }
    }

    /// The scratch buffer of `fieldsV1` trees, to be kept for the next
    /// object.
    pub(super) fn into_scratch(self) -> Vec<u8> {
        self.tree
    }

    /// Appends the bytes of `object` to `out`.
    pub(super) fn object(&mut self, object: &DynamicObject, out: &mut Vec<u8>) {
        match &object.types {
            Some(types) => {
                out.push(1);
                self.key(out, &types.api_version);
                self.key(out, &types.kind);
            }
            None => out.push(0),
        }
        self.meta(&object.metadata, out);
        self.value(&object.data, out);
    }

    fn key(&mut self, out: &mut Vec<u8>, key: &str) {
        write_key(self.interner, out, key);
    }

    fn known(out: &mut Vec<u8>, id: u32) {
        known(out, id);
    }

    fn value(&mut self, value: &Value, out: &mut Vec<u8>) {
        match value {
            Value::Null => out.push(NULL),
            Value::Bool(false) => out.push(FALSE),
            Value::Bool(true) => out.push(TRUE),
            Value::Number(n) => number(out, n),
            Value::String(s) => string(out, s),
            Value::Array(items) => {
                container(out, ARRAY, items.len(), |out| {
                    for item in items {
                        self.value(item, out);
                    }
                });
            }
            Value::Object(map) => {
                container(out, MAP, map.len(), |out| {
                    for (k, v) in map {
                        self.key(out, k);
                        self.value(v, out);
                    }
                });
            }
        }
    }

    /// A string that repeats from object to object.
    fn interned(&mut self, out: &mut Vec<u8>, s: &str) {
        out.push(ISTR);
        self.key(out, s);
    }

    fn string_map(&mut self, out: &mut Vec<u8>, map: &std::collections::BTreeMap<String, String>) {
        container(out, MAP, map.len(), |out| {
            for (k, v) in map {
                self.key(out, k);
                string(out, v);
            }
        });
    }

    /// The metadata, as `ObjectMeta` serialises it: its fields in order,
    /// those that are set.
    fn meta(&mut self, m: &ObjectMeta, out: &mut Vec<u8>) {
        let fields = [
            m.annotations.is_some(),
            m.creation_timestamp.is_some(),
            m.deletion_grace_period_seconds.is_some(),
            m.deletion_timestamp.is_some(),
            m.finalizers.is_some(),
            m.generate_name.is_some(),
            m.generation.is_some(),
            m.labels.is_some(),
            m.managed_fields.is_some(),
            m.name.is_some(),
            m.namespace.is_some(),
            m.owner_references.is_some(),
            m.resource_version.is_some(),
            m.self_link.is_some(),
            m.uid.is_some(),
        ];
        container(out, MAP, fields.iter().filter(|f| **f).count(), |out| {
            if let Some(v) = &m.annotations {
                Self::known(out, id::ANNOTATIONS);
                self.string_map(out, v);
            }
            if let Some(v) = &m.creation_timestamp {
                Self::known(out, id::CREATION_TIMESTAMP);
                time(out, v);
            }
            if let Some(v) = m.deletion_grace_period_seconds {
                Self::known(out, id::DELETION_GRACE_PERIOD_SECONDS);
                integer(out, v);
            }
            if let Some(v) = &m.deletion_timestamp {
                Self::known(out, id::DELETION_TIMESTAMP);
                time(out, v);
            }
            if let Some(v) = &m.finalizers {
                Self::known(out, id::FINALIZERS);
                container(out, ARRAY, v.len(), |out| {
                    v.iter().for_each(|f| string(out, f))
                });
            }
            if let Some(v) = &m.generate_name {
                Self::known(out, id::GENERATE_NAME);
                string(out, v);
            }
            if let Some(v) = m.generation {
                Self::known(out, id::GENERATION);
                integer(out, v);
            }
            if let Some(v) = &m.labels {
                Self::known(out, id::LABELS);
                self.string_map(out, v);
            }
            if let Some(v) = &m.managed_fields {
                Self::known(out, id::MANAGED_FIELDS);
                container(out, ARRAY, v.len(), |out| {
                    v.iter().for_each(|e| self.managed_field(e, out))
                });
            }
            self.rest_of_meta(m, out);
        });
    }

    /// The metadata's fields after `managedFields`.
    fn rest_of_meta(&mut self, m: &ObjectMeta, out: &mut Vec<u8>) {
        if let Some(v) = &m.name {
            Self::known(out, id::NAME);
            string(out, v);
        }
        if let Some(v) = &m.namespace {
            Self::known(out, id::NAMESPACE);
            self.interned(out, v);
        }
        if let Some(v) = &m.owner_references {
            Self::known(out, id::OWNER_REFERENCES);
            container(out, ARRAY, v.len(), |out| {
                v.iter().for_each(|r| self.owner(r, out))
            });
        }
        if let Some(v) = &m.resource_version {
            Self::known(out, id::RESOURCE_VERSION);
            string(out, v);
        }
        if let Some(v) = &m.self_link {
            Self::known(out, id::SELF_LINK);
            string(out, v);
        }
        if let Some(v) = &m.uid {
            Self::known(out, id::UID);
            string(out, v);
        }
    }

    fn managed_field(&mut self, e: &ManagedFieldsEntry, out: &mut Vec<u8>) {
        let fields = [
            e.api_version.is_some(),
            e.fields_type.is_some(),
            e.fields_v1.is_some(),
            e.manager.is_some(),
            e.operation.is_some(),
            e.subresource.is_some(),
            e.time.is_some(),
        ];
        container(out, MAP, fields.iter().filter(|f| **f).count(), |out| {
            let texts = [
                (id::API_VERSION, &e.api_version),
                (id::FIELDS_TYPE, &e.fields_type),
            ];
            for (id, text) in texts {
                if let Some(text) = text {
                    Self::known(out, id);
                    self.interned(out, text);
                }
            }
            if let Some(v) = &e.fields_v1 {
                Self::known(out, id::FIELDS_V1);
                self.shared_tree(&v.0, out);
            }
            let texts = [
                (id::MANAGER, &e.manager),
                (id::OPERATION, &e.operation),
                (id::SUBRESOURCE, &e.subresource),
            ];
            for (id, text) in texts {
                if let Some(text) = text {
                    Self::known(out, id);
                    self.interned(out, text);
                }
            }
            if let Some(v) = &e.time {
                Self::known(out, id::TIME);
                time(out, v);
            }
        });
    }

    /// A `fieldsV1` tree: shared with the objects that have the same one
    /// once it is seen twice, written in place otherwise.
    fn shared_tree(&mut self, value: &Value, out: &mut Vec<u8>) {
        let mut tree = std::mem::take(&mut self.tree);
        tree.clear();
        self.value(value, &mut tree);
        match self.interner.tree(&tree) {
            Some(id) => {
                out.push(TREE);
                write_varint(out, u64::from(id));
            }
            None => out.extend_from_slice(&tree),
        }
        self.tree = tree;
    }

    fn owner(&mut self, r: &OwnerReference, out: &mut Vec<u8>) {
        let fields =
            4 + usize::from(r.block_owner_deletion.is_some()) + usize::from(r.controller.is_some());
        container(out, MAP, fields, |out| {
            Self::known(out, id::API_VERSION);
            self.interned(out, &r.api_version);
            if let Some(v) = r.block_owner_deletion {
                self.key(out, "blockOwnerDeletion");
                out.push(if v { TRUE } else { FALSE });
            }
            if let Some(v) = r.controller {
                self.key(out, "controller");
                out.push(if v { TRUE } else { FALSE });
            }
            Self::known(out, id::KIND);
            self.interned(out, &r.kind);
            Self::known(out, id::NAME);
            string(out, &r.name);
            Self::known(out, id::UID);
            string(out, &r.uid);
        });
    }
}

/// Writes a key reference: `key`'s number in `interner`'s tables, or the
/// key itself when the tables have no room for it.
pub(super) fn write_key(interner: &mut Interner, out: &mut Vec<u8>, key: &str) {
    match interner.key(key) {
        Some(id) => known(out, id),
        None => {
            write_varint(out, ((key.len() as u64) << 1) | 1);
            out.extend_from_slice(key.as_bytes());
        }
    }
}

/// Writes the reference of the key numbered `id`.
pub(super) fn known(out: &mut Vec<u8>, id: u32) {
    write_varint(out, u64::from(id) << 1);
}

/// Writes an array or map (`tag`) of `len` items or entries: the tag, the
/// count, then what `content` appends, preceded by its length in bytes (a
/// varint): one byte is set aside for it, and the content moved along in
/// the rare case that the length needs more.
fn container(out: &mut Vec<u8>, tag: u8, len: usize, content: impl FnOnce(&mut Vec<u8>)) {
    out.push(tag);
    write_varint(out, len as u64);
    let at = out.len();
    out.push(0);
    content(out);
    let size = out.len() - at - 1;
    if size < 0x80 {
        out[at] = size as u8;
        return;
    }
    let mut head = Vec::with_capacity(10);
    write_varint(&mut head, size as u64);
    out.splice(at..=at, head);
}

pub(super) fn string(out: &mut Vec<u8>, s: &str) {
    out.push(STR);
    write_varint(out, s.len() as u64);
    out.extend_from_slice(s.as_bytes());
}

pub(super) fn integer(out: &mut Vec<u8>, n: i64) {
    match u64::try_from(n) {
        Ok(n) => {
            out.push(UINT);
            write_varint(out, n);
        }
        Err(_) => {
            out.push(NEG);
            write_varint(out, (-(n + 1)) as u64);
        }
    }
}

/// A number, in its representation: `1` and `1.0` stay apart, as do `0.0`
/// and `-0.0`.
fn number(out: &mut Vec<u8>, n: &Number) {
    if let Some(u) = n.as_u64() {
        out.push(UINT);
        write_varint(out, u);
    } else if let Some(i) = n.as_i64() {
        integer(out, i);
    } else {
        float(out, n.as_f64().unwrap_or_default());
    }
}

pub(super) fn time(out: &mut Vec<u8>, t: &Time) {
    time_parts(out, t.0.as_second(), t.0.subsec_nanosecond());
}

/// A timestamp of `seconds` and `nanos` since the Unix epoch.
pub(super) fn time_parts(out: &mut Vec<u8>, seconds: i64, nanos: i32) {
    out.push(TIME);
    write_varint(out, zigzag(seconds));
    write_varint(out, zigzag(i64::from(nanos)));
}

/// A float, as [`number`] writes one.
pub(super) fn float(out: &mut Vec<u8>, f: f64) {
    out.push(FLOAT);
    out.extend_from_slice(&f.to_le_bytes());
}
