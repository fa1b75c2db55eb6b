//! What a request asks for: its path as a route, its query as list options.

use crate::vocabulary::selector::{Selector, split_field_terms};

use super::status::Refusal;

/// Where a path leads.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) enum Route {
    /// `/healthz`, `/livez`: the process answers.
    Live,
    /// `/readyz`: every served cache is synced.
    Ready,
    /// `/version`.
    Version,
    /// `/api`: the core group's versions.
    CoreVersions,
    /// `/apis`: the groups.
    Groups,
    /// `/apis/GROUP`.
    Group(String),
    /// `/api/v1`, `/apis/GROUP/VERSION`: the resources of a group version.
    Resources { group: String, version: String },
    /// A resource's collection or one of its objects.
    Object(Target),
    /// Nothing served here.
    Unknown,
}

/// A resource path: `/api/v1/[namespaces/NS/]PLURAL[/NAME[/SUB]]` or
/// `/apis/GROUP/VERSION/[namespaces/NS/]PLURAL[/NAME[/SUB]]`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct Target {
    pub(super) group: String,
    pub(super) version: String,
    pub(super) plural: String,
    pub(super) namespace: Option<String>,
    pub(super) name: Option<String>,
    pub(super) subresource: Option<String>,
}

impl Route {
    /// The route of `path` (without its query).
    pub(super) fn of(path: &str) -> Route {
        let segments: Vec<String> = path
            .split('/')
            .filter(|s| !s.is_empty())
            .map(percent_decode)
            .collect();
        let segments: Vec<&str> = segments.iter().map(String::as_str).collect();
        match segments.as_slice() {
            ["healthz" | "livez", ..] => Route::Live,
            ["readyz", ..] => Route::Ready,
            ["version"] => Route::Version,
            ["api"] => Route::CoreVersions,
            ["apis"] => Route::Groups,
            ["apis", group] => Route::Group((*group).to_owned()),
            ["api", version] => Route::Resources {
                group: String::new(),
                version: (*version).to_owned(),
            },
            ["apis", group, version] => Route::Resources {
                group: (*group).to_owned(),
                version: (*version).to_owned(),
            },
            ["api", version, rest @ ..] => Target::of("", version, rest),
            ["apis", group, version, rest @ ..] => Target::of(group, version, rest),
            _ => Route::Unknown,
        }
    }
}

impl Target {
    /// The target of the segments after the group version. `namespaces/X`
    /// is the Namespace X; `namespaces/X/PLURAL...` a namespaced path.
    fn of(group: &str, version: &str, rest: &[&str]) -> Route {
        let target =
            |namespace: Option<&str>, plural: &str, name: Option<&str>, sub: Option<&str>| {
                Route::Object(Target {
                    group: group.to_owned(),
                    version: version.to_owned(),
                    plural: plural.to_owned(),
                    namespace: namespace.map(str::to_owned),
                    name: name.map(str::to_owned),
                    subresource: sub.map(str::to_owned),
                })
            };
        match rest {
            ["namespaces", namespace, plural] => target(Some(namespace), plural, None, None),
            ["namespaces", namespace, plural, name] => {
                target(Some(namespace), plural, Some(name), None)
            }
            ["namespaces", namespace, plural, name, sub] => {
                target(Some(namespace), plural, Some(name), Some(sub))
            }
            [plural] => target(None, plural, None, None),
            [plural, name] => target(None, plural, Some(name), None),
            [plural, name, sub] => target(None, plural, Some(name), Some(sub)),
            _ => Route::Unknown,
        }
    }

    /// The same path read as a cluster-scoped `namespaces` path
    /// (`namespaces/NAME/SUB`), for when NS/PLURAL names no served
    /// resource.
    pub(super) fn as_namespace_subresource(&self) -> Option<Target> {
        let namespace = self.namespace.as_ref()?;
        if self.name.is_some() || !self.group.is_empty() {
            return None;
        }
        Some(Target {
            group: String::new(),
            version: self.version.clone(),
            plural: "namespaces".into(),
            namespace: None,
            name: Some(namespace.clone()),
            subresource: Some(self.plural.clone()),
        })
    }
}

