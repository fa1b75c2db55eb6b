//! Tables (`meta.k8s.io/v1` `Table`), which `kubectl get` asks for: the
//! columns the API server would print for a resource and each object's
//! cells, computed from the cache as the API server computes them.
//!
//! Which columns a resource has ([`Columns`]): a CRD's
//! `additionalPrinterColumns` of the served version (read from the
//! CustomResourceDefinition, or given to the [`ServedResource`]); for the
//! common built-in kinds, the columns of the API server's own printers
//! (`builtin`); for anything else, the API server's default table (`Name`,
//! `Created At`). Cells are computed from the object as served, redacted:
//! what kdi does not show, no column shows either.
//!
//! [`ServedResource`]: super::ServedResource

mod builtin;
mod crd;
mod format;
mod jsonpath;
mod pod;

use std::sync::Arc;

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceColumnDefinition;
use k8s_openapi::jiff::Timestamp;
use kube_client::Client;
use serde_json::{Value, json};

use crate::vocabulary::resource::KnownResource;

use super::negotiate::MetaVersion;
use super::status::Refusal;

/// A column of a built-in kind's table, as the API server defines it.
#[derive(Clone, Copy, Debug)]
struct Column {
    name: &'static str,
    /// `string`, `integer`, `number`, `boolean` or `date`.
    kind: &'static str,
    format: &'static str,
    /// 0 for the columns always shown, 1 for those of `-o wide`.
    priority: u8,
    description: &'static str,
}

impl Column {
    /// Its `TableColumnDefinition`.
    fn definition(&self) -> Value {
        json!({
            "name": self.name,
            "type": self.kind,
            "format": self.format,
            "description": self.description,
            "priority": self.priority,
        })
    }
}

/// The cells of one object, and the row's conditions (a finished Pod's
/// `Completed`).
#[derive(Debug, PartialEq)]
struct Row {
    cells: Vec<Value>,
    conditions: Option<Value>,
}

impl Row {
    fn of(cells: Vec<Value>) -> Row {
        Row {
            cells,
            conditions: None,
        }
    }
}

/// A resource's columns and how an object fills them.
pub(super) struct Printer {
    /// The `columnDefinitions`.
    columns: Value,
    cells: Cells,
}

enum Cells {
    /// A built-in kind's printer.
    Builtin(fn(&Value, Timestamp) -> Row),
    /// A CRD's printer columns, after `Name`.
    Custom(Vec<crd::CustomColumn>),
    /// `Name` and `Created At`.
    Default,
}

impl Printer {
    /// The API server's default table: `Name`, and `Created At` (RFC
    /// 3339).
    fn default_table() -> Printer {
        let created_at = Column {
            name: "Created At",
            kind: "date",
            format: "",
            priority: 0,
            description: builtin::CREATION_TIMESTAMP,
        };
        Printer {
            columns: json!([builtin::NAME.definition(), created_at.definition()]),
            cells: Cells::Default,
        }
    }

    fn builtin(kind: &builtin::Kind) -> Printer {
        Printer {
            columns: kind.columns.iter().map(Column::definition).collect(),
            cells: Cells::Builtin(kind.cells),
        }
    }

    /// The row of `object` (as served) at `now`.
    fn row(&self, object: &Value, now: Timestamp) -> Row {
        match &self.cells {
            Cells::Builtin(cells) => cells(object, now),
            Cells::Custom(columns) => {
                let mut cells = Vec::with_capacity(columns.len() + 1);
                cells.push(builtin::text(object, "/metadata/name").into());
                cells.extend(columns.iter().map(|c| crd::cell(c, object, now)));
                Row::of(cells)
            }
            Cells::Default => Row::of(vec![
                builtin::text(object, "/metadata/name").into(),
                format::created_at(object.pointer("/metadata/creationTimestamp")).into(),
            ]),
        }
    }
}

/// Where a served resource's columns come from.
#[derive(Clone, Debug)]
pub(super) enum Columns {
    /// Known from the start: a built-in kind's, given ones, a default.
    Known(Arc<Printer>),
    /// A CRD's, read from the API server at the first table asked for.
    Crd(Arc<crd::CrdLookup>),
}

