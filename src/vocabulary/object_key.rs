//! Cache keys of objects, as client-go's `MetaNamespaceKeyFunc` makes them:
//! `namespace/name`, or `name` for cluster-scoped objects. The store, its
//! indexes, listers and the reflector all key objects this one way.
//!
//! The [layer docs](crate::vocabulary) say more.

use kube_core::DynamicObject;

/// The cache key of an object: `namespace/name`, or `name` when it has no
/// namespace. `None` when it has no name (the API server never sends such an
/// object; the store skips them).
///
/// ```
/// use kube_core::DynamicObject;
/// use kube_dynamic_informer::vocabulary::object_key;
///
/// let pod: DynamicObject = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "web-0", "namespace": "shop" }
/// })).unwrap();
/// let node: DynamicObject = serde_json::from_value(serde_json::json!({
///     "metadata": { "name": "node-1" }
/// })).unwrap();
/// assert_eq!(object_key(&pod).as_deref(), Some("shop/web-0"));
/// assert_eq!(object_key(&node).as_deref(), Some("node-1"));
/// ```
#[doc(alias = "MetaNamespaceKeyFunc")]
pub fn object_key(obj: &DynamicObject) -> Option<String> {
    let name = obj
        .metadata
        .name
        .as_deref()
        .filter(|name| !name.is_empty())?;
    Some(key_from_parts(obj.metadata.namespace.as_deref(), name))
}

/// Builds a cache key from a namespace (`None` or empty for cluster-scoped
/// objects) and a name.
///
/// ```
/// use kube_dynamic_informer::vocabulary::key_from_parts;
///
/// assert_eq!(key_from_parts(Some("shop"), "web-0"), "shop/web-0");
/// assert_eq!(key_from_parts(None, "node-1"), "node-1");
/// assert_eq!(key_from_parts(Some(""), "node-1"), "node-1");
/// ```
pub fn key_from_parts(namespace: Option<&str>, name: &str) -> String {
    match namespace {
        Some(ns) if !ns.is_empty() => format!("{ns}/{name}"),
        _ => name.to_owned(),
    }
}
