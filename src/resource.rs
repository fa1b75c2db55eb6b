//! Naming Kubernetes resources: the [`ResourceKey`] that identifies one, and
//! the [`ResourceName`] a user types to find it.
//!
//! Users name resources the way kubectl taught them to: `pods`, `po`, `Pod`,
//! `deployments.apps`, `deployments.v1.apps`, `apps/v1/deployments`,
//! `widgets.example.com`. Most of these leave something out (the group, the
//! version, or whether the word is a plural, a kind or a short name), and only
//! the API server's discovery data can fill it in. So naming happens in two
//! steps:
//!
//! 1. [`ResourceName::parse`] turns the string into a list of
//!    [candidate interpretations](NameCandidate), in priority order, without
//!    talking to a server. The dotted form is syntactically ambiguous:
//!    `widgets.v1alpha1.example.com` is `resource.version.group`, but
//!    `widgets.example.com` is `resource.group`; as kubectl does, the first
//!    reading is preferred when the second segment looks like a Kubernetes
//!    version (`v1`, `v2beta1`, `v1alpha3`) and the other one otherwise.
//! 2. [`ResourceName::resolve`] picks one entry from what discovery reported
//!    ([`KnownResource`]s), trying the candidates in order. Within a candidate
//!    it matches, like kubectl, first the plural or singular name, then a short
//!    name, then the kind, all case-insensitively; a missing version means the
//!    group's preferred version; when several groups match, the core group
//!    wins (so `events` and `Event` are the core ones, as in kubectl), and
//!    otherwise the name is ambiguous and the error lists the choices. An
//!    unknown name gets a few suggestions.
//!
//! Resolved resources are identified by [`ResourceKey`], our own
//! group/version/resource triple: `kube_core::GroupVersionResource` carries a
//! private, serde-defaulted `api_version` field that takes part in equality
//! and hashing, so two values that look equal can differ as map keys.
//!
//! ```
//! use kube_dynamic_informer::resource::{KnownResource, ResourceName};
//!
//! let known = [KnownResource {
//!     group: "apps".into(),
//!     version: "v1".into(),
//!     plural: "deployments".into(),
//!     singular: "deployment".into(),
//!     kind: "Deployment".into(),
//!     short_names: vec!["deploy".into()],
//!     namespaced: true,
//!     preferred_version: true,
//! }];
//! for typed in ["deploy", "Deployment", "deployments.apps", "apps/v1/deployments"] {
//!     let found = ResourceName::parse(typed)?.resolve(&known)?;
//!     assert_eq!(found.key().to_string(), "deployments.v1.apps");
//! }
//! # Ok::<(), kube_dynamic_informer::resource::ResourceError>(())
//! ```

use std::cmp::Ordering;
use std::collections::BTreeSet;
use std::fmt;
use std::str::FromStr;

use kube_core::GroupVersionResource;
use kube_core::discovery::ApiResource;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a resource name could not be parsed or resolved. Every message names
/// the input as the user typed it.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum ResourceError {
    /// The name is empty or only whitespace.
    #[error("empty resource name")]
    Empty,

    /// The name contains a character or has a shape no resource name can
    /// have (a space, an empty segment as in `pods..apps`, too many `/`).
    #[error("invalid resource name {input:?}: {reason}")]
    Invalid {
        /// The name as given.
        input: String,
        /// What is wrong with it.
        reason: String,
    },

    /// The name ends in a subresource (`pods/status`,
    /// `apps/v1/deployments/scale`) or is kubectl's `TYPE/NAME` form
    /// (`deployments/web`). Informers watch whole resources only.
    #[error(
        "{input:?} names a subresource or a single object ({subresource:?} of {resource:?}); \
         name the whole resource instead, e.g. {resource:?}"
    )]
    Subresource {
        /// The name as given.
        input: String,
        /// The input without its last segment: the whole resource.
        resource: String,
        /// The last segment: the subresource (or object name).
        subresource: String,
    },

    /// The name is an API group version alone, such as `apps/v1`.
    #[error(
        "{input:?} is an API group version, not a resource; add the resource, e.g. \"{input}/<resource>\""
    )]
    GroupVersionOnly {
        /// The name as given.
        input: String,
    },

    /// No known resource matches the name.
    #[error("no resource matches {input:?}{}", suggestion_text(.suggestions))]
    NotFound {
        /// The name as given.
        input: String,
        /// Up to five known resources with a similar name, closest first.
        suggestions: Vec<ResourceKey>,
    },

    /// The name matches resources in several non-core groups equally well.
    #[error(
        "resource name {input:?} is ambiguous: it matches {}; name it more precisely, e.g. {:?}",
        join_keys(.candidates),
        example_qualified(.candidates)
    )]
    Ambiguous {
        /// The name as given.
        input: String,
        /// The matching resources, one per group, sorted.
        candidates: Vec<ResourceKey>,
    },
}

fn join_keys(keys: &[ResourceKey]) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(", ")
}

fn suggestion_text(suggestions: &[ResourceKey]) -> String {
    if suggestions.is_empty() {
        String::new()
    } else {
        format!(
            "; did you mean {}?",
            join_keys(suggestions).replace(", ", " or ")
        )
    }
}

/// A spelling of the first candidate that picks it alone: `resource.group`
/// when the candidates are in different groups, else the full key.
fn example_qualified(candidates: &[ResourceKey]) -> String {
    let Some(first) = candidates.first() else {
        return String::new();
    };
    let same_group = candidates.iter().filter(|k| k.group == first.group).count() > 1;
    if same_group || first.group.is_empty() {
        first.to_string()
    } else {
        format!("{}.{}", first.resource, first.group)
    }
}

