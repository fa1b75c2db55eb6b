//! Transforms: what is done to each object before it is cached.
//!
//! Stripping `metadata.managedFields` is the classic one (it is often the
//! largest part of an object and rarely read); it is an option of its own
//! ([`InformerOptions::strip_managed_fields`](crate::options::InformerOptions::strip_managed_fields)).
//! Anything else is a [`Transform`]: a function with a name. The name is what
//! makes two requests for the same resource share one informer: functions
//! cannot be compared, names can.
//!
//! Transforms run in the reflector as objects arrive, list pages included,
//! so an untransformed page is dropped before the next one is requested: a
//! list's peak memory is that of the transformed objects, not of the raw
//! list. They cut cache memory, not network traffic.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kube_core::DynamicObject;

/// The function of a transform.
pub type TransformFn = Arc<dyn Fn(DynamicObject) -> DynamicObject + Send + Sync>;

/// A named function applied to each object before it is cached.
///
/// Two transforms are equal when their names are: give different functions
/// different names.
///
/// ```
/// use kube_dynamic_informer::transform::Transform;
///
/// let drop_status = Transform::new("drop-status", |mut o: kube_core::DynamicObject| {
///     if let Some(map) = o.data.as_object_mut() {
///         map.remove("status");
///     }
///     o
/// });
/// assert_eq!(drop_status.name(), "drop-status");
/// ```
#[derive(Clone)]
pub struct Transform {
    name: Arc<str>,
    func: TransformFn,
}

impl Transform {
    /// A transform named `name` (the name decides sharing; see the type's
    /// docs).
    pub fn new(
        name: impl Into<Arc<str>>,
        func: impl Fn(DynamicObject) -> DynamicObject + Send + Sync + 'static,
    ) -> Self {
        Self {
            name: name.into(),
            func: Arc::new(func),
        }
    }

    /// The transform's name.
    #[must_use]
    pub fn name(&self) -> &str {
        &self.name
    }

    /// Applies the transform.
    #[must_use]
    pub fn apply(&self, object: DynamicObject) -> DynamicObject {
        (self.func)(object)
    }
}

impl PartialEq for Transform {
    fn eq(&self, other: &Self) -> bool {
        self.name == other.name
    }
}

impl Eq for Transform {}

impl Hash for Transform {
    fn hash<H: Hasher>(&self, state: &mut H) {
        self.name.hash(state);
    }
}

impl fmt::Debug for Transform {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_tuple("Transform").field(&self.name).finish()
    }
}

/// Removes `metadata.managedFields`.
pub(crate) fn strip_managed_fields(mut object: DynamicObject) -> DynamicObject {
    object.metadata.managed_fields = None;
    object
}

/// The built-in steps an informer's options ask for, then its own transform,
/// as one function; `None` when there is nothing to do.
pub(crate) fn pipeline(strip_managed: bool, custom: Option<&Transform>) -> Option<TransformFn> {
    match (strip_managed, custom.cloned()) {
        (false, None) => None,
        (true, None) => Some(Arc::new(strip_managed_fields)),
        (false, Some(t)) => Some(t.func),
        (true, Some(t)) => Some(Arc::new(move |o| (t.func)(strip_managed_fields(o)))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn object() -> DynamicObject {
        serde_json::from_value(serde_json::json!({
            "metadata": { "name": "a", "managedFields": [{ "manager": "kubectl" }] },
            "status": { "x": 1 }
        }))
        .unwrap()
    }

    #[test]
    fn named_transforms_compare_by_name_and_compose_after_stripping() {
        let a = Transform::new("drop-status", |mut o: DynamicObject| {
            o.data.as_object_mut().unwrap().remove("status");
            o
        });
        let b = Transform::new("drop-status", |o| o);
        assert_eq!(a, b);
        assert_ne!(a, Transform::new("other", |o| o));
        assert!(pipeline(false, None).is_none());
        let both = pipeline(true, Some(&a)).unwrap()(object());
        assert!(both.metadata.managed_fields.is_none());
        assert!(both.data.get("status").is_none());
        let strip = pipeline(true, None).unwrap()(object());
        assert!(strip.metadata.managed_fields.is_none());
        assert!(strip.data.get("status").is_some());
    }
}
