//! A CRD's printer columns (`additionalPrinterColumns`): made into a
//! printer as the API server's CRD table convertor makes them, and read
//! from the CustomResourceDefinition the first time a table of its
//! resource is asked for.

use std::sync::Arc;
use std::time::{Duration, Instant};

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::{
    CustomResourceColumnDefinition, CustomResourceDefinition,
};
use k8s_openapi::jiff::Timestamp;
use kube_client::{Api, Client};
use serde_json::{Value, json};

use crate::vocabulary::resource::KnownResource;

use super::builtin::{CREATION_TIMESTAMP, NAME};
use super::format::{Time, human_duration, number_cell, parse_time, text};
use super::jsonpath::JsonPath;
use super::{Cells, Printer};

/// How long reading a CRD may take before a table is answered with the
/// CRD's default columns.
const READ_TIMEOUT: Duration = Duration::from_secs(5);

/// How long after a failed read (not a refusal) the CRD is read again.
const RETRY_AFTER: Duration = Duration::from_secs(30);

/// One printer column: where its value is and how it is typed.
pub(super) struct CustomColumn {
    /// `None` for a path this reader does not understand: empty cells.
    path: Option<JsonPath>,
    kind: String,
}

/// The printer of a CRD with `columns`: `Name`, then each column; a CRD
/// without any gets `Age`, as the API server gives it.
pub(super) fn printer(columns: &[CustomResourceColumnDefinition]) -> Printer {
    let age;
    let columns = if columns.is_empty() {
        age = [CustomResourceColumnDefinition {
            name: "Age".into(),
            type_: "date".into(),
            description: Some(CREATION_TIMESTAMP.into()),
            json_path: ".metadata.creationTimestamp".into(),
            ..CustomResourceColumnDefinition::default()
        }];
        &age[..]
    } else {
        columns
    };
    let mut definitions = vec![NAME.definition()];
    let mut custom = Vec::with_capacity(columns.len());
    for column in columns {
        let description = column
            .description
            .clone()
            .filter(|d| !d.is_empty())
            .unwrap_or_else(|| {
                format!(
                    "Custom resource definition column (in JSONPath format): {}",
                    column.json_path
                )
            });
        definitions.push(json!({
            "name": column.name,
            "type": column.type_,
            "format": column.format.clone().unwrap_or_default(),
            "description": description,
            "priority": column.priority.unwrap_or_default(),
        }));
        let path = match JsonPath::parse(&column.json_path) {
            Ok(path) => Some(path),
            Err(e) => {
                tracing::debug!(column = %column.name, error = %e, "a printer column kdi cannot evaluate: its cells stay empty");
                None
            }
        };
        custom.push(CustomColumn {
            path,
            kind: column.type_.clone(),
        });
    }
    Printer {
        columns: Value::Array(definitions),
        cells: Cells::Custom(custom),
    }
}

/// A column's cell for `object`, as the CRD table convertor types it:
/// `null` when the path finds nothing or a value of another type.
pub(super) fn cell(column: &CustomColumn, object: &Value, now: Timestamp) -> Value {
    let Some(value) = column.path.as_ref().and_then(|p| p.first(object)) else {
        return Value::Null;
    };
    match column.kind.as_str() {
        "string" => text(value).map_or(Value::Null, Value::from),
        "integer" => match value.as_i64() {
            Some(i) => i.into(),
            // Toward zero, as Go converts a float64 to an int64.
            None => value.as_f64().map_or(Value::Null, |f| (f as i64).into()),
        },
        "number" => value.as_f64().map_or(Value::Null, number_cell),
        "boolean" => value.as_bool().map_or(Value::Null, Value::from),
        "date" => match value.as_str().map(parse_time) {
            Some(Time::At(at)) => human_duration(now.duration_since(at)).into(),
            Some(Time::Zero) => "<unknown>".into(),
            Some(Time::Invalid) => "<invalid>".into(),
            None => Value::Null,
        },
        _ => Value::Null,
    }
}

/// A CRD's printer, read from the API server at the first table asked for
/// and kept; while it cannot be read, the CRD's default columns.
pub(crate) struct CrdLookup {
    client: Client,
    /// The CRD's name, `PLURAL.GROUP`.
    name: String,
    version: String,
    found: tokio::sync::Mutex<Option<Found>>,
}

struct Found {
    printer: Arc<Printer>,
    /// When to read the CRD again: after a failure that may pass.
    again: Option<Instant>,
}

impl std::fmt::Debug for CrdLookup {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CrdLookup")
            .field("crd", &self.name)
            .field("version", &self.version)
            .finish_non_exhaustive()
    }
}

impl CrdLookup {
    pub(super) fn new(client: Client, resource: &KnownResource) -> Self {
        CrdLookup {
            client,
            name: format!("{}.{}", resource.plural, resource.group),
            version: resource.version.clone(),
            found: tokio::sync::Mutex::new(None),
        }
    }

    /// The printer: read once, again after a failure that may pass.
    pub(super) async fn printer(&self) -> Arc<Printer> {
        let mut found = self.found.lock().await;
        if let Some(known) = found.as_ref()
            && known.again.is_none_or(|again| Instant::now() < again)
        {
            return known.printer.clone();
        }
        let read = self.read().await;
        let printer = read.printer.clone();
        *found = Some(read);
        printer
    }

