//! Conversion into kube-core's label selector, the type kube-client's
//! `ListParams::labels_from` and kube-runtime's `watcher::Config::labels_from`
//! take.

use kube_core::Expression;

use super::{Operator, Requirement, Selector};
use crate::vocabulary::VocabularyError;

/// Every requirement becomes the `kube_core::Expression` of the same meaning,
/// in the same (canonical) order, so the result displays as the same string;
/// see the [module documentation](crate::vocabulary#kube-core-and-k8s-openapi) for the
/// mapping.
///
/// # Errors
///
/// [`VocabularyError::Inexpressible`] for a `>` or `<` requirement, which
/// kube-core cannot represent; pass such a selector as a string
/// (`ListParams::labels(&selector.to_string())`) instead.
///
/// ```
/// use kube_dynamic_informer::vocabulary::Selector;
///
/// let ours = Selector::parse("app=web,tier in (front,edge),!canary")?;
/// let theirs = kube_core::Selector::try_from(&ours)?;
/// assert_eq!(theirs.to_string(), ours.to_string());
/// // Ready for kube-client: ListParams::default().labels_from(&theirs)
///
/// let err = kube_core::Selector::try_from(&Selector::parse("replicas>3")?).unwrap_err();
/// assert!(err.to_string().contains(r#""replicas>3" cannot be expressed"#));
/// # Ok::<(), kube_dynamic_informer::vocabulary::VocabularyError>(())
/// ```
impl TryFrom<&Selector> for kube_core::Selector {
    type Error = VocabularyError;

    fn try_from(selector: &Selector) -> Result<Self, Self::Error> {
        selector.requirements().iter().map(expression).collect()
    }
}

/// See the conversion from `&Selector`.
impl TryFrom<Selector> for kube_core::Selector {
    type Error = VocabularyError;

    fn try_from(selector: Selector) -> Result<Self, Self::Error> {
        kube_core::Selector::try_from(&selector)
    }
}

fn expression(requirement: &Requirement) -> Result<Expression, VocabularyError> {
    let key = requirement.key().to_owned();
    // Requirements are validated on construction: `=` and `!=` hold exactly
    // one value, `in` and `notin` at least one.
    let value = || requirement.values().first().cloned().unwrap_or_default();
    let set = || requirement.values().iter().cloned().collect();
    Ok(match requirement.operator() {
        Operator::Equals => Expression::Equal(key, value()),
        Operator::NotEquals => Expression::NotEqual(key, value()),
        Operator::In => Expression::In(key, set()),
        Operator::NotIn => Expression::NotIn(key, set()),
        Operator::Exists => Expression::Exists(key),
        Operator::DoesNotExist => Expression::DoesNotExist(key),
        Operator::GreaterThan | Operator::LessThan => {
            return Err(VocabularyError::Inexpressible {
                requirement: requirement.to_string(),
                target: "kube_core::Selector",
            });
        }
    })
}
