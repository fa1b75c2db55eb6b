//! Kubernetes label selectors, parsed and matched locally.
//!
//! Listers filter the informer's cache by label selector, so the cache has to
//! understand exactly the selectors the API server understands: a selector that
//! the server would reject must be rejected here too, and one it accepts must
//! select the same objects. [`Selector::parse`] follows apimachinery's
//! `labels.Parse` token for token (including its corner cases, such as `in`
//! being an ordinary value outside the operator position and `x in ()` meaning
//! "x is the empty string"), and validates keys and values with the same rules
//! as the API server, so a typo is reported when the selector is declared rather
//! than as an empty list at run time.
//!
//! The grammar, as apimachinery documents it:
//!
//! ```text
//! <selector>     ::= "" | <requirement> | <requirement> "," <selector>
//! <requirement>  ::= KEY                          (the label exists)
//!                  | "!" KEY                      (the label does not exist)
//!                  | KEY ("=" | "==" | "!=") VALUE
//!                  | KEY ("in" | "notin") "(" VALUE ("," VALUE)* ")"
//!                  | KEY (">" | "<") INTEGER
//! ```
//!
//! Spaces, tabs, carriage returns and newlines may surround every token.
//!
//! Parse errors say what was expected, where (byte offset and 1-based
//! column), and what was found instead:
//!
//! ```
//! use kube_dynamic_informer::selector::Selector;
//!
//! let err = Selector::parse("app in (a").unwrap_err();
//! assert_eq!(
//!     err.to_string(),
//!     r#"label selector "app in (a": expected ')' or ',' at column 10"#
//! );
//! ```
//!
//! Field selectors are evaluated by the server only (the set of selectable
//! fields depends on the resource), so there is no field selector type here;
//! [`validate_field_selector`] checks their syntax early instead.

use std::collections::BTreeMap;
use std::fmt;
use std::str::FromStr;

use kube_core::DynamicObject;
use serde::{Deserialize, Deserializer, Serialize, Serializer};

/// Why a label selector (or a field selector) was rejected.
///
/// Variants produced while parsing a string name the input and the position of
/// the problem; the others come from structured selectors and
/// [`Requirement::new`], where there is no string to point into.
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

    /// A requirement built from parts ([`Requirement::new`], or a structured
    /// [`LabelSelector`]) is invalid: bad key or value, unknown operator, or the
    /// wrong number of values for its operator.
    #[error("invalid label selector requirement for key {key:?}: {reason}")]
    InvalidRequirement {
        /// The requirement's key.
        key: String,
        /// What is wrong with it.
        reason: String,
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

/// How a [`Requirement`] relates a label to its values.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Operator {
    /// `key=value` (also written `key==value`): the label exists and equals the
    /// value.
    Equals,
    /// `key!=value`: the label is absent or differs from the value.
    NotEquals,
    /// `key in (a,b)`: the label exists and equals one of the values.
    In,
    /// `key notin (a,b)`: the label is absent or equals none of the values.
    NotIn,
    /// `key`: the label exists, whatever its value.
    Exists,
    /// `!key`: the label does not exist.
    DoesNotExist,
    /// `key>N`: the label exists, is an integer, and is greater than N.
    GreaterThan,
    /// `key<N`: the label exists, is an integer, and is less than N.
    LessThan,
}

impl Operator {
    /// The operator as written in a selector string (`Exists` and
    /// `DoesNotExist` have no infix form; they give `""` and `"!"`).
    #[must_use]
    pub fn as_str(self) -> &'static str {
        match self {
            Operator::Equals => "=",
            Operator::NotEquals => "!=",
            Operator::In => "in",
            Operator::NotIn => "notin",
            Operator::Exists => "",
            Operator::DoesNotExist => "!",
            Operator::GreaterThan => ">",
            Operator::LessThan => "<",
        }
    }
}

/// One condition of a [`Selector`]: a label key, an operator and its values.
///
/// Values are kept sorted and without duplicates (apimachinery treats them as a
/// set), so equal requirements compare equal however they were written.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct Requirement {
    key: String,
    operator: Operator,
    values: Vec<String>,
}

impl Requirement {
    /// Builds a requirement, validated as apimachinery's `NewRequirement` does.
    ///
    /// # Errors
    ///
    /// [`SelectorError::InvalidRequirement`] if the key or a value breaks the
    /// label rules, `In`/`NotIn` get no value, `Equals`/`NotEquals`/`>`/`<` do
    /// not get exactly one, `Exists`/`DoesNotExist` get any, or a `>`/`<`
    /// value is not an integer.
    ///
    /// ```
    /// use kube_dynamic_informer::selector::{Operator, Requirement};
    ///
    /// let tier = Requirement::new("tier", Operator::In, ["web", "api"])?;
    /// assert_eq!(tier.to_string(), "tier in (api,web)");
    /// assert!(Requirement::new("tier", Operator::In, Vec::<String>::new()).is_err());
    /// # Ok::<(), kube_dynamic_informer::selector::SelectorError>(())
    /// ```
    pub fn new<I>(
        key: impl Into<String>,
        operator: Operator,
        values: I,
    ) -> Result<Self, SelectorError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let key = key.into();
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        let invalid = |reason: String| SelectorError::InvalidRequirement {
            key: key.clone(),
            reason,
        };
        if let Err(reason) = check_label_key(&key) {
            return Err(invalid(format!("invalid key: {reason}")));
        }
        if let Err(reason) = check_value_count(operator, &values) {
            return Err(invalid(reason.to_owned()));
        }
        for value in &values {
            if let Err(reason) = check_value(operator, value) {
                return Err(invalid(format!("invalid value {value:?}: {reason}")));
            }
        }
        Ok(Self::new_unchecked(key, operator, values))
    }

    fn new_unchecked(key: String, operator: Operator, mut values: Vec<String>) -> Self {
        values.sort_unstable();
        values.dedup();
        Requirement {
            key,
            operator,
            values,
        }
    }

    /// The label key.
    #[must_use]
    pub fn key(&self) -> &str {
        &self.key
    }

    /// The operator.
    #[must_use]
    pub fn operator(&self) -> Operator {
        self.operator
    }

    /// The values, sorted and without duplicates (empty for `Exists` and
    /// `DoesNotExist`).
    #[must_use]
    pub fn values(&self) -> &[String] {
        &self.values
    }

    /// Whether a set of labels satisfies this requirement, with apimachinery's
    /// semantics: `!=` and `notin` match objects without the label; `>` and
    /// `<` never match a label that is missing or not an integer.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        let value = labels.get(&self.key);
        match self.operator {
            Operator::Equals | Operator::In => value.is_some_and(|v| self.has_value(v)),
            Operator::NotEquals | Operator::NotIn => value.is_none_or(|v| !self.has_value(v)),
            Operator::Exists => value.is_some(),
            Operator::DoesNotExist => value.is_none(),
            Operator::GreaterThan | Operator::LessThan => {
                let (Some(label), Some(bound)) = (
                    value.and_then(|v| v.parse::<i64>().ok()),
                    self.values.first().and_then(|v| v.parse::<i64>().ok()),
                ) else {
                    return false;
                };
                if self.operator == Operator::GreaterThan {
                    label > bound
                } else {
                    label < bound
                }
            }
        }
    }

    fn has_value(&self, value: &str) -> bool {
        self.values
            .binary_search_by(|v| v.as_str().cmp(value))
            .is_ok()
    }
}

