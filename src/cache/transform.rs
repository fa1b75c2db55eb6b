//! Transforms: what is done to each object before it is cached.
//!
//! The [layer docs](crate::cache) say more.

use std::fmt;
use std::hash::{Hash, Hasher};
use std::sync::Arc;

use kube_core::DynamicObject;

use crate::cache::projection::Projection;

/// The function of a transform.
pub type TransformFn = Arc<dyn Fn(DynamicObject) -> DynamicObject + Send + Sync>;

/// A named function applied to each object before it is cached.
///
/// Two transforms are equal when their names are: give different functions
/// different names.
///
/// ```
/// use kube_dynamic_informer::cache::Transform;
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

/// The built-in steps an informer's options ask for (managedFields
/// stripping, then the projection), then its own transform, as one
/// function; `None` when there is nothing to do.
pub(crate) fn pipeline(
    strip_managed: bool,
    projection: Option<&Projection>,
    custom: Option<&Transform>,
) -> Option<TransformFn> {
    let custom = custom.map(|t| Arc::clone(&t.func));
    let projection = projection.cloned();
    match (strip_managed, projection, custom) {
        (false, None, None) => None,
        (false, None, Some(custom)) => Some(custom),
        (strip_managed, projection, custom) => Some(Arc::new(move |mut object| {
            if strip_managed {
                object = strip_managed_fields(object);
            }
            if let Some(projection) = &projection {
                object = projection.apply(object);
            }
            match &custom {
                Some(custom) => custom(object),
                None => object,
            }
        })),
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
        assert!(pipeline(false, None, None).is_none());
        let both = pipeline(true, None, Some(&a)).unwrap()(object());
        assert!(both.metadata.managed_fields.is_none());
        assert!(both.data.get("status").is_none());
        let strip = pipeline(true, None, None).unwrap()(object());
        assert!(strip.metadata.managed_fields.is_none());
        assert!(strip.data.get("status").is_some());
    }

    #[test]
    fn the_projection_runs_after_stripping_and_before_the_transform() {
        // Keeping managedFields still loses them to stripping; the transform
        // sees the projected object.
        let projection = Projection::new(["metadata.managedFields", "status"]).unwrap();
        let seen = Transform::new("status-or-not", |mut o: DynamicObject| {
            let had_status = o.data.get("status").is_some();
            o.data["had_status"] = had_status.into();
            o
        });
        let all = pipeline(true, Some(&projection), Some(&seen)).unwrap()(object());
        assert!(all.metadata.managed_fields.is_none());
        assert_eq!(
            all.data,
            serde_json::json!({ "status": { "x": 1 }, "had_status": true })
        );
        let kept = pipeline(false, Some(&projection), None).unwrap()(object());
        assert_eq!(kept.metadata.managed_fields.map(|m| m.len()), Some(1));
        let none = Projection::new::<[&str; 0]>([]).unwrap();
        let bare = pipeline(false, Some(&none), Some(&seen)).unwrap()(object());
        assert_eq!(bare.data, serde_json::json!({ "had_status": false }));
        assert_eq!(bare.metadata.name.as_deref(), Some("a"));
    }
}
