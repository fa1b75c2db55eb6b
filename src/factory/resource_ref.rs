//! [`ResourceRef`]: every way a caller can name a resource to the factory.

use std::fmt;

use kube_core::GroupVersionResource;

use crate::vocabulary::VocabularyError;
use crate::vocabulary::resource::{ResourceKey, ResourceName};

/// A resource as the factory's callers name it: a string in any form
/// [`ResourceName`] accepts, a parsed name, a [`ResourceKey`] or a
/// `GroupVersionResource`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum ResourceRef {
    /// A name, not yet parsed.
    Text(String),
    /// A parsed name.
    Name(ResourceName),
    /// An exact group, version and resource.
    Key(ResourceKey),
}

/// `From` impls, each building the reference from one kind of value.
macro_rules! from {
    ($($from:ty => |$value:ident| $variant:expr;)*) => {$(
        impl From<$from> for ResourceRef {
            fn from($value: $from) -> Self {
                $variant
            }
        }
    )*};
}

from! {
    &str => |s| ResourceRef::Text(s.to_owned());
    String => |s| ResourceRef::Text(s);
    &String => |s| ResourceRef::Text(s.clone());
    ResourceName => |n| ResourceRef::Name(n);
    &ResourceName => |n| ResourceRef::Name(n.clone());
    ResourceKey => |k| ResourceRef::Key(k);
    &ResourceKey => |k| ResourceRef::Key(k.clone());
    GroupVersionResource => |gvr| ResourceRef::Key(gvr.into());
    &GroupVersionResource => |gvr| ResourceRef::Key(gvr.into());
}

impl fmt::Display for ResourceRef {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ResourceRef::Text(s) => f.write_str(s),
            ResourceRef::Name(n) => write!(f, "{n}"),
            ResourceRef::Key(k) => write!(f, "{k}"),
        }
    }
}

impl ResourceRef {
    pub(super) fn parse(self) -> Result<Result<ResourceName, ResourceKey>, VocabularyError> {
        Ok(match self {
            ResourceRef::Text(s) => Ok(ResourceName::parse(&s)?),
            ResourceRef::Name(n) => Ok(n),
            ResourceRef::Key(k) => Err(k),
        })
    }
}

/// The first reading of a name, when it names a group and a lower-case
/// name (as a plural is): group, version if any, and plural.
fn first_plural(name: &ResourceName) -> Option<(&str, Option<&str>, &str)> {
    let first = name.candidates().first()?;
    let group = first.group.as_deref()?;
    let lower_case = !first.name.bytes().any(|b| b.is_ascii_uppercase());
    lower_case.then_some((group, first.version.as_deref(), first.name.as_str()))
}

/// The key a name designates on its own, without discovery: when its first
/// reading names group, version and a lower-case plural. This is how a CRD
/// that is not installed yet can be asked for.
pub(super) fn fully_qualified(name: &ResourceName) -> Option<ResourceKey> {
    let (group, version, plural) = first_plural(name)?;
    Some(ResourceKey::new(group, version?, plural))
}

/// The key of an informer that waits for a name of the form
/// `plural.group` (its first reading names a group but no version, and a
/// lower-case name, as CRDs name their resources): group and name, with an
/// empty version until discovery serves the resource and says which version
/// the name designates.
pub(super) fn plural_and_group(name: &ResourceName) -> Option<ResourceKey> {
    match first_plural(name)? {
        (group, None, plural) if !group.is_empty() => Some(ResourceKey::new(group, "", plural)),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fully_qualified_names_can_wait_for_their_resource() {
        let fq = |s: &str| fully_qualified(&ResourceName::parse(s).unwrap()).map(|k| k.to_string());
        assert_eq!(
            fq("widgets.v1.example.com").as_deref(),
            Some("widgets.v1.example.com")
        );
        assert_eq!(
            fq("example.com/v1/widgets").as_deref(),
            Some("widgets.v1.example.com")
        );
        assert_eq!(fq("pods.v1").as_deref(), Some("pods.v1"));
        assert_eq!(fq("v1/pods").as_deref(), Some("pods.v1"));
        assert_eq!(fq("widgets.example.com"), None, "no version");
        assert_eq!(fq("wdg"), None);
        assert_eq!(fq("Widget.v1.example.com"), None, "a kind is no plural");
    }

    #[test]
    fn plural_and_group_names_wait_for_any_version() {
        let pg = |s: &str| {
            plural_and_group(&ResourceName::parse(s).unwrap())
                .map(|k| (k.group, k.version, k.resource))
        };
        assert_eq!(
            pg("widgets.example.com"),
            Some(("example.com".into(), String::new(), "widgets".into()))
        );
        assert_eq!(
            pg("widgets.apps"),
            Some(("apps".into(), String::new(), "widgets".into()))
        );
        assert_eq!(pg("widgets.v1.example.com"), None, "names a version");
        assert_eq!(pg("example.com/v1/widgets"), None, "names a version");
        assert_eq!(pg("pods.v1"), None, "names a version");
        assert_eq!(pg("widgets"), None, "names no group");
        assert_eq!(pg("Widget.example.com"), None, "a kind is no plural");
        let waiting = plural_and_group(&ResourceName::parse("widgets.example.com").unwrap());
        assert_eq!(waiting.unwrap().to_string(), "widgets.example.com");
    }
}
