//! The indexes a command line names (`get --index`, `watch
//! --index-values`): those the informers declare, and the built-in
//! [`NAMESPACE_INDEX`] every cache has without being asked.
//!
//! Names are checked against the set before the cluster is contacted, so
//! that a typo is said at once, with the names there are.

use std::collections::{BTreeMap, BTreeSet};
use std::sync::Arc;

use kube_dynamic_informer::cache::{IndexFn, NAMESPACE_INDEX, check_index_name};
use kube_dynamic_informer::declarative::InformerSet;

use crate::exit::Failure;

/// `--index-values all`: every index the informers declare. The built-in
/// namespace index is shown only when named: each line's key already
/// carries the namespace.
pub const ALL: &str = "all";

/// The index names the informers of a set answer to.
pub struct IndexNames<'a> {
    declared: BTreeSet<&'a str>,
}

impl<'a> IndexNames<'a> {
    /// The indexes `set` declares, on its informers and its patterns.
    pub fn of(set: &'a InformerSet) -> Self {
        let informers = set.informers.iter().flat_map(|i| i.indexes.keys());
        let patterns = set.patterns.iter().flat_map(|p| p.indexes.keys());
        IndexNames {
            declared: informers.chain(patterns).map(String::as_str).collect(),
        }
    }

    /// Whether some informer has an index `name`.
    pub fn has(&self, name: &str) -> bool {
        name == NAMESPACE_INDEX || self.declared.contains(name)
    }

    /// `name`, as `flag` gave it (`--index "x=a"`), is an index some
    /// informer has; `or_all` also takes [`ALL`].
    ///
    /// # Errors
    /// A usage failure listing the indexes there are (`or_all`: and
    /// `all`), or saying how to declare one when only the built-in one is.
    pub fn check(&self, flag: &str, name: &str, or_all: bool) -> Result<(), Failure> {
        if self.has(name) || (or_all && name == ALL) {
            return Ok(());
        }
        let mut message = format!("{flag}: no informer has an index named {name:?}; ");
        if self.declared.is_empty() {
            message.push_str(&format!(
                "the only index is the built-in {NAMESPACE_INDEX}; declare others with --define-index NAME=JMESPATH or in the config file"
            ));
        } else {
            let declared: Vec<&str> = self.declared.iter().copied().collect();
            message.push_str(&format!(
                "the indexes are {NAMESPACE_INDEX} (built in), {}",
                declared.join(", ")
            ));
            if or_all {
                message.push_str(&format!(", or `{ALL}` for the declared ones"));
            }
        }
        Err(Failure::usage(message))
    }
}

/// `name`, as `flag` gave it (`--define-index "namespace=..."`), may be
/// declared: not the built-in one, which every informer has already (a
/// config file is refused the same).
///
/// # Errors
/// A usage failure for the built-in name.
pub fn check_definable(flag: &str, name: &str) -> Result<(), Failure> {
    check_index_name(name).map_err(|e| Failure::usage(format!("{flag}: {e}")))
}

/// The index functions of an informer that `wanted` (the names of
/// `--index-values`) asks to show, from those it declares and the built-in
/// one, in the order of their names.
pub fn shown(
    wanted: &[String],
    declared: &BTreeMap<String, IndexFn>,
) -> Arc<Vec<(String, IndexFn)>> {
    let named = |n: &str| wanted.iter().any(|w| w == n);
    let mut shown: Vec<(String, IndexFn)> = declared
        .iter()
        .filter(|(n, _)| named(ALL) || named(n))
        .map(|(n, f)| (n.clone(), f.clone()))
        .collect();
    if named(NAMESPACE_INDEX) && !declared.contains_key(NAMESPACE_INDEX) {
        shown.push((NAMESPACE_INDEX.to_owned(), IndexFn::namespace()));
        shown.sort_by(|(a, _), (b, _)| a.cmp(b));
    }
    Arc::new(shown)
}

#[cfg(test)]
mod tests {
    use super::*;
    use kube_dynamic_informer::vocabulary::Namespaces;

    fn set(indexes: &[(&str, &str)]) -> InformerSet {
        let indexes = indexes
            .iter()
            .map(|(n, e)| (n.to_string(), e.to_string()))
            .collect();
        InformerSet::from_names(&["pods".into()], indexes, &Namespaces::All, &[], None)
            .expect("a valid set")
    }

    fn message(result: Result<(), Failure>) -> String {
        result.err().map(|f| f.message).unwrap_or_default()
    }

    #[test]
    fn the_namespace_index_is_known_without_being_declared() {
        let bare = set(&[]);
        assert!(
            IndexNames::of(&bare)
                .check("--index", "namespace", false)
                .is_ok()
        );
        let declared = set(&[("node", "spec.nodeName")]);
        let names = IndexNames::of(&declared);
        assert!(names.check("--index", "namespace", false).is_ok());
        assert!(names.check("--index", "node", false).is_ok());
    }

    #[test]
    fn an_unknown_index_is_answered_with_the_indexes_there_are() {
        let declared = set(&[("node", "spec.nodeName"), ("app", "metadata.labels.app")]);
        let names = IndexNames::of(&declared);
        assert_eq!(
            message(names.check("--index \"host=a\"", "host", false)),
            "--index \"host=a\": no informer has an index named \"host\"; the indexes are namespace (built in), app, node"
        );
        assert_eq!(
            message(names.check("--index-values \"host\"", "host", true)),
            "--index-values \"host\": no informer has an index named \"host\"; the indexes are namespace (built in), app, node, or `all` for the declared ones"
        );
        assert!(names.check("--index-values \"all\"", "all", true).is_ok());
        assert!(names.check("--index \"all=a\"", "all", false).is_err());
        let bare = set(&[]);
        assert_eq!(
            message(IndexNames::of(&bare).check("--index \"host=a\"", "host", false)),
            "--index \"host=a\": no informer has an index named \"host\"; the only index is the built-in namespace; declare others with --define-index NAME=JMESPATH or in the config file"
        );
    }

    #[test]
    fn all_shows_the_declared_indexes_and_namespace_only_when_named() {
        let declared: BTreeMap<String, IndexFn> = [
            (
                "color".to_string(),
                IndexFn::jmespath("color", "spec.color").unwrap(),
            ),
            (
                "size".to_string(),
                IndexFn::jmespath("size", "spec.size").unwrap(),
            ),
        ]
        .into();
        let names = |wanted: &[&str]| -> Vec<String> {
            let wanted: Vec<String> = wanted.iter().map(|w| w.to_string()).collect();
            shown(&wanted, &declared)
                .iter()
                .map(|(n, _)| n.clone())
                .collect()
        };
        assert_eq!(names(&["all"]), ["color", "size"]);
        assert_eq!(names(&["namespace"]), ["namespace"]);
        assert_eq!(names(&["all", "namespace"]), ["color", "namespace", "size"]);
        assert_eq!(names(&["size"]), ["size"]);
        assert!(names(&[]).is_empty());
    }
}
