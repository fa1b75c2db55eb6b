//! Output formats of the CLI.

use std::io::{self, Write};
use std::sync::Arc;

use clap::ValueEnum;
use kube_dynamic_informer::cache::{CachedObject, Redaction};
use kube_dynamic_informer::cache::{IndexFn, IndexInput};
use kube_dynamic_informer::declarative::InformerSet;
use kube_dynamic_informer::informer::Event;
use serde::Serialize;
use serde_json::{Value, json};

use crate::exit::Failure;
use crate::stderr::Stderr;

/// How `get` prints objects.
#[derive(Clone, Copy, Debug, ValueEnum)]
pub enum Format {
    /// NAMESPACE, NAME, KIND, RESOURCEVERSION, CREATED columns.
    Table,
    /// A JSON list.
    Json,
    /// A YAML list.
    Yaml,
    /// `namespace/name` per line; with several resources (or a pattern),
    /// kubectl's lowercase kind and group before it:
    /// `configmap/team-a/settings`, `deployment.apps/team-a/web`.
    Name,
}

/// Where the objects printed come from: what tells them apart besides
/// their namespace and name.
#[derive(Clone, Copy, Debug)]
pub struct Origin {
    /// Several clusters: each row's cluster is printed.
    pub clustered: bool,
    /// Several resources (or a pattern, which may match several): names
    /// say which resource each object is of.
    pub several_resources: bool,
}

impl Origin {
    /// The origin of the objects of `set`'s informers, in one cluster or
    /// (`clustered`) several.
    pub fn of(set: &InformerSet, clustered: bool) -> Self {
        Origin {
            clustered,
            several_resources: set.informers.len() + set.patterns.len() > 1
                || !set.patterns.is_empty(),
        }
    }
}

/// A cached object as printed: read in place when nothing is redacted,
/// else as JSON with what must not be printed replaced.
pub fn printable(redaction: Redaction, o: CachedObject) -> Printable {
    match redaction {
        Redaction::None => Printable::Cached(o),
        _ => Printable::Json(redaction.object(&o)),
    }
}

/// One JSON line for an event.
pub fn event_line(
    informer: &str,
    resource: &str,
    event: &Event,
    with_object: bool,
    redaction: Redaction,
    indexes: &Arc<Vec<(String, IndexFn)>>,
) -> String {
    let o = event.object();
    let key = o.key().unwrap_or_default();
    let mut line = json!({
        "type": event.kind(),
        "informer": informer,
        "resource": resource,
        "key": key,
        "resourceVersion": o.resource_version(),
    });
    match event {
        Event::Add {
            in_initial_list,
            entered_shard,
            entered_filter,
            ..
        } => {
            line["initial"] = json!(in_initial_list);
            if *entered_shard {
                line["enteredShard"] = json!(true);
            }
            if *entered_filter {
                line["enteredFilter"] = json!(true);
            }
        }
        Event::Delete {
            final_state_unknown,
            left_shard,
            left_filter,
            ..
        } => {
            line["finalStateUnknown"] = json!(final_state_unknown);
            if *left_shard {
                line["leftShard"] = json!(true);
            }
            if *left_filter {
                line["leftFilter"] = json!(true);
            }
        }
        Event::Update { .. } => {}
    }
    if !indexes.is_empty() {
        let decoded = o.object();
        let input = IndexInput::new(&decoded);
        let mut values = serde_json::Map::new();
        for (name, func) in indexes.iter() {
            let v = match func.evaluate(name, &input) {
                Ok(values) => json!(redaction.index_values(values)),
                // An evaluation error may quote the value it failed on.
                Err(_) if redaction != Redaction::None => {
                    json!({ "error": "the expression failed on this object (details redacted)" })
                }
                Err(e) => json!({ "error": e.to_string() }),
            };
            values.insert(name.clone(), v);
        }
        line["indexValues"] = Value::Object(values);
    }
    if with_object {
        line["object"] = redaction.object(o);
    }
    line.to_string()
}

/// An object to print: as the cache holds it, or redacted JSON.
pub enum Printable {
    /// Written straight from the cache, never decoded.
    Cached(CachedObject),
    /// Built for printing (redacted).
    Json(Value),
}

impl Printable {
    /// The string at a JSON pointer, or `""`.
    pub fn text(&self, pointer: &str) -> String {
        let found = match self {
            Printable::Cached(o) => o.pointer(pointer).map(|v| v.to_value()),
            Printable::Json(v) => v.pointer(pointer).cloned(),
        };
        match found {
            Some(Value::String(s)) => s,
            _ => String::new(),
        }
    }

