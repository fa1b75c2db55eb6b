//! The README's first program and install lines stay true: its `main.rs`
//! is `examples/first_program.rs` (which `cargo test` compiles), and its
//! dependency lines name the versions this crate is built with.

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
