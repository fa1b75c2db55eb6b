//! Why a resource name could not be parsed or resolved.

use super::key::ResourceKey;

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

fn suggestion_text(input: &str, suggestions: &[ResourceKey]) -> String {
    if suggestions.is_empty() {
        crd_hint(input).to_owned()
    } else {
        format!(
            "; did you mean {}?",
            join_keys(suggestions).replace(", ", " or ")
        )
    }
}

/// For a name without a group: how to wait for a custom resource whose CRD
/// is not installed yet.
fn crd_hint(input: &str) -> &'static str {
    if input.contains('.') || input.contains('/') {
        ""
    } else {
        " (a custom resource not installed yet is waited for when named as plural.group, e.g. widgets.example.com)"
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