/// A resolved resource: API group (empty for the core group), version and
/// plural resource name.
///
/// Use it as a map key; it is `Eq`, `Hash` and `Ord` over exactly these three
/// fields. It displays as `resource.version.group` (`deployments.v1.apps`), or
/// `resource.version` for the core group (`pods.v1`), which
/// [`ResourceName::parse`] reads back.
///
/// ```
/// use kube_dynamic_informer::resource::ResourceKey;
///
/// let key = ResourceKey::new("apps", "v1", "deployments");
/// assert_eq!(key.to_string(), "deployments.v1.apps");
/// assert_eq!(key.api_version(), "apps/v1");
/// assert_eq!(ResourceKey::new("", "v1", "pods").to_string(), "pods.v1");
///
/// let gvr: kube_core::GroupVersionResource = key.clone().into();
/// assert_eq!(ResourceKey::from(gvr), key);
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
pub struct ResourceKey {
    /// API group; empty for the core group.
    pub group: String,
    /// API version within the group, such as `v1`.
    pub version: String,
    /// Plural resource name, such as `deployments`.
    pub resource: String,
}

impl ResourceKey {
    /// A key from its parts; pass `""` as the group for the core group.
    #[must_use]
    pub fn new(
        group: impl Into<String>,
        version: impl Into<String>,
        resource: impl Into<String>,
    ) -> Self {
        ResourceKey {
            group: group.into(),
            version: version.into(),
            resource: resource.into(),
        }
    }

    /// The `apiVersion` of the resource's objects: `group/version`, or just
    /// `version` for the core group.
    #[must_use]
    pub fn api_version(&self) -> String {
        if self.group.is_empty() {
            self.version.clone()
        } else {
            format!("{}/{}", self.group, self.version)
        }
    }

    /// Whether the resource is in the core (legacy, unnamed) group.
    #[must_use]
    pub fn is_core_group(&self) -> bool {
        self.group.is_empty()
    }
}

impl fmt::Display for ResourceKey {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.resource, self.version)?;
        if !self.group.is_empty() {
            write!(f, ".{}", self.group)?;
        }
        Ok(())
    }
}

impl From<&GroupVersionResource> for ResourceKey {
    fn from(gvr: &GroupVersionResource) -> Self {
        ResourceKey::new(
            gvr.group.as_str(),
            gvr.version.as_str(),
            gvr.resource.as_str(),
        )
    }
}

impl From<GroupVersionResource> for ResourceKey {
    fn from(gvr: GroupVersionResource) -> Self {
        ResourceKey {
            group: gvr.group,
            version: gvr.version,
            resource: gvr.resource,
        }
    }
}

impl From<&ResourceKey> for GroupVersionResource {
    fn from(key: &ResourceKey) -> Self {
        GroupVersionResource::gvr(&key.group, &key.version, &key.resource)
    }
}

impl From<ResourceKey> for GroupVersionResource {
    fn from(key: ResourceKey) -> Self {
        GroupVersionResource::from(&key)
    }
}

impl From<&ApiResource> for ResourceKey {
    fn from(resource: &ApiResource) -> Self {
        ResourceKey::new(
            resource.group.as_str(),
            resource.version.as_str(),
            resource.plural.as_str(),
        )
    }
}

impl From<ApiResource> for ResourceKey {
    fn from(resource: ApiResource) -> Self {
        ResourceKey {
            group: resource.group,
            version: resource.version,
            resource: resource.plural,
        }
    }
}

impl From<&KnownResource> for ResourceKey {
    fn from(resource: &KnownResource) -> Self {
        resource.key()
    }
}

/// One resource as API discovery reports it, for [`ResourceName::resolve`].
///
/// A resource served in several versions appears once per version.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct KnownResource {
    /// API group; empty for the core group.
    pub group: String,
    /// API version.
    pub version: String,
    /// Plural name, such as `deployments`.
    pub plural: String,
    /// Singular name, such as `deployment`. Older servers leave it empty for
    /// built-in resources; the lower-cased kind then stands in for it.
    pub singular: String,
    /// Kind, such as `Deployment`.
    pub kind: String,
    /// Short names, such as `deploy`.
    pub short_names: Vec<String>,
    /// Whether objects live in namespaces (otherwise cluster-scoped).
    pub namespaced: bool,
    /// Whether `version` is the group's preferred version.
    pub preferred_version: bool,
}

impl KnownResource {
    /// The resource's key.
    #[must_use]
    pub fn key(&self) -> ResourceKey {
        ResourceKey::new(
            self.group.as_str(),
            self.version.as_str(),
            self.plural.as_str(),
        )
    }

    /// The `kube_core` description of the resource, as `kube-client` APIs
    /// take it.
    #[must_use]
    pub fn api_resource(&self) -> ApiResource {
        ApiResource {
            group: self.group.clone(),
            version: self.version.clone(),
            api_version: self.key().api_version(),
            kind: self.kind.clone(),
            plural: self.plural.clone(),
        }
    }

    /// How well `name` matches this resource, if at all.
    fn match_tier(&self, name: &str) -> Option<MatchTier> {
        let singular_matches = if self.singular.is_empty() {
            self.kind.eq_ignore_ascii_case(name)
        } else {
            self.singular.eq_ignore_ascii_case(name)
        };
        if self.plural.eq_ignore_ascii_case(name) || singular_matches {
            Some(MatchTier::Resource)
        } else if self
            .short_names
            .iter()
            .any(|s| s.eq_ignore_ascii_case(name))
        {
            Some(MatchTier::ShortName)
        } else if self.kind.eq_ignore_ascii_case(name) {
            Some(MatchTier::Kind)
        } else {
            None
        }
    }
}

