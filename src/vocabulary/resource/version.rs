//! Kubernetes API versions: which strings are versions, and their priority.

use kube_core::Version;

/// A version as apimachinery reads it, `v\d+((alpha|beta)\d+)?`, else
/// `Nonconformant`. kube-core alone is more lenient and takes `v1beta` and
/// `v1beta+2` for beta versions, which Kubernetes orders as plain strings.
///
/// Numbers go up to 2^32 - 1 (kube-core's `u32`) where apimachinery takes
/// 2^63 - 1; larger ones make the version `Nonconformant`.
fn kube_version(version: &str) -> Version {
    match Version::parse(version) {
        // kube-core reads the number after alpha/beta with `u32::from_str`,
        // which accepts a leading '+'; the major version is digits only.
        parsed @ (Version::Stable(_) | Version::Beta(_, Some(_)) | Version::Alpha(_, Some(_)))
            if !version.contains('+') =>
        {
            parsed
        }
        _ => Version::Nonconformant(version.to_owned()),
    }
}

/// Kubernetes version priority, as kubectl and apimachinery's
/// `CompareKubeAwareVersionStrings` order versions: GA (`v2` > `v1`), then
/// beta (`v2beta1` > `v1beta2` > `v1beta1`), then alpha, then anything else,
/// the alphabetically first greatest.
pub(crate) fn version_priority(version: &str) -> impl Ord + use<> {
    kube_version(version).priority()
}

/// Whether a segment looks like a Kubernetes API version,
/// `v\d+((alpha|beta)\d+)?`.
pub(super) fn looks_like_version(segment: &str) -> bool {
    !matches!(kube_version(segment), Version::Nonconformant(_))
}