    /// Its type as kubectl's `-o name` writes it: the kind in lowercase,
    /// and `.group` outside the core group (`configmap`,
    /// `deployment.apps`).
    pub fn kubectl_type(&self) -> String {
        let kind = self.text("/kind").to_lowercase();
        let kind = if kind.is_empty() {
            "<unknown>".to_owned()
        } else {
            kind
        };
        match self.text("/apiVersion").split_once('/') {
            Some((group, _)) if !group.is_empty() => format!("{kind}.{group}"),
            _ => kind,
        }
    }

    /// `namespace` and `name`, to sort by.
    pub fn sort_key(&self) -> (String, String) {
        (
            self.text("/metadata/namespace"),
            self.text("/metadata/name"),
        )
    }
}

impl Serialize for Printable {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            Printable::Cached(o) => o.serialize(s),
            Printable::Json(v) => v.serialize(s),
        }
    }
}

/// Where the columns of an object's table row come from.
const COLUMNS: [&str; 5] = [
    "/metadata/namespace",
    "/metadata/name",
    "/kind",
    "/metadata/resourceVersion",
    "/metadata/creationTimestamp",
];

/// Writes objects in `format`. Objects of a cluster set
/// ([`Origin::clustered`]) are printed with the cluster of each row: a
/// column of tables, a prefix of names, a field next to the object in JSON
/// and YAML; objects of several resources with their type before their
/// names.
pub fn print_objects(
    out: &mut dyn Write,
    rows: &[(String, Printable)],
    origin: Origin,
    format: Format,
) -> io::Result<()> {
    let clustered = origin.clustered;
    match format {
        Format::Json | Format::Yaml if clustered => {
            let items: Vec<Value> = rows
                .iter()
                .map(|(c, o)| json!({ "cluster": c, "object": o }))
                .collect();
            write_list(out, &items, format)?;
        }
        Format::Json | Format::Yaml => {
            let objects: Vec<&Printable> = rows.iter().map(|(_, o)| o).collect();
            write_list(out, &objects, format)?;
        }
        Format::Name => {
            for (cluster, o) in rows {
                let mut name = namespaced_name(o);
                if origin.several_resources {
                    name = format!("{}/{name}", o.kubectl_type());
                }
                if clustered {
                    name = format!("{cluster}/{name}");
                }
                writeln!(out, "{name}")?;
            }
        }
        Format::Table => {
            let mut header = vec!["NAMESPACE", "NAME", "KIND", "RESOURCEVERSION", "CREATED"];
            if clustered {
                header.insert(0, "CLUSTER");
            }
            let table: Vec<Vec<String>> = rows
                .iter()
                .map(|(cluster, o)| {
                    let cells = COLUMNS.iter().map(|p| o.text(p));
                    clustered
                        .then(|| cluster.clone())
                        .into_iter()
                        .chain(cells)
                        .collect()
                })
                .collect();
            print_table(out, &header, &table)?;
        }
    }
    out.flush()
}

/// A list as pretty JSON or as YAML.
fn write_list(out: &mut dyn Write, items: &[impl Serialize], format: Format) -> io::Result<()> {
    if matches!(format, Format::Json) {
        serde_json::to_writer_pretty(&mut *out, items)?;
        writeln!(out)
    } else {
        out.write_all(yaml(items).map_err(io::Error::other)?.as_bytes())
    }
}

/// Objects as a YAML list. Strings that a YAML 1.1 reader (kubectl's, PyYAML)
/// would take for a boolean, a number or null, such as `yes`, `on`, `0123`
/// or `~`, are quoted, as are those YAML 1.2 reads that way.
fn yaml(objects: &[impl Serialize]) -> Result<String, String> {
    serde_saphyr::to_string(&objects).map_err(|e| e.to_string())
}

fn namespaced_name(o: &Printable) -> String {
    match (o.text("/metadata/namespace"), o.text("/metadata/name")) {
        (ns, n) if !ns.is_empty() => format!("{ns}/{n}"),
        (_, n) => n,
    }
}

/// Writes rows under a header, columns padded to their widest cell.
pub fn print_table(out: &mut dyn Write, header: &[&str], rows: &[Vec<String>]) -> io::Result<()> {
    let mut widths: Vec<usize> = header.iter().map(|h| h.len()).collect();
    for row in rows {
        for (w, cell) in widths.iter_mut().zip(row) {
            *w = (*w).max(cell.chars().count());
        }
    }
    let mut line = |cells: Vec<&str>| {
        let mut s = String::new();
        for (i, (cell, w)) in cells.iter().zip(&widths).enumerate() {
            if i + 1 == header.len() {
                s.push_str(cell);
            } else {
                s.push_str(&format!("{cell:<w$}   "));
            }
        }
        writeln!(out, "{}", s.trim_end())
    };
    line(header.to_vec())?;
    for row in rows {
        line(row.iter().map(String::as_str).collect())?;
    }
    Ok(())
}