/// How a list's `resourceVersion` is to be matched.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum VersionMatch {
    NotOlderThan,
    Exact,
}

/// The query parameters of a get, list or watch.
#[derive(Debug, Default)]
pub(super) struct Query {
    pub(super) label_selector: Option<Selector>,
    pub(super) field_selector: Vec<FieldTerm>,
    pub(super) limit: Option<usize>,
    pub(super) continue_token: Option<String>,
    pub(super) resource_version: Option<String>,
    pub(super) version_match: Option<VersionMatch>,
    pub(super) watch: bool,
    pub(super) allow_bookmarks: bool,
    pub(super) send_initial_events: Option<bool>,
    pub(super) timeout_seconds: Option<u64>,
    /// `index=NAME&indexValue=VALUE`: the objects filed under VALUE in the
    /// informer's index NAME.
    pub(super) index: Option<(String, String)>,
    /// `includeObject`: what a table's rows hold, read when a table is
    /// asked for.
    pub(super) include_object: Option<String>,
}

/// One term of a field selector: `metadata.name` or `metadata.namespace`,
/// equal or not to a value.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(super) struct FieldTerm {
    pub(super) field: Field,
    pub(super) equal: bool,
    pub(super) value: String,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum Field {
    Name,
    Namespace,
}

impl FieldTerm {
    /// Whether an object of `namespace` and `name` passes.
    pub(super) fn admits(&self, namespace: Option<&str>, name: Option<&str>) -> bool {
        let actual = match self.field {
            Field::Name => name.unwrap_or(""),
            Field::Namespace => namespace.unwrap_or(""),
        };
        (actual == self.value) == self.equal
    }
}

impl Query {
    /// The parameters of `query` (the part of the URI after `?`).
    pub(super) fn parse(query: Option<&str>) -> Result<Query, Refusal> {
        let mut q = Query::default();
        let mut index_name = None;
        let mut index_value = None;
        for pair in query.unwrap_or("").split('&').filter(|p| !p.is_empty()) {
            let (key, value) = pair.split_once('=').unwrap_or((pair, ""));
            let key = percent_decode(key);
            let value = percent_decode(value);
            match key.as_str() {
                "labelSelector" if !value.is_empty() => {
                    let selector = Selector::parse(&value).map_err(|e| {
                        Refusal::bad_request(format!("unable to parse requirement: {e}"))
                    })?;
                    q.label_selector = Some(selector);
                }
                "fieldSelector" => q.field_selector = field_terms(&value)?,
                "limit" => q.limit = number(&key, &value)?.filter(|n| *n > 0),
                "continue" if !value.is_empty() => q.continue_token = Some(value),
                "resourceVersion" if !value.is_empty() => q.resource_version = Some(value),
                "resourceVersionMatch" if !value.is_empty() => {
                    q.version_match = Some(match value.as_str() {
                        "NotOlderThan" => VersionMatch::NotOlderThan,
                        "Exact" => VersionMatch::Exact,
                        other => {
                            return Err(Refusal::bad_request(format!(
                                "resourceVersionMatch: Unsupported value: {other:?}: supported values: \"Exact\", \"NotOlderThan\""
                            )));
                        }
                    });
                }
                "watch" => q.watch = flag(&value),
                "allowWatchBookmarks" => q.allow_bookmarks = flag(&value),
                "sendInitialEvents" => q.send_initial_events = Some(flag(&value)),
                "timeoutSeconds" => q.timeout_seconds = number(&key, &value)?.map(|n| n as u64),
                "index" if !value.is_empty() => index_name = Some(value),
                "indexValue" => index_value = Some(value),
                "includeObject" => q.include_object = Some(value),
                _ => {}
            }
        }
        q.index = match (index_name, index_value) {
            (Some(name), value) => Some((name, value.unwrap_or_default())),
            (None, Some(_)) => {
                return Err(Refusal::bad_request(
                    "indexValue is given without index (the index's name)",
                ));
            }
            (None, None) => None,
        };
        // A streaming list (a watch with sendInitialEvents) matches
        // NotOlderThan an unset resourceVersion: the most recent.
        if q.version_match.is_some() && q.resource_version.is_none() && !q.watch {
            return Err(Refusal::bad_request(
                "resourceVersionMatch is forbidden unless resourceVersion is provided",
            ));
        }
        if q.continue_token.is_some() && q.resource_version.is_some() {
            return Err(Refusal::bad_request(
                "specifying resource version is not allowed when using continue",
            ));
        }
        Ok(q)
    }
}

