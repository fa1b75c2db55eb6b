//! Resolving a [`ResourceName`] against what discovery reported
//! ([`KnownResource`]s), as kubectl does, with suggestions when nothing
//! matches.

use std::cmp::Ordering;
use std::collections::BTreeSet;

use kube_core::discovery::ApiResource;
use serde::{Deserialize, Serialize};

use super::key::ResourceKey;
use super::name::{NameCandidate, ResourceName};
use super::version::version_priority;
use crate::vocabulary::VocabularyError;

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
        ResourceKey::new(&self.group, &self.version, &self.plural)
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

impl From<&KnownResource> for ResourceKey {
    fn from(resource: &KnownResource) -> Self {
        resource.key()
    }
}

impl NameCandidate {
    /// Whether `group` and `version` are those this reading names (any,
    /// where it names none), compared case-insensitively.
    pub(crate) fn admits(&self, group: &str, version: &str) -> bool {
        self.group
            .as_ref()
            .is_none_or(|g| g.eq_ignore_ascii_case(group))
            && self
                .version
                .as_ref()
                .is_none_or(|v| v.eq_ignore_ascii_case(version))
    }
}

impl ResourceName {
    /// Picks the one resource this name designates among `known` (typically
    /// everything discovery reported). Candidates are tried in order and the
    /// first that matches anything decides.
    ///
    /// # Errors
    ///
    /// [`VocabularyError::NotFound`] (with suggestions) when nothing matches;
    /// [`VocabularyError::Ambiguous`] when the name matches in several non-core
    /// groups, or several resources of one group version, equally well.
    ///
    /// ```
    /// use kube_dynamic_informer::vocabulary::{KnownResource, ResourceName, VocabularyError};
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
    /// # Ok::<(), VocabularyError>(())
    /// ```
    pub fn resolve<'a>(
        &self,
        known: &'a [KnownResource],
    ) -> Result<&'a KnownResource, VocabularyError> {
        for candidate in self.candidates() {
            if let Some(found) = self.resolve_candidate(candidate, known)? {
                return Ok(found);
            }
        }
        Err(VocabularyError::NotFound {
            input: self.as_str().to_owned(),
            suggestions: suggestions(
                self.name(),
                self.candidates().first().and_then(|c| c.group.as_deref()),
                known,
            ),
        })
    }

    fn resolve_candidate<'a>(
        &self,
        candidate: &NameCandidate,
        known: &'a [KnownResource],
    ) -> Result<Option<&'a KnownResource>, VocabularyError> {
        let tiered: Vec<(MatchTier, &KnownResource)> = known
            .iter()
            .filter(|r| candidate.admits(&r.group, &r.version))
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

        let ambiguous = |candidates: Vec<ResourceKey>| VocabularyError::Ambiguous {
            input: self.as_str().to_owned(),
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
                .max_by_key(|v| version_priority(v))
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
    (a.preferred_version, version_priority(&a.version))
        > (b.preferred_version, version_priority(&b.version))
}

pub(super) const MAX_SUGGESTIONS: usize = 5;

/// Known resources whose names resemble `name`: within a small edit distance
/// (1 for names of up to three characters, else 2), or sharing a prefix or a
/// substring of at least three characters. Those of the group the name asks
/// for (if it names one) first, then closest first; one entry per resource,
/// in its preferred version.
fn suggestions(name: &str, group: Option<&str>, known: &[KnownResource]) -> Vec<ResourceKey> {
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
    scored.sort_by_cached_key(|&((kind, distance), r)| {
        let other_group = group.is_some_and(|g| g != r.group);
        (other_group, kind, distance, r.key())
    });
    scored
        .into_iter()
        .take(MAX_SUGGESTIONS)
        .map(|(_, r)| r.key())
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
    // A name inside another counts when it is most of it: `maps` in
    // `configmaps`, not `ing` (ingresses' short name) in `nosuchthing`.
    let longer = wanted.len().max(candidate.len());
    if shorter >= 4
        && shorter * 2 >= longer
        && (candidate.contains(wanted) || wanted.contains(candidate))
    {
        return Some((2, wanted.len().abs_diff(candidate.len())));
    }
    None
}

/// Levenshtein distance if at most `max`; skips the quadratic work when the
/// lengths alone rule it out, so a huge input costs no more than a short one.
pub(crate) fn bounded_edit_distance(a: &str, b: &str, max: usize) -> Option<usize> {
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
