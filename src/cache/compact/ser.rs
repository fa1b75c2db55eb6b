//! Serialising a [`CompactObject`] as `serde_json` would its `DynamicObject`.

use super::view::*;
use super::*;

// ---------------------------------------------------------------------------
// Serialisation: the calls DynamicObject's and k8s-openapi's impls make
// ---------------------------------------------------------------------------

impl Serialize for CompactObject {
    /// Serialises as the `DynamicObject` would: a map of the type fields,
    /// `metadata`, then the entries of the data (flattened).
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(None)?;
        if let Some((api_version, kind)) = &self.types {
            map.serialize_entry("apiVersion", &**api_version)?;
            map.serialize_entry("kind", &**kind)?;
        }
        map.serialize_entry("metadata", &MetaSer(&self.meta))?;
        match &self.data {
            Node::Object(entries) => {
                for (k, v) in entries.iter() {
                    map.serialize_entry(&**k, &NodeSer(v))?;
                }
            }
            Node::Null => {}
            _ => {
                return Err(S::Error::custom(
                    "can only flatten structs and maps: the object's data is neither",
                ));
            }
        }
        map.end()
    }
}

/// A sequence of `T`s serialised through the wrapper `W`.
pub(super) struct Seq<'a, T, W>(pub(super) &'a [T], pub(super) fn(&'a T) -> W);

impl<'a, T, W: Serialize> Serialize for Seq<'a, T, W> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut seq = s.serialize_seq(Some(self.0.len()))?;
        for item in self.0 {
            seq.serialize_element(&(self.1)(item))?;
        }
        seq.end()
    }
}

pub(super) struct NodeSer<'a>(pub(super) &'a Node);

impl Serialize for NodeSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Node::Null => s.serialize_unit(),
            Node::Bool(b) => s.serialize_bool(*b),
            Node::Number(n) => n.serialize(s),
            Node::String(v) => s.serialize_str(v.as_str()),
            Node::Array(items) => Seq(items, NodeSer).serialize(s),
            Node::Object(entries) => TreeMapSer(entries).serialize(s),
        }
    }
}

pub(super) struct TreeMapSer<'a>(pub(super) &'a [(Key, Node)]);

impl Serialize for TreeMapSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut map = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in self.0 {
            map.serialize_entry(&**k, &NodeSer(v))?;
        }
        map.end()
    }
}

pub(super) struct MetaSer<'a>(pub(super) &'a Meta);

impl Serialize for MetaSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let m = self.0;
        let rare = m.rare.as_deref();
        let grace = rare.and_then(|r| r.deletion_grace_period_seconds);
        let deletion = rare.and_then(|r| r.deletion_timestamp.as_ref());
        let finalizers = rare.and_then(|r| r.finalizers.as_ref());
        let generate_name = rare.and_then(|r| r.generate_name.as_ref());
        let self_link = rare.and_then(|r| r.self_link.as_ref());
        let n = [
            m.annotations.is_some(),
            m.creation_timestamp.is_some(),
            grace.is_some(),
            deletion.is_some(),
            finalizers.is_some(),
            generate_name.is_some(),
            m.generation.is_some(),
            m.labels.is_some(),
            m.managed_fields.is_some(),
            m.name.is_some(),
            m.namespace.is_some(),
            m.owner_references.is_some(),
            m.resource_version.is_some(),
            self_link.is_some(),
            m.uid.is_some(),
        ]
        .into_iter()
        .filter(|b| *b)
        .count();
        let mut st = s.serialize_struct("ObjectMeta", n)?;
        if let Some(v) = &m.annotations {
            st.serialize_field("annotations", &StrMap(Pairs::Owned(v)))?;
        }
        if let Some(v) = &m.creation_timestamp {
            st.serialize_field("creationTimestamp", v)?;
        }
        if let Some(v) = &grace {
            st.serialize_field("deletionGracePeriodSeconds", v)?;
        }
        if let Some(v) = deletion {
            st.serialize_field("deletionTimestamp", v)?;
        }
        if let Some(v) = finalizers {
            st.serialize_field("finalizers", v)?;
        }
        if let Some(v) = generate_name {
            st.serialize_field("generateName", v)?;
        }
        if let Some(v) = &m.generation {
            st.serialize_field("generation", v)?;
        }
        if let Some(v) = &m.labels {
            st.serialize_field("labels", &StrMap(Pairs::Interned(v)))?;
        }
        if let Some(v) = &m.managed_fields {
            st.serialize_field("managedFields", &Seq(v, ManagedFieldSer))?;
        }
        if let Some(v) = &m.name {
            st.serialize_field("name", &**v)?;
        }
        if let Some(v) = &m.namespace {
            st.serialize_field("namespace", &**v)?;
        }
        if let Some(v) = &m.owner_references {
            st.serialize_field("ownerReferences", &Seq(v, OwnerRefSer))?;
        }
        if let Some(v) = &m.resource_version {
            st.serialize_field("resourceVersion", &**v)?;
        }
        if let Some(v) = self_link {
            st.serialize_field("selfLink", v)?;
        }
        if let Some(v) = &m.uid {
            st.serialize_field("uid", &**v)?;
        }
        st.end()
    }
}

pub(super) struct ManagedFieldSer<'a>(pub(super) &'a ManagedField);

/// `FieldsV1` serialises as a newtype struct around its value.
pub(super) struct FieldsV1Ser<'a>(pub(super) &'a Node);

impl Serialize for FieldsV1Ser<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_newtype_struct("FieldsV1", &NodeSer(self.0))
    }
}

impl Serialize for ManagedFieldSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let e = self.0;
        let n = [
            e.api_version.is_some(),
            e.fields_type.is_some(),
            e.fields_v1.is_some(),
            e.manager.is_some(),
            e.operation.is_some(),
            e.subresource.is_some(),
            e.time.is_some(),
        ]
        .into_iter()
        .filter(|b| *b)
        .count();
        let mut st = s.serialize_struct("ManagedFieldsEntry", n)?;
        if let Some(v) = &e.api_version {
            st.serialize_field("apiVersion", &**v)?;
        }
        if let Some(v) = &e.fields_type {
            st.serialize_field("fieldsType", &**v)?;
        }
        if let Some(v) = &e.fields_v1 {
            st.serialize_field("fieldsV1", &FieldsV1Ser(v))?;
        }
        if let Some(v) = &e.manager {
            st.serialize_field("manager", &**v)?;
        }
        if let Some(v) = &e.operation {
            st.serialize_field("operation", &**v)?;
        }
        if let Some(v) = &e.subresource {
            st.serialize_field("subresource", &**v)?;
        }
        if let Some(v) = &e.time {
            st.serialize_field("time", v)?;
        }
        st.end()
    }
}

pub(super) struct OwnerRefSer<'a>(pub(super) &'a OwnerRef);

impl Serialize for OwnerRefSer<'_> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let r = self.0;
        let n =
            4 + usize::from(r.block_owner_deletion.is_some()) + usize::from(r.controller.is_some());
        let mut st = s.serialize_struct("OwnerReference", n)?;
        st.serialize_field("apiVersion", &*r.api_version)?;
        if let Some(v) = &r.block_owner_deletion {
            st.serialize_field("blockOwnerDeletion", v)?;
        }
        if let Some(v) = &r.controller {
            st.serialize_field("controller", v)?;
        }
        st.serialize_field("kind", &*r.kind)?;
        st.serialize_field("name", &*r.name)?;
        st.serialize_field("uid", &*r.uid)?;
        st.end()
    }
}
