//! What the vocabulary refuses, and why: resource names, selectors, shards
//! and scopes.

use crate::vocabulary::resource::ResourceKey;

/// Errors of the vocabulary layer: a resource name, a label or field
/// selector, a shard or a namespace restriction that was refused. Every
/// message names the input as it was given; variants produced while parsing
/// a string also say where in it the problem is.
///
/// ```
/// use kube_dynamic_informer::vocabulary::{Selector, VocabularyError};
/// let err = Selector::parse("tier in (gold").unwrap_err();
/// assert!(matches!(err, VocabularyError::SelectorSyntax { column: 14, .. }), "{err}");
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum VocabularyError {
    // Resource names.
    /// The name is empty or only whitespace.
    #[error("empty resource name")]
    EmptyName,

    /// The name contains a character or has a shape no resource name can
    /// have (a space, an empty segment as in `pods..apps`, too many `/`).
    #[error("invalid resource name {input:?}: {reason}")]
    InvalidName {
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
    #[error("no resource matches {input:?}{}", suggestion_text(.input, .suggestions))]
    NotFound {
        /// The name as given.
        input: String,
        /// Up to five known resources with a similar name, closest first.
        suggestions: Vec<ResourceKey>,
    },

    /// The name matches resources in several non-core groups equally well.
    #[error(
        "resource name {input:?} is ambiguous: it matches {}; name it more precisely, e.g. {:?}",
        join_keys(.candidates, ", "),
        example_qualified(.candidates)
    )]
    Ambiguous {
        /// The name as given.
        input: String,
        /// The matching resources, one per group, sorted.
        candidates: Vec<ResourceKey>,
    },

    // Label and field selectors.
    /// The label selector string does not follow the grammar.
    #[error(
        "label selector {input:?}: expected {expected} at column {column}{}",
        found_suffix(.found.as_deref())
    )]
    SelectorSyntax {
        /// The whole selector string.
        input: String,
        /// Byte offset of the offending token.
        offset: usize,
        /// 1-based column (in characters) of the offending token.
        column: usize,
        /// What the grammar allows at this point.
        expected: &'static str,
        /// The token found instead; `None` when the selector ended early.
        found: Option<String>,
    },

    /// A label key breaks the Kubernetes rules for label keys (an optional
    /// DNS-subdomain prefix and `/`, then a name of at most 63 alphanumerics,
    /// `-`, `_` or `.`, starting and ending with an alphanumeric).
    #[error("label selector {input:?}: invalid label key {key:?} at column {column}: {reason}")]
    InvalidKey {
        /// The whole selector string.
        input: String,
        /// The rejected key.
        key: String,
        /// Byte offset of the key.
        offset: usize,
        /// 1-based column (in characters) of the key.
        column: usize,
        /// Which rule the key breaks.
        reason: String,
    },

    /// A value breaks the Kubernetes rules for label values (at most 63
    /// alphanumerics, `-`, `_` or `.`, starting and ending with an alphanumeric;
    /// empty is allowed), or the value of a `>`/`<` requirement is not an
    /// integer.
    #[error(
        "label selector {input:?}: invalid value {value:?} for label {key:?} at column {column}: {reason}"
    )]
    InvalidValue {
        /// The whole selector string.
        input: String,
        /// The key the value belongs to.
        key: String,
        /// The rejected value.
        value: String,
        /// Byte offset of the value.
        offset: usize,
        /// 1-based column (in characters) of the value.
        column: usize,
        /// Which rule the value breaks.
        reason: String,
    },

    /// A requirement built from parts
    /// ([`Requirement::new`](crate::vocabulary::Requirement::new), or a structured
    /// [`LabelSelector`](crate::vocabulary::LabelSelector)) is invalid: bad key or value,
    /// unknown operator, or the wrong number of values for its operator.
    #[error("invalid label selector requirement for key {key:?}: {reason}")]
    InvalidRequirement {
        /// The requirement's key.
        key: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A requirement has no counterpart in the selector type converted to:
    /// `kube_core::Selector` has no `>` or `<` expression. The selector's
    /// string form still says it, for APIs that take a string (kube-client's
    /// `ListParams::labels`, kube-runtime's `watcher::Config::labels`).
    #[error(
        "label selector requirement {requirement:?} cannot be expressed as a {target}, which has no \
         '>' or '<' operator; pass the selector as a string instead"
    )]
    Inexpressible {
        /// The requirement as written in a selector string, such as `n>3`.
        requirement: String,
        /// The type converted to, such as `kube_core::Selector`.
        target: &'static str,
    },

    /// A field selector string is malformed.
    #[error("field selector {input:?}: {reason} at column {column}")]
    FieldSyntax {
        /// The whole field selector string.
        input: String,
        /// Byte offset of the problem.
        offset: usize,
        /// 1-based column (in characters) of the problem.
        column: usize,
        /// What is wrong.
        reason: String,
    },

    // Shards.
    /// A shard count of zero.
    #[error("shard count must be at least 1, got 0")]
    ZeroCount,
    /// A shard index not below the count.
    #[error("shard index {index} is out of range for {count} shards (indexes are 0 to {})", count - 1)]
    ShardIndexOutOfRange {
        /// The index asked for.
        index: u32,
        /// The number of shards.
        count: u32,
    },
    /// A shard written other than as `I/N`.
    #[error("invalid shard {0:?}: expected INDEX/COUNT, e.g. 0/4")]
    ShardSyntax(String),
    /// A shard key other than `uid` or `namespace`.
    #[error("invalid shard key {0:?}: expected uid or namespace")]
    ShardKey(String),
    /// A range whose start is not below its end.
    #[error("empty shard range: start {start:#018x} is not below end {end:#x}")]
    EmptyRange {
        /// The start.
        start: u64,
        /// The end (exclusive).
        end: u128,
    },
    /// A range end past 2^64.
    #[error("shard range end {0:#x} is past the hash space (at most 0x10000000000000000)")]
    EndTooLarge(u128),
    /// A selector that does not parse.
    #[error("invalid shard selector {selector:?}: {reason}")]
    ShardSelector {
        /// The selector.
        selector: String,
        /// What is wrong with it.
        reason: String,
    },

    /// A namespace restriction on a cluster-scoped resource.
    #[error("{resource} is cluster-scoped: it cannot be restricted to namespaces ({namespaces})")]
    ClusterScoped {
        /// The resource.
        resource: String,
        /// The namespaces asked for, joined by `, `.
        namespaces: String,
    },
}