impl std::fmt::Debug for Printer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let names: Vec<&str> = self
            .columns
            .as_array()
            .into_iter()
            .flatten()
            .filter_map(|c| c["name"].as_str())
            .collect();
        f.debug_struct("Printer").field("columns", &names).finish()
    }
}

impl Columns {
    /// The columns of `resource` as far as they are known without reading
    /// its CRD: a built-in kind's table; for a resource a CRD defines
    /// (`custom`), the CRD's default columns (`Name`, `Age`); else the
    /// default table.
    pub(super) fn of(resource: &KnownResource, custom: Option<bool>) -> Columns {
        let printer = match builtin::kind(&resource.group, &resource.plural) {
            Some(kind) => Printer::builtin(kind),
            None if custom == Some(true) => crd::printer(&[]),
            None => Printer::default_table(),
        };
        Columns::Known(Arc::new(printer))
    }

    /// The columns of `resource`, its CRD's read through `client` at the
    /// first table asked for, unless it is a built-in kind or discovery
    /// says no CRD defines it (`custom` is `Some(false)`).
    pub(super) fn read(client: Client, resource: &KnownResource, custom: Option<bool>) -> Columns {
        let known = builtin::kind(&resource.group, &resource.plural).is_some();
        // The core group holds no custom resources.
        if known || custom == Some(false) || resource.group.is_empty() {
            return Columns::of(resource, custom);
        }
        Columns::Crd(Arc::new(crd::CrdLookup::new(client, resource)))
    }

    /// The printer of a CRD with `columns` (empty: `Name` and `Age`).
    pub(super) fn given(columns: &[CustomResourceColumnDefinition]) -> Columns {
        Columns::Known(Arc::new(crd::printer(columns)))
    }

    /// The printer, read first if it must be.
    pub(super) async fn printer(&self) -> Arc<Printer> {
        match self {
            Columns::Known(printer) => printer.clone(),
            Columns::Crd(lookup) => lookup.printer().await,
        }
    }
}

/// What each row's `object` holds (the `includeObject` parameter).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(super) enum IncludeObject {
    /// The object's metadata, as `PartialObjectMetadata` (the default).
    Metadata,
    /// The whole object, as served.
    Object,
    /// Nothing.
    None,
}

impl IncludeObject {
    /// `includeObject` as the query gives it.
    ///
    /// # Errors
    /// 400 `BadRequest` for another value, in the API server's words.
    pub(super) fn parse(value: Option<&str>) -> Result<IncludeObject, Refusal> {
        match value.unwrap_or_default() {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "Object" => Ok(IncludeObject::Object),
            "None" => Ok(IncludeObject::None),
            other => Err(Refusal::bad_request(format!(
                "Unable to convert to Table as requested: includeObject: Invalid value: {other:?}: must be 'Metadata', 'Object', 'None', or empty"
            ))),
        }
    }
}

/// How a request's tables are made: their version, what their rows hold,
/// and the resource's printer.
pub(super) struct Tabulator {
    pub(super) version: MetaVersion,
    pub(super) include: IncludeObject,
    pub(super) printer: Arc<Printer>,
}

