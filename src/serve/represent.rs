//! How the objects of an answer are written, in the form the client
//! negotiated ([`Accepted`]): themselves (redacted as served), a `Table`,
//! or their metadata (`PartialObjectMetadata`, `PartialObjectMetadataList`).

use serde_json::{Value, json};

use crate::cache::{CachedObject, Redaction};

use super::ServedResource;
use super::negotiate::{Accepted, MetaVersion};
use super::request::Query;
use super::status::Refusal;
use super::table::{IncludeObject, Tabulator};

/// The form of an answer's objects.
pub(super) enum Representation {
    /// The objects themselves.
    Objects,
    /// A `Table` of them.
    Table(Tabulator),
    /// Their metadata: `PartialObjectMetadataList` for a list,
    /// `PartialObjectMetadata` for one object or a watch's events.
    Metadata(MetaVersion),
}

/// What a list says of itself: its resourceVersion and, for a page that
/// is not the last, the continue token and how many objects follow.
pub(super) struct ListHead<'a> {
    pub(super) resource_version: &'a str,
    pub(super) more: Option<(String, usize)>,
}

impl ListHead<'_> {
    fn metadata(&self) -> Value {
        let mut metadata = json!({ "resourceVersion": self.resource_version });
        if let Some((token, remaining)) = &self.more {
            metadata["continue"] = token.as_str().into();
            metadata["remainingItemCount"] = (*remaining).into();
        }
        metadata
    }
}

impl Representation {
    /// The form of the answer to a request of `served` (a `list`, or one
    /// object or a watch's events): what `accepted` asks for, with the
    /// resource's printer for a table.
    ///
    /// # Errors
    /// 406 `NotAcceptable` for `PartialObjectMetadata` of a list or
    /// `PartialObjectMetadataList` of anything else, 400 `BadRequest` for
    /// an `includeObject` that is not one.
    pub(super) async fn of(
        accepted: Accepted,
        query: &Query,
        served: &ServedResource,
        list: bool,
    ) -> Result<Representation, Refusal> {
        match accepted {
            Accepted::Objects => Ok(Representation::Objects),
            Accepted::Table(version) => {
                let include = IncludeObject::parse(query.include_object.as_deref())?;
                Ok(Representation::Table(Tabulator {
                    version,
                    include,
                    printer: served.columns.printer().await,
                }))
            }
            Accepted::Metadata {
                version,
                list: wanted,
            } => match (wanted, list) {
                (true, true) | (false, false) => Ok(Representation::Metadata(version)),
                (false, true) => Err(Refusal::not_acceptable(format!(
                    "you requested PartialObjectMetadata, but the requested object is a list ({})",
                    served.list_kind()
                ))),
                (true, false) => Err(Refusal::not_acceptable(format!(
                    "you requested PartialObjectMetadataList, but the requested object is not a list ({})",
                    served.known.kind
                ))),
            },
        }
    }

    /// The JSON of one object (a get).
    pub(super) fn object(
        &self,
        served: &ServedResource,
        object: &CachedObject,
    ) -> Result<Vec<u8>, Refusal> {
        let shown = match self {
            Representation::Objects => {
                let mut out = Vec::with_capacity(2048);
                write_object(served.redaction, object, &mut out)?;
                return Ok(out);
            }
            Representation::Table(tabulator) => {
                let shown = shown_object(served.redaction, object);
                let metadata = json!({ "resourceVersion": object.resource_version() });
                tabulator.table(metadata, [&shown], true)
            }
            Representation::Metadata(version) => {
                version.partial(&shown_object(served.redaction, object))
            }
        };
        Ok(shown.to_string().into_bytes())
    }

