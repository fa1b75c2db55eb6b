//! Permission checks: may the client list and watch these resources in
//! these namespaces? Asked of the API server, before watching.
//!
//! The [layer docs](crate::factory) say more.

use std::fmt;

use futures::StreamExt;
use kube_client::Client;
use kube_client::api::{Api, PostParams};
use kube_core::{ApiResource, DynamicObject, GroupVersionKind};
use serde_json::json;

use crate::vocabulary::resource::ResourceKey;
use crate::vocabulary::scope::Namespaces;

/// How many reviews are asked at once.
const CONCURRENCY: usize = 8;

/// One question: may the client list and watch `resource` in `namespaces`?
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct AccessCheck {
    /// The resource; its version is not part of the question (permissions
    /// are per group and resource).
    pub resource: ResourceKey,
    /// Whether the resource is namespaced: a cluster-scoped one is asked
    /// about without a namespace whatever `namespaces` says.
    pub namespaced: bool,
    /// The namespaces the informer would watch.
    pub namespaces: Namespaces,
}

impl AccessCheck {
    /// A question about `resource`.
    #[must_use]
    pub fn new(resource: ResourceKey, namespaced: bool, namespaces: Namespaces) -> Self {
        Self {
            resource,
            namespaced,
            namespaces,
        }
    }

    /// The namespaces asked about: each one listed, or `None` for all
    /// namespaces (or a cluster-scoped resource).
    fn scopes(&self) -> Vec<Option<String>> {
        match &self.namespaces {
            Namespaces::Only(list) if self.namespaced => {
                list.iter().map(|n| Some(n.clone())).collect()
            }
            _ => vec![None],
        }
    }
}

/// The server's answer about one verb.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Verdict {
    /// Allowed.
    Allowed,
    /// Not allowed; the authorizer's reason when it gave one.
    Denied(String),
    /// The review itself failed (the server could not be asked, or
    /// answered with an error).
    Unknown(String),
}

impl Verdict {
    /// Whether the verb is allowed.
    #[must_use]
    pub fn is_allowed(&self) -> bool {
        matches!(self, Verdict::Allowed)
    }
}

impl fmt::Display for Verdict {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Verdict::Allowed => f.write_str("yes"),
            Verdict::Denied(_) => f.write_str("no"),
            Verdict::Unknown(_) => f.write_str("unknown"),
        }
    }
}

/// The answers for one resource in one namespace.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct AccessRow {
    /// The resource.
    pub resource: ResourceKey,
    /// The namespace, or `None` for all namespaces (or a cluster-scoped
    /// resource).
    pub namespace: Option<String>,
    /// May the client list?
    pub list: Verdict,
    /// May the client watch?
    pub watch: Verdict,
}

impl AccessRow {
    /// Whether both verbs are allowed.
    #[must_use]
    pub fn allowed(&self) -> bool {
        self.list.is_allowed() && self.watch.is_allowed()
    }

    /// The namespace as a table shows it: the name, or `*` for all
    /// namespaces (`-` is not used: a cluster-scoped resource is also `*`).
    #[must_use]
    pub fn namespace_label(&self) -> &str {
        self.namespace.as_deref().unwrap_or("*")
    }

    /// Why the row is not allowed, in a sentence; `None` when it is.
    #[must_use]
    pub fn denial(&self) -> Option<String> {
        let mut missing = Vec::new();
        for (verb, verdict) in [("list", &self.list), ("watch", &self.watch)] {
            match verdict {
                Verdict::Allowed => {}
                Verdict::Denied(why) if why.is_empty() => missing.push(format!("{verb} denied")),
                Verdict::Denied(why) => missing.push(format!("{verb} denied ({why})")),
                Verdict::Unknown(why) => missing.push(format!("{verb} unknown: {why}")),
            }
        }
        if missing.is_empty() {
            return None;
        }
        let place = match &self.namespace {
            Some(ns) => format!("in namespace {ns}"),
            None => "in all namespaces".to_string(),
        };
        Some(format!("{} {place}: {}", self.resource, missing.join(", ")))
    }
}

/// What may the client list and watch, for a set of [`AccessCheck`]s.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct AccessTable {
    /// One row per resource and namespace asked about, in the order of the
    /// checks.
    pub rows: Vec<AccessRow>,
}

/// What one check comes to.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Allowed {
    /// Everything asked for is allowed.
    All,
    /// Only these of the namespaces asked for (some, not all).
    Namespaces(Vec<String>),
    /// Nothing: the reasons, one per namespace.
    Nothing(String),
}

