//! The README stays true: its `main.rs` is `examples/first_program.rs`
//! (which `cargo test` compiles), its dependency lines name the versions
//! this crate is built with, and its other Rust blocks are the code of the
//! modules below (compiled here).

use std::path::Path;

fn read(path: &str) -> String {
    std::fs::read_to_string(Path::new(env!("CARGO_MANIFEST_DIR")).join(path))
        .unwrap_or_else(|e| panic!("reading {path}: {e}"))
}

/// The fenced block of `lang` that follows the first line containing
/// `after`.
fn block_after<'a>(text: &'a str, after: &str, lang: &str) -> &'a str {
    let start = text
        .find(after)
        .unwrap_or_else(|| panic!("README has no {after:?}"));
    let fence = format!("```{lang}\n");
    let open = start + text[start..].find(&fence).expect("a fenced block") + fence.len();
    let close = open + text[open..].find("```").expect("a closing fence");
    &text[open..close]
}

#[test]
fn the_readme_first_program_is_the_example_the_tests_compile() {
    let readme = read("README.md");
    let shown = block_after(&readme, "`src/main.rs`", "rust");
    assert_eq!(
        shown,
        read("examples/first_program.rs"),
        "README's main.rs and examples/first_program.rs differ"
    );
}

#[test]
fn the_readme_install_lines_name_the_versions_the_crate_uses() {
    let readme = read("README.md");
    let install = block_after(&readme, "## Install and a first program", "toml");
    let manifest = read("Cargo.toml");
    for (krate, version) in [("kube-client", "\"5\""), ("k8s-openapi", "\"0.29\"")] {
        let ours = format!("{krate} = {{ version = {version}");
        assert!(manifest.contains(&ours), "Cargo.toml: {ours}");
        assert!(
            install.contains(&ours),
            "README install lines: {ours}\n{install}"
        );
    }
    assert!(install.contains("kube-dynamic-informer = "), "{install}");
    assert!(
        install.contains("features = [\"latest\"]"),
        "a Kubernetes version: {install}"
    );
    assert!(install.contains("rustls-tls"), "a TLS stack: {install}");
}

// The README's Rust blocks other than the first program, one module each,
// between `// README: NAME` and `// README: end` lines: each block is
// compared with its module's text, so what the README shows compiles.

#[allow(dead_code)]
mod readme_handle {
    // README: handle
    use kube_dynamic_informer::prelude::*;

    async fn pods_on(
        factory: &InformerFactory,
        node: &str,
    ) -> Result<usize, Box<dyn std::error::Error>> {
        let pods: InformerHandle = factory.for_resource("pods").await?;
        let informer: &SharedInformer = pods.informer();
        informer.add_jmespath_index("node", "spec.nodeName")?;
        println!("{}: {}", pods.resource(), pods.status());
        Ok(pods.lister().by_index("node", node)?.len())
    }
    // README: end
}

#[allow(dead_code)]
mod readme_not_served {
    // README: not served
    use kube_dynamic_informer::informer::WhenNotServed;
    use kube_dynamic_informer::prelude::*;

    async fn widgets_now(factory: &InformerFactory) -> Result<InformerHandle, FactoryError> {
        factory
            .for_resource_with("widgets.example.com", |o| {
                o.when_not_served(WhenNotServed::Fail)
            })
            .await // Err(FactoryError::NotServed { .. }) while the CRD is not installed
    }
    // README: end
}

/// The lines of this file between `// README: NAME` and `// README: end`,
/// without the module's indentation.
fn compiled(name: &str) -> String {
    let source = read("tests/readme.rs");
    let open = format!("// README: {name}\n");
    let start = source.find(&open).unwrap_or_else(|| panic!("no {open:?}")) + open.len();
    let end = start
        + source[start..]
            .find("// README: end")
            .expect("an end marker");
    let body = &source[start..source[..end].rfind('\n').expect("a line") + 1];
    let indent = body.len() - body.trim_start().len();
    body.lines()
        .map(|line| line.get(indent..).unwrap_or(line.trim_start()))
        .map(|line| format!("{line}\n"))
        .collect()
}

#[test]
fn the_readme_rust_blocks_are_code_this_file_compiles() {
    let readme = read("README.md");
    for (after, name) in [
        ("**What the factory hands out.**", "handle"),
        ("**A resource that is not served yet**", "not served"),
    ] {
        assert_eq!(
            block_after(&readme, after, "rust"),
            compiled(name),
            "README's block after {after:?} and `// README: {name}` in tests/readme.rs differ"
        );
    }
}
