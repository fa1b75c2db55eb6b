//! The structured label selector of object specs (`matchLabels` and
//! `matchExpressions`), and its conversion into a [`Selector`].

use std::collections::BTreeMap;

use serde::{Deserialize, Deserializer, Serialize};

use super::{Operator, Requirement, Selector, SelectorError};

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
}

impl TryFrom<&LabelSelector> for Selector {
    type Error = SelectorError;

    fn try_from(value: &LabelSelector) -> Result<Self, Self::Error> {
        Selector::from_label_selector(value)
    }
}
