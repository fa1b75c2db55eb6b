//! Output formats of the CLI.

use std::sync::Arc;

use clap::ValueEnum;
use kube_core::DynamicObject;
use kube_dynamic_informer::index::{IndexFn, IndexInput};
use kube_dynamic_informer::informer::Event;
use serde_json::{Value, json};

/// How `get` prints objects.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// NAMESPACE, NAME, KIND, RESOURCEVERSION, CREATED columns.
    Table,
    /// A JSON list.
    Json,
    /// A YAML list.
    Yaml,
    /// `namespace/name` per line.
    Name,
}

/// Whether an object is a core Secret, whose values are not printed unless
/// asked for.
fn is_secret(o: &DynamicObject) -> bool {
    o.types
        .as_ref()
        .is_some_and(|t| t.kind == "Secret" && t.api_version == "v1")
}

/// The object as JSON, with Secret `data` and `stringData` values replaced
/// by a note of their size unless `show_secrets`.
pub fn redact(o: &DynamicObject, show_secrets: bool) -> Value {
    let mut value = serde_json::to_value(o).unwrap_or(Value::Null);
    if show_secrets || !is_secret(o) {
        return value;
    }
    for field in ["data", "stringData"] {
        if let Some(Value::Object(map)) = value.get_mut(field) {
            for v in map.values_mut() {
                let len = v.as_str().map_or(0, str::len);
                *v = Value::String(format!("<redacted: {len} bytes; --show-secrets prints it>"));
            }
        }
    }
    value
}

/// One JSON line for an event.
pub fn event_line(
    informer: &str,
    resource: &str,
    event: &Event,
    with_object: bool,
    show_secrets: bool,
    indexes: &Arc<Vec<(String, IndexFn)>>,
) -> String {
    let o = event.object();
    let key = match (&o.metadata.namespace, &o.metadata.name) {
        (Some(ns), Some(n)) if !ns.is_empty() => format!("{ns}/{n}"),
        (_, Some(n)) => n.clone(),
        _ => String::new(),
    };
    let mut line = json!({
        "type": event.kind(),
        "informer": informer,
        "resource": resource,
        "key": key,
        "resourceVersion": o.metadata.resource_version,
    });
    match event {
        Event::Add {
            in_initial_list, ..
        } => line["initial"] = json!(in_initial_list),
        Event::Delete {
            final_state_unknown,
            ..
        } => line["finalStateUnknown"] = json!(final_state_unknown),
        Event::Update { .. } => {}
    }
    if !indexes.is_empty() {
        let input = IndexInput::new(o);
        let mut values = serde_json::Map::new();
        for (name, func) in indexes.iter() {
            let v = match func.evaluate(name, &input) {
                Ok(values) => json!(values),
                Err(e) => json!({ "error": e.to_string() }),
            };
            values.insert(name.clone(), v);
        }
        line["indexValues"] = Value::Object(values);
    }
    if with_object {
        line["object"] = redact(o, show_secrets);
    }
    line.to_string()
}

/// Prints objects (already redacted JSON) in `format`.
pub fn print_objects(objects: &[Value], format: Format) -> Result<(), String> {
    match format {
        Format::Json => {
            println!(
                "{}",
                serde_json::to_string_pretty(objects).map_err(|e| e.to_string())?
            );
        }
        Format::Yaml => {
            print!(
                "{}",
                serde_yaml_ng::to_string(objects).map_err(|e| e.to_string())?
            );
        }
        Format::Name => {
            for o in objects {
                println!("{}", namespaced_name(o));
            }
        }
        Format::Table => {
            let rows: Vec<[String; 5]> = objects
                .iter()
                .map(|o| {
                    let meta = &o["metadata"];
                    [
                        meta["namespace"].as_str().unwrap_or("").to_string(),
                        meta["name"].as_str().unwrap_or("").to_string(),
                        o["kind"].as_str().unwrap_or("").to_string(),
                        meta["resourceVersion"].as_str().unwrap_or("").to_string(),
                        meta["creationTimestamp"].as_str().unwrap_or("").to_string(),
                    ]
                })
                .collect();
            print_table(
                &["NAMESPACE", "NAME", "KIND", "RESOURCEVERSION", "CREATED"],
                &rows,
            );
        }
    }
    Ok(())
}

fn namespaced_name(o: &Value) -> String {
    let meta = &o["metadata"];
    match (meta["namespace"].as_str(), meta["name"].as_str()) {
        (Some(ns), Some(n)) if !ns.is_empty() => format!("{ns}/{n}"),
        (_, Some(n)) => n.to_string(),
        _ => String::new(),
    }
}

/// Prints rows under a header, columns padded to their widest cell.
pub fn print_table<const N: usize>(header: &[&str; N], rows: &[[String; N]]) {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == N {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}   "));
            }
        }
        println!("{}", s.trim_end());
    };
    line(header.to_vec());
    for row in rows {
        line(row.iter().map(String::as_str).collect());
    }
}
