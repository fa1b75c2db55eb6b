//! The library is built in layers, each a folder of `src/`, and each
//! imports only the layers below it; inside a layer, modules import each
//! other without cycles.
//!
//! [`LAYERS`] declares the order, from the bottom up. A top-level module
//! (`src/foo.rs` with everything under `src/foo/`) is one layer; `src/lib.rs`
//! is the node `lib`, above them all. Inside a layer each submodule
//! (`src/foo/bar.rs` with everything under `src/foo/bar/`) is a node
//! `foo::bar`, and the layer's own `mod.rs` the node `foo`. An edge is a
//! `crate::foo` path (or a `crate::Name` that `lib.rs` re-exports from
//! `foo`) in code: comments, string literals, items marked `#[cfg(test)]` and
//! `tests.rs` files (with any `tests/` folder) do not count, since unit tests
//! may reach anywhere. `src/bin/` is the command-line tool, above the
//! library: it reaches the library through its public API only (the
//! compiler sees to that), and its own modules form no cycle either. A
//! failure names every offending edge with the names that make it.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// Module → module it uses → the names it uses there.
type Graph = BTreeMap<String, BTreeMap<String, BTreeSet<String>>>;

/// The layers of the library, from the bottom up: each may import the ones
/// before it, never one after it.
const LAYERS: &[&str] = &[
    "vocabulary",
    "wire",
    "cache",
    "informer",
    "factory",
    "declarative",
    "reconcile",
    "serve",
];

#[test]
fn src_modules_import_without_cycles() {
    let graph = crate_graph(&src_dir());
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "module cycles in src/:\n{}",
        report(&graph, &found)
    );
}

#[test]
fn each_layer_imports_only_the_layers_below_it() {
    let graph = graph_of_crate(&src_dir(), true);
    let upward = upward_edges(&graph, LAYERS);
    assert!(
        upward.is_empty(),
        "imports against the layer order:\n{upward}"
    );
}

#[test]
fn the_modules_inside_each_layer_import_without_cycles() {
    let graph = layer_module_graph(&src_dir());
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "module cycles inside the layers of src/:\n{}",
        report(&graph, &found)
    );
}

#[test]
fn the_command_line_modules_import_without_cycles() {
    let graph = bin_graph(&src_dir().join("bin/kdi"));
    assert!(graph.len() > 3, "kdi's modules were not read: {graph:?}");
    let found = cycles(&graph);
    assert!(
        found.is_empty(),
        "module cycles in src/bin/kdi:\n{}",
        report(&graph, &found)
    );
}

#[test]
fn an_upward_import_is_reported_with_its_names() {
    let graph = graph_of(&[
        ("lib", "factory", "InformerFactory"),
        ("factory", "cache", "Store"),
        ("cache", "factory", "FactoryError"),
        ("cache", "vocabulary", "ResourceKey"),
        ("vocabulary", "", ""),
    ]);
    assert_eq!(
        upward_edges(&graph, &["vocabulary", "cache", "factory"]),
        "cache (layer 2) uses factory (layer 3): FactoryError\n"
    );
    let unplaced = graph_of(&[("cache", "attic", "Old"), ("attic", "", "")]);
    assert_eq!(
        upward_edges(&unplaced, &["cache"]),
        "attic is in no layer: add it to LAYERS or move it into one\n"
    );
}

#[test]
fn every_layer_is_declared_in_lib_rs_and_in_the_layer_order() {
    let graph = crate_graph(&src_dir());
    let mut expected: BTreeSet<String> = LAYERS.iter().map(|l| l.to_string()).collect();
    expected.insert("lib".into());
    assert_eq!(graph.keys().cloned().collect::<BTreeSet<_>>(), expected);
}

#[test]
fn every_module_declared_in_lib_rs_is_a_node() {
    let src = src_dir();
    let lib = tokens(&code(&std::fs::read_to_string(src.join("lib.rs")).unwrap()));
    let mut declared: BTreeSet<String> = lib
        .windows(3)
        .filter_map(|w| match w {
            [Tok::Ident(m), Tok::Ident(name), Tok::Other(';')] if m == "mod" => Some(name.clone()),
            _ => None,
        })
        .collect();
    declared.insert("lib".into());
    let graph = crate_graph(&src);
    assert_eq!(graph.keys().cloned().collect::<BTreeSet<_>>(), declared);
    assert!(
        graph.values().any(|uses| !uses.is_empty()),
        "no module uses another: the scan missed the crate:: paths"
    );
}