/// kubectl's order: an exact resource name beats a short name, which beats a
/// kind.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
enum MatchTier {
    Resource,
    ShortName,
    Kind,
}

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
    fn new(group: Option<String>, version: Option<&str>, name: &str) -> Self {
        NameCandidate {
            group,
            version: version.map(str::to_owned),
            name: name.to_owned(),
        }
    }

    fn admits(&self, resource: &KnownResource) -> bool {
        self.group
            .as_ref()
            .is_none_or(|g| g.eq_ignore_ascii_case(&resource.group))
            && self
                .version
                .as_ref()
                .is_none_or(|v| v.eq_ignore_ascii_case(&resource.version))
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
    /// [`ResourceError::Empty`], [`ResourceError::Invalid`] (a character other
    /// than ASCII letters, digits, `-`, `.` and `/`, or an empty segment),
    /// [`ResourceError::Subresource`] and
    /// [`ResourceError::GroupVersionOnly`].
    ///
    /// ```
    /// use kube_dynamic_informer::resource::{ResourceError, ResourceName};
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
    ///     Err(ResourceError::Subresource { .. })
    /// ));
    /// # Ok::<(), ResourceError>(())
    /// ```
    pub fn parse(input: &str) -> Result<Self, ResourceError> {
        let trimmed = input.trim();
        if trimmed.is_empty() {
            return Err(ResourceError::Empty);
        }
        let invalid = |reason: String| ResourceError::Invalid {
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

    /// Picks the one resource this name designates among `known` (typically
    /// everything discovery reported). Candidates are tried in order and the
    /// first that matches anything decides.
    ///
    /// # Errors
    ///
    /// [`ResourceError::NotFound`] (with suggestions) when nothing matches;
    /// [`ResourceError::Ambiguous`] when the name matches in several non-core
    /// groups, or several resources of one group version, equally well.
    ///
    /// ```
    /// use kube_dynamic_informer::resource::{KnownResource, ResourceError, ResourceName};
    ///
    /// let event = |group: &str| KnownResource {
    ///     group: group.into(),
    ///     version: "v1".into(),
    ///     plural: "events".into(),
    ///     singular: "event".into(),
    ///     kind: "Event".into(),
    ///     short_names: vec![],
    ///     namespaced: true,
    ///     preferred_version: true,
    /// };
    /// let known = [event(""), event("events.k8s.io")];
    /// // As in kubectl, the core group wins...
    /// assert_eq!(ResourceName::parse("Event")?.resolve(&known)?.group, "");
    /// // ...unless another group is named.
    /// let named = ResourceName::parse("events.events.k8s.io")?.resolve(&known)?;
    /// assert_eq!(named.group, "events.k8s.io");
    ///
    /// let err = ResourceName::parse("evnts")?.resolve(&known).unwrap_err();
    /// assert_eq!(
    ///     err.to_string(),
    ///     r#"no resource matches "evnts"; did you mean events.v1 or events.v1.events.k8s.io?"#
    /// );
    /// # Ok::<(), ResourceError>(())
    /// ```
    pub fn resolve<'a>(
        &self,
        known: &'a [KnownResource],
    ) -> Result<&'a KnownResource, ResourceError> {
        for candidate in &self.candidates {
            if let Some(found) = self.resolve_candidate(candidate, known)? {
                return Ok(found);
            }
        }
        Err(ResourceError::NotFound {
            input: self.input.clone(),
            suggestions: suggestions(self.name(), known),
        })
    }

    fn resolve_candidate<'a>(
        &self,
        candidate: &NameCandidate,
        known: &'a [KnownResource],
    ) -> Result<Option<&'a KnownResource>, ResourceError> {
        let tiered: Vec<(MatchTier, &KnownResource)> = known
            .iter()
            .filter(|r| candidate.admits(r))
            .filter_map(|r| r.match_tier(&candidate.name).map(|tier| (tier, r)))
            .collect();
        let Some(best) = tiered.iter().map(|(tier, _)| *tier).min() else {
            return Ok(None);
        };
        let mut matches: Vec<&KnownResource> = tiered
            .into_iter()
            .filter(|(tier, _)| *tier == best)
            .map(|(_, r)| r)
            .collect();
        // The same resource listed twice is not an ambiguity.
        matches.sort_by(|a, b| cmp_identity(a, b));
        matches.dedup_by(|a, b| cmp_identity(a, b) == Ordering::Equal);

        let ambiguous = |candidates: Vec<ResourceKey>| ResourceError::Ambiguous {
            input: self.input.clone(),
            candidates,
        };

        if candidate.group.is_none() {
            if matches.iter().any(|r| r.group.is_empty()) {
                matches.retain(|r| r.group.is_empty());
            } else {
                let groups: BTreeSet<&str> = matches.iter().map(|r| r.group.as_str()).collect();
                if groups.len() > 1 {
                    return Err(ambiguous(one_per_resource(&matches)));
                }
            }
        }
        if candidate.version.is_none() {
            if matches.iter().any(|r| r.preferred_version) {
                matches.retain(|r| r.preferred_version);
            } else if let Some(top) = matches
                .iter()
                .map(|r| r.version.as_str())
                .max_by(|a, b| cmp_versions(a, b))
            {
                let top = top.to_owned();
                matches.retain(|r| r.version == top);
            }
        }
        match matches.as_slice() {
            [] => Ok(None),
            [only] => Ok(Some(*only)),
            several => Err(ambiguous(several.iter().map(|r| r.key()).collect())),
        }
    }
}

fn cmp_identity(a: &KnownResource, b: &KnownResource) -> Ordering {
    (&a.group, &a.version, &a.plural).cmp(&(&b.group, &b.version, &b.plural))
}

/// One key per (group, plural), in the preferred (else highest) version.
fn one_per_resource(resources: &[&KnownResource]) -> Vec<ResourceKey> {
    let mut best: Vec<&KnownResource> = Vec::new();
    for r in resources {
        match best
            .iter_mut()
            .find(|b| b.group == r.group && b.plural == r.plural)
        {
            Some(b) if prefer(r, b) => *b = *r,
            Some(_) => {}
            None => best.push(r),
        }
    }
    let mut keys: Vec<ResourceKey> = best.into_iter().map(KnownResource::key).collect();
    keys.sort();
    keys
}

/// Whether `a` is a better version of a resource than `b`: the preferred
/// version first, then Kubernetes version priority.
fn prefer(a: &KnownResource, b: &KnownResource) -> bool {
    (a.preferred_version, VersionPriority::of(&a.version))
        > (b.preferred_version, VersionPriority::of(&b.version))
}

