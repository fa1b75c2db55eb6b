//! Every feature combination the README documents builds without warnings:
//! a `#[cfg(feature = ...)]` missing on an import or a helper shows up only
//! in the combination that leaves its user out.
//!
//! Each combination is checked with `cargo check --lib` (no code
//! generation) in a target directory of its own, `target/features-check`,
//! so that it never waits for the build lock of the `cargo test` that runs
//! it. The first run compiles the dependencies once per combination (a few
//! minutes on 2 cores); later runs check only this crate, seconds each.

use std::path::Path;
use std::process::Command;

/// A documented combination: how the README names it, and the arguments
/// that select it. Each selects a Kubernetes version for k8s-openapi as a
/// program must (`.cargo/config.toml` does it too inside this repository).
struct Combination {
    readme: &'static str,
    args: &'static [&'static str],
}

const COMBINATIONS: &[Combination] = &[
    Combination {
        readme: "the default features",
        args: &["--features", "k8s-openapi/latest"],
    },
    Combination {
        readme: r#"`default-features = false, features = ["rustls-tls"]`"#,
        args: &[
            "--no-default-features",
            "--features",
            "rustls-tls,k8s-openapi/latest",
        ],
    },
    Combination {
        readme: r#"`default-features = false, features = ["config", "rustls-tls"]`"#,
        args: &[
            "--no-default-features",
            "--features",
            "config,rustls-tls,k8s-openapi/latest",
        ],
    },
    Combination {
        readme: r#"`features = ["serve"]`"#,
        args: &["--features", "serve,k8s-openapi/latest"],
    },
    Combination {
        readme: r#"`features = ["cli"]`"#,
        args: &["--features", "cli"],
    },
];

fn root() -> &'static Path {
    Path::new(env!("CARGO_MANIFEST_DIR"))
}

/// What is wrong with `combination`: the check's failure or this crate's
/// warnings; `None` when it builds cleanly.
fn check(combination: &Combination) -> Option<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".to_owned());
    let output = Command::new(&cargo)
        .current_dir(root())
        .env("CARGO_TARGET_DIR", root().join("target/features-check"))
        .args(["check", "--lib", "--message-format", "short"])
        .args(combination.args)
        .output()
        .unwrap_or_else(|e| panic!("running {cargo}: {e}"));
    let stderr = String::from_utf8_lossy(&output.stderr);
    let command = format!("cargo check --lib {}", combination.args.join(" "));
    if !output.status.success() {
        return Some(format!(
            "{}: `{command}` failed ({}):\n{stderr}",
            combination.readme, output.status
        ));
    }
    // This crate's warnings (`src/...: warning: ...`, then cargo's count),
    // not cargo's own notes about dependencies.
    let warnings: Vec<&str> = stderr
        .lines()
        .filter(|line| {
            (line.starts_with("src/") && line.contains("warning"))
                || line.contains("`kube-dynamic-informer` (lib) generated")
        })
        .collect();
    (!warnings.is_empty()).then(|| {
        format!(
            "{}: `{command}` warns:\n{}",
            combination.readme,
            warnings.join("\n")
        )
    })
}

#[test]
fn every_documented_feature_combination_builds_without_warnings() {
    // One after the other: they share the target directory's lock.
    let problems: Vec<String> = COMBINATIONS.iter().filter_map(check).collect();
    assert!(problems.is_empty(), "{}", problems.join("\n\n"));
}

#[test]
fn the_readme_names_the_combinations_checked() {
    let readme = std::fs::read_to_string(root().join("README.md")).expect("README.md");
    let section = readme
        .split("\n## ")
        .find(|s| s.starts_with("Install"))
        .expect("an Install section");
    // Words, whatever the line breaks.
    let section = section.split_whitespace().collect::<Vec<_>>().join(" ");
    for combination in COMBINATIONS {
        assert!(
            section.contains(combination.readme),
            "README's Install section does not name {}",
            combination.readme
        );
    }
    assert!(section.contains("tests/features.rs"), "{section}");
}
