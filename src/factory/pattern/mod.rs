//! Resource patterns: rules that designate resources by group, category or
//! origin instead of by name, evaluated against discovery.
//!
//! The [layer docs](crate::factory) say more.

use std::collections::BTreeSet;

use serde::{Deserialize, Serialize};

use crate::factory::FactoryError;
use crate::factory::discovery::DiscoverySnapshot;
use crate::vocabulary::resource::KnownResource;
use crate::vocabulary::setters;

/// Which scope of resources a pattern keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
pub enum ScopeFilter {
    /// Only resources whose objects live in namespaces.
    Namespaced,
    /// Only cluster-scoped resources.
    Cluster,
}

/// A rule designating resources; see the [module docs](crate::factory). The default
/// designates nothing: set at least one criterion or `include`.
#[derive(Clone, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[cfg_attr(feature = "config", derive(schemars::JsonSchema))]
#[serde(deny_unknown_fields, rename_all = "camelCase")]
pub struct ResourcePattern {
    /// API groups, as globs: `*` for every group (the core group included),
    /// `*.example.com` for its subdomains, `apps`; `core` (or `""`) for the
    /// core group. A resource must be in one of them, when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub groups: Vec<String>,
    /// Categories, as discovery reports them (`all`, or those CRDs declare,
    /// such as `qa`). A resource must be in one of them, when given.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub categories: Vec<String>,
    /// Only resources defined by a CustomResourceDefinition.
    #[serde(default, skip_serializing_if = "std::ops::Not::not")]
    pub custom_resources: bool,
    /// Resources added by name whatever the criteria say: a plural,
    /// singular, kind or short name, in any group, or followed by `.group`.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub include: Vec<String>,
    /// Resources removed by name (in the forms `include` takes).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub exclude: Vec<String>,
    /// Keep only namespaced or only cluster-scoped resources.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub scope: Option<ScopeFilter>,
    /// The version to watch; resources not served in it are not selected.
    /// Default: each group's preferred version.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[cfg_attr(feature = "config", schemars(length(min = 1)))]
    pub version: Option<String>,
}