impl fmt::Display for Requirement {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.operator {
            Operator::Exists => f.write_str(&self.key),
            Operator::DoesNotExist => write!(f, "!{}", self.key),
            Operator::In | Operator::NotIn => {
                write!(
                    f,
                    "{} {} ({})",
                    self.key,
                    self.operator.as_str(),
                    self.values.join(",")
                )
            }
            Operator::Equals | Operator::NotEquals | Operator::GreaterThan | Operator::LessThan => {
                let value = self.values.first().map_or("", String::as_str);
                write!(f, "{}{}{}", self.key, self.operator.as_str(), value)
            }
        }
    }
}

/// A label selector: the conjunction of its [`Requirement`]s.
///
/// Requirements are kept in a canonical order (sorted, duplicates removed), so
/// two selectors that differ only in the order of their requirements compare
/// equal, and [`Display`](fmt::Display) gives a stable string that the API
/// server accepts as the `labelSelector` query parameter.
///
/// It serialises as that string and deserialises by [parsing](Selector::parse).
///
/// ```
/// use std::collections::BTreeMap;
/// use kube_dynamic_informer::selector::Selector;
///
/// let selector: Selector = "tier in (web, api), env != prod, !canary".parse()?;
/// let labels = BTreeMap::from([("tier".to_owned(), "web".to_owned())]);
/// assert!(selector.matches(&labels));
/// assert_eq!(selector.to_string(), "!canary,env!=prod,tier in (api,web)");
/// # Ok::<(), kube_dynamic_informer::selector::SelectorError>(())
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Selector {
    requirements: Vec<Requirement>,
}

impl Selector {
    /// The selector that matches every object (the empty selector string).
    #[must_use]
    pub fn everything() -> Self {
        Selector::default()
    }

    /// Whether this selector has no requirements and so matches everything.
    #[must_use]
    pub fn is_everything(&self) -> bool {
        self.requirements.is_empty()
    }

    /// Parses the label selector syntax that kube-apiserver accepts in the
    /// `labelSelector` query parameter. The empty string (or only whitespace)
    /// is [`Selector::everything`].
    ///
    /// # Errors
    ///
    /// [`SelectorError::Syntax`] for a grammar error,
    /// [`SelectorError::InvalidKey`] and [`SelectorError::InvalidValue`] for a
    /// key or value the API server would reject; all of them carry the byte
    /// offset and column of the offending token.
    ///
    /// ```
    /// use kube_dynamic_informer::selector::Selector;
    ///
    /// let selector = Selector::parse("app=web,tier")?;
    /// assert_eq!(selector.requirements().len(), 2);
    /// assert!(Selector::parse("").unwrap().is_everything());
    /// assert!(Selector::parse("app=").is_ok()); // the empty value is a value
    /// assert!(Selector::parse("app=-web").is_err()); // values start alphanumeric
    /// # Ok::<(), kube_dynamic_informer::selector::SelectorError>(())
    /// ```
    pub fn parse(input: &str) -> Result<Self, SelectorError> {
        let tokens = lex(input);
        let requirements = Parser {
            input,
            tokens: &tokens,
            pos: 0,
        }
        .parse()?;
        Ok(Selector::new(requirements))
    }

    /// A selector made of the given requirements (already validated by
    /// [`Requirement::new`]).
    #[must_use]
    pub fn new(requirements: impl IntoIterator<Item = Requirement>) -> Self {
        let mut requirements: Vec<Requirement> = requirements.into_iter().collect();
        requirements.sort_unstable();
        requirements.dedup();
        Selector { requirements }
    }

    /// A selector requiring every label of `labels` to have exactly that value
    /// (apimachinery's `ValidatedSelectorFromSet`). An empty map gives
    /// [`Selector::everything`].
    ///
    /// # Errors
    ///
    /// [`SelectorError::InvalidRequirement`] if a key or value breaks the label
    /// rules.
    pub fn from_labels(labels: &BTreeMap<String, String>) -> Result<Self, SelectorError> {
        labels
            .iter()
            .map(|(key, value)| Requirement::new(key.as_str(), Operator::Equals, [value.as_str()]))
            .collect::<Result<Vec<_>, _>>()
            .map(Selector::new)
    }

    /// Converts the structured form found in object specs (`matchLabels` and
    /// `matchExpressions`), as apimachinery's `LabelSelectorAsSelector` does.
    /// A selector with neither matches everything.
    ///
    /// # Errors
    ///
    /// [`SelectorError::InvalidRequirement`] for an invalid key or value, an
    /// operator other than `In`, `NotIn`, `Exists` and `DoesNotExist`, an
    /// `In`/`NotIn` without values, or an `Exists`/`DoesNotExist` with values.
    ///
    /// ```
    /// use kube_dynamic_informer::selector::{LabelSelector, Selector};
    ///
    /// let spec: LabelSelector = serde_json::from_value(serde_json::json!({
    ///     "matchLabels": { "app": "web" },
    ///     "matchExpressions": [{ "key": "tier", "operator": "NotIn", "values": ["db"] }]
    /// }))?;
    /// let selector = Selector::from_label_selector(&spec)?;
    /// assert_eq!(selector.to_string(), "app=web,tier notin (db)");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, SelectorError> {
        let mut requirements =
            Vec::with_capacity(selector.match_labels.len() + selector.match_expressions.len());
        for (key, value) in &selector.match_labels {
            requirements.push(Requirement::new(
                key.as_str(),
                Operator::Equals,
                [value.as_str()],
            )?);
        }
        for expr in &selector.match_expressions {
            let operator = match expr.operator.as_str() {
                "In" => Operator::In,
                "NotIn" => Operator::NotIn,
                "Exists" => Operator::Exists,
                "DoesNotExist" => Operator::DoesNotExist,
                other => {
                    return Err(SelectorError::InvalidRequirement {
                        key: expr.key.clone(),
                        reason: format!(
                            "{other:?} is not a valid label selector operator (expected In, NotIn, Exists or DoesNotExist)"
                        ),
                    });
                }
            };
            requirements.push(Requirement::new(
                expr.key.as_str(),
                operator,
                expr.values.iter().map(String::as_str),
            )?);
        }
        Ok(Selector::new(requirements))
    }

    /// The requirements, in canonical order.
    #[must_use]
    pub fn requirements(&self) -> &[Requirement] {
        &self.requirements
    }

    /// Whether a set of labels satisfies every requirement.
    #[must_use]
    pub fn matches(&self, labels: &BTreeMap<String, String>) -> bool {
        self.requirements.iter().all(|r| r.matches(labels))
    }

    /// Whether an object's `metadata.labels` satisfy every requirement (an
    /// object without labels has an empty label set).
    #[must_use]
    pub fn matches_object(&self, object: &DynamicObject) -> bool {
        if self.is_everything() {
            return true;
        }
        match &object.metadata.labels {
            Some(labels) => self.matches(labels),
            None => self.matches(&BTreeMap::new()),
        }
    }
}