#[test]
fn cycles_are_found_and_reported_with_the_names_on_each_edge() {
    let graph = graph_of(&[
        ("a", "b", "B"),
        ("b", "c", "C"),
        ("c", "a", "A1"),
        ("c", "a", "A2"),
        ("c", "d", "D"),
        ("d", "e", "E"),
        ("e", "d", "D"),
        ("f", "a", "A"),
        ("g", "h", "H"),
    ]);
    let found = cycles(&graph);
    assert_eq!(found, [vec!["a", "b", "c"], vec!["d", "e"]]);
    assert_eq!(
        report(&graph, &found),
        "cycle: a <-> b <-> c\n\
         \x20 a uses b: B\n\
         \x20 b uses c: C\n\
         \x20 c uses a: A1, A2\n\
         cycle: d <-> e\n\
         \x20 d uses e: E\n\
         \x20 e uses d: D\n"
    );
}

#[test]
fn a_graph_that_points_downward_has_no_cycle() {
    let graph = graph_of(&[("a", "b", "B"), ("a", "c", "C"), ("b", "c", "C")]);
    assert!(cycles(&graph).is_empty());
}

#[test]
fn paths_in_comments_strings_and_test_items_do_not_count() {
    let code = code(
        r####"
//! See [`crate::doc`].
use crate::a::{B, c::D, self};
use crate::{e::E, f};
/* crate::block /* nested crate::block */ */
fn g() -> char {
    let _ = "crate::string \" crate::escaped";
    let _ = r##"crate::raw "# crate::raw"##;
    let _ = b'{';
    let _ = crate::h::func::<u8>(1); // crate::trailing
    let _: &'static str = "";
    let _ = crate::i::Type { x: '{' };
    '}'
}
#[cfg(test)]
use crate::test_use;
#[cfg(test)]
fn helper() -> [u8; 2] { crate::test_fn::x(); [0; 2] }
#[cfg(test)]
mod tests {
    use crate::test_mod::X;
    fn f() { let _ = '{'; }
}
use crate::after::Tests;
use crate::Reexported;
"####,
    );
    let mut found = crate_paths(&code);
    found.sort();
    let expected: Vec<(String, String)> = [
        ("Reexported", "Reexported"),
        ("a", "B"),
        ("a", "a"),
        ("a", "c"),
        ("after", "Tests"),
        ("e", "E"),
        ("f", "f"),
        ("h", "func"),
        ("i", "Type"),
    ]
    .iter()
    .map(|(m, n)| (m.to_string(), n.to_string()))
    .collect();
    assert_eq!(found, expected);
}

