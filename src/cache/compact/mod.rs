//! A compact form for cached objects: what the store holds instead of a
//! decoded [`DynamicObject`] with
//! [`Storage::Compact`](crate::informer::options::Storage::Compact) (see "In the
//! store" below).
//!
//! An object is one allocation: a small header and the object's bytes, in
//! the layout a snapshot file holds them ([`binary`]). Map keys, and
//! strings that repeat from object to object (`apiVersion`, `kind`, the
//! namespace, field managers), are numbers into a table the objects of one
//! store share; so are the `fieldsV1` trees of `managedFields`, which are
//! the same for most objects. Reads walk the bytes through borrowed views
//! ([`ValueRef`], [`StrMap`], ...): nothing is decoded to read a name, a
//! label, a field or to write the object's JSON.
//!
//! The [layer docs](crate::cache) say more.

use std::borrow::Cow;
use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, Weak};

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{
    FieldsV1, ManagedFieldsEntry, ObjectMeta, OwnerReference, Time,
};
use kube_core::{DynamicObject, TypeMeta};
use serde::Serialize;
use serde::ser::{Error as _, SerializeMap, SerializeSeq, Serializer};
use serde_json::{Number, Value};

pub(crate) mod binary;
mod build;
mod equal;
mod json;
mod node;
mod object;
mod parse;
mod table;
mod view;

use node::{Doc, Node, Seq};
use table::Tables;

pub(crate) use object::split_pointer;
pub use object::{CompactEntry, CompactObject};
pub use table::Interner;
pub use view::{
    ArrayRef, ManagedFieldView, ObjectIter, ObjectRef, OwnerRefView, StrMap, StrMapIter, ValueRef,
};

impl crate::vocabulary::selector::Labels for StrMap<'_> {
    fn label(&self, key: &str) -> Option<&str> {
        self.get(key)
    }
}

#[cfg(test)]
mod tests;
