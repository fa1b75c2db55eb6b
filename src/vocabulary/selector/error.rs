//! Why a label or field selector was rejected.

/// Why a label selector (or a field selector) was rejected.
///
/// Variants produced while parsing a string name the input and the position of
/// the problem; the others come from structured selectors and
/// [`Requirement::new`](super::Requirement::new), where there is no string to
/// point into.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum SelectorError {
    /// The label selector string does not follow the grammar.
    #[error(
        "label selector {input:?}: expected {expected} at column {column}{}",
        found_suffix(.found.as_deref())
    )]
    Syntax {
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
    /// ([`Requirement::new`](super::Requirement::new), or a structured
    /// [`LabelSelector`](super::LabelSelector)) is invalid: bad key or value,
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
}

fn found_suffix(found: Option<&str>) -> String {
    match found {
        Some(found) => format!(", found {found:?}"),
        None => String::new(),
    }
}

/// The 1-based column, in characters, of a byte offset.
pub(super) fn column_at(input: &str, offset: usize) -> usize {
    input
        .get(..offset)
        .map_or(offset, |prefix| prefix.chars().count())
        + 1
}