impl AccessTable {
    /// Asks the server about every check (`SelfSubjectAccessReview`s, a few
    /// at a time). A review that fails is a row with [`Verdict::Unknown`],
    /// not an error: the table says what could be learnt.
    pub async fn check(client: &Client, checks: &[AccessCheck]) -> AccessTable {
        let questions: Vec<(ResourceKey, Option<String>)> = checks
            .iter()
            .flat_map(|c| {
                c.scopes()
                    .into_iter()
                    .map(move |ns| (c.resource.clone(), ns))
            })
            .collect();
        let rows = futures::stream::iter(questions.into_iter().map(|(resource, namespace)| {
            let client = client.clone();
            async move {
                let (list, watch) = futures::join!(
                    review(&client, &resource, namespace.as_deref(), "list"),
                    review(&client, &resource, namespace.as_deref(), "watch"),
                );
                AccessRow {
                    resource,
                    namespace,
                    list,
                    watch,
                }
            }
        }))
        .buffered(CONCURRENCY)
        .collect()
        .await;
        AccessTable { rows }
    }

    /// What `check` comes to in this table: allowed everywhere, in some of
    /// its namespaces, or nowhere (with why).
    #[must_use]
    pub fn allowed(&self, check: &AccessCheck) -> Allowed {
        let rows: Vec<&AccessRow> = check
            .scopes()
            .into_iter()
            .filter_map(|ns| {
                self.rows
                    .iter()
                    .find(|r| r.resource == check.resource && r.namespace == ns)
            })
            .collect();
        if rows.is_empty() {
            return Allowed::Nothing(format!("{}: access was not checked", check.resource));
        }
        if rows.iter().all(|r| r.allowed()) {
            return Allowed::All;
        }
        let some: Vec<String> = rows
            .iter()
            .filter(|r| r.allowed())
            .filter_map(|r| r.namespace.clone())
            .collect();
        if some.is_empty() {
            let why: Vec<String> = rows.iter().filter_map(|r| r.denial()).collect();
            Allowed::Nothing(why.join("; "))
        } else {
            Allowed::Namespaces(some)
        }
    }

    /// The table as text: `RESOURCE NAMESPACE LIST WATCH`, aligned, one row
    /// per resource and namespace, with the reasons of denials after it.
    #[must_use]
    pub fn render(&self) -> String {
        let header = ["RESOURCE", "NAMESPACE", "LIST", "WATCH"];
        let cells: Vec<[String; 4]> = self
            .rows
            .iter()
            .map(|r| {
                [
                    r.resource.to_string(),
                    r.namespace_label().to_string(),
                    r.list.to_string(),
                    r.watch.to_string(),
                ]
            })
            .collect();
        let mut widths = header.map(str::len);
        for row in &cells {
            for (w, c) in widths.iter_mut().zip(row) {
                *w = (*w).max(c.len());
            }
        }
        let [w0, w1, w2, _] = widths;
        let line = |[resource, namespace, list, watch]: [&str; 4]| {
            format!("{resource:<w0$}  {namespace:<w1$}  {list:<w2$}  {watch}\n")
        };
        let mut out = line(header);
        for row in &cells {
            out.push_str(&line([&row[0], &row[1], &row[2], &row[3]]));
        }
        out
    }
}

/// One `SelfSubjectAccessReview`.
async fn review(
    client: &Client,
    resource: &ResourceKey,
    namespace: Option<&str>,
    verb: &str,
) -> Verdict {
    let gvk = GroupVersionKind::gvk("authorization.k8s.io", "v1", "SelfSubjectAccessReview");
    let ar = ApiResource::from_gvk_with_plural(&gvk, "selfsubjectaccessreviews");
    let api: Api<DynamicObject> = Api::all_with(client.clone(), &ar);
    let mut attributes = json!({
        "verb": verb,
        "group": resource.group,
        "resource": resource.resource,
    });
    if let Some(ns) = namespace {
        attributes["namespace"] = json!(ns);
    }
    let body = DynamicObject::new("", &ar).data(json!({
        "spec": { "resourceAttributes": attributes }
    }));
    match api.create(&PostParams::default(), &body).await {
        Ok(answer) => verdict(&answer.data["status"]),
        Err(e) => Verdict::Unknown(format!("SelfSubjectAccessReview failed: {e}")),
    }
}

/// The verdict a review's `status` gives.
pub(crate) fn verdict(status: &serde_json::Value) -> Verdict {
    let text = |field: &str| status[field].as_str().unwrap_or_default().to_owned();
    if status["allowed"].as_bool() == Some(true) {
        return Verdict::Allowed;
    }
    let error = text("evaluationError");
    let reason = text("reason");
    if status["denied"].as_bool() != Some(true) && reason.is_empty() && !error.is_empty() {
        return Verdict::Unknown(error);
    }
    Verdict::Denied(reason)
}

#[cfg(test)]
mod tests;