impl fmt::Display for Selector {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        for (i, requirement) in self.requirements.iter().enumerate() {
            if i > 0 {
                f.write_str(",")?;
            }
            write!(f, "{requirement}")?;
        }
        Ok(())
    }
}

impl FromStr for Selector {
    type Err = SelectorError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Selector::parse(s)
    }
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = SelectorError;

    fn try_from(value: &LabelSelector) -> Result<Self, Self::Error> {
        Selector::from_label_selector(value)
    }
}

impl Serialize for Selector {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

impl<'de> Deserialize<'de> for Selector {
    fn deserialize<D: Deserializer<'de>>(deserializer: D) -> Result<Self, D::Error> {
        let s = String::deserialize(deserializer)?;
        Selector::parse(&s).map_err(serde::de::Error::custom)
    }
}

/// The structured label selector of Kubernetes object specs
/// (`metav1.LabelSelector`), for use with [`Selector::from_label_selector`].
///
/// Our own type rather than k8s-openapi's, so it deserialises straight from a
/// `DynamicObject`'s JSON and does not depend on a Kubernetes version feature.
/// `null` fields read as empty.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct LabelSelector {
    /// Labels that must have exactly these values.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "BTreeMap::is_empty"
    )]
    pub match_labels: BTreeMap<String, String>,
    /// Further requirements, all of which must hold.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub match_expressions: Vec<LabelSelectorRequirement>,
}

/// One `matchExpressions` entry of a [`LabelSelector`].
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LabelSelectorRequirement {
    /// The label key.
    pub key: String,
    /// `In`, `NotIn`, `Exists` or `DoesNotExist`. Kept as a string so that an
    /// unknown operator is reported by [`Selector::from_label_selector`], with
    /// the key, rather than as a deserialisation error.
    pub operator: String,
    /// The values: at least one for `In`/`NotIn`, none for the others.
    #[serde(
        default,
        deserialize_with = "null_as_default",
        skip_serializing_if = "Vec::is_empty"
    )]
    pub values: Vec<String>,
}

fn null_as_default<'de, D, T>(deserializer: D) -> Result<T, D::Error>
where
    D: Deserializer<'de>,
    T: Default + Deserialize<'de>,
{
    Ok(Option::<T>::deserialize(deserializer)?.unwrap_or_default())
}

/// Checks a field selector's syntax as apimachinery's `fields.ParseSelector`
/// does, so that a mistake is reported when the selector is declared instead
/// of by the server on the first list.
///
/// Terms are separated by `,`; each is `field=value`, `field==value` or
/// `field!=value`; in a value, `\,`, `\=` and `\\` escape those characters.
/// Whether the field is selectable for a resource is known only to the server
/// and is not checked. Stricter than apimachinery in two ways, both of which
/// the server would reject anyway: the field name must not be empty nor
/// contain whitespace.
///
/// # Errors
///
/// [`SelectorError::FieldSyntax`] naming the problem and its column.
///
/// ```
/// use kube_dynamic_informer::selector::validate_field_selector;
///
/// assert!(validate_field_selector("metadata.name=web,status.phase!=Running").is_ok());
/// assert!(validate_field_selector("").is_ok());
/// let err = validate_field_selector("metadata.name").unwrap_err();
/// assert_eq!(
///     err.to_string(),
///     r#"field selector "metadata.name": expected '=', '==' or '!=' in term "metadata.name" at column 1"#
/// );
/// ```
pub fn validate_field_selector(input: &str) -> Result<(), SelectorError> {
    let error = |offset: usize, reason: String| SelectorError::FieldSyntax {
        input: input.to_owned(),
        offset,
        column: column_at(input, offset),
        reason,
    };
    for (start, term) in split_field_terms(input) {
        if term.is_empty() {
            continue;
        }
        let Some((op_at, op)) = term.char_indices().find_map(|(i, _)| {
            ["!=", "==", "="]
                .into_iter()
                .find(|op| term[i..].starts_with(op))
                .map(|op| (i, op))
        }) else {
            return Err(error(
                start,
                format!("expected '=', '==' or '!=' in term {term:?}"),
            ));
        };
        let field = &term[..op_at];
        if field.is_empty() {
            return Err(error(start, format!("missing field name before {op:?}")));
        }
        if let Some((i, _)) = field.char_indices().find(|(_, c)| c.is_whitespace()) {
            return Err(error(
                start + i,
                format!("field name {field:?} contains whitespace"),
            ));
        }
        let value_start = start + op_at + op.len();
        let mut chars = input[value_start..start + term.len()].char_indices();
        while let Some((i, c)) = chars.next() {
            match c {
                '\\' => match chars.next() {
                    Some((_, '\\' | ',' | '=')) => {}
                    Some((_, other)) => {
                        return Err(error(
                            value_start + i,
                            format!(
                                "invalid escape sequence \"\\{other}\" (only \\\\, \\, and \\= are allowed)"
                            ),
                        ));
                    }
                    None => {
                        return Err(error(
                            value_start + i,
                            "value ends with a lone '\\'".to_owned(),
                        ));
                    }
                },
                '=' => {
                    return Err(error(
                        value_start + i,
                        "unescaped '=' in value (write it as '\\=')".to_owned(),
                    ));
                }
                _ => {}
            }
        }
    }
    Ok(())
}

/// Splits a field selector on commas not escaped by a backslash, keeping the
/// byte offset of each term.
fn split_field_terms(input: &str) -> Vec<(usize, &str)> {
    let mut terms = Vec::new();
    let mut start = 0;
    let mut escaped = false;
    for (i, c) in input.char_indices() {
        if escaped {
            escaped = false;
        } else if c == '\\' {
            escaped = true;
        } else if c == ',' {
            terms.push((start, &input[start..i]));
            start = i + 1;
        }
    }
    terms.push((start, &input[start..]));
    terms
}

fn column_at(input: &str, offset: usize) -> usize {
    input
        .get(..offset)
        .map_or(offset, |prefix| prefix.chars().count())
        + 1
}

// ---------------------------------------------------------------------------
// Validation, after apimachinery's `content.IsLabelKey`, `IsLabelValue` and
// `IsDNS1123Subdomain`.