fn cmp_versions(a: &str, b: &str) -> Ordering {
    VersionPriority::of(a).cmp(&VersionPriority::of(b))
}

/// Kubernetes version priority, greatest first: GA (`v2` > `v1`), then beta
/// (`v2beta1` > `v1beta2` > `v1beta1`), then alpha, then anything else in
/// reverse alphabetical order (so that the greatest is alphabetically first,
/// as in apimachinery's `CompareKubeAwareVersionStrings`).
#[derive(Debug, PartialEq, Eq, PartialOrd, Ord)]
enum VersionPriority<'a> {
    Other(std::cmp::Reverse<&'a str>),
    Kube {
        stability: u8,
        major: u64,
        minor: u64,
    },
}

impl<'a> VersionPriority<'a> {
    fn of(version: &'a str) -> Self {
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
fn looks_like_version(segment: &str) -> bool {
    parse_kube_version(segment).is_some()
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
fn slash_form(input: &str) -> Result<Vec<NameCandidate>, ResourceError> {
    let invalid = |reason: &str| ResourceError::Invalid {
        input: input.to_owned(),
        reason: reason.to_owned(),
    };
    let segments: Vec<&str> = input.split('/').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(invalid("empty segment between slashes"));
    }
    let subresource = |whole: usize| ResourceError::Subresource {
        input: input.to_owned(),
        resource: segments[..whole].join("/"),
        subresource: segments[whole..].join("/"),
    };
    let (group, version, name) = match segments.as_slice() {
        [version, name] if looks_like_version(version) => ("", *version, *name),
        [_, version] if looks_like_version(version) => {
            return Err(ResourceError::GroupVersionOnly {
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
    type Err = ResourceError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        ResourceName::parse(s)
    }
}

impl TryFrom<&str> for ResourceName {
    type Error = ResourceError;

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

const MAX_SUGGESTIONS: usize = 5;

/// Known resources whose names resemble `name`: within a small edit distance
/// (1 for names of up to three characters, else 2), or sharing a prefix or a
/// substring of at least three characters. Closest first; one entry per
/// resource, in its preferred version.
fn suggestions(name: &str, known: &[KnownResource]) -> Vec<ResourceKey> {
    let wanted = name.to_ascii_lowercase();
    let mut scored: Vec<((u8, usize), &KnownResource)> = Vec::new();
    for resource in known {
        let names = [&resource.plural, &resource.singular, &resource.kind]
            .into_iter()
            .chain(&resource.short_names)
            .filter(|n| !n.is_empty());
        let Some(score) = names
            .filter_map(|n| similarity(&wanted, &n.to_ascii_lowercase()))
            .min()
        else {
            continue;
        };
        match scored
            .iter_mut()
            .find(|(_, r)| r.group == resource.group && r.plural == resource.plural)
        {
            Some((best_score, best)) => {
                if score < *best_score || (score == *best_score && prefer(resource, best)) {
                    *best_score = score;
                    *best = resource;
                }
            }
            None => scored.push((score, resource)),
        }
    }
    let mut scored: Vec<((u8, usize), ResourceKey)> =
        scored.into_iter().map(|(s, r)| (s, r.key())).collect();
    scored.sort();
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, key)| key)
        .collect()
}

/// A rank (lower is closer) if `candidate` resembles `wanted`.
fn similarity(wanted: &str, candidate: &str) -> Option<(u8, usize)> {
    let max_distance = if wanted.len() <= 3 { 1 } else { 2 };
    if let Some(distance) = bounded_edit_distance(wanted, candidate, max_distance) {
        return Some((0, distance));
    }
    let shorter = wanted.len().min(candidate.len());
    if shorter >= 3 && (candidate.starts_with(wanted) || wanted.starts_with(candidate)) {
        return Some((1, wanted.len().abs_diff(candidate.len())));
    }
    if shorter >= 3 && (candidate.contains(wanted) || wanted.contains(candidate)) {
        return Some((2, wanted.len().abs_diff(candidate.len())));
    }
    None
}

/// Levenshtein distance if at most `max`; skips the quadratic work when the
/// lengths alone rule it out, so a huge input costs no more than a short one.
fn bounded_edit_distance(a: &str, b: &str, max: usize) -> Option<usize> {
    let a: Vec<char> = a.chars().collect();
    let b: Vec<char> = b.chars().collect();
    if a.len().abs_diff(b.len()) > max {
        return None;
    }
    let mut previous: Vec<usize> = (0..=b.len()).collect();
    let mut current = vec![0; b.len() + 1];
    for (i, ca) in a.iter().enumerate() {
        current[0] = i + 1;
        for (j, cb) in b.iter().enumerate() {
            let substitution = previous[j] + usize::from(ca != cb);
            current[j + 1] = substitution.min(previous[j + 1] + 1).min(current[j] + 1);
        }
        std::mem::swap(&mut previous, &mut current);
    }
    let distance = previous[b.len()];
    (distance <= max).then_some(distance)
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn res(
        gv: &str,
        plural: &str,
        singular: &str,
        kind: &str,
        short: &[&str],
        preferred: bool,
    ) -> KnownResource {
        let (group, version) = gv.rsplit_once('/').unwrap_or(("", gv));
        KnownResource {
            group: group.into(),
            version: version.into(),
            plural: plural.into(),
            singular: singular.into(),
            kind: kind.into(),
            short_names: short.iter().map(|s| (*s).to_owned()).collect(),
            namespaced: true,
            preferred_version: preferred,
        }
    }

    fn cluster() -> Vec<KnownResource> {
        vec![
            // Legacy discovery leaves built-in singulars empty.
            res("v1", "pods", "", "Pod", &["po"], true),
            res("v1", "services", "", "Service", &["svc"], true),
            res("v1", "events", "event", "Event", &["ev"], true),
            res("v1", "configmaps", "configmap", "ConfigMap", &["cm"], true),
            res("v1", "nodes", "node", "Node", &["no"], true),
            res(
                "apps/v1",
                "deployments",
                "deployment",
                "Deployment",
                &["deploy"],
                true,
            ),
            res(
                "apps/v1beta1",
                "deployments",
                "deployment",
                "Deployment",
                &["deploy"],
                false,
            ),
            res(
                "events.k8s.io/v1",
                "events",
                "event",
                "Event",
                &["ev"],
                true,
            ),
            res(
                "autoscaling/v2",
                "horizontalpodautoscalers",
                "horizontalpodautoscaler",
                "HorizontalPodAutoscaler",
                &["hpa"],
                true,
            ),
            res(
                "autoscaling/v1",
                "horizontalpodautoscalers",
                "horizontalpodautoscaler",
                "HorizontalPodAutoscaler",
                &["hpa"],
                false,
            ),
            res(
                "metrics.k8s.io/v1beta1",
                "pods",
                "",
                "PodMetrics",
                &[],
                true,
            ),
            res(
                "example.com/v1",
                "widgets",
                "widget",
                "Widget",
                &["wd"],
                true,
            ),
            res(
                "example.com/v1alpha1",
                "widgets",
                "widget",
                "Widget",
                &["wd"],
                false,
            ),
            res(
                "v1alpha1.example.com/v1",
                "widgets",
                "widget",
                "Widget",
                &[],
                true,
            ),
            res(
                "cert-manager.io/v1",
                "certificates",
                "certificate",
                "Certificate",
                &["cert"],
                true,
            ),
            res(
                "certs.example.org/v1",
                "certificates",
                "certificate",
                "Certificate",
                &[],
                true,
            ),
            res(
                "legacy.example.com/v2",
                "gadgets",
                "gadget",
                "Gadget",
                &[],
                true,
            ),
            res(
                "legacy.example.com/v1",
                "gadgets",
                "gadget",
                "Gadget",
                &[],
                false,
            ),
            res(
                "legacy.example.com/v1",
                "oldthings",
                "oldthing",
                "OldThing",
                &[],
                false,
            ),
            res(
                "legacy.example.com/v1alpha1",
                "betathings",
                "betathing",
                "BetaThing",
                &[],
                false,
            ),
            res(
                "legacy.example.com/v1beta1",
                "betathings",
                "betathing",
                "BetaThing",
                &[],
                false,
            ),
            res(
                "legacy.example.com/v1beta2",
                "betathings",
                "betathing",
                "BetaThing",
                &[],
                false,
            ),
            res(
                "shadow.example.com/v1",
                "deploys",
                "deploy",
                "Shadow",
                &[],
                true,
            ),
        ]
    }

    fn resolve(input: &str) -> String {
        let known = cluster();
        match ResourceName::parse(input).and_then(|n| n.resolve(&known).map(KnownResource::key)) {
            Ok(key) => key.to_string(),
            Err(e) => panic!("{input:?}: {e}"),
        }
    }

    fn resolve_err(input: &str) -> ResourceError {
        let known = cluster();
        match ResourceName::parse(input).and_then(|n| n.resolve(&known).map(KnownResource::key)) {
            Ok(key) => panic!("{input:?} resolved to {key}"),
            Err(e) => e,
        }
    }

    fn candidates(input: &str) -> Vec<NameCandidate> {
        ResourceName::parse(input)
            .unwrap_or_else(|e| panic!("{input:?}: {e}"))
            .candidates()
            .to_vec()
    }

    fn cand(group: Option<&str>, version: Option<&str>, name: &str) -> NameCandidate {
        NameCandidate::new(group.map(str::to_owned), version, name)
    }

    #[test]
    fn key_display_and_api_version() {
        let key = ResourceKey::new("apps", "v1", "deployments");
        assert_eq!(key.to_string(), "deployments.v1.apps");
        assert_eq!(key.api_version(), "apps/v1");
        assert!(!key.is_core_group());
        let core = ResourceKey::new("", "v1", "pods");
        assert_eq!(core.to_string(), "pods.v1");
        assert_eq!(core.api_version(), "v1");
        assert!(core.is_core_group());
    }

    #[test]
    fn key_conversions() {
        let key = ResourceKey::new("example.com", "v1", "widgets");
        let gvr = GroupVersionResource::from(&key);
        assert_eq!(
            (
                gvr.group.as_str(),
                gvr.version.as_str(),
                gvr.resource.as_str()
            ),
            ("example.com", "v1", "widgets")
        );
        assert_eq!(
            gvr,
            GroupVersionResource::gvr("example.com", "v1", "widgets")
        );
        assert_eq!(ResourceKey::from(&gvr), key);
        assert_eq!(ResourceKey::from(gvr), key);

        // A deserialised GVR has an empty private api_version, so it differs
        // from a constructed one; the keys made from both do not.
        let parsed: GroupVersionResource = serde_json::from_value(
            serde_json::json!({"group": "example.com", "version": "v1", "resource": "widgets"}),
        )
        .unwrap();
        assert_eq!(ResourceKey::from(parsed), key);

        let ar = ApiResource {
            group: "example.com".into(),
            version: "v1".into(),
            api_version: "example.com/v1".into(),
            kind: "Widget".into(),
            plural: "widgets".into(),
        };
        assert_eq!(ResourceKey::from(&ar), key);
        assert_eq!(ResourceKey::from(ar), key);

        let known = res("example.com/v1", "widgets", "widget", "Widget", &[], true);
        assert_eq!(ResourceKey::from(&known), key);
        let ar = known.api_resource();
        assert_eq!(
            (
                ar.api_version.as_str(),
                ar.kind.as_str(),
                ar.plural.as_str()
            ),
            ("example.com/v1", "Widget", "widgets")
        );
    }

    #[test]
    fn key_serde_and_ordering() {
        let key = ResourceKey::new("apps", "v1", "deployments");
        let json = serde_json::to_value(&key).unwrap();
        assert_eq!(
            json,
            serde_json::json!({"group": "apps", "version": "v1", "resource": "deployments"})
        );
        assert_eq!(serde_json::from_value::<ResourceKey>(json).unwrap(), key);
        let mut keys = [key.clone(), ResourceKey::new("", "v1", "pods")];
        keys.sort();
        assert_eq!(keys[0].group, "");
    }

    #[test]
    fn parse_plain_names() {
        for input in ["pods", "po", "Pod", "  pods  "] {
            assert_eq!(candidates(input), vec![cand(None, None, input.trim())]);
        }
    }

    #[test]
    fn parse_dotted_forms() {
        assert_eq!(
            candidates("deployments.apps"),
            vec![cand(Some("apps"), None, "deployments")]
        );
        assert_eq!(
            candidates("pods.v1"),
            vec![cand(Some(""), Some("v1"), "pods")]
        );
        assert_eq!(
            candidates("deployments.v1.apps"),
            vec![
                cand(Some("apps"), Some("v1"), "deployments"),
                cand(Some("v1.apps"), None, "deployments")
            ]
        );
        assert_eq!(
            candidates("widgets.example.com"),
            vec![
                cand(Some("example.com"), None, "widgets"),
                cand(Some("com"), Some("example"), "widgets")
            ]
        );
        assert_eq!(
            candidates("widgets.v1alpha1.example.com")[0],
            cand(Some("example.com"), Some("v1alpha1"), "widgets")
        );
        assert_eq!(
            candidates("widgets.v2beta3.example.com")[0],
            cand(Some("example.com"), Some("v2beta3"), "widgets")
        );
        // Not versions: no digits after alpha, upper case, no leading v.
        for input in [
            "widgets.v1alpha.example.com",
            "widgets.V1.example.com",
            "widgets.1.example.com",
        ] {
            assert_eq!(candidates(input)[0].version, None, "{input}");
        }
        assert_eq!(
            candidates("Deployment.apps")[0],
            cand(Some("apps"), None, "Deployment")
        );
    }

    #[test]
    fn parse_slash_forms() {
        assert_eq!(
            candidates("apps/v1/deployments"),
            vec![cand(Some("apps"), Some("v1"), "deployments")]
        );
        assert_eq!(
            candidates("v1/pods"),
            vec![cand(Some(""), Some("v1"), "pods")]
        );
        assert_eq!(
            candidates("example.com/v1alpha1/widgets"),
            vec![cand(Some("example.com"), Some("v1alpha1"), "widgets")]
        );
        assert_eq!(
            candidates("apps/v1/Deployment"),
            vec![cand(Some("apps"), Some("v1"), "Deployment")]
        );
    }

    #[test]
    fn parse_rejects_subresources_and_bad_shapes() {
        let sub = |input: &str| match ResourceName::parse(input) {
            Err(ResourceError::Subresource {
                resource,
                subresource,
                ..
            }) => (resource, subresource),
            other => panic!("{input:?}: {other:?}"),
        };
        assert_eq!(sub("pods/status"), ("pods".to_owned(), "status".to_owned()));
        assert_eq!(
            sub("deployments/web"),
            ("deployments".to_owned(), "web".to_owned())
        );
        assert_eq!(sub("v1/pods/log"), ("v1/pods".to_owned(), "log".to_owned()));
        assert_eq!(
            sub("apps/v1/deployments/scale"),
            ("apps/v1/deployments".to_owned(), "scale".to_owned())
        );
        let msg = ResourceName::parse("pods/status").unwrap_err().to_string();
        assert_eq!(
            msg,
            r#""pods/status" names a subresource or a single object ("status" of "pods"); name the whole resource instead, e.g. "pods""#
        );

        assert!(matches!(
            ResourceName::parse("apps/v1"),
            Err(ResourceError::GroupVersionOnly { .. })
        ));
        assert!(matches!(
            ResourceName::parse("example.com/v1beta1"),
            Err(ResourceError::GroupVersionOnly { .. })
        ));
        assert_eq!(ResourceName::parse(""), Err(ResourceError::Empty));
        assert_eq!(ResourceName::parse(" \t"), Err(ResourceError::Empty));
        for input in [
            "pods..apps",
            ".pods",
            "pods.",
            "/pods",
            "apps//deployments",
            "v1/",
            "po ds",
            "pods,svc",
            "pöds",
            "a/b/c/d/e",
            "v1/pods/status/x",
            "apps/v1.x/deployments",
            "apps/v1/deployments.apps",
        ] {
            assert!(
                matches!(
                    ResourceName::parse(input),
                    Err(ResourceError::Invalid { .. })
                ),
                "{input:?}: {:?}",
                ResourceName::parse(input)
            );
        }
        let msg = ResourceName::parse("po ds").unwrap_err().to_string();
        assert!(
            msg.starts_with(
                r#"invalid resource name "po ds": unexpected character ' ' at column 3"#
            ),
            "{msg}"
        );
    }

    #[test]
    fn resolves_plurals_singulars_kinds_and_short_names_case_insensitively() {
        for input in ["pods", "pod", "Pod", "PODS", "po", "Po"] {
            assert_eq!(resolve(input), "pods.v1", "{input}");
        }
        for input in ["deployments", "deployment", "Deployment", "DEPLOYMENT"] {
            assert_eq!(resolve(input), "deployments.v1.apps", "{input}");
        }
        assert_eq!(resolve("svc"), "services.v1");
        assert_eq!(
            resolve("service"),
            "services.v1",
            "empty singular falls back to the kind"
        );
        assert_eq!(resolve("cm"), "configmaps.v1");
        assert_eq!(resolve("ConfigMap"), "configmaps.v1");
    }

    #[test]
    fn resource_names_beat_short_names_beat_kinds() {
        // "deploy" is apps' short name but shadow.example.com's singular.
        assert_eq!(resolve("deploy"), "deploys.v1.shadow.example.com");
        assert_eq!(resolve("deploy.apps"), "deployments.v1.apps");
        // "PodMetrics" is only a kind.
        assert_eq!(resolve("PodMetrics"), "pods.v1beta1.metrics.k8s.io");
    }

    #[test]
    fn core_group_wins_across_groups() {
        assert_eq!(resolve("events"), "events.v1");
        assert_eq!(resolve("Event"), "events.v1");
        assert_eq!(resolve("ev"), "events.v1");
        assert_eq!(
            resolve("pods"),
            "pods.v1",
            "metrics.k8s.io also serves pods"
        );
        assert_eq!(resolve("events.events.k8s.io"), "events.v1.events.k8s.io");
        assert_eq!(resolve("Event.events.k8s.io"), "events.v1.events.k8s.io");
        assert_eq!(
            resolve("pods.metrics.k8s.io"),
            "pods.v1beta1.metrics.k8s.io"
        );
        assert_eq!(
            resolve("metrics.k8s.io/v1beta1/pods"),
            "pods.v1beta1.metrics.k8s.io"
        );
    }

    #[test]
    fn core_group_forms() {
        assert_eq!(resolve("pods.v1"), "pods.v1");
        assert_eq!(resolve("v1/pods"), "pods.v1");
        assert_eq!(resolve("v1/Pod"), "pods.v1");
        assert!(
            matches!(
                resolve_err("deployments.v1"),
                ResourceError::NotFound { .. }
            ),
            "deployments are not in core"
        );
    }

    #[test]
    fn named_groups_and_versions() {
        assert_eq!(resolve("deployments.apps"), "deployments.v1.apps");
        assert_eq!(resolve("deployments.v1.apps"), "deployments.v1.apps");
        assert_eq!(
            resolve("deployments.v1beta1.apps"),
            "deployments.v1beta1.apps"
        );
        assert_eq!(
            resolve("apps/v1beta1/deployments"),
            "deployments.v1beta1.apps"
        );
        assert_eq!(resolve("apps/v1/Deployment"), "deployments.v1.apps");
        assert_eq!(resolve("Deployment.v1.apps"), "deployments.v1.apps");
        assert_eq!(resolve("hpa"), "horizontalpodautoscalers.v2.autoscaling");
        assert_eq!(
            resolve("hpa.v1.autoscaling"),
            "horizontalpodautoscalers.v1.autoscaling"
        );
        assert_eq!(
            resolve("DEPLOYMENTS.APPS"),
            "deployments.v1.apps",
            "groups match case-insensitively"
        );
    }

    #[test]
    fn crd_groups_with_dots() {
        assert_eq!(resolve("widgets.example.com"), "widgets.v1.example.com");
        assert_eq!(resolve("widget.example.com"), "widgets.v1.example.com");
        assert_eq!(resolve("wd.example.com"), "widgets.v1.example.com");
        assert_eq!(
            resolve("widgets.v1alpha1.example.com"),
            "widgets.v1alpha1.example.com"
        );
        assert_eq!(
            resolve("example.com/v1alpha1/widgets"),
            "widgets.v1alpha1.example.com"
        );
        // The second segment looks like a version, so resource.version.group
        // comes first; the group literally named v1alpha1.example.com is the
        // fallback reading and is reachable by the slash form.
        assert_eq!(
            resolve("v1alpha1.example.com/v1/widgets"),
            "widgets.v1.v1alpha1.example.com"
        );
        // A version-looking segment that is no version of example.com falls
        // back to reading it as part of the group.
        assert_eq!(
            resolve("widgets.v1alpha1.example.com"),
            "widgets.v1alpha1.example.com"
        );
        let only_dotted_group = vec![res(
            "v1alpha1.example.com/v1",
            "widgets",
            "widget",
            "Widget",
            &[],
            true,
        )];
        let found = ResourceName::parse("widgets.v1alpha1.example.com")
            .unwrap()
            .resolve(&only_dotted_group)
            .unwrap();
        assert_eq!(found.group, "v1alpha1.example.com");
    }

    #[test]
    fn missing_version_means_preferred_then_highest() {
        assert_eq!(resolve("wd"), "widgets.v1.example.com");
        assert_eq!(resolve("gadgets"), "gadgets.v2.legacy.example.com");
        // Not in the preferred version v2: the only version serving it.
        assert_eq!(resolve("oldthings"), "oldthings.v1.legacy.example.com");
        // In no preferred version: beta2 > beta1 > alpha1.
        assert_eq!(
            resolve("betathings"),
            "betathings.v1beta2.legacy.example.com"
        );
    }

    #[test]
    fn ambiguity_across_non_core_groups_lists_candidates() {
        assert!(matches!(
            resolve_err("widgets"),
            ResourceError::Ambiguous { .. }
        ));
        match resolve_err("certificates") {
            ResourceError::Ambiguous { input, candidates } => {
                assert_eq!(input, "certificates");
                assert_eq!(
                    candidates,
                    vec![
                        ResourceKey::new("cert-manager.io", "v1", "certificates"),
                        ResourceKey::new("certs.example.org", "v1", "certificates"),
                    ]
                );
            }
            other => panic!("{other:?}"),
        }
        assert_eq!(
            resolve_err("Certificate").to_string(),
            "resource name \"Certificate\" is ambiguous: it matches certificates.v1.cert-manager.io, \
             certificates.v1.certs.example.org; name it more precisely, e.g. \"certificates.cert-manager.io\""
        );
        // A short name only one group has is not ambiguous.
        assert_eq!(resolve("cert"), "certificates.v1.cert-manager.io");
        assert_eq!(
            resolve("certificates.certs.example.org"),
            "certificates.v1.certs.example.org"
        );
    }

    #[test]
    fn duplicates_are_not_ambiguous() {
        let mut known = cluster();
        known.extend(cluster());
        let found = ResourceName::parse("deploy.apps")
            .unwrap()
            .resolve(&known)
            .unwrap();
        assert_eq!(found.key().to_string(), "deployments.v1.apps");
    }

    #[test]
    fn same_name_twice_in_one_group_version_is_ambiguous() {
        let known = vec![
            res("x.example.com/v1", "foos", "foo", "Foo", &["f"], true),
            res("x.example.com/v1", "fizzes", "fizz", "Fizz", &["f"], true),
        ];
        let err = ResourceName::parse("f")
            .unwrap()
            .resolve(&known)
            .unwrap_err();
        assert_eq!(
            err.to_string(),
            "resource name \"f\" is ambiguous: it matches fizzes.v1.x.example.com, \
             foos.v1.x.example.com; name it more precisely, e.g. \"fizzes.v1.x.example.com\""
        );
    }

    #[test]
    fn unknown_names_get_suggestions() {
        let suggestions = |input: &str| match resolve_err(input) {
            ResourceError::NotFound { suggestions, .. } => suggestions
                .iter()
                .map(ToString::to_string)
                .collect::<Vec<_>>(),
            other => panic!("{input:?}: {other:?}"),
        };
        assert_eq!(suggestions("deploymnts")[0], "deployments.v1.apps");
        assert_eq!(suggestions("Deploymnt")[0], "deployments.v1.apps");
        assert_eq!(suggestions("configmap.v2")[0], "configmaps.v1");
        assert!(
            suggestions("widg").contains(&"widgets.v1.example.com".to_owned()),
            "{:?}",
            suggestions("widg")
        );
        assert!(
            suggestions("horizontalpod")
                .contains(&"horizontalpodautoscalers.v2.autoscaling".to_owned())
        );
        assert!(suggestions("zzzzzzzz").is_empty());
        assert!(suggestions("pods.nosuch.example.com").contains(&"pods.v1".to_owned()));
        assert!(suggestions("xx").len() <= MAX_SUGGESTIONS);
        assert!(suggestions("e").len() <= MAX_SUGGESTIONS);
        assert_eq!(
            resolve_err("deploymentz.apps").to_string(),
            "no resource matches \"deploymentz.apps\"; did you mean deployments.v1.apps or deploys.v1.shadow.example.com?"
        );
        assert_eq!(
            resolve_err("qqqqqqq").to_string(),
            "no resource matches \"qqqqqqq\""
        );
    }

    #[test]
    fn nothing_known() {
        assert_eq!(
            ResourceName::parse("pods").unwrap().resolve(&[]),
            Err(ResourceError::NotFound {
                input: "pods".into(),
                suggestions: vec![]
            })
        );
    }

    #[test]
    fn name_from_key_is_exact() {
        let key = ResourceKey::new("apps", "v1beta1", "deployments");
        let name = ResourceName::from(&key);
        assert_eq!(name.as_str(), "deployments.v1beta1.apps");
        assert_eq!(name.candidates().len(), 1);
        assert_eq!(name.resolve(&cluster()).unwrap().key(), key);
        let core = ResourceName::from(ResourceKey::new("", "v1", "pods"));
        assert_eq!(
            core.resolve(&cluster()).unwrap().key().to_string(),
            "pods.v1"
        );
        // The display form of every key re-parses to the same resource.
        for known in cluster() {
            let parsed = ResourceName::parse(&known.key().to_string()).unwrap();
            assert_eq!(
                parsed.resolve(&cluster()).unwrap().key(),
                known.key(),
                "{}",
                known.key()
            );
        }
    }

    #[test]
    fn name_accessors_and_serde() {
        let name: ResourceName = " deployments.apps ".parse().unwrap();
        assert_eq!(name.as_str(), "deployments.apps");
        assert_eq!(name.name(), "deployments");
        assert_eq!(name.to_string(), "deployments.apps");
        assert_eq!(ResourceName::try_from("po").unwrap().name(), "po");
        let json = serde_json::to_value(&name).unwrap();
        assert_eq!(json, serde_json::json!("deployments.apps"));
        assert_eq!(serde_json::from_value::<ResourceName>(json).unwrap(), name);
        assert!(serde_json::from_value::<ResourceName>(serde_json::json!("pods/status")).is_err());
        assert_eq!(
            name.candidates()[0].to_string(),
            "\"deployments\" in group apps"
        );
        assert_eq!(
            ResourceName::parse("v1/pods").unwrap().candidates()[0].to_string(),
            "\"pods\" in core/v1"
        );
    }

    #[test]
    fn version_priority_order() {
        let mut versions = vec![
            "v1alpha1",
            "foo",
            "v2",
            "v1beta1",
            "v1",
            "v10",
            "v1beta2",
            "v2alpha1",
            "bar",
            "v11alpha2",
        ];
        versions.sort_by(|a, b| cmp_versions(b, a));
        assert_eq!(
            versions,
            vec![
                "v10",
                "v2",
                "v1",
                "v1beta2",
                "v1beta1",
                "v11alpha2",
                "v2alpha1",
                "v1alpha1",
                "bar",
                "foo"
            ]
        );
        assert!(looks_like_version("v1"));
        assert!(looks_like_version("v3beta12"));
        assert!(!looks_like_version("v"));
        assert!(!looks_like_version("v1gamma1"));
        assert!(!looks_like_version("v99999999999999999999999"));
    }

    #[test]
    fn edit_distance() {
        assert_eq!(bounded_edit_distance("kitten", "sitting", 3), Some(3));
        assert_eq!(bounded_edit_distance("kitten", "sitting", 2), None);
        assert_eq!(bounded_edit_distance("", "ab", 2), Some(2));
        assert_eq!(bounded_edit_distance("abc", "abc", 0), Some(0));
    }

    proptest! {
        #[test]
        fn parsing_and_resolving_arbitrary_strings_never_panics(s in any::<String>()) {
            if let Ok(name) = ResourceName::parse(&s) {
                let _ = name.resolve(&cluster());
            }
        }

        #[test]
        fn parsing_name_like_strings_never_panics(s in "[a-zA-Z0-9./ -]{0,24}") {
            if let Ok(name) = ResourceName::parse(&s) {
                prop_assert!(!name.candidates().is_empty());
                let _ = name.resolve(&cluster());
            }
        }
    }
}