#[test]
fn a_module_is_its_file_and_its_folder_and_bin_and_tests_files_are_left_out() {
    let dir = std::env::temp_dir().join(format!("kdi-architecture-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let files = [
        ("lib.rs", "mod a; mod b; mod c; pub use c::Root;"),
        ("a.rs", "use crate::b::FromA;"),
        ("a/inner.rs", "fn f() { crate::Root::new(); }"),
        ("a/tests.rs", "use crate::b::OnlyInTests;"),
        ("b/mod.rs", "pub struct FromA;"),
        ("b/deep/more.rs", "use crate::a::inner;"),
        ("c.rs", "pub struct Root;"),
        ("bin/tool/main.rs", "use crate::c::Root; use crate::a::X;"),
    ];
    for (path, text) in files {
        let path = dir.join(path);
        std::fs::create_dir_all(path.parent().unwrap()).unwrap();
        std::fs::write(path, text).unwrap();
    }
    let graph = crate_graph(&dir);
    std::fs::remove_dir_all(&dir).unwrap();
    assert_eq!(
        graph,
        graph_of(&[
            ("a", "b", "FromA"),
            ("a", "c", "Root"),
            ("b", "a", "inner"),
            ("c", "", ""),
            ("lib", "", ""),
        ])
    );
    assert_eq!(
        report(&graph, &cycles(&graph)),
        "cycle: a <-> b\n  a uses b: FromA\n  b uses a: inner\n"
    );
}

// ---------------------------------------------------------------------------
// Reading src/
// ---------------------------------------------------------------------------

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// The module graph of the crate whose sources are in `src`, its unit
/// tests left out.
fn crate_graph(src: &Path) -> Graph {
    graph_of_crate(src, false)
}

/// As [`crate_graph`], with `tests.rs` files, `tests/` folders and
/// `#[cfg(test)]` items counted when `with_tests`: a unit test of a layer
/// may not reach up either.
fn graph_of_crate(src: &Path, with_tests: bool) -> Graph {
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let mut parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts[0] == "bin" || (!with_tests && parts.iter().any(|p| p == "tests")) {
            continue;
        }
        if parts.len() > 1 && parts.last().is_some_and(|p| p == "mod") {
            parts.pop();
        }
        files.entry(parts.swap_remove(0)).or_default().push(path);
    }
    // `crate::Name` where lib.rs has `pub use module::Name`.
    let mut reexported = BTreeMap::new();
    if let Some(lib) = files.get("lib") {
        for path in lib {
            let tokens = tokens(&code(&std::fs::read_to_string(path).unwrap()));
            for (i, t) in tokens.iter().enumerate() {
                if *t == Tok::Ident("use".into()) {
                    let mut paths = Vec::new();
                    use_tree(&tokens, &mut (i + 1), &mut Vec::new(), &mut paths);
                    for p in paths {
                        if let [module, name, ..] = &p[..]
                            && files.contains_key(module)
                        {
                            reexported.insert(name.clone(), module.clone());
                        }
                    }
                }
            }
        }
    }
    let mut graph = Graph::new();
    for (module, paths) in &files {
        let uses = graph.entry(module.clone()).or_default();
        for path in paths {
            let text = std::fs::read_to_string(path).unwrap();
            let text = if with_tests {
                code_only(&text)
            } else {
                code(&text)
            };
            for (target, name) in crate_paths(&text) {
                let (target, name) = match reexported.get(&target) {
                    Some(m) if !files.contains_key(&target) => (m.clone(), target),
                    _ => (target, name),
                };
                if files.contains_key(&target) && target != *module {
                    uses.entry(target).or_default().insert(name);
                }
            }
        }
    }
    graph
}