/// Builder methods that add to a list field, each taking anything that
/// iterates over strings.
macro_rules! adders {
    ($($(#[$attr:meta])* $name:ident($arg:ident);)*) => {$(
        $(#[$attr])*
        #[must_use]
        pub fn $name<I: IntoIterator<Item = S>, S: Into<String>>(mut self, $arg: I) -> Self {
            self.$name.extend($arg.into_iter().map(Into::into));
            self
        }
    )*};
}

/// Whether the CRDs behind resources are known, for
/// [`ResourcePattern::select_with`].
pub type CustomResources<'a> = &'a dyn Fn(&str, &str) -> bool;

impl ResourcePattern {
    setters! {
        /// Keeps only resources defined by CRDs.
        custom_resources(only: bool) => only;

        /// Keeps only resources of one scope.
        scope(scope: ScopeFilter) => Some(scope);

        /// Pins the version.
        version(version: impl Into<String>) => Some(version.into());
    }

    adders! {
        /// Adds group globs.
        groups(groups);

        /// Adds categories.
        categories(categories);

        /// Adds resources by name.
        include(names);

        /// Removes resources by name.
        exclude(names);
    }

    /// Parses a pattern as the command line writes it, or `None` when
    /// `input` is a plain resource name:
    ///
    /// - a group glob — any text with `*`: `*` (every resource),
    ///   `*.example.com`;
    /// - `category:NAME[,NAME...]`: `category:qa`, `category:all`;
    /// - `custom:GROUP-GLOB`: resources defined by CRDs in those groups,
    ///   `custom:*` for all of them;
    /// - `group:GROUP-GLOB`: every resource of a group, `group:apps`.
    ///
    /// ```
    /// use kube_dynamic_informer::factory::ResourcePattern;
    /// assert_eq!(ResourcePattern::parse("deploy")?, None);
    /// let qa = ResourcePattern::parse("category:qa")?.unwrap();
    /// assert_eq!(qa.categories, ["qa"]);
    /// assert!(ResourcePattern::parse("custom:").is_err());
    /// # Ok::<(), kube_dynamic_informer::factory::FactoryError>(())
    /// ```
    ///
    /// # Errors
    /// [`FactoryError::PatternSyntax`] for an empty list, or any problem
    /// [`check`](Self::check) finds.
    pub fn parse(input: &str) -> Result<Option<ResourcePattern>, FactoryError> {
        let syntax = |reason: &str| FactoryError::PatternSyntax {
            input: input.to_string(),
            reason: reason.to_string(),
        };
        let list = |rest: &str, what: &str| -> Result<Vec<String>, FactoryError> {
            let items: Vec<String> = rest
                .split(',')
                .map(str::trim)
                .filter(|s| !s.is_empty())
                .map(String::from)
                .collect();
            if items.is_empty() {
                return Err(syntax(&format!("name at least one {what} after the colon")));
            }
            Ok(items)
        };
        let pattern = if let Some(rest) = input.strip_prefix("category:") {
            ResourcePattern::default().categories(list(rest, "category")?)
        } else if let Some(rest) = input.strip_prefix("custom:") {
            ResourcePattern::default()
                .custom_resources(true)
                .groups(list(rest, "group glob (`*` for every group)")?)
        } else if let Some(rest) = input.strip_prefix("group:") {
            ResourcePattern::default().groups(list(rest, "group glob")?)
        } else if input.contains('*') {
            ResourcePattern::default().groups([input])
        } else {
            return Ok(None);
        };
        pattern.check()?;
        Ok(Some(pattern))
    }

    /// Checks the pattern without a cluster: at least one criterion or
    /// `include`, well-formed globs and names.
    ///
    /// # Errors
    /// The first problem found; [`problems`](Self::problems) lists all.
    pub fn check(&self) -> Result<(), FactoryError> {
        let first = self.problems().into_iter().next();
        first.map_or(Ok(()), |(_, _, e)| Err(e))
    }

    /// Every problem of the pattern, each with the field (and index in it)
    /// it is about: `("groups", Some(1), ...)`; `("", None, ...)` for the
    /// pattern as a whole.
    #[must_use]
    pub fn problems(&self) -> Vec<(&'static str, Option<usize>, FactoryError)> {
        let mut found = Vec::new();
        if self.groups.is_empty()
            && self.categories.is_empty()
            && !self.custom_resources
            && self.include.is_empty()
        {
            found.push(("", None, FactoryError::EmptyPattern));
        }
        for (i, g) in self.groups.iter().enumerate() {
            if let Err(reason) = check_group_glob(g) {
                found.push((
                    "groups",
                    Some(i),
                    FactoryError::PatternGroup {
                        pattern: g.clone(),
                        reason,
                    },
                ));
            }
        }
        for (field, names) in [
            ("categories", &self.categories),
            ("include", &self.include),
            ("exclude", &self.exclude),
        ] {
            for (i, name) in names.iter().enumerate() {
                if let Err(reason) = check_name(name, field == "categories") {
                    found.push((
                        field,
                        Some(i),
                        FactoryError::PatternName {
                            field,
                            name: name.clone(),
                            reason,
                        },
                    ));
                }
            }
        }
        found
    }

    /// The resources the pattern selects in `snapshot`, one version each,
    /// ordered by group and plural. Whether a resource is custom comes from
    /// the snapshot ([`DiscoverySnapshot::is_custom`]); when the snapshot
    /// does not know, `customResources: true` selects nothing (use
    /// [`select_with`](Self::select_with)).
    #[must_use]
    pub fn select(&self, snapshot: &DiscoverySnapshot) -> Vec<KnownResource> {
        self.select_with(snapshot, &|group, plural| {
            snapshot.is_custom(group, plural).unwrap_or(false)
        })
    }

    /// As [`select`](Self::select), with `is_custom(group, plural)` saying
    /// which resources CRDs define.
    #[must_use]
    pub fn select_with(
        &self,
        snapshot: &DiscoverySnapshot,
        is_custom: CustomResources<'_>,
    ) -> Vec<KnownResource> {
        let resources: BTreeSet<(&str, &str)> = snapshot
            .resources()
            .iter()
            .map(|r| (r.group.as_str(), r.plural.as_str()))
            .collect();
        let chosen = resources.into_iter().filter_map(|(group, plural)| {
            let mut versions = snapshot.versions_of(group, plural).into_iter();
            match &self.version {
                Some(v) => versions.find(|r| &r.version == v),
                None => versions.find(|r| snapshot.is_watchable(&r.key())),
            }
        });
        chosen
            .filter(|r| {
                let key = r.key();
                snapshot.is_watchable(&key) && self.admits(r, snapshot.categories(&key), is_custom)
            })
            .cloned()
            .collect()
    }

    /// Whether one resource (in the version chosen) is selected.
    fn admits(
        &self,
        r: &KnownResource,
        categories: &[String],
        is_custom: CustomResources<'_>,
    ) -> bool {
        if self.exclude.iter().any(|n| name_matches(n, r)) {
            return false;
        }
        match self.scope {
            Some(ScopeFilter::Namespaced) if !r.namespaced => return false,
            Some(ScopeFilter::Cluster) if r.namespaced => return false,
            _ => {}
        }
        if self.include.iter().any(|n| name_matches(n, r)) {
            return true;
        }
        let has_criteria =
            !self.groups.is_empty() || !self.categories.is_empty() || self.custom_resources;
        has_criteria
            && (self.groups.is_empty() || self.groups.iter().any(|g| group_matches(g, &r.group)))
            && (self.categories.is_empty()
                || self.categories.iter().any(|c| categories.contains(c)))
            && (!self.custom_resources || is_custom(&r.group, &r.plural))
    }
}

fn check_group_glob(glob: &str) -> Result<(), String> {
    if glob.len() > 253 {
        return Err("longer than a DNS name (253 characters)".into());
    }
    if let Some(c) = glob
        .chars()
        .find(|c| !(c.is_ascii_lowercase() || c.is_ascii_digit() || matches!(c, '.' | '-' | '*')))
    {
        return Err(format!(
            "{c:?} cannot appear in an API group (lowercase letters, digits, '.', '-', and '*' for any text)"
        ));
    }
    Ok(())
}

fn check_name(name: &str, category: bool) -> Result<(), String> {
    if name.is_empty() {
        return Err("empty".into());
    }
    if name.len() > 253 {
        return Err("longer than 253 characters".into());
    }
    let allowed = |c: char| {
        c.is_ascii_alphanumeric() || c == '-' || (!category && c == '.') || (category && c == '_')
    };
    if let Some(c) = name.chars().find(|c| !allowed(*c)) {
        return Err(format!("{c:?} cannot appear in a resource name"));
    }
    Ok(())
}

/// Whether `glob` matches `group`; `*` matches any text, dots included.
/// `core` and `""` name the core group.
pub(crate) fn group_matches(glob: &str, group: &str) -> bool {
    if group.is_empty() && (glob == "core" || glob.is_empty()) {
        return true;
    }
    glob_matches(glob.as_bytes(), group.as_bytes())
}

/// Iterative glob with `*` only: linear backtracking over the last star,
/// so no input makes it slow.
fn glob_matches(pattern: &[u8], text: &[u8]) -> bool {
    let (mut p, mut t) = (0, 0);
    let mut star: Option<(usize, usize)> = None;
    while t < text.len() {
        if p < pattern.len() && pattern[p] == b'*' {
            star = Some((p, t));
            p += 1;
        } else if p < pattern.len() && pattern[p] == text[t] {
            p += 1;
            t += 1;
        } else if let Some((sp, st)) = star {
            p = sp + 1;
            t = st + 1;
            star = Some((sp, st + 1));
        } else {
            return false;
        }
    }
    pattern[p..].iter().all(|&c| c == b'*')
}

/// Whether an `include`/`exclude` entry names `r`: a name of it alone, or
/// followed by `.` and its group (`core` for the core group).
pub(crate) fn name_matches(entry: &str, r: &KnownResource) -> bool {
    let is_name = |n: &str| {
        r.plural.eq_ignore_ascii_case(n)
            || r.singular.eq_ignore_ascii_case(n)
            || r.kind.eq_ignore_ascii_case(n)
            || r.short_names.iter().any(|s| s.eq_ignore_ascii_case(n))
    };
    if is_name(entry) {
        return true;
    }
    match entry.split_once('.') {
        Some((name, group)) => {
            let group_ok = if r.group.is_empty() {
                group == "core" || group.is_empty()
            } else {
                group.eq_ignore_ascii_case(&r.group)
            };
            group_ok && is_name(name)
        }
        None => false,
    }
}

#[cfg(test)]
mod tests;
