//! What a get, list or watch answers with, as the client's `Accept` header
//! asks and as the API server negotiates it: the objects, a `Table`
//! (`kubectl get`), or their metadata (`PartialObjectMetadata`, client-go's
//! metadata informers). kdi writes JSON only: a client that accepts nothing
//! else (YAML, protobuf) gets 406 `NotAcceptable`.

use serde_json::{Value, json};

use super::status::Refusal;

/// The version of `meta.k8s.io` a `Table` or `PartialObjectMetadata` is
/// asked in.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum MetaVersion {
    V1,
    V1Beta1,
}

impl MetaVersion {
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`.
    pub(super) fn api_version(self) -> &'static str {
        match self {
            MetaVersion::V1 => "meta.k8s.io/v1",
            MetaVersion::V1Beta1 => "meta.k8s.io/v1beta1",
        }
    }

    /// `object` (as served) as `PartialObjectMetadata`: its metadata only.
    pub(super) fn partial(self, object: &Value) -> Value {
        json!({
            "kind": "PartialObjectMetadata",
            "apiVersion": self.api_version(),
            "metadata": object.get("metadata").cloned().unwrap_or_else(|| json!({})),
        })
    }
}

/// What the client accepts, of what kdi can write.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum Accepted {
    /// The objects themselves (`application/json`).
    Objects,
    /// `as=Table`.
    Table(MetaVersion),
    /// `as=PartialObjectMetadata` (`list: false`) or
    /// `as=PartialObjectMetadataList` (`list: true`).
    Metadata { version: MetaVersion, list: bool },
}

/// One media range of an `Accept` header, with its parameters.
#[derive(Debug)]
struct Clause<'h> {
    kind: &'h str,
    subtype: &'h str,
    quality: f32,
    params: Vec<(&'h str, &'h str)>,
}

impl Accepted {
    /// What `header` (the `Accept` header, if any) asks for. The clauses are
    /// tried from the highest quality on, the most specific first among
    /// equals (as the API server sorts them); the first that kdi can write
    /// wins.
    ///
    /// # Errors
    /// 406 `NotAcceptable` when no clause can be written.
    pub(super) fn of(header: Option<&str>) -> Result<Accepted, Refusal> {
        let Some(header) = header.filter(|h| !h.trim().is_empty()) else {
            return Ok(Accepted::Objects);
        };
        let mut clauses: Vec<Clause<'_>> = header.split(',').filter_map(Clause::parse).collect();
        // Stable: among equals, the order the client wrote.
        clauses.sort_by(|a, b| {
            b.quality
                .total_cmp(&a.quality)
                .then((a.kind == "*").cmp(&(b.kind == "*")))
                .then((a.subtype == "*").cmp(&(b.subtype == "*")))
        });
        clauses
            .iter()
            .filter(|c| c.quality > 0.0)
            .find_map(Clause::accepted)
            .ok_or_else(|| {
                Refusal::not_acceptable(format!(
                    "only the following media types are accepted: application/json (kdi serve writes JSON: the objects, a Table or PartialObjectMetadata; asked for {header:?})"
                ))
            })
    }
}

impl<'h> Clause<'h> {
    /// `type/subtype;key=value;...`, `None` when it is not a media range.
    fn parse(text: &'h str) -> Option<Clause<'h>> {
        let mut parts = text.split(';');
        let range = parts.next()?.trim();
        let (kind, subtype) = match range.split_once('/') {
            Some((kind, subtype)) => (kind.trim(), subtype.trim()),
            None if range == "*" => ("*", "*"),
            None => return None,
        };
        let mut quality = 1.0;
        let mut params = Vec::new();
        for param in parts {
            let (key, value) = param.split_once('=').unwrap_or((param, ""));
            let (key, value) = (key.trim(), value.trim());
            if key == "q" {
                quality = value.parse().unwrap_or(0.0);
            } else {
                params.push((key, value));
            }
        }
        Some(Clause {
            kind,
            subtype,
            quality,
            params,
        })
    }

    /// What this clause asks of kdi, if kdi can write it: JSON, with a
    /// conversion to a `meta.k8s.io` kind at most.
    fn accepted(&self) -> Option<Accepted> {
        let json = matches!(
            (self.kind, self.subtype),
            ("application", "json") | ("application", "*") | ("*", "*")
        );
        if !json {
            return None;
        }
        let (mut kind, mut group, mut version) = (None, None, None);
        for &(key, value) in &self.params {
            match key {
                "as" => kind = Some(value),
                "g" => group = Some(value),
                "v" => version = Some(value),
                // A watch's stream of events, the only stream there is.
                "stream" if !value.is_empty() && value != "watch" => return None,
                // A version of the server's own group: none is served.
                "sv" if !value.is_empty() => return None,
                _ => {}
            }
        }
        if kind.is_none() && group.is_none() && version.is_none() {
            return Some(Accepted::Objects);
        }
        let version = match (group, version) {
            (Some("meta.k8s.io"), Some("v1")) => MetaVersion::V1,
            (Some("meta.k8s.io"), Some("v1beta1")) => MetaVersion::V1Beta1,
            _ => return None,
        };
        match kind {
            Some("Table") => Some(Accepted::Table(version)),
            Some("PartialObjectMetadata") => Some(Accepted::Metadata {
                version,
                list: false,
            }),
            Some("PartialObjectMetadataList") => Some(Accepted::Metadata {
                version,
                list: true,
            }),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn accepted(header: &str) -> Accepted {
        Accepted::of(Some(header)).unwrap()
    }

    #[test]
    fn kubectl_get_is_answered_a_table() {
        assert_eq!(
            accepted(
                "application/json;as=Table;v=v1;g=meta.k8s.io,application/json;as=Table;v=v1beta1;g=meta.k8s.io,application/json"
            ),
            Accepted::Table(MetaVersion::V1)
        );
        assert_eq!(
            accepted("application/json;as=Table;v=v1beta1;g=meta.k8s.io"),
            Accepted::Table(MetaVersion::V1Beta1)
        );
    }

    #[test]
    fn plain_clients_get_the_objects() {
        assert_eq!(Accepted::of(None).unwrap(), Accepted::Objects);
        assert_eq!(Accepted::of(Some(" ")).unwrap(), Accepted::Objects);
        assert_eq!(accepted("application/json"), Accepted::Objects);
        assert_eq!(accepted("application/json, */*"), Accepted::Objects);
        assert_eq!(accepted("*/*"), Accepted::Objects);
        assert_eq!(accepted("application/json;stream=watch"), Accepted::Objects);
        // protobuf first, as client-go asks for built-in kinds: JSON next.
        assert_eq!(
            accepted("application/vnd.kubernetes.protobuf,application/json"),
            Accepted::Objects
        );
    }

    #[test]
    fn metadata_clients_get_partial_object_metadata() {
        assert_eq!(
            accepted(
                "application/vnd.kubernetes.protobuf;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json;as=PartialObjectMetadataList;g=meta.k8s.io;v=v1,application/json"
            ),
            Accepted::Metadata {
                version: MetaVersion::V1,
                list: true
            }
        );
        assert_eq!(
            accepted("application/json;as=PartialObjectMetadata;g=meta.k8s.io;v=v1"),
            Accepted::Metadata {
                version: MetaVersion::V1,
                list: false
            }
        );
    }

    #[test]
    fn quality_orders_the_clauses_and_zero_refuses() {
        assert_eq!(
            accepted("application/json;q=0.5,application/json;as=Table;g=meta.k8s.io;v=v1"),
            Accepted::Table(MetaVersion::V1)
        );
        assert_eq!(
            accepted("application/json;as=Table;g=meta.k8s.io;v=v1;q=0.1, application/json;q=0.9"),
            Accepted::Objects
        );
        // A wildcard ranks below a concrete type of the same quality.
        assert_eq!(
            accepted("*/*,application/json;as=Table;g=meta.k8s.io;v=v1"),
            Accepted::Table(MetaVersion::V1)
        );
        assert!(Accepted::of(Some("application/json;q=0")).is_err());
    }

    #[test]
    fn what_kdi_cannot_write_is_not_acceptable() {
        for header in [
            "application/yaml",
            "application/vnd.kubernetes.protobuf",
            "application/json;as=Table;g=meta.k8s.io;v=v2",
            "application/json;as=Table",
            "application/json;as=Foo;g=meta.k8s.io;v=v1",
            "application/json;stream=other",
            "text/plain",
            "garbage",
        ] {
            let refusal = Accepted::of(Some(header)).unwrap_err();
            assert_eq!(
                (refusal.code, refusal.reason),
                (406, "NotAcceptable"),
                "{header}"
            );
            assert!(refusal.message.contains("application/json"), "{header}");
        }
    }
}