fn rust_files(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    let mut entries: Vec<_> = std::fs::read_dir(dir)
        .unwrap_or_else(|e| panic!("reading {}: {e}", dir.display()))
        .map(|e| e.unwrap().path())
        .collect();
    entries.sort();
    for path in entries {
        if path.is_dir() {
            out.extend(rust_files(&path));
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
    out
}

/// The code of a source file: no comments, string and character literals
/// blanked, no items marked `#[cfg(test)]`.
fn code(text: &str) -> String {
    without_test_items(&code_only(text))
}

/// `text` without its comments, and with the contents of string and
/// character literals blanked, so that only code is left to search.
fn code_only(text: &str) -> String {
    let c: Vec<char> = text.chars().collect();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    // Where the identifier that `c[i]` continues started, if any.
    let mut ident_start: Option<usize> = None;
    while i < c.len() {
        let ch = c[i];
        let next = c.get(i + 1).copied();
        if ch == '/' && next == Some('/') {
            while i < c.len() && c[i] != '\n' {
                i += 1;
            }
            ident_start = None;
            continue;
        }
        if ch == '/' && next == Some('*') {
            let mut depth = 0;
            while i < c.len() {
                if c[i] == '/' && c.get(i + 1) == Some(&'*') {
                    depth += 1;
                    i += 2;
                } else if c[i] == '*' && c.get(i + 1) == Some(&'/') {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    if c[i] == '\n' {
                        out.push('\n');
                    }
                    i += 1;
                }
            }
            out.push(' ');
            ident_start = None;
            continue;
        }
        // Raw strings: r"..", r#".."#, br".." and cr"..".
        if ch == 'r' {
            let prefix: String = c[ident_start.unwrap_or(i)..=i].iter().collect();
            let mut j = i + 1;
            while c.get(j) == Some(&'#') {
                j += 1;
            }
            if matches!(prefix.as_str(), "r" | "br" | "cr") && c.get(j) == Some(&'"') {
                let hashes = j - i - 1;
                let mut k = j + 1;
                while k < c.len()
                    && !(c[k] == '"'
                        && c[k + 1..].iter().take_while(|&&h| h == '#').count() >= hashes)
                {
                    k += 1;
                }
                out.push_str("r\"\"");
                i = (k + 1 + hashes).min(c.len());
                ident_start = None;
                continue;
            }
        }
        if ch == '"' {
            i += 1;
            while i < c.len() && c[i] != '"' {
                i += if c[i] == '\\' { 2 } else { 1 };
            }
            out.push_str("\"\"");
            i += 1;
            ident_start = None;
            continue;
        }
        // A character literal, not a lifetime or a label.
        if ch == '\'' && ident_start.is_none_or(|s| c[s..i] == ['b']) {
            let end = if next == Some('\\') {
                (i + 3..c.len()).find(|&k| c[k] == '\'')
            } else if c.get(i + 2) == Some(&'\'') {
                Some(i + 2)
            } else {
                None
            };
            if let Some(end) = end {
                out.push_str("' '");
                i = end + 1;
                continue;
            }
        }
        if ch.is_alphanumeric() || ch == '_' {
            ident_start.get_or_insert(i);
        } else {
            ident_start = None;
        }
        out.push(ch);
        i += 1;
    }
    out
}

/// `code` (as [`code_only`] leaves it) without the items marked
/// `#[cfg(test)]`: each ends at its first `;` or its closing brace.
fn without_test_items(code: &str) -> String {
    let c: Vec<char> = code.chars().collect();
    let mut out = String::with_capacity(code.len());
    let mut i = 0;
    while i < c.len() {
        let Some(after) = cfg_test_attribute(&c, i) else {
            out.push(c[i]);
            i += 1;
            continue;
        };
        let mut depth = 0usize;
        let mut j = after;
        while j < c.len() {
            match c[j] {
                '(' | '[' => depth += 1,
                ')' | ']' => depth = depth.saturating_sub(1),
                ';' if depth == 0 => break,
                '{' if depth == 0 => {
                    let mut braces = 0usize;
                    while j < c.len() {
                        match c[j] {
                            '{' => braces += 1,
                            '}' => {
                                braces -= 1;
                                if braces == 0 {
                                    break;
                                }
                            }
                            _ => {}
                        }
                        j += 1;
                    }
                    break;
                }
                _ => {}
            }
            j += 1;
        }
        i = j + 1;
    }
    out
}

/// Where the code after a `#[cfg(test)]` at `i` starts, if there is one.
fn cfg_test_attribute(c: &[char], i: usize) -> Option<usize> {
    let mut j = i;
    for (n, part) in ["#", "[", "cfg", "(", "test", ")", "]"].iter().enumerate() {
        while n > 0 && c.get(j).is_some_and(|c| c.is_whitespace()) {
            j += 1;
        }
        for p in part.chars() {
            if c.get(j) != Some(&p) {
                return None;
            }
            j += 1;
        }
    }
    Some(j)
}

#[derive(Clone, Debug, PartialEq, Eq)]
enum Tok {
    Ident(String),
    PathSep,
    Other(char),
}

fn tokens(code: &str) -> Vec<Tok> {
    let c: Vec<char> = code.chars().collect();
    let mut out = Vec::new();
    let mut i = 0;
    while i < c.len() {
        let ch = c[i];
        if ch.is_whitespace() {
            i += 1;
        } else if ch.is_alphabetic() || ch == '_' {
            let start = i;
            while i < c.len() && (c[i].is_alphanumeric() || c[i] == '_') {
                i += 1;
            }
            out.push(Tok::Ident(c[start..i].iter().collect()));
        } else if ch == ':' && c.get(i + 1) == Some(&':') {
            out.push(Tok::PathSep);
            i += 2;
        } else {
            out.push(Tok::Other(ch));
            i += 1;
        }
    }
    out
}

/// Every `crate::` path in `code`: the module it starts with and the name
/// it reaches there (the module itself for `crate::module` or `self`).
/// `use crate::{a::X, b::{Y, Z}}` yields `(a, X)`, `(b, Y)` and `(b, Z)`.
fn crate_paths(code: &str) -> Vec<(String, String)> {
    let tokens = tokens(code);
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        if tokens[i] == Tok::Ident("crate".into()) && tokens.get(i + 1) == Some(&Tok::PathSep) {
            let mut paths = Vec::new();
            use_tree(&tokens, &mut (i + 2), &mut Vec::new(), &mut paths);
            for path in paths {
                let module = path[0].clone();
                let name = match path.get(1) {
                    Some(n) if n != "self" => n.clone(),
                    _ => module.clone(),
                };
                out.push((module, name));
            }
        }
    }
    out
}

/// Reads a use tree (`a::b`, `a::{b, c::d}`, `a::*`, `{a, b}`) at `i`, or
/// as much of a path as there is (`a::f::<T>` reads `a::f`), and pushes
/// each path it names, `prefix` first, onto `out`.
fn use_tree(tokens: &[Tok], i: &mut usize, prefix: &mut Vec<String>, out: &mut Vec<Vec<String>>) {
    let depth = prefix.len();
    while let Some(Tok::Ident(name)) = tokens.get(*i) {
        prefix.push(name.clone());
        *i += 1;
        if tokens.get(*i) != Some(&Tok::PathSep) {
            out.push(prefix.clone());
            prefix.truncate(depth);
            return;
        }
        *i += 1;
    }
    match tokens.get(*i) {
        Some(Tok::Other('*')) => {
            *i += 1;
            prefix.push("*".into());
            out.push(prefix.clone());
        }
        Some(Tok::Other('{')) => {
            *i += 1;
            while !matches!(tokens.get(*i), None | Some(Tok::Other('}'))) {
                use_tree(tokens, i, prefix, out);
                // Skip `as alias` (or anything unexpected) up to the next entry.
                while !matches!(tokens.get(*i), None | Some(Tok::Other(',' | '}'))) {
                    *i += 1;
                }
                if tokens.get(*i) == Some(&Tok::Other(',')) {
                    *i += 1;
                }
            }
            *i += 1;
        }
        _ if prefix.len() > depth => out.push(prefix.clone()),
        _ => {}
    }
    prefix.truncate(depth);
}

/// The modules inside the layers: `layer::module` for `src/layer/module.rs`
/// (with `src/layer/module/`), `layer` for the layer's own `mod.rs`. An edge
/// `crate::layer::module::..` goes to `layer::module` when that module
/// exists, else to `layer` (a name the layer's root declares or
/// re-exports). Edges between layers are left to the layer order.
fn layer_module_graph(src: &Path) -> Graph {
    let mut files: BTreeMap<String, Vec<PathBuf>> = BTreeMap::new();
    for path in rust_files(src) {
        let rel = path.strip_prefix(src).unwrap().with_extension("");
        let parts: Vec<String> = rel
            .components()
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .collect();
        if parts[0] == "bin" || parts[0] == "lib" || parts.iter().any(|p| p == "tests") {
            continue;
        }
        let node = match parts.get(1) {
            Some(m) if m != "mod" => format!("{}::{m}", parts[0]),
            _ => parts[0].clone(),
        };
        files.entry(node).or_default().push(path);
    }
    let mut graph = Graph::new();
    for (node, paths) in &files {
        let layer = node.split("::").next().unwrap().to_owned();
        let uses = graph.entry(node.clone()).or_default();
        for path in paths {
            let code = code(&std::fs::read_to_string(path).unwrap());
            for full in crate_full_paths(&code) {
                if full.first() != Some(&layer) {
                    continue;
                }
                let target = match full.get(1) {
                    Some(m) if files.contains_key(&format!("{layer}::{m}")) => {
                        format!("{layer}::{m}")
                    }
                    _ => layer.clone(),
                };
                let name = full.get(2).or(full.get(1)).cloned().unwrap_or_default();
                if target != *node {
                    uses.entry(target).or_default().insert(name);
                }
            }
        }
    }
    graph
}

/// The modules of a binary in `dir` (its `main.rs` and the files beside
/// it), each file a node, edges its `crate::` paths.
fn bin_graph(dir: &Path) -> Graph {
    let files: Vec<PathBuf> = rust_files(dir);
    let name_of = |p: &Path| {
        let rel = p.strip_prefix(dir).unwrap().with_extension("");
        let first = rel.components().next().unwrap();
        first.as_os_str().to_string_lossy().into_owned()
    };
    let nodes: BTreeSet<String> = files.iter().map(|p| name_of(p)).collect();
    let mut graph = Graph::new();
    for path in &files {
        let node = name_of(path);
        let uses = graph.entry(node.clone()).or_default();
        for (target, name) in crate_paths(&code(&std::fs::read_to_string(path).unwrap())) {
            if nodes.contains(&target) && target != node {
                uses.entry(target).or_default().insert(name);
            }
        }
    }
    graph
}

/// Every `crate::` path in `code`, whole (`crate::a::b::C` is `[a, b, C]`).
fn crate_full_paths(code: &str) -> Vec<Vec<String>> {
    let tokens = tokens(code);
    let mut out = Vec::new();
    for i in 0..tokens.len() {
        if tokens[i] == Tok::Ident("crate".into()) && tokens.get(i + 1) == Some(&Tok::PathSep) {
            use_tree(&tokens, &mut (i + 2), &mut Vec::new(), &mut out);
        }
    }
    out
}

/// One line per edge that goes up the layer order (`layers`, bottom first;
/// `lib` sits above them all), and one per module in no layer.
fn upward_edges(graph: &Graph, layers: &[&str]) -> String {
    let rank = |m: &str| {
        if m == "lib" {
            Some(layers.len())
        } else {
            layers.iter().position(|l| *l == m)
        }
    };
    let mut out = String::new();
    for (a, uses) in graph {
        let Some(ra) = rank(a) else {
            out += &format!("{a} is in no layer: add it to LAYERS or move it into one\n");
            continue;
        };
        for (b, names) in uses {
            if let Some(rb) = rank(b)
                && rb > ra
            {
                let names: Vec<&str> = names.iter().map(String::as_str).collect();
                out += &format!(
                    "{a} (layer {}) uses {b} (layer {}): {}\n",
                    ra + 1,
                    rb + 1,
                    names.join(", ")
                );
            }
        }
    }
    out
}

// ---------------------------------------------------------------------------
// Cycles
// ---------------------------------------------------------------------------

/// The strongly connected components of more than one module, each sorted,
/// in the order of their first module: every cycle belongs to one of them.
fn cycles(graph: &Graph) -> Vec<Vec<String>> {
    struct Tarjan<'g> {
        graph: &'g Graph,
        index: BTreeMap<&'g str, usize>,
        low: BTreeMap<&'g str, usize>,
        stack: Vec<&'g str>,
        on_stack: BTreeSet<&'g str>,
        found: Vec<Vec<String>>,
    }
    impl<'g> Tarjan<'g> {
        fn visit(&mut self, v: &'g str) {
            let n = self.index.len();
            self.index.insert(v, n);
            self.low.insert(v, n);
            self.stack.push(v);
            self.on_stack.insert(v);
            for w in self.graph.get(v).into_iter().flat_map(|uses| uses.keys()) {
                let w = w.as_str();
                if !self.index.contains_key(w) {
                    self.visit(w);
                    let low = self.low[v].min(self.low[w]);
                    self.low.insert(v, low);
                } else if self.on_stack.contains(w) {
                    let low = self.low[v].min(self.index[w]);
                    self.low.insert(v, low);
                }
            }
            if self.low[v] == self.index[v] {
                let mut component = Vec::new();
                loop {
                    let w = self.stack.pop().unwrap();
                    self.on_stack.remove(w);
                    component.push(w.to_string());
                    if w == v {
                        break;
                    }
                }
                if component.len() > 1 {
                    component.sort();
                    self.found.push(component);
                }
            }
        }
    }
    let mut t = Tarjan {
        graph,
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        found: Vec::new(),
    };
    for v in graph.keys() {
        if !t.index.contains_key(v.as_str()) {
            t.visit(v);
        }
    }
    t.found.sort();
    t.found
}

/// One `cycle:` line per cycle, then each edge inside it with its names.
fn report(graph: &Graph, cycles: &[Vec<String>]) -> String {
    let mut out = String::new();
    for cycle in cycles {
        out += &format!("cycle: {}\n", cycle.join(" <-> "));
        for a in cycle {
            for (b, names) in &graph[a] {
                if cycle.contains(b) {
                    let names: Vec<&str> = names.iter().map(String::as_str).collect();
                    out += &format!("  {a} uses {b}: {}\n", names.join(", "));
                }
            }
        }
    }
    out
}

/// A graph from (from, to, name) edges; an empty `to` adds `from` alone.
fn graph_of(edges: &[(&str, &str, &str)]) -> Graph {
    let mut g = Graph::new();
    for (from, to, name) in edges {
        let uses = g.entry(from.to_string()).or_default();
        if !to.is_empty() {
            uses.entry(to.to_string())
                .or_default()
                .insert(name.to_string());
        }
    }
    g
}
