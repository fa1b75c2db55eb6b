//! Kubernetes API versions: which strings are versions, and their priority.

use std::cmp::Ordering;

pub(super) fn cmp_versions(a: &str, b: &str) -> Ordering {
    VersionPriority::of(a).cmp(&VersionPriority::of(b))
}

/// Kubernetes version priority, greatest first: GA (`v2` > `v1`), then beta
/// (`v2beta1` > `v1beta2` > `v1beta1`), then alpha, then anything else in
/// reverse alphabetical order (so that the greatest is alphabetically first,
/// as in apimachinery's `CompareKubeAwareVersionStrings`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
pub(super) enum VersionPriority<'a> {
    Other(std::cmp::Reverse<&'a str>),
    Kube {
        stability: u8,
        major: u64,
        minor: u64,
    },
}

impl<'a> VersionPriority<'a> {
    pub(super) fn of(version: &'a str) -> Self {
        let other = VersionPriority::Other(std::cmp::Reverse(version));
        let Some((major, stability, minor)) = parse_kube_version(version) else {
            return other;
        };
        VersionPriority::Kube {
            stability,
            major,
            minor,
        }
    }
}

/// Splits `v<major>[(alpha|beta)<minor>]`; stability 2 = GA, 1 = beta, 0 = alpha.
fn parse_kube_version(version: &str) -> Option<(u64, u8, u64)> {
    let rest = version.strip_prefix('v')?;
    let digits = rest.bytes().take_while(u8::is_ascii_digit).count();
    if digits == 0 {
        return None;
    }
    let major: u64 = rest[..digits].parse().ok()?;
    let rest = &rest[digits..];
    if rest.is_empty() {
        return Some((major, 2, 0));
    }
    let (stability, minor) = if let Some(minor) = rest.strip_prefix("beta") {
        (1, minor)
    } else if let Some(minor) = rest.strip_prefix("alpha") {
        (0, minor)
    } else {
        return None;
    };
    if minor.is_empty() || !minor.bytes().all(|b| b.is_ascii_digit()) {
        return None;
    }
    Some((major, stability, minor.parse().ok()?))
}

/// Whether a segment looks like a Kubernetes API version,
/// `v\d+((alpha|beta)\d+)?`.
pub(super) fn looks_like_version(segment: &str) -> bool {
    parse_kube_version(segment).is_some()
}