fn join_keys(keys: &[ResourceKey], separator: &str) -> String {
    keys.iter()
        .map(ToString::to_string)
        .collect::<Vec<_>>()
        .join(separator)
}

fn suggestion_text(input: &str, suggestions: &[ResourceKey]) -> String {
    if !suggestions.is_empty() {
        format!("; did you mean {}?", join_keys(suggestions, " or "))
    } else if input.contains('.') || input.contains('/') {
        String::new()
    } else {
        // A name without a group: how to wait for a custom resource whose
        // CRD is not installed yet.
        " (a custom resource not installed yet is waited for when named as plural.group, e.g. widgets.example.com)".to_owned()
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

fn found_suffix(found: Option<&str>) -> String {
    found.map_or_else(String::new, |found| format!(", found {found:?}"))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::vocabulary::error_chain::assert_every_variant;

    /// One error of each variant.
    fn every_variant() -> Vec<VocabularyError> {
        let input = || "pods/status".to_owned();
        let key = || ResourceKey::new("apps", "v1", "deployments");
        vec![
            VocabularyError::EmptyName,
            VocabularyError::InvalidName {
                input: input(),
                reason: "a space".into(),
            },
            VocabularyError::Subresource {
                input: input(),
                resource: "pods".into(),
                subresource: "status".into(),
            },
            VocabularyError::GroupVersionOnly {
                input: "apps/v1".into(),
            },
            VocabularyError::NotFound {
                input: "deploymnts".into(),
                suggestions: vec![key()],
            },
            VocabularyError::Ambiguous {
                input: "widgets".into(),
                candidates: vec![key(), ResourceKey::new("b.example.com", "v1", "widgets")],
            },
            VocabularyError::SelectorSyntax {
                input: "a in (".into(),
                offset: 6,
                column: 6,
                expected: "a value",
                found: None,
            },
            VocabularyError::InvalidKey {
                input: "-a".into(),
                key: "-a".into(),
                offset: 0,
                column: 0,
                reason: "starts with '-'".into(),
            },
            VocabularyError::InvalidValue {
                input: "a=-".into(),
                key: "a".into(),
                value: "-".into(),
                offset: 2,
                column: 2,
                reason: "starts with '-'".into(),
            },
            VocabularyError::InvalidRequirement {
                key: "a".into(),
                reason: "no values".into(),
            },
            VocabularyError::Inexpressible {
                requirement: "a>3".into(),
                target: "LabelSelector",
            },
            VocabularyError::FieldSyntax {
                input: "a".into(),
                offset: 1,
                column: 1,
                reason: "expected an operator".into(),
            },
            VocabularyError::ZeroCount,
            VocabularyError::ShardIndexOutOfRange { index: 4, count: 4 },
            VocabularyError::ShardSyntax("x".into()),
            VocabularyError::ShardKey("x".into()),
            VocabularyError::EmptyRange { start: 2, end: 1 },
            VocabularyError::EndTooLarge(u128::MAX),
            VocabularyError::ShardSelector {
                selector: "x".into(),
                reason: "no ranges".into(),
            },
            VocabularyError::ClusterScoped {
                resource: "nodes.v1".into(),
                namespaces: "shop".into(),
            },
        ]
    }

    /// The variant's place in the declaration; a new variant fails to
    /// compile here until it has a sample above.
    fn variant(e: &VocabularyError) -> usize {
        match e {
            VocabularyError::EmptyName => 0,
            VocabularyError::InvalidName { .. } => 1,
            VocabularyError::Subresource { .. } => 2,
            VocabularyError::GroupVersionOnly { .. } => 3,
            VocabularyError::NotFound { .. } => 4,
            VocabularyError::Ambiguous { .. } => 5,
            VocabularyError::SelectorSyntax { .. } => 6,
            VocabularyError::InvalidKey { .. } => 7,
            VocabularyError::InvalidValue { .. } => 8,
            VocabularyError::InvalidRequirement { .. } => 9,
            VocabularyError::Inexpressible { .. } => 10,
            VocabularyError::FieldSyntax { .. } => 11,
            VocabularyError::ZeroCount => 12,
            VocabularyError::ShardIndexOutOfRange { .. } => 13,
            VocabularyError::ShardSyntax(_) => 14,
            VocabularyError::ShardKey(_) => 15,
            VocabularyError::EmptyRange { .. } => 16,
            VocabularyError::EndTooLarge(_) => 17,
            VocabularyError::ShardSelector { .. } => 18,
            VocabularyError::ClusterScoped { .. } => 19,
        }
    }

    #[test]
    fn every_variant_says_each_fact_of_its_chain_once() {
        let all = every_variant();
        assert_every_variant(&all, variant, 20);
    }
}
