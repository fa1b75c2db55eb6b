//! The resourceVersion a cache is synced to, and how resourceVersions
//! compare.

use crate::cache::CacheError;
use std::cmp::Ordering;
use std::sync::Arc;

/// Where a cache stands against the server: see
/// [`Store::sync_point`](super::Store::sync_point).
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct SyncPoint {
    /// The resourceVersion the cache reflects: the last complete list's,
    /// then that of each event and bookmark received after it. `None` before
    /// the first list.
    pub resource_version: Option<Arc<str>>,
    /// A relist is being received: its result is applied at once at its end,
    /// and `resource_version` stays the one before it until then.
    pub relisting: bool,
}

/// Compares two resourceVersions.
///
/// resourceVersions are opaque to clients by the API conventions, but the
/// API server (since 1.34, with etcd) hands out decimal numbers that grow
/// with every write of the cluster, and Kubernetes 1.35 lets clients compare
/// them (apimachinery's `CompareResourceVersion`); this does the same:
/// decimal digits, no sign, no leading zero, any length.
///
/// ```
/// use std::cmp::Ordering;
/// use kube_dynamic_informer::cache::compare_resource_versions;
///
/// assert_eq!(compare_resource_versions("99", "100"), Ok(Ordering::Less));
/// assert!(compare_resource_versions("abc", "100").is_err());
/// ```
///
/// # Errors
/// Either side is not a decimal number without leading zeros.
pub fn compare_resource_versions(a: &str, b: &str) -> Result<Ordering, CacheError> {
    let valid = |rv: &str| {
        !rv.is_empty()
            && rv.bytes().all(|c| c.is_ascii_digit())
            && (rv == "0" || !rv.starts_with('0'))
    };
    for rv in [a, b] {
        if !valid(rv) {
            return Err(CacheError::IncomparableResourceVersion(rv.to_owned()));
        }
    }
    Ok(a.len().cmp(&b.len()).then_with(|| a.cmp(b)))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn compares_by_number_not_by_text() {
        assert_eq!(compare_resource_versions("9", "10"), Ok(Ordering::Less));
        assert_eq!(compare_resource_versions("10", "10"), Ok(Ordering::Equal));
        assert_eq!(
            compare_resource_versions("123456789012345678901234567890", "99"),
            Ok(Ordering::Greater)
        );
        assert_eq!(compare_resource_versions("0", "1"), Ok(Ordering::Less));
    }

    #[test]
    fn the_sync_point_follows_lists_and_resource_versions() {
        let mut writer = crate::cache::store::StoreWriter::new();
        let store = writer.reader();
        assert_eq!(store.sync_point(), SyncPoint::default());
        writer.begin_list();
        assert!(!store.sync_point().relisting, "a first list is no relist");
        writer.end_list();
        writer.set_resource_version("10");
        assert_eq!(store.resource_version().as_deref(), Some("10"));
        writer.set_resource_version("12");
        writer.begin_list();
        assert_eq!(
            store.sync_point(),
            SyncPoint {
                resource_version: Some("12".into()),
                relisting: true
            }
        );
        writer.end_list();
        assert!(!store.sync_point().relisting);
        writer.set_resource_version("20");
        assert_eq!(store.resource_version().as_deref(), Some("20"));
    }

    #[test]
    fn refuses_what_is_not_a_plain_number() {
        for bad in ["", "01", "-1", "1.5", "1e3", " 1", "abc"] {
            assert_eq!(
                compare_resource_versions(bad, "1"),
                Err(CacheError::IncomparableResourceVersion(bad.into())),
                "{bad:?}"
            );
        }
    }
}