fn flag(value: &str) -> bool {
    matches!(value, "true" | "1" | "")
}

fn number(key: &str, value: &str) -> Result<Option<usize>, Refusal> {
    if value.is_empty() {
        return Ok(None);
    }
    value
        .parse()
        .map(Some)
        .map_err(|_| Refusal::bad_request(format!("{key}: not a non-negative integer: {value:?}")))
}

/// The terms of a field selector; only `metadata.name` and
/// `metadata.namespace` can be selected, as for most resources of the
/// API server.
fn field_terms(selector: &str) -> Result<Vec<FieldTerm>, Refusal> {
    crate::vocabulary::validate_field_selector(selector)
        .map_err(|e| Refusal::bad_request(e.to_string()))?;
    let mut terms = Vec::new();
    for (_, raw) in split_field_terms(selector) {
        // The first operator in the term, as the validation reads it.
        let Some((at, op)) = raw.char_indices().find_map(|(i, _)| {
            ["!=", "==", "="]
                .into_iter()
                .find(|op| raw[i..].starts_with(op))
                .map(|op| (i, op))
        }) else {
            continue; // an empty term
        };
        let field = match raw[..at].trim() {
            "metadata.name" => Field::Name,
            "metadata.namespace" => Field::Namespace,
            other => {
                return Err(Refusal::bad_request(format!(
                    "field label not supported: {other} (kdi serve selects metadata.name and metadata.namespace)"
                )));
            }
        };
        terms.push(FieldTerm {
            field,
            equal: op != "!=",
            value: unescape(&raw[at + op.len()..]),
        });
    }
    Ok(terms)
}

/// A field selector value with `\,`, `\=` and `\\` unescaped.
fn unescape(value: &str) -> String {
    let mut out = String::with_capacity(value.len());
    let mut chars = value.chars();
    while let Some(c) = chars.next() {
        if c == '\\'
            && let Some(next) = chars.next()
        {
            out.push(next);
        } else {
            out.push(c);
        }
    }
    out
}

