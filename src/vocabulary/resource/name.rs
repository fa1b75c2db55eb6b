//! [`ResourceName`]: a resource as a user typed it, read into the group,
//! version and name it may mean, before discovery says which one exists.

use std::fmt;
use std::str::FromStr;

use serde::{Deserialize, Deserializer, Serialize, Serializer};

use super::key::ResourceKey;
use super::version::looks_like_version;
use crate::vocabulary::VocabularyError;

/// One reading of a [`ResourceName`]: a name (plural, singular, kind or short
/// name) in an optional group and an optional version.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct NameCandidate {
    /// The group, if the input names one; `Some("")` is the core group.
    /// `None` means any group.
    pub group: Option<String>,
    /// The version, if the input names one. `None` means the group's
    /// preferred version.
    pub version: Option<String>,
    /// A plural, singular, kind or short name.
    pub name: String,
}

impl fmt::Display for NameCandidate {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{:?}", self.name)?;
        match (&self.group, &self.version) {
            (None, _) => f.write_str(" in any group"),
            (Some(group), Some(version)) if group.is_empty() => write!(f, " in core/{version}"),
            (Some(group), Some(version)) => write!(f, " in {group}/{version}"),
            (Some(group), None) if group.is_empty() => f.write_str(" in the core group"),
            (Some(group), None) => write!(f, " in group {group}"),
        }
    }
}

impl NameCandidate {
    pub(super) fn new(group: Option<String>, version: Option<&str>, name: &str) -> Self {
        NameCandidate {
            group,
            version: version.map(str::to_owned),
            name: name.to_owned(),
        }
    }
}

/// A resource as a user named it, parsed but not yet resolved against
/// discovery.
///
/// Accepted forms (each name may be a plural, singular, kind or short name,
/// matched case-insensitively):
///
/// | Input | Reading |
/// |---|---|
/// | `pods`, `po`, `Pod` | the name in any group, preferred version |
/// | `deployments.apps`, `widgets.example.com` | `resource.group` |
/// | `deployments.v1.apps`, `widgets.v1alpha1.example.com` | `resource.version.group` |
/// | `pods.v1` | `resource.version` in the core group |
/// | `apps/v1/deployments`, `example.com/v1/widgets` | `group/version/resource` |
/// | `v1/pods` | `version/resource` in the core group |
///
/// Subresources (`pods/status`) and kubectl's `TYPE/NAME` are rejected.
/// Surrounding whitespace is ignored. It serialises as the string given and
/// deserialises by parsing.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ResourceName {
    input: String,
    candidates: Vec<NameCandidate>,
}

impl ResourceName {
    /// Parses a resource name in any of the forms above.
    ///
    /// # Errors
    ///
    /// [`VocabularyError::EmptyName`], [`VocabularyError::InvalidName`] (a character other
    /// than ASCII letters, digits, `-`, `.` and `/`, or an empty segment),
    /// [`VocabularyError::Subresource`] and
    /// [`VocabularyError::GroupVersionOnly`].
    ///
    /// ```
    /// use kube_dynamic_informer::vocabulary::{ResourceName, VocabularyError};
    ///
    /// let name = ResourceName::parse("widgets.v1alpha1.example.com")?;
    /// let first = &name.candidates()[0];
    /// assert_eq!(first.group.as_deref(), Some("example.com"));
    /// assert_eq!(first.version.as_deref(), Some("v1alpha1"));
    /// assert_eq!(first.name, "widgets");
    ///
    /// let name = ResourceName::parse("widgets.example.com")?;
    /// assert_eq!(name.candidates()[0].group.as_deref(), Some("example.com"));
    /// assert_eq!(name.candidates()[0].version, None);
    ///
    /// assert!(matches!(
    ///     ResourceName::parse("pods/status"),
    ///     Err(VocabularyError::Subresource { .. })
    /// ));
    /// # Ok::<(), VocabularyError>(())
    /// ```
    pub fn parse(input: &str) -> Result<Self, VocabularyError> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(VocabularyError::EmptyName);
        }
        let invalid = |reason: String| VocabularyError::InvalidName {
            input: trimmed.to_owned(),
            reason,
        };
        if let Some((i, c)) = trimmed
            .char_indices()
            .find(|&(_, c)| !(c.is_ascii_alphanumeric() || matches!(c, '-' | '.' | '/')))
        {
            let column = trimmed[..i].chars().count() + 1;
            return Err(invalid(format!(
                "unexpected character {c:?} at column {column} (resource names use letters, digits, '-', '.' and '/')"
            )));
        }
        let candidates = if trimmed.contains('/') {
            slash_form(trimmed)?
        } else {
            dotted_form(trimmed).map_err(invalid)?
        };
        Ok(ResourceName {
            input: trimmed.to_owned(),
            candidates,
        })
    }

    /// The name as given (without surrounding whitespace).
    #[must_use]
    pub fn as_str(&self) -> &str {
        &self.input
    }

    /// The name part (plural, singular, kind or short name) without group or
    /// version; the same in every candidate.
    #[must_use]
    pub fn name(&self) -> &str {
        self.candidates.first().map_or("", |c| c.name.as_str())
    }

    /// The possible readings of the input, most likely first. Never empty.
    #[must_use]
    pub fn candidates(&self) -> &[NameCandidate] {
        &self.candidates
    }
}