impl Tabulator {
    /// A `Table` of `objects` (each as served) with `metadata`; without its
    /// column definitions (`null`) when `headers` is false, as the later
    /// events of a watch have them.
    pub(super) fn table<'a>(
        &self,
        metadata: Value,
        objects: impl IntoIterator<Item = &'a Value>,
        headers: bool,
    ) -> Value {
        let now = Timestamp::now();
        let rows: Vec<Value> = objects
            .into_iter()
            .map(|object| self.row(object, now))
            .collect();
        json!({
            "kind": "Table",
            "apiVersion": self.version.api_version(),
            "metadata": metadata,
            "columnDefinitions": if headers { self.printer.columns.clone() } else { Value::Null },
            "rows": rows,
        })
    }

    /// A bookmark's `Table`: one row of the (empty) object, holding its
    /// metadata whatever `includeObject` says, since that is where a
    /// bookmark's resourceVersion and annotations are.
    pub(super) fn bookmark(&self, object: &Value, headers: bool) -> Value {
        let metadata = json!({ "resourceVersion": object.pointer("/metadata/resourceVersion") });
        let mut table = self.table(metadata, [object], headers);
        if let Some(row) = table.pointer_mut("/rows/0") {
            row["object"] = self.version.partial(object);
        }
        table
    }

    fn row(&self, object: &Value, now: Timestamp) -> Value {
        let Row { cells, conditions } = self.printer.row(object, now);
        let mut row = serde_json::Map::new();
        row.insert("cells".into(), Value::Array(cells));
        if let Some(conditions) = conditions {
            row.insert("conditions".into(), conditions);
        }
        let included = match self.include {
            IncludeObject::Metadata => self.version.partial(object),
            IncludeObject::Object => object.clone(),
            IncludeObject::None => Value::Null,
        };
        row.insert("object".into(), included);
        Value::Object(row)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn resource(group: &str, plural: &str) -> KnownResource {
        KnownResource {
            group: group.into(),
            version: "v1".into(),
            plural: plural.into(),
            singular: String::new(),
            kind: "Thing".into(),
            short_names: Vec::new(),
            namespaced: true,
            preferred_version: true,
        }
    }

    fn column_names(columns: &Columns) -> Vec<String> {
        let Columns::Known(printer) = columns else {
            panic!("not known: {columns:?}");
        };
        printer
            .columns
            .as_array()
            .unwrap()
            .iter()
            .map(|c| c["name"].as_str().unwrap().to_owned())
            .collect()
    }

    #[test]
    fn each_resource_gets_the_columns_the_api_server_would_print() {
        assert_eq!(
            column_names(&Columns::of(&resource("", "configmaps"), Some(false))),
            ["Name", "Data", "Age"]
        );
        assert_eq!(
            column_names(&Columns::of(
                &resource("example.com", "widgets"),
                Some(true)
            )),
            ["Name", "Age"]
        );
        assert_eq!(
            column_names(&Columns::of(&resource("", "endpoints"), Some(false))),
            ["Name", "Created At"]
        );
        assert_eq!(
            column_names(&Columns::of(&resource("example.com", "widgets"), None)),
            ["Name", "Created At"]
        );
    }

    #[test]
    fn a_table_holds_what_include_object_asks_for() {
        let object = json!({
            "apiVersion": "v1", "kind": "ConfigMap",
            "metadata": { "name": "app", "resourceVersion": "7", "creationTimestamp": "2024-05-01T11:00:00Z" },
            "data": { "a": "1" },
        });
        let Columns::Known(printer) = Columns::of(&resource("", "configmaps"), Some(false)) else {
            unreachable!()
        };
        let tabulator = |include| Tabulator {
            version: MetaVersion::V1,
            include,
            printer: printer.clone(),
        };
        let table = tabulator(IncludeObject::Metadata).table(
            json!({ "resourceVersion": "9" }),
            [&object],
            true,
        );
        assert_eq!(table["kind"], "Table");
        assert_eq!(table["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(table["metadata"]["resourceVersion"], "9");
        assert_eq!(table["columnDefinitions"][1]["name"], "Data");
        assert_eq!(table["rows"][0]["cells"][0], "app");
        assert_eq!(table["rows"][0]["cells"][1], 1);
        assert_eq!(table["rows"][0]["object"]["kind"], "PartialObjectMetadata");
        assert_eq!(table["rows"][0]["object"]["metadata"]["name"], "app");
        let whole = tabulator(IncludeObject::Object).table(json!({}), [&object], false);
        assert_eq!(whole["rows"][0]["object"], object);
        assert_eq!(whole["columnDefinitions"], Value::Null);
        let none = tabulator(IncludeObject::None).table(json!({}), [&object], true);
        assert_eq!(none["rows"][0]["object"], Value::Null);
        assert!(
            IncludeObject::parse(Some("Bogus"))
                .unwrap_err()
                .message
                .contains("'Metadata', 'Object', 'None'")
        );
    }

    #[test]
    fn the_default_table_writes_when_each_object_was_created() {
        let printer = Printer::default_table();
        let object =
            json!({ "metadata": { "name": "e1", "creationTimestamp": "2024-05-01T11:00:00Z" } });
        let row = printer.row(&object, Timestamp::now());
        assert_eq!(row.cells, [json!("e1"), json!("2024-05-01T11:00:00Z")]);
    }
}
