//! The structured label selector of object specs (`matchLabels` and
//! `matchExpressions`), ours and k8s-openapi's, and their conversion into a
//! [`Selector`].

use std::collections::BTreeMap;

use k8s_openapi::apimachinery::pkg::apis::meta::v1 as metav1;
use serde::{Deserialize, Deserializer, Serialize};

use super::{Operator, Requirement, Selector};
use crate::vocabulary::VocabularyError;

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

impl Selector {
    /// Converts the structured form found in object specs (`matchLabels` and
    /// `matchExpressions`), as apimachinery's `LabelSelectorAsSelector` does.
    /// A selector with neither matches everything.
    ///
    /// # Errors
    ///
    /// [`VocabularyError::InvalidRequirement`] for an invalid key or value, an
    /// operator other than `In`, `NotIn`, `Exists` and `DoesNotExist`, an
    /// `In`/`NotIn` without values, or an `Exists`/`DoesNotExist` with values.
    ///
    /// ```
    /// use kube_dynamic_informer::vocabulary::{LabelSelector, Selector};
    ///
    /// let spec: LabelSelector = serde_json::from_value(serde_json::json!({
    ///     "matchLabels": { "app": "web" },
    ///     "matchExpressions": [{ "key": "tier", "operator": "NotIn", "values": ["db"] }]
    /// }))?;
    /// let selector = Selector::from_label_selector(&spec)?;
    /// assert_eq!(selector.to_string(), "app=web,tier notin (db)");
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn from_label_selector(selector: &LabelSelector) -> Result<Self, VocabularyError> {
        from_spec(
            &selector.match_labels,
            selector
                .match_expressions
                .iter()
                .map(|e| (e.key.as_str(), e.operator.as_str(), e.values.as_slice())),
        )
    }
}

/// apimachinery's `LabelSelectorAsSelector`: `matchLabels` entries are
/// equalities, `matchExpressions` take the four set-based operators, and
/// every key and value is validated as in a selector string.
fn from_spec<'a>(
    match_labels: &BTreeMap<String, String>,
    match_expressions: impl Iterator<Item = (&'a str, &'a str, &'a [String])>,
) -> Result<Selector, VocabularyError> {
    let mut requirements = Selector::from_labels(match_labels)?.requirements;
    for (key, operator, values) in match_expressions {
        let operator = match operator {
            "In" => Operator::In,
            "NotIn" => Operator::NotIn,
            "Exists" => Operator::Exists,
            "DoesNotExist" => Operator::DoesNotExist,
            other => {
                return Err(VocabularyError::InvalidRequirement {
                    key: key.to_owned(),
                    reason: format!(
                        "{other:?} is not a valid label selector operator (expected In, NotIn, Exists or DoesNotExist)"
                    ),
                });
            }
        };
        requirements.push(Requirement::new(
            key,
            operator,
            values.iter().map(String::as_str),
        )?);
    }
    Ok(Selector::new(requirements))
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = VocabularyError;

    fn try_from(value: &LabelSelector) -> Result<Self, Self::Error> {
        Selector::from_label_selector(value)
    }
}

/// k8s-openapi's `LabelSelector`, as found in typed objects (a Deployment's
/// `spec.selector`, a NetworkPolicy's `podSelector`), converted as
/// [`Selector::from_label_selector`] converts ours: absent fields are empty,
/// and an empty selector matches everything.
///
/// # Errors
///
/// [`VocabularyError::InvalidRequirement`], naming the key and the operator or
/// value at fault, for the same reasons as
/// [`Selector::from_label_selector`].
///
/// ```
/// use k8s_openapi::apimachinery::pkg::apis::meta::v1::{LabelSelector, LabelSelectorRequirement};
/// use kube_dynamic_informer::vocabulary::Selector;
///
/// let spec = LabelSelector {
///     match_labels: Some([("app".to_owned(), "web".to_owned())].into()),
///     match_expressions: Some(vec![LabelSelectorRequirement {
///         key: "tier".to_owned(),
///         operator: "In".to_owned(),
///         values: Some(vec!["front".to_owned(), "edge".to_owned()]),
///     }]),
/// };
/// let selector = Selector::try_from(&spec)?;
/// assert_eq!(selector.to_string(), "app=web,tier in (edge,front)");
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
impl TryFrom<&metav1::LabelSelector> for Selector {
    type Error = VocabularyError;

    fn try_from(value: &metav1::LabelSelector) -> Result<Self, Self::Error> {
        let no_labels = BTreeMap::new();
        from_spec(
            value.match_labels.as_ref().unwrap_or(&no_labels),
            value.match_expressions.iter().flatten().map(|e| {
                (
                    e.key.as_str(),
                    e.operator.as_str(),
                    e.values.as_deref().unwrap_or_default(),
                )
            }),
        )
    }
}

/// See the conversion from `&LabelSelector`.
impl TryFrom<metav1::LabelSelector> for Selector {
    type Error = VocabularyError;

    fn try_from(value: metav1::LabelSelector) -> Result<Self, Self::Error> {
        Selector::try_from(&value)
    }
}