/// `resource`, `resource.group`, `resource.version`, `resource.version.group`.
fn dotted_form(input: &str) -> Result<Vec<NameCandidate>, String> {
    let segments: Vec<&str> = input.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err("empty segment between dots".to_owned());
    }
    let Some((&name, rest)) = segments.split_first() else {
        return Err("empty name".to_owned());
    };
    Ok(match rest {
        [] => vec![NameCandidate::new(None, None, name)],
        [version] if looks_like_version(version) => {
            vec![NameCandidate::new(
                Some(String::new()),
                Some(*version),
                name,
            )]
        }
        [group] => vec![NameCandidate::new(Some((*group).to_owned()), None, name)],
        [second, group @ ..] => {
            let as_version = NameCandidate::new(Some(group.join(".")), Some(*second), name);
            let as_group = NameCandidate::new(Some(rest.join(".")), None, name);
            // Both readings stay, as kubectl tries both; the shape of the
            // second segment only decides which is tried first.
            if looks_like_version(second) {
                vec![as_version, as_group]
            } else {
                vec![as_group, as_version]
            }
        }
    })
}

/// `version/resource` (core group) and `group/version/resource`.
fn slash_form(input: &str) -> Result<Vec<NameCandidate>, VocabularyError> {
    let invalid = |reason: &str| VocabularyError::InvalidName {
        input: input.to_owned(),
        reason: reason.to_owned(),
    };
    let segments: Vec<&str> = input.split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(invalid("empty segment between slashes"));
    }
    let subresource = |whole: usize| VocabularyError::Subresource {
        input: input.to_owned(),
        resource: segments[..whole].join("/"),
        subresource: segments[whole..].join("/"),
    };
    let (group, version, name) = match segments.as_slice() {
        [version, name] if looks_like_version(version) => ("", *version, *name),
        [_, version] if looks_like_version(version) => {
            return Err(VocabularyError::GroupVersionOnly {
                input: input.to_owned(),
            });
        }
        [_, _] => return Err(subresource(1)),
        [version, _, _] if looks_like_version(version) => return Err(subresource(2)),
        [group, version, name] => (*group, *version, *name),
        [first, _, _, _] if !looks_like_version(first) => return Err(subresource(3)),
        _ => {
            return Err(invalid(
                "too many '/'-separated segments; expected group/version/resource",
            ));
        }
    };
    if version.contains('.') || name.contains('.') {
        return Err(invalid(
            "only the group may contain '.' in the group/version/resource form",
        ));
    }
    Ok(vec![NameCandidate::new(
        Some(group.to_owned()),
        Some(version),
        name,
    )])
}

impl fmt::Display for ResourceName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.input)
    }
}

impl FromStr for ResourceName {
    type Err = VocabularyError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ResourceName::parse(s)
    }
}

impl TryFrom<&str> for ResourceName {
    type Error = VocabularyError;

    fn try_from(s: &str) -> Result<Self, Self::Error> {
        ResourceName::parse(s)
    }
}

/// A fully qualified name: exactly this group, version and plural.
impl From<&ResourceKey> for ResourceName {
    fn from(key: &ResourceKey) -> Self {
        ResourceName {
            input: key.to_string(),
            candidates: vec![NameCandidate::new(
                Some(key.group.clone()),
                Some(key.version.as_str()),
                &key.resource,
            )],
        }
    }
}

impl From<ResourceKey> for ResourceName {
    fn from(key: ResourceKey) -> Self {
        ResourceName::from(&key)
    }
}

impl Serialize for ResourceName {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.serialize_str(&self.input)
    }
}

impl<'de> Deserialize<'de> for ResourceName {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        ResourceName::parse(&s).map_err(serde::de::Error::custom)
    }
}