    /// The JSON of a list (or one page of it) of `objects`.
    pub(super) fn list(
        &self,
        served: &ServedResource,
        head: &ListHead<'_>,
        objects: &[CachedObject],
    ) -> Vec<u8> {
        let shown = |o: &CachedObject| shown_object(served.redaction, o);
        let list = match self {
            Representation::Objects => return write_list(served, head, objects),
            Representation::Table(tabulator) => {
                let shown: Vec<Value> = objects.iter().map(shown).collect();
                tabulator.table(head.metadata(), &shown, true)
            }
            Representation::Metadata(version) => {
                let items: Vec<Value> =
                    objects.iter().map(|o| version.partial(&shown(o))).collect();
                json!({
                    "kind": "PartialObjectMetadataList",
                    "apiVersion": version.api_version(),
                    "metadata": head.metadata(),
                    "items": items,
                })
            }
        };
        list.to_string().into_bytes()
    }

    /// A watch event's object (as served) in this form; `headers` says
    /// whether a table carries its column definitions (the watch's first
    /// event only, as from the API server). `None` for the objects
    /// themselves, which the watch writes as they are.
    pub(super) fn event_object(&self, shown: &Value, headers: bool) -> Option<Value> {
        match self {
            Representation::Objects => None,
            Representation::Table(tabulator) => {
                let metadata =
                    json!({ "resourceVersion": shown.pointer("/metadata/resourceVersion") });
                Some(tabulator.table(metadata, [shown], headers))
            }
            Representation::Metadata(version) => Some(version.partial(shown)),
        }
    }

    /// A bookmark's object (`kind`, `apiVersion` and `metadata` of the
    /// resource) in this form.
    pub(super) fn bookmark_object(&self, bookmark: Value, headers: bool) -> Value {
        match self {
            Representation::Objects => bookmark,
            Representation::Table(tabulator) => tabulator.bookmark(&bookmark, headers),
            Representation::Metadata(version) => version.partial(&bookmark),
        }
    }
}

/// The list's JSON, written object by object: its kind, resourceVersion,
/// continue token and the number of objects after this page.
fn write_list(served: &ServedResource, head: &ListHead<'_>, objects: &[CachedObject]) -> Vec<u8> {
    let mut out = Vec::with_capacity(256 + objects.len() * 2048);
    let head = json!({
        "kind": served.list_kind(),
        "apiVersion": served.known.key().api_version(),
        "metadata": head.metadata(),
    });
    let head = head.to_string();
    // `{"apiVersion":..,"kind":..,"metadata":{..}` then the items.
    out.extend_from_slice(&head.as_bytes()[..head.len() - 1]);
    out.extend_from_slice(b",\"items\":[");
    let mut first = true;
    for object in objects {
        let mark = out.len();
        if !first {
            out.push(b',');
        }
        if write_object(served.redaction, object, &mut out).is_ok() {
            first = false;
        } else {
            out.truncate(mark);
        }
    }
    out.extend_from_slice(b"]}");
    out
}

/// Appends `object`'s JSON, redacted as `redaction` says.
pub(super) fn write_object(
    redaction: Redaction,
    object: &CachedObject,
    out: &mut Vec<u8>,
) -> Result<(), Refusal> {
    let failed = |e: serde_json::Error| {
        Refusal::internal(format!("writing {}: {e}", object.key().unwrap_or_default()))
    };
    if redaction == Redaction::None {
        return object.write_json(out).map_err(failed);
    }
    serde_json::to_writer(&mut *out, &shown(redaction, &*object.object())).map_err(failed)
}

/// A cached object as served, as JSON to read.
pub(super) fn shown_object(redaction: Redaction, object: &CachedObject) -> Value {
    shown(redaction, &*object.object())
}

/// `object` as `redaction` shows it, in the types of the API: a Secret's
/// `data` holds base64, so each redacted value (`<redacted: 7 bytes>`, as
/// `kdi get` prints it) is sent base64-encoded, and a client that decodes
/// the Secret reads that note.
pub(super) fn shown(redaction: Redaction, object: &impl serde::Serialize) -> Value {
    use base64::Engine as _;
    let mut shown = redaction.object(object);
    if redaction == Redaction::SecretData
        && let Some(data) = shown.get_mut("data").and_then(Value::as_object_mut)
    {
        for value in data.values_mut() {
            if let Some(note) = value.as_str() {
                *value = base64::engine::general_purpose::STANDARD
                    .encode(note)
                    .into();
            }
        }
    }
    shown
}