const LABEL_NAME_MAX: usize = 63;
const DNS_SUBDOMAIN_MAX: usize = 253;
const NAME_RULE: &str = "must consist of alphanumeric characters, '-', '_' or '.', \
                         and must start and end with an alphanumeric character";

/// Alphanumeric at both ends, alphanumerics, `-`, `_` and `.` inside; the
/// shape shared by label names and non-empty label values.
fn is_qualified_name(s: &str) -> bool {
    let bytes = s.as_bytes();
    match (bytes.first(), bytes.last()) {
        (Some(first), Some(last)) => {
            first.is_ascii_alphanumeric()
                && last.is_ascii_alphanumeric()
                && bytes
                    .iter()
                    .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'-' | b'_' | b'.'))
        }
        _ => false,
    }
}

fn is_dns1123_subdomain(s: &str) -> bool {
    s.split('.').all(|label| {
        let bytes = label.as_bytes();
        let end_ok = |b: &u8| b.is_ascii_lowercase() || b.is_ascii_digit();
        match (bytes.first(), bytes.last()) {
            (Some(first), Some(last)) => {
                end_ok(first) && end_ok(last) && bytes.iter().all(|b| end_ok(b) || *b == b'-')
            }
            _ => false,
        }
    })
}

fn check_label_key(key: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    let name = match key.split_once('/') {
        None => key,
        Some((_, name)) if name.contains('/') => {
            return Err(format!(
                "a label key {NAME_RULE}, with an optional DNS subdomain prefix and a single '/' \
                 (e.g. 'example.com/MyName')"
            ));
        }
        Some((prefix, name)) => {
            if prefix.is_empty() {
                problems.push("prefix part must be non-empty".to_owned());
            } else {
                if prefix.len() > DNS_SUBDOMAIN_MAX {
                    problems.push(format!(
                        "prefix part must be no more than {DNS_SUBDOMAIN_MAX} characters"
                    ));
                }
                if !is_dns1123_subdomain(prefix) {
                    problems.push(
                        "prefix part must be a lowercase RFC 1123 subdomain: lowercase alphanumeric \
                         characters, '-' or '.', starting and ending with an alphanumeric character"
                            .to_owned(),
                    );
                }
            }
            name
        }
    };
    if name.is_empty() {
        problems.push("name part must be non-empty".to_owned());
    } else {
        if name.len() > LABEL_NAME_MAX {
            problems.push(format!(
                "name part must be no more than {LABEL_NAME_MAX} characters"
            ));
        }
        if !is_qualified_name(name) {
            problems.push(format!("name part {NAME_RULE}"));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

fn check_label_value(value: &str) -> Result<(), String> {
    let mut problems = Vec::new();
    if value.len() > LABEL_NAME_MAX {
        problems.push(format!("must be no more than {LABEL_NAME_MAX} characters"));
    }
    if !value.is_empty() && !is_qualified_name(value) {
        problems.push(format!("a label value must be empty or {NAME_RULE}"));
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(problems.join("; "))
    }
}

/// A value as the operator needs it: a label value, and for `>`/`<` also a
/// 64-bit integer (as Go's `strconv.ParseInt(v, 10, 64)`).
fn check_value(operator: Operator, value: &str) -> Result<(), String> {
    if matches!(operator, Operator::GreaterThan | Operator::LessThan)
        && value.parse::<i64>().is_err()
    {
        return Err(format!(
            "the value of a '{}' requirement must be a 64-bit integer",
            operator.as_str()
        ));
    }
    check_label_value(value)
}

fn check_value_count(operator: Operator, values: &[String]) -> Result<(), &'static str> {
    match operator {
        Operator::In | Operator::NotIn if values.is_empty() => {
            Err("for 'in', 'notin' operators, values set can't be empty")
        }
        Operator::Equals | Operator::NotEquals if values.len() != 1 => {
            Err("exact-match compatibility requires one single value")
        }
        Operator::GreaterThan | Operator::LessThan if values.len() != 1 => {
            Err("for '>', '<' operators, exactly one value is required")
        }
        Operator::Exists | Operator::DoesNotExist if !values.is_empty() => {
            Err("values set must be empty for exists and does not exist")
        }
        _ => Ok(()),
    }
}

// ---------------------------------------------------------------------------
// Lexer and parser, after apimachinery's `labels.Lexer` and `labels.Parser`.

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Tok {
    /// Keys and values; `in` and `notin` are identifiers too, and act as
    /// operators only in operator position (as in apimachinery, where
    /// `in in (in)` is a valid selector).
    Ident,
    Not,
    Equals,
    DoubleEquals,
    NotEquals,
    Greater,
    Less,
    OpenParen,
    CloseParen,
    Comma,
    End,
}

#[derive(Debug, Clone, Copy)]
struct Token {
    tok: Tok,
    start: usize,
    end: usize,
}

fn is_special(b: u8) -> bool {
    matches!(b, b'=' | b'!' | b'(' | b')' | b',' | b'>' | b'<')
}

fn is_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\r' | b'\n')
}

/// Every token ends at an ASCII byte or at the end of the input, so slicing
/// `input[start..end]` is always on a character boundary.
///
/// apimachinery's lexer treats a NUL byte as the end of the input and
/// silently ignores what follows; here NUL is an ordinary character, which
/// then fails key or value validation.
fn lex(input: &str) -> Vec<Token> {
    let bytes = input.as_bytes();
    let mut tokens = Vec::new();
    let mut i = 0;
    loop {
        while i < bytes.len() && is_space(bytes[i]) {
            i += 1;
        }
        let start = i;
        let Some(&b) = bytes.get(i) else {
            tokens.push(Token {
                tok: Tok::End,
                start,
                end: start,
            });
            return tokens;
        };
        let next = bytes.get(i + 1).copied();
        let (tok, len) = match (b, next) {
            (b'=', Some(b'=')) => (Tok::DoubleEquals, 2),
            (b'!', Some(b'=')) => (Tok::NotEquals, 2),
            (b'=', _) => (Tok::Equals, 1),
            (b'!', _) => (Tok::Not, 1),
            (b'>', _) => (Tok::Greater, 1),
            (b'<', _) => (Tok::Less, 1),
            (b'(', _) => (Tok::OpenParen, 1),
            (b')', _) => (Tok::CloseParen, 1),
            (b',', _) => (Tok::Comma, 1),
            _ => {
                let len = bytes[i..]
                    .iter()
                    .position(|&b| is_special(b) || is_space(b))
                    .unwrap_or(bytes.len() - i);
                (Tok::Ident, len)
            }
        };
        i += len;
        tokens.push(Token { tok, start, end: i });
    }
}

struct Parser<'a> {
    input: &'a str,
    /// Always ends with a `Tok::End` token, which is never consumed past.
    tokens: &'a [Token],
    pos: usize,
}

