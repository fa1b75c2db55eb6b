//! One condition of a label selector: a key, an [`Operator`] and its values.

use std::fmt;

use super::VocabularyError;
use super::validate::{check_label_key, check_label_value};

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

/// One condition of a [`Selector`](super::Selector): a label key, an operator
/// and its values.
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
    /// [`VocabularyError::InvalidRequirement`] if the key or a value breaks the
    /// label rules, `In`/`NotIn` get no value, `Equals`/`NotEquals`/`>`/`<` do
    /// not get exactly one, `Exists`/`DoesNotExist` get any, or a `>`/`<`
    /// value is not an integer.
    ///
    /// ```
    /// use kube_dynamic_informer::vocabulary::{Operator, Requirement};
    ///
    /// let tier = Requirement::new("tier", Operator::In, ["web", "api"])?;
    /// assert_eq!(tier.to_string(), "tier in (api,web)");
    /// assert!(Requirement::new("tier", Operator::In, Vec::<String>::new()).is_err());
    /// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
    /// ```
    pub fn new<I>(
        key: impl Into<String>,
        operator: Operator,
        values: I,
    ) -> Result<Self, VocabularyError>
    where
        I: IntoIterator,
        I::Item: Into<String>,
    {
        let key = key.into();
        let values: Vec<String> = values.into_iter().map(Into::into).collect();
        let invalid = |reason: String| VocabularyError::InvalidRequirement {
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
            check_value(operator, value)
                .map_err(|reason| invalid(format!("invalid value {value:?}: {reason}")))?;
        }
        Ok(Self::new_unchecked(key, operator, values))
    }

    pub(super) fn new_unchecked(key: String, operator: Operator, mut values: Vec<String>) -> Self {
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
    pub fn matches(&self, labels: &(impl super::Labels + ?Sized)) -> bool {
        let value = labels.label(&self.key);
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

/// A value as the operator needs it: a label value, and for `>`/`<` also a
/// 64-bit integer (as Go's `strconv.ParseInt(v, 10, 64)`).
pub(super) fn check_value(operator: Operator, value: &str) -> Result<(), String> {
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