    async fn read(&self) -> Found {
        let api: Api<CustomResourceDefinition> = Api::all(self.client.clone());
        let lasting = |printer: Printer| Found {
            printer: Arc::new(printer),
            again: None,
        };
        match tokio::time::timeout(READ_TIMEOUT, api.get_opt(&self.name)).await {
            Ok(Ok(Some(crd))) => {
                let columns = crd
                    .spec
                    .versions
                    .into_iter()
                    .find(|v| v.name == self.version)
                    .and_then(|v| v.additional_printer_columns)
                    .unwrap_or_default();
                lasting(printer(&columns))
            }
            // No CRD defines it (an aggregated API): the API server's
            // default table.
            Ok(Ok(None)) => lasting(Printer::default_table()),
            Ok(Err(kube_client::Error::Api(status))) if matches!(status.code, 401 | 403) => {
                tracing::debug!(crd = %self.name, error = %status, "kdi may not read the CRD: its tables show the default columns");
                lasting(printer(&[]))
            }
            Ok(Err(e)) => {
                tracing::debug!(crd = %self.name, error = %e, "reading the CRD's printer columns failed: default columns until it is read again");
                self.passing(printer(&[]))
            }
            Err(_) => {
                tracing::debug!(crd = %self.name, timeout = ?READ_TIMEOUT, "reading the CRD's printer columns timed out: default columns until it is read again");
                self.passing(printer(&[]))
            }
        }
    }

    fn passing(&self, printer: Printer) -> Found {
        Found {
            printer: Arc::new(printer),
            again: Some(Instant::now() + RETRY_AFTER),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn column(name: &str, kind: &str, path: &str) -> CustomResourceColumnDefinition {
        CustomResourceColumnDefinition {
            name: name.into(),
            type_: kind.into(),
            json_path: path.into(),
            ..CustomResourceColumnDefinition::default()
        }
    }

    fn cells(columns: &[CustomResourceColumnDefinition], object: &Value) -> Vec<Value> {
        let printer = printer(columns);
        let now = "2024-05-01T12:00:00Z".parse().unwrap();
        printer.row(object, now).cells
    }

    #[test]
    fn columns_are_named_typed_and_described_as_the_api_server_does() {
        let mut ready = column("Ready", "string", ".status.ready");
        ready.description = Some("whether it is ready".into());
        ready.priority = Some(1);
        ready.format = Some("int32".into());
        let printer = printer(&[column("Replicas", "integer", ".spec.replicas"), ready]);
        assert_eq!(printer.columns[0]["name"], "Name");
        assert_eq!(printer.columns[0]["format"], "name");
        assert_eq!(
            printer.columns[1],
            json!({
                "name": "Replicas", "type": "integer", "format": "",
                "description": "Custom resource definition column (in JSONPath format): .spec.replicas",
                "priority": 0,
            })
        );
        assert_eq!(printer.columns[2]["description"], "whether it is ready");
        assert_eq!(printer.columns[2]["priority"], 1);
        assert_eq!(printer.columns[2]["format"], "int32");
    }

    #[test]
    fn a_crd_without_columns_shows_name_and_age() {
        let printer = printer(&[]);
        let names: Vec<&Value> = printer
            .columns
            .as_array()
            .unwrap()
            .iter()
            .map(|c| &c["name"])
            .collect();
        assert_eq!(names, ["Name", "Age"]);
        assert_eq!(printer.columns[1]["type"], "date");
        let object =
            json!({ "metadata": { "name": "w1", "creationTimestamp": "2024-05-01T11:00:00Z" } });
        assert_eq!(cells(&[], &object), [json!("w1"), json!("60m")]);
    }

    #[test]
    fn cells_take_the_type_of_their_column() {
        let object = json!({
            "metadata": { "name": "g1" },
            "spec": { "i": 3, "f": -2.7, "s": "hello", "b": true, "m": { "k": "v" }, "d": "2024-05-01T11:00:00Z", "e": "" },
        });
        let columns = [
            column("S-Int", "string", ".spec.i"),
            column("S-Map", "string", ".spec.m"),
            column("I-Float", "integer", ".spec.f"),
            column("I-Str", "integer", ".spec.s"),
            column("N-Int", "number", ".spec.i"),
            column("B", "boolean", ".spec.b"),
            column("B-Str", "boolean", ".spec.s"),
            column("D", "date", ".spec.d"),
            column("D-Bad", "date", ".spec.s"),
            column("D-Empty", "date", ".spec.e"),
            column("D-Num", "date", ".spec.i"),
            column("Missing", "string", ".spec.nope"),
            column("Unreadable", "string", "spec["),
        ];
        assert_eq!(
            cells(&columns, &object),
            [
                json!("g1"),
                json!("3"),
                json!(r#"{"k":"v"}"#),
                json!(-2),
                Value::Null,
                json!(3),
                json!(true),
                Value::Null,
                json!("60m"),
                json!("<invalid>"),
                json!("<unknown>"),
                Value::Null,
                Value::Null,
                Value::Null,
            ]
        );
    }
}