const EXPECT_KEY: &str = "a label key or '!'";
const EXPECT_KEY_AFTER_COMMA: &str = "a label key or '!' after ','";
const EXPECT_KEY_AFTER_NOT: &str = "a label key after '!'";
const EXPECT_END: &str = "',' or the end of the selector";
const EXPECT_OPERATOR: &str = "an operator ('=', '==', '!=', 'in', 'notin', '>' or '<')";
const EXPECT_OPEN: &str = "'('";
const EXPECT_LIST_START: &str = "a value, ',' or ')'";
const EXPECT_LIST_NEXT: &str = "')' or ','";
const EXPECT_VALUE: &str = "a value";

/// Longest token text quoted in an error, so that a huge input does not make
/// a huge message.
const MAX_FOUND_LEN: usize = 64;

impl<'a> Parser<'a> {
    fn peek(&self) -> Token {
        self.tokens[self.pos.min(self.tokens.len() - 1)]
    }

    fn next(&mut self) -> Token {
        let token = self.peek();
        if token.tok != Tok::End {
            self.pos += 1;
        }
        token
    }

    fn text(&self, token: Token) -> &'a str {
        &self.input[token.start..token.end]
    }

    fn is_keyword(&self, token: Token, keyword: &str) -> bool {
        token.tok == Tok::Ident && self.text(token) == keyword
    }

    fn syntax(&self, token: Token, expected: &'static str) -> SelectorError {
        let found = (token.tok != Tok::End).then(|| {
            let text = self.text(token);
            match text.char_indices().nth(MAX_FOUND_LEN) {
                Some((cut, _)) => format!("{}…", &text[..cut]),
                None => text.to_owned(),
            }
        });
        SelectorError::Syntax {
            input: self.input.to_owned(),
            offset: token.start,
            column: column_at(self.input, token.start),
            expected,
            found,
        }
    }

    fn parse(mut self) -> Result<Vec<Requirement>, SelectorError> {
        let mut requirements = Vec::new();
        if self.peek().tok == Tok::End {
            return Ok(requirements);
        }
        loop {
            requirements.push(self.requirement()?);
            let token = self.next();
            match token.tok {
                Tok::End => return Ok(requirements),
                Tok::Comma => {
                    let after = self.peek();
                    if !matches!(after.tok, Tok::Ident | Tok::Not) {
                        return Err(self.syntax(after, EXPECT_KEY_AFTER_COMMA));
                    }
                }
                _ => return Err(self.syntax(token, EXPECT_END)),
            }
        }
    }

    fn requirement(&mut self) -> Result<Requirement, SelectorError> {
        let mut token = self.next();
        let negated = token.tok == Tok::Not;
        if negated {
            token = self.next();
            if token.tok != Tok::Ident {
                return Err(self.syntax(token, EXPECT_KEY_AFTER_NOT));
            }
        } else if token.tok != Tok::Ident {
            return Err(self.syntax(token, EXPECT_KEY));
        }
        let key_token = token;
        let key = self.text(key_token);
        if let Err(reason) = check_label_key(key) {
            return Err(SelectorError::InvalidKey {
                input: self.input.to_owned(),
                key: key.to_owned(),
                offset: key_token.start,
                column: column_at(self.input, key_token.start),
                reason,
            });
        }
        // `!key` takes no operator; whatever follows it must end the
        // requirement, which the caller checks.
        if negated {
            return Ok(Requirement::new_unchecked(
                key.to_owned(),
                Operator::DoesNotExist,
                Vec::new(),
            ));
        }
        if matches!(self.peek().tok, Tok::End | Tok::Comma) {
            return Ok(Requirement::new_unchecked(
                key.to_owned(),
                Operator::Exists,
                Vec::new(),
            ));
        }

        let op_token = self.next();
        let operator = match op_token.tok {
            Tok::Equals | Tok::DoubleEquals => Operator::Equals,
            Tok::NotEquals => Operator::NotEquals,
            Tok::Greater => Operator::GreaterThan,
            Tok::Less => Operator::LessThan,
            Tok::Ident if self.is_keyword(op_token, "in") => Operator::In,
            Tok::Ident if self.is_keyword(op_token, "notin") => Operator::NotIn,
            _ => return Err(self.syntax(op_token, EXPECT_OPERATOR)),
        };
        let values = match operator {
            Operator::In | Operator::NotIn => self.value_set()?,
            _ => vec![self.exact_value()?],
        };
        for &(value, offset) in &values {
            if let Err(reason) = check_value(operator, value) {
                return Err(SelectorError::InvalidValue {
                    input: self.input.to_owned(),
                    key: key.to_owned(),
                    value: value.to_owned(),
                    offset,
                    column: column_at(self.input, offset),
                    reason,
                });
            }
        }
        let values = values.into_iter().map(|(v, _)| v.to_owned()).collect();
        Ok(Requirement::new_unchecked(key.to_owned(), operator, values))
    }

    /// The value of `=`, `==`, `!=`, `>` and `<`, with its offset; a missing
    /// value (`key=` followed by `,` or the end) is the empty string.
    fn exact_value(&mut self) -> Result<(&'a str, usize), SelectorError> {
        let token = self.peek();
        match token.tok {
            Tok::End | Tok::Comma => Ok(("", token.start)),
            Tok::Ident => {
                self.next();
                Ok((self.text(token), token.start))
            }
            _ => Err(self.syntax(token, EXPECT_VALUE)),
        }
    }

    /// `( v1, v2, ... )`. As in apimachinery, empty entries are the empty
    /// string: `()`, `(,a)`, `(a,)` and `(a,,b)` all contain `""`.
    fn value_set(&mut self) -> Result<Vec<(&'a str, usize)>, SelectorError> {
        let open = self.next();
        if open.tok != Tok::OpenParen {
            return Err(self.syntax(open, EXPECT_OPEN));
        }
        let mut values = Vec::new();
        let mut expect_value = true;
        loop {
            let token = self.next();
            match token.tok {
                Tok::CloseParen => {
                    if expect_value {
                        values.push(("", token.start));
                    }
                    return Ok(values);
                }
                Tok::Comma => {
                    if expect_value {
                        values.push(("", token.start));
                    }
                    expect_value = true;
                }
                Tok::Ident if expect_value => {
                    values.push((self.text(token), token.start));
                    expect_value = false;
                }
                _ if expect_value => return Err(self.syntax(token, EXPECT_LIST_START)),
                _ => return Err(self.syntax(token, EXPECT_LIST_NEXT)),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn labels(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn sel(s: &str) -> Selector {
        Selector::parse(s).unwrap_or_else(|e| panic!("{s:?} should parse: {e}"))
    }

    fn err(s: &str) -> SelectorError {
        match Selector::parse(s) {
            Ok(parsed) => panic!("{s:?} should not parse, got {parsed:?}"),
            Err(e) => e,
        }
    }

    fn single(s: &str) -> Requirement {
        let parsed = sel(s);
        assert_eq!(parsed.requirements().len(), 1, "{s:?}");
        parsed.requirements()[0].clone()
    }

    #[test]
    fn empty_and_blank_select_everything() {
        for s in ["", " ", " \t\r\n "] {
            let parsed = sel(s);
            assert!(parsed.is_everything());
            assert!(parsed.matches(&labels(&[])));
            assert_eq!(parsed.to_string(), "");
        }
        assert_eq!(Selector::everything(), sel(""));
    }

    #[test]
    fn equality_operators() {
        for s in ["a=b", "a==b", " a = b ", "a\t==\tb"] {
            let r = single(s);
            assert_eq!(
                (r.key(), r.operator(), r.values()),
                ("a", Operator::Equals, &["b".to_owned()][..])
            );
        }
        let r = single("a!=b");
        assert_eq!(r.operator(), Operator::NotEquals);
        let s = sel("a=b");
        assert!(s.matches(&labels(&[("a", "b")])));
        assert!(!s.matches(&labels(&[("a", "c")])));
        assert!(!s.matches(&labels(&[])));
        let s = sel("a!=b");
        assert!(!s.matches(&labels(&[("a", "b")])));
        assert!(s.matches(&labels(&[("a", "c")])));
        assert!(s.matches(&labels(&[])), "!= matches a missing label");
    }

    #[test]
    fn empty_exact_value() {
        let r = single("a=");
        assert_eq!(r.values(), [""]);
        assert!(sel("a=").matches(&labels(&[("a", "")])));
        assert!(!sel("a=").matches(&labels(&[])));
        assert_eq!(sel("a=,b").to_string(), "a=,b");
        assert_eq!(sel("a!=").to_string(), "a!=");
    }

    #[test]
    fn set_operators() {
        let r = single("env in (prod, qa,prod)");
        assert_eq!(r.operator(), Operator::In);
        assert_eq!(r.values(), ["prod", "qa"]);
        let s = sel("env in (prod,qa)");
        assert!(s.matches(&labels(&[("env", "qa")])));
        assert!(!s.matches(&labels(&[("env", "dev")])));
        assert!(!s.matches(&labels(&[])));
        let s = sel("env notin (prod,qa)");
        assert!(!s.matches(&labels(&[("env", "qa")])));
        assert!(s.matches(&labels(&[("env", "dev")])));
        assert!(s.matches(&labels(&[])), "notin matches a missing label");
        // Keywords need no surrounding space next to a parenthesis.
        assert_eq!(sel("env in(a)"), sel("env in (a)"));
        assert_eq!(sel("env notin(a)"), sel("env notin (a)"));
    }

    #[test]
    fn empty_entries_in_value_sets_are_the_empty_string() {
        assert_eq!(single("x in ()").values(), [""]);
        assert_eq!(single("x in (,)").values(), [""]);
        assert_eq!(single("x in (,a)").values(), ["", "a"]);
        assert_eq!(single("x in (a,)").values(), ["", "a"]);
        assert_eq!(single("x in (a,,b)").values(), ["", "a", "b"]);
        assert!(sel("x in ()").matches(&labels(&[("x", "")])));
        assert_eq!(sel("x in (a,,b)").to_string(), "x in (,a,b)");
    }

    #[test]
    fn existence_operators() {
        let r = single("a");
        assert_eq!((r.operator(), r.values().len()), (Operator::Exists, 0));
        let r = single(" ! a ");
        assert_eq!((r.key(), r.operator()), ("a", Operator::DoesNotExist));
        assert!(sel("a").matches(&labels(&[("a", "")])));
        assert!(!sel("a").matches(&labels(&[("b", "")])));
        assert!(sel("!a").matches(&labels(&[("b", "")])));
        assert!(!sel("!a").matches(&labels(&[("a", "x")])));
    }

    #[test]
    fn integer_comparisons() {
        let r = single("replicas>3");
        assert_eq!(
            (r.operator(), r.values()),
            (Operator::GreaterThan, &["3".to_owned()][..])
        );
        let gt = sel("n > 3");
        assert!(gt.matches(&labels(&[("n", "4")])));
        assert!(!gt.matches(&labels(&[("n", "3")])));
        assert!(
            !gt.matches(&labels(&[("n", "x")])),
            "non-integer label never matches"
        );
        assert!(!gt.matches(&labels(&[])), "missing label never matches");
        let lt = sel("n<10");
        assert!(lt.matches(&labels(&[("n", "9")])));
        assert!(lt.matches(&labels(&[("n", "-20")])));
        assert!(!lt.matches(&labels(&[("n", "10")])));
        assert!(sel("n>007").matches(&labels(&[("n", "8")])));
    }

    #[test]
    fn integer_comparison_values_must_be_integers() {
        for (s, value) in [
            ("n>x", "x"),
            ("n>", ""),
            ("n<1.5", "1.5"),
            ("n>99999999999999999999", "99999999999999999999"),
        ] {
            match err(s) {
                SelectorError::InvalidValue {
                    value: v, reason, ..
                } => {
                    assert_eq!(v, value);
                    assert!(reason.contains("integer"), "{reason}");
                }
                other => panic!("{s:?}: {other:?}"),
            }
        }
        // A leading sign is an integer but not a label value, as in apimachinery.
        assert!(matches!(err("n>-1"), SelectorError::InvalidValue { .. }));
    }

    #[test]
    fn keywords_are_values_outside_operator_position() {
        let r = single("in in (in,notin)");
        assert_eq!(
            (r.key(), r.operator(), r.values()),
            (
                "in",
                Operator::In,
                &["in".to_owned(), "notin".to_owned()][..]
            )
        );
        assert_eq!(single("notin=in").values(), ["in"]);
        assert_eq!(single("notin").operator(), Operator::Exists);
        assert_eq!(sel("in in (in)").to_string(), "in in (in)");
    }

    #[test]
    fn several_requirements_are_anded_and_canonically_ordered() {
        let s = sel("b=1, a in (x), !c, d");
        // Sorted by key, as apimachinery sorts them.
        assert_eq!(s.to_string(), "a in (x),b=1,!c,d");
        assert!(s.matches(&labels(&[("a", "x"), ("b", "1"), ("d", "")])));
        assert!(!s.matches(&labels(&[("a", "x"), ("b", "1"), ("d", ""), ("c", "")])));
        assert!(!s.matches(&labels(&[("a", "x"), ("d", "")])));
        assert_eq!(sel("a=1,b=2"), sel("b=2, a=1"));
        assert_eq!(sel("a=1,a=1"), sel("a=1"));
        assert_eq!(sel("a==1").to_string(), "a=1");
    }

    #[test]
    fn prefixed_keys() {
        let r = single("app.kubernetes.io/name=web");
        assert_eq!(r.key(), "app.kubernetes.io/name");
        assert!(sel("!example.com/x-y_z.w").matches(&labels(&[])));
    }

    #[test]
    fn invalid_keys() {
        let long = "a".repeat(64);
        let long_prefix = format!("{}/a", "a".repeat(254));
        let cases: Vec<(&str, &str)> = vec![
            ("-a=b", "name part"),
            ("a-=b", "name part"),
            ("a/b/c=d", "single '/'"),
            ("/a=b", "prefix part must be non-empty"),
            ("a/=b", "name part must be non-empty"),
            ("Example.com/a=b", "prefix part"),
            ("ex_ample.com/a=b", "prefix part"),
            (&long, "no more than 63"),
            (&long_prefix, "no more than 253"),
            ("é", "name part"),
            ("a\0b", "name part"),
        ];
        for (s, reason_part) in cases {
            match err(s) {
                SelectorError::InvalidKey { reason, offset, .. } => {
                    assert!(reason.contains(reason_part), "{s:?}: {reason}");
                    assert_eq!(offset, 0);
                }
                other => panic!("{s:?}: {other:?}"),
            }
        }
        assert!(sel(&"a".repeat(63)).requirements().len() == 1);
    }

    #[test]
    fn invalid_values() {
        let long = format!("a={}", "v".repeat(64));
        for s in [
            "a=-b",
            "a=b-",
            "a=b c=d",
            "a in (x, -y)",
            "a=b/c",
            "a=ü",
            &long,
        ] {
            let e = Selector::parse(s).unwrap_err();
            assert!(
                matches!(
                    e,
                    SelectorError::InvalidValue { .. } | SelectorError::Syntax { .. }
                ),
                "{s:?}: {e:?}"
            );
        }
        match err("a in (x, -y)") {
            SelectorError::InvalidValue {
                key, value, column, ..
            } => {
                assert_eq!((key.as_str(), value.as_str(), column), ("a", "-y", 10));
            }
            other => panic!("{other:?}"),
        }
        assert!(sel(&format!("a={}", "v".repeat(63))).requirements().len() == 1);
        assert_eq!(single("a=A.b_c-D9").values(), ["A.b_c-D9"]);
    }

    #[test]
    fn syntax_errors_name_position_and_token() {
        let cases: &[(&str, usize, &str, Option<&str>)] = &[
            ("app in (a", 9, EXPECT_LIST_NEXT, None),
            ("a b", 2, EXPECT_OPERATOR, Some("b")),
            ("a,", 2, EXPECT_KEY_AFTER_COMMA, None),
            ("a,,b", 2, EXPECT_KEY_AFTER_COMMA, Some(",")),
            (",a", 0, EXPECT_KEY, Some(",")),
            ("=a", 0, EXPECT_KEY, Some("=")),
            ("!", 1, EXPECT_KEY_AFTER_NOT, None),
            ("!!a", 1, EXPECT_KEY_AFTER_NOT, Some("!")),
            ("!a=b", 2, EXPECT_END, Some("=")),
            ("a in b", 5, EXPECT_OPEN, Some("b")),
            ("a in", 4, EXPECT_OPEN, None),
            ("a in (b c)", 8, EXPECT_LIST_NEXT, Some("c")),
            ("a in (=)", 6, EXPECT_LIST_START, Some("=")),
            ("a in (b,", 8, EXPECT_LIST_START, None),
            ("a=b c", 4, EXPECT_END, Some("c")),
            ("a=(b)", 2, EXPECT_VALUE, Some("(")),
            ("a===b", 3, EXPECT_VALUE, Some("=")),
            ("a ! b", 2, EXPECT_OPERATOR, Some("!")),
            ("a in (b))", 8, EXPECT_END, Some(")")),
            ("a=b)", 3, EXPECT_END, Some(")")),
            ("a=>1", 2, EXPECT_VALUE, Some(">")),
        ];
        for &(s, offset, expected, found) in cases {
            match err(s) {
                SelectorError::Syntax {
                    offset: o,
                    column,
                    expected: e,
                    found: f,
                    input,
                } => {
                    assert_eq!(
                        (o, column, e, f.as_deref()),
                        (offset, offset + 1, expected, found),
                        "{s:?}"
                    );
                    assert_eq!(input, s);
                }
                other => panic!("{s:?}: {other:?}"),
            }
        }
    }

    #[test]
    fn error_messages() {
        assert_eq!(
            err("app in (a").to_string(),
            r#"label selector "app in (a": expected ')' or ',' at column 10"#
        );
        assert_eq!(
            err("app foo").to_string(),
            r#"label selector "app foo": expected an operator ('=', '==', '!=', 'in', 'notin', '>' or '<') at column 5, found "foo""#
        );
        assert_eq!(
            err("app=web,-x").to_string(),
            "label selector \"app=web,-x\": invalid label key \"-x\" at column 9: name part must consist of \
             alphanumeric characters, '-', '_' or '.', and must start and end with an alphanumeric character"
        );
    }

    #[test]
    fn columns_count_characters_not_bytes() {
        match err("é=a,b c") {
            SelectorError::InvalidKey { column, .. } => assert_eq!(column, 1),
            other => panic!("{other:?}"),
        }
        match err("a=b,ééé x") {
            SelectorError::InvalidKey { offset, column, .. } => {
                assert_eq!((offset, column), (4, 5))
            }
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn long_found_tokens_are_truncated() {
        let s = format!("a {}", "b".repeat(1000));
        match err(&s) {
            SelectorError::Syntax {
                found: Some(found), ..
            } => assert!(found.chars().count() <= MAX_FOUND_LEN + 1),
            other => panic!("{other:?}"),
        }
    }

    #[test]
    fn requirement_new_validates() {
        assert!(Requirement::new("a", Operator::Equals, ["b"]).is_ok());
        assert!(Requirement::new("a", Operator::Equals, ["b", "c"]).is_err());
        assert!(Requirement::new("a", Operator::Equals, Vec::<String>::new()).is_err());
        assert!(Requirement::new("a", Operator::In, Vec::<String>::new()).is_err());
        assert!(Requirement::new("a", Operator::Exists, ["b"]).is_err());
        assert!(Requirement::new("a", Operator::GreaterThan, ["b"]).is_err());
        assert!(Requirement::new("a", Operator::LessThan, ["1"]).is_ok());
        assert!(Requirement::new("-a", Operator::Exists, Vec::<String>::new()).is_err());
        assert!(Requirement::new("a", Operator::NotIn, ["ok", "not ok"]).is_err());
        let e = Requirement::new("a", Operator::In, ["-x"]).unwrap_err();
        assert!(
            e.to_string().starts_with(
                r#"invalid label selector requirement for key "a": invalid value "-x""#
            ),
            "{e}"
        );
    }

    #[test]
    fn from_labels() {
        let s = Selector::from_labels(&labels(&[("b", "2"), ("a", "1")])).unwrap();
        assert_eq!(s.to_string(), "a=1,b=2");
        assert!(Selector::from_labels(&labels(&[])).unwrap().is_everything());
        assert!(Selector::from_labels(&labels(&[("a", "-")])).is_err());
    }

    #[test]
    fn from_label_selector() {
        let spec: LabelSelector = serde_json::from_value(serde_json::json!({
            "matchLabels": {"app": "web"},
            "matchExpressions": [
                {"key": "tier", "operator": "In", "values": ["a", "b"]},
                {"key": "canary", "operator": "DoesNotExist"},
                {"key": "zone", "operator": "Exists", "values": null},
            ]
        }))
        .unwrap();
        let s = Selector::from_label_selector(&spec).unwrap();
        assert_eq!(s, sel("app=web,tier in (a,b),!canary,zone"));
        assert_eq!(Selector::try_from(&spec).unwrap(), s);

        let empty: LabelSelector =
            serde_json::from_value(serde_json::json!({"matchLabels": null})).unwrap();
        assert!(
            Selector::from_label_selector(&empty)
                .unwrap()
                .is_everything()
        );

        let bad = |expr: serde_json::Value| {
            let spec: LabelSelector =
                serde_json::from_value(serde_json::json!({ "matchExpressions": [expr] })).unwrap();
            Selector::from_label_selector(&spec).unwrap_err()
        };
        let e = bad(serde_json::json!({"key": "a", "operator": "Gt", "values": ["1"]}));
        assert!(
            e.to_string()
                .contains(r#""Gt" is not a valid label selector operator"#),
            "{e}"
        );
        assert!(matches!(
            bad(serde_json::json!({"key": "a", "operator": "In"})),
            SelectorError::InvalidRequirement { .. }
        ));
        assert!(matches!(
            bad(serde_json::json!({"key": "a", "operator": "Exists", "values": ["x"]})),
            SelectorError::InvalidRequirement { .. }
        ));
        assert!(matches!(
            bad(serde_json::json!({"key": "a b", "operator": "Exists"})),
            SelectorError::InvalidRequirement { .. }
        ));
    }

    #[test]
    fn matches_object_reads_metadata_labels() {
        let mut object: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "v1", "kind": "Pod",
            "metadata": {"name": "p", "labels": {"app": "web"}}
        }))
        .unwrap();
        assert!(sel("app=web").matches_object(&object));
        assert!(!sel("app=db").matches_object(&object));
        object.metadata.labels = None;
        assert!(sel("!app").matches_object(&object));
        assert!(!sel("app").matches_object(&object));
        assert!(Selector::everything().matches_object(&object));
    }

    #[test]
    fn serde_uses_the_string_form() {
        let s = sel("b notin (y,x), a");
        let json = serde_json::to_value(&s).unwrap();
        assert_eq!(json, serde_json::json!("a,b notin (x,y)"));
        assert_eq!(serde_json::from_value::<Selector>(json).unwrap(), s);
        assert!(serde_json::from_value::<Selector>(serde_json::json!("a in")).is_err());
    }

    #[test]
    fn field_selectors() {
        for ok in [
            "",
            ",",
            "metadata.name=web",
            "metadata.name==web",
            "status.phase!=Running",
            "a=b,c!=d,e==f",
            "a=",
            "a=x\\,y\\=z\\\\",
            "spec.nodeName=",
            "a=b,,c=d",
        ] {
            assert!(
                validate_field_selector(ok).is_ok(),
                "{ok:?}: {:?}",
                validate_field_selector(ok)
            );
        }
        let cases: &[(&str, usize, &str)] = &[
            ("a", 0, "expected '=', '==' or '!='"),
            ("a=b,c", 4, "expected '=', '==' or '!='"),
            ("=b", 0, "missing field name"),
            ("a b=c", 1, "whitespace"),
            ("a=b=c", 3, "unescaped '='"),
            ("a===b", 3, "unescaped '='"),
            ("a=b\\x", 3, "invalid escape sequence"),
            ("a=b\\", 3, "lone"),
        ];
        for &(s, offset, reason_part) in cases {
            match validate_field_selector(s) {
                Err(SelectorError::FieldSyntax {
                    offset: o,
                    column,
                    reason,
                    ..
                }) => {
                    assert_eq!((o, column), (offset, offset + 1), "{s:?}");
                    assert!(reason.contains(reason_part), "{s:?}: {reason}");
                }
                other => panic!("{s:?}: {other:?}"),
            }
        }
        // An escaped comma does not split terms.
        assert!(validate_field_selector("a=x\\,b").is_ok());
    }

    fn key_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            "[a-z]([-a-z0-9_.]{0,10}[a-z0-9])?",
            "[a-z0-9]{1,5}(\\.[a-z0-9]{1,5}){0,2}/[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?",
            Just("in".to_owned()),
            Just("notin".to_owned()),
        ]
    }

    fn value_strategy() -> impl Strategy<Value = String> {
        prop_oneof![
            Just(String::new()),
            "[A-Za-z0-9]([-A-Za-z0-9_.]{0,8}[A-Za-z0-9])?",
            Just("in".to_owned())
        ]
    }

    fn requirement_strategy() -> impl Strategy<Value = Requirement> {
        (
            key_strategy(),
            0..8usize,
            prop::collection::vec(value_strategy(), 1..4),
            0..1000i64,
        )
            .prop_map(|(key, op, values, n)| {
                let (operator, values) = match op {
                    0 => (Operator::Equals, vec![values[0].clone()]),
                    1 => (Operator::NotEquals, vec![values[0].clone()]),
                    2 => (Operator::In, values),
                    3 => (Operator::NotIn, values),
                    4 => (Operator::Exists, vec![]),
                    5 => (Operator::DoesNotExist, vec![]),
                    6 => (Operator::GreaterThan, vec![n.to_string()]),
                    _ => (Operator::LessThan, vec![n.to_string()]),
                };
                Requirement::new(key, operator, values).expect("strategy builds valid requirements")
            })
    }

    proptest! {
        #[test]
        fn parsing_arbitrary_strings_never_panics(s in any::<String>()) {
            let _ = Selector::parse(&s);
            let _ = validate_field_selector(&s);
        }

        #[test]
        fn parsing_selector_like_strings_never_panics_and_round_trips(
            s in "[ a-c!=<>(),0-9]{0,12}|([a-c]{1,2}( ?(in|notin|=|==|!=|<|>) ?)?[ (,)a-c0-9]{0,6},?){0,3}"
        ) {
            if let Ok(parsed) = Selector::parse(&s) {
                let shown = parsed.to_string();
                prop_assert_eq!(Selector::parse(&shown), Ok(parsed), "{:?} -> {:?}", s, shown);
            }
        }

        #[test]
        fn display_round_trips(requirements in prop::collection::vec(requirement_strategy(), 0..5)) {
            let selector = Selector::new(requirements);
            let shown = selector.to_string();
            prop_assert_eq!(Selector::parse(&shown), Ok(selector), "{:?}", shown);
        }

        #[test]
        fn field_selector_like_strings_never_panic(s in "[a-c=!,\\\\ é]{0,16}") {
            let _ = validate_field_selector(&s);
        }
    }
}
