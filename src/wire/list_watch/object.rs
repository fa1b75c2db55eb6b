//! [`WireObject`]: an object of a watch event, decoded or as sent.

use std::borrow::Cow;
use std::fmt;
use std::ops::Range;
use std::sync::Arc;

use kube_core::DynamicObject;

use super::UndecodableObject;
use super::wire::{decode_object, describe};

/// The object of a [`WatchEvent`](super::WatchEvent): decoded, or the JSON
/// text the server sent, which the informer decodes — or, for a cache with
/// [compact storage](crate::cache::Storage::Compact), reads straight into
/// the compact form, with no [`DynamicObject`] in between.
///
/// [`ApiListWatch`](super::ApiListWatch) hands on JSON; a
/// [`ListWatch`](super::ListWatch) of one's own may hand on either
/// (`DynamicObject` converts with `.into()`). An object whose JSON does not
/// decode is not cached: the informer counts it in
/// [`ReflectorStats::skipped_objects`](crate::informer::ReflectorStats::skipped_objects),
/// as it does a [`WatchEvent::Skipped`](super::WatchEvent::Skipped).
///
/// ```
/// use kube_dynamic_informer::wire::WireObject;
///
/// let sent = WireObject::from_json(
///     r#"{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a","resourceVersion":"7"}}"#.into(),
/// );
/// assert_eq!(sent.resource_version().as_deref(), Some("7"));
/// let object = sent.decode().expect("decodes");
/// assert_eq!(object.metadata.name.as_deref(), Some("a"));
///
/// let odd = WireObject::from_json(r#"{"metadata":{"name":"b","labels":{"x":1}}}"#.into());
/// let why = odd.decode().unwrap_err();
/// assert_eq!(why.name.as_deref(), Some("b"));
/// ```
#[derive(Clone)]
pub struct WireObject(Form);

#[derive(Clone)]
// Moved a few times, not stored: boxing the decoded object would cost an
// allocation per event.
#[allow(clippy::large_enum_variant)]
enum Form {
    Decoded(DynamicObject),
    /// `text[range]` is the object's JSON (the range of the watch line or
    /// list response that holds it, so that the text is not copied).
    Json {
        text: Text,
        range: Range<usize>,
    },
}

/// The text an object's JSON is a range of.
#[derive(Clone)]
enum Text {
    /// A watch line, or the object's own JSON.
    Own(String),
    /// A list response, shared by the objects of its page.
    Shared(Arc<String>),
}

impl std::ops::Deref for Text {
    type Target = str;

    fn deref(&self) -> &str {
        match self {
            Text::Own(text) => text,
            Text::Shared(text) => text,
        }
    }
}

impl WireObject {
    /// An object as the JSON text of it (checked when it is decoded).
    #[must_use]
    pub fn from_json(json: String) -> Self {
        let range = 0..json.len();
        Self::within(json, range)
    }

    /// The object whose JSON is `text[range]` (a range of `text` on
    /// character boundaries; otherwise the object reads as empty JSON,
    /// which does not decode).
    pub(super) fn within(text: String, range: Range<usize>) -> Self {
        WireObject(Form::Json {
            text: Text::Own(text),
            range,
        })
    }

    /// [`within`](Self::within) a text that other objects are ranges of
    /// too (a list response).
    pub(super) fn within_shared(text: Arc<String>, range: Range<usize>) -> Self {
        WireObject(Form::Json {
            text: Text::Shared(text),
            range,
        })
    }

    /// The object's JSON text, when it has not been decoded.
    #[must_use]
    pub fn json(&self) -> Option<&str> {
        match &self.0 {
            Form::Decoded(_) => None,
            Form::Json { text, range } => text.get(range.clone()),
        }
    }

    /// The decoded object, when it was handed on decoded.
    #[must_use]
    pub fn decoded(&self) -> Option<&DynamicObject> {
        match &self.0 {
            Form::Decoded(object) => Some(object),
            Form::Json { .. } => None,
        }
    }

    /// The object, decoded now if it is JSON, objects up to
    /// [`MAX_OBJECT_DEPTH`](super::MAX_OBJECT_DEPTH) deep in full.
    ///
    /// # Errors
    /// What could be read of an object that does not decode, and why.
    pub fn decode(self) -> Result<DynamicObject, UndecodableObject> {
        match self.0 {
            Form::Decoded(object) => Ok(object),
            Form::Json { text, range } => {
                let json = text.get(range).unwrap_or_default();
                decode_object(json).map_err(|reason| describe(json, reason))
            }
        }
    }

    /// The object to change in place, decoded first if it is JSON.
    ///
    /// # Errors
    /// As [`decode`](Self::decode); the object is left as it was.
    pub fn object_mut(&mut self) -> Result<&mut DynamicObject, UndecodableObject> {
        if let Form::Json { text, range } = &self.0 {
            let json = text.get(range.clone()).unwrap_or_default();
            let object = decode_object(json).map_err(|reason| describe(json, reason))?;
            self.0 = Form::Decoded(object);
        }
        match &mut self.0 {
            Form::Decoded(object) => Ok(object),
            Form::Json { text, range } => Err(describe(
                text.get(range.clone()).unwrap_or_default(),
                "not decoded".into(),
            )),
        }
    }

    /// `metadata.resourceVersion`, read without decoding the rest of JSON.
    #[must_use]
    pub fn resource_version(&self) -> Option<Cow<'_, str>> {
        match &self.0 {
            Form::Decoded(object) => object.metadata.resource_version.as_deref().map(Cow::from),
            Form::Json { text, range } => describe(text.get(range.clone())?, String::new())
                .resource_version
                .map(Cow::from),
        }
    }
}

impl From<DynamicObject> for WireObject {
    fn from(object: DynamicObject) -> Self {
        WireObject(Form::Decoded(object))
    }
}

impl fmt::Debug for WireObject {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.0 {
            Form::Decoded(object) => f.debug_tuple("WireObject").field(object).finish(),
            Form::Json { text, range } => f
                .debug_tuple("WireObject")
                .field(&text.get(range.clone()).unwrap_or_default())
                .finish(),
        }
    }
}