/// Writes a line to stdout; a closed stdout ends the command quietly
/// (`kdi get | head -1`), any other error is a failure.
pub fn print_line(line: impl std::fmt::Display) -> Result<(), Failure> {
    written(writeln!(io::stdout().lock(), "{line}"))
}

/// What writing stdout came to: done, or closed by its reader (a success:
/// `head` took what it wanted), or a failure.
pub fn written(result: io::Result<()>) -> Result<(), Failure> {
    match result {
        Err(e) if e.kind() != io::ErrorKind::BrokenPipe => Err(Failure::output(e)),
        _ => Ok(()),
    }
}

/// Writes a line to stderr, as [`Stderr::say`] does for the process's.
pub fn say(line: impl std::fmt::Display) {
    Stderr::process().say(line);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Strings that YAML 1.2 or YAML 1.1 reads as something else when they
    /// are not quoted.
    const LOOKALIKES: &[&str] = &[
        "0123",
        "123",
        "-1",
        "+1",
        "1e3",
        "1.5",
        ".5",
        "1_000",
        "0x1F",
        "0o17",
        "0b101",
        ".inf",
        "-.Inf",
        ".NaN",
        "true",
        "False",
        "TRUE",
        "null",
        "Null",
        "~",
        "",
        "yes",
        "No",
        "on",
        "OFF",
        "y",
        "n",
        "1:20",
        "2001-12-14",
    ];

    #[test]
    fn yaml_output_reads_back_as_the_same_json() {
        let lookalikes: serde_json::Map<String, Value> = LOOKALIKES
            .iter()
            .enumerate()
            .map(|(i, s)| (format!("k{i}"), json!(s)))
            .collect();
        let objects = vec![
            json!({
                "apiVersion": "v1",
                "kind": "ConfigMap",
                "metadata": {
                    "name": "odd",
                    "namespace": "default",
                    "labels": { "app.kubernetes.io/name": "0123", "on": "yes", "true": "null" },
                    "annotations": {
                        "kubectl.kubernetes.io/last-applied-configuration": "{\"a\":1}\n",
                    },
                },
                "data": {
                    "lookalikes": lookalikes,
                    "lines": "first\nsecond\n",
                    "no final break": "a\n\nb",
                    "kept breaks": "end\n\n\n",
                    "leading break": "\nafter",
                    "indented": "  two spaces\nnone",
                    "crlf": "a\r\nb",
                    "tab": "a\tb",
                    "trailing space": "x ",
                    "leading space": " x",
                    "indicators": ["- a", "? b", ": c", "# d", "&e", "*f", "!g", "%h", "@i", "`j", "{k}", "[l]", "'", "\"", "a: b", "a #b", "---", "..."],
                    "unicode": "héllo, 世界, 😀, עברית, zero\u{200b}width",
                    "controls": "nul\u{0}bel\u{7}esc\u{1b}del\u{7f}",
                    "breaks": "nel\u{85}ls\u{2028}ps\u{2029}bom\u{feff}",
                    "long": "word ".repeat(60),
                    "": "empty key",
                },
                "numbers": [0, -1, 1.5, 0.1, 1e-7, 1e300, i64::MIN, u64::MAX],
                "other": { "null": null, "false": false, "empty map": {}, "empty list": [], "nested": [[1, [2]], { "k": [{}] }] },
            }),
            json!({ "apiVersion": "v1", "kind": "Secret", "metadata": { "name": "s" }, "data": { "k": "<redacted: 3 bytes; --show-secrets prints it>" } }),
        ];
        let text = yaml(&objects).unwrap();
        let back: Vec<Value> = serde_saphyr::from_str(&text).unwrap();
        assert_eq!(back, objects, "{text}");

        let empty = yaml(&[] as &[Value]).unwrap();
        assert_eq!(
            serde_saphyr::from_str::<Vec<Value>>(&empty).unwrap(),
            Vec::<Value>::new()
        );
    }

    #[test]
    fn strings_that_read_as_other_types_are_quoted() {
        for s in LOOKALIKES {
            let text = yaml(&[json!({ "v": s })]).unwrap();
            assert!(
                !text.contains(&format!("v: {s}\n")),
                "{s:?} printed plain:\n{text}"
            );
        }
    }
}