/// `%XX` sequences decoded and `+` read as a space (as Go's
/// `url.ParseQuery`); a malformed sequence is kept as it is, and bytes that
/// are not UTF-8 are replaced.
pub(super) fn percent_decode(s: &str) -> String {
    let bytes = s.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        match bytes[i] {
            b'%' if i + 2 < bytes.len() => {
                let hex = std::str::from_utf8(&bytes[i + 1..i + 3]).ok();
                match hex.and_then(|h| u8::from_str_radix(h, 16).ok()) {
                    Some(b) => {
                        out.push(b);
                        i += 3;
                    }
                    None => {
                        out.push(b'%');
                        i += 1;
                    }
                }
            }
            b'+' => {
                out.push(b' ');
                i += 1;
            }
            b => {
                out.push(b);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn target(group: &str, ns: Option<&str>, plural: &str, name: Option<&str>) -> Route {
        Route::Object(Target {
            group: group.into(),
            version: if group.is_empty() { "v1" } else { "v1alpha1" }.into(),
            plural: plural.into(),
            namespace: ns.map(Into::into),
            name: name.map(Into::into),
            subresource: None,
        })
    }

    #[test]
    fn paths_route_as_the_api_server_lays_them_out() {
        assert_eq!(Route::of("/api"), Route::CoreVersions);
        assert_eq!(Route::of("/apis/"), Route::Groups);
        assert_eq!(
            Route::of("/apis/example.com"),
            Route::Group("example.com".into())
        );
        assert_eq!(
            Route::of("/api/v1"),
            Route::Resources {
                group: String::new(),
                version: "v1".into()
            }
        );
        assert_eq!(Route::of("/api/v1/pods"), target("", None, "pods", None));
        assert_eq!(
            Route::of("/api/v1/namespaces/shop/pods/web-1"),
            target("", Some("shop"), "pods", Some("web-1"))
        );
        assert_eq!(
            Route::of("/api/v1/namespaces/shop"),
            target("", None, "namespaces", Some("shop"))
        );
        assert_eq!(
            Route::of("/apis/example.com/v1alpha1/namespaces/a/widgets"),
            target("example.com", Some("a"), "widgets", None)
        );
        assert_eq!(Route::of("/readyz"), Route::Ready);
        assert_eq!(Route::of("/healthz/ping"), Route::Live);
        assert_eq!(Route::of("/nothing/here"), Route::Unknown);
        assert_eq!(Route::of("/api/v1/a/b/c/d"), Route::Unknown);
    }

    #[test]
    fn queries_parse_with_their_errors() {
        let q = Query::parse(Some(
            "labelSelector=tier%20in%20(web%2Cdb)&fieldSelector=metadata.name%3Dw1&limit=10&resourceVersion=0&watch=true&index=node&indexValue=n-1",
        ))
        .unwrap();
        assert!(q.label_selector.is_some());
        assert_eq!(
            q.field_selector,
            [FieldTerm {
                field: Field::Name,
                equal: true,
                value: "w1".into()
            }]
        );
        assert_eq!(q.limit, Some(10));
        assert_eq!(q.resource_version.as_deref(), Some("0"));
        assert!(q.watch);
        assert_eq!(q.index, Some(("node".into(), "n-1".into())));

        let bad = |query: &str| Query::parse(Some(query)).unwrap_err();
        assert_eq!(bad("labelSelector=a%20in").code, 400);
        assert!(
            bad("fieldSelector=spec.x%3D1")
                .message
                .contains("field label not supported: spec.x")
        );
        assert!(bad("limit=-1").message.contains("limit"));
        assert!(
            bad("resourceVersionMatch=Exact")
                .message
                .contains("forbidden")
        );
        assert!(
            bad("resourceVersion=1&resourceVersionMatch=Newest")
                .message
                .contains("Unsupported")
        );
        assert!(bad("indexValue=x").message.contains("without index"));
        assert!(
            bad("continue=abc&resourceVersion=5")
                .message
                .contains("continue")
        );
    }

    #[test]
    fn field_terms_admit_by_name_and_namespace() {
        let terms = field_terms("metadata.namespace!=kube-system,metadata.name==a\\,b").unwrap();
        assert!(terms.iter().all(|t| t.admits(Some("shop"), Some("a,b"))));
        assert!(
            !terms
                .iter()
                .all(|t| t.admits(Some("kube-system"), Some("a,b")))
        );
        assert!(!terms.iter().all(|t| t.admits(Some("shop"), Some("a"))));
    }

    #[test]
    fn percent_decoding_keeps_what_is_malformed() {
        assert_eq!(percent_decode("a%3Db+c"), "a=b c");
        assert_eq!(percent_decode("100%"), "100%");
        assert_eq!(percent_decode("%zz%4"), "%zz%4");
        assert_eq!(percent_decode("%ff"), "\u{fffd}");
    }
}
