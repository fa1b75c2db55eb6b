//! The README stays true: its `main.rs` is `examples/first_program.rs`
//! (which `cargo test` compiles), its dependency lines name the versions
//! this crate is built with, its other Rust blocks are the code of the
//! modules below (compiled here), its config file loads with the entries it
//! shows, what it says the loader refuses the loader refuses, and the files
//! it says the bundled control plane writes are the ones it writes.

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

#[allow(dead_code)]
mod readme_check {
    // README: check
    use kube_dynamic_informer::declarative::InformerSet;

    pub fn check(path: &str) -> bool {
        match InformerSet::load_file(path) {
            Ok(set) => {
                let (informers, patterns) = (set.informers.len(), set.patterns.len());
                println!("{path}: ok ({informers} informers, {patterns} patterns)");
                true
            }
            Err(e) => {
                for problem in e.problems() {
                    eprintln!("{problem}"); // informers.yaml:9:20: informers[0].labelSelector: ...
                }
                false
            }
        }
    }
    // README: end
}

#[allow(dead_code)]
mod readme_resource_set {
    // README: resource set
    use std::time::Duration;

    use kube_dynamic_informer::declarative::ResourceSet;

    async fn run(client: kube_client::Client) -> Result<(), Box<dyn std::error::Error>> {
        let set = ResourceSet::from_file(client, "informers.yaml").await?;
        set.start()?;
        let timeout = Duration::from_secs(30);
        let report = set.factory().wait_for_cache_sync(timeout).await;
        for why in report.failures() {
            eprintln!("{why}"); // pods.v1: forbidden (403), not served, timed out, ...
        }
        for member in set.members().await {
            let status = member.informer.status();
            println!("{} {} {status}", member.entry, member.resource);
        }
        if let Some(pods) = set.members().await.into_iter().find(|m| m.entry == "pods") {
            let on_node = pods.informer.lister().by_index("node", "node-1")?;
            println!("{} pods on node-1", on_node.len());
        }
        set.shutdown().await;
        Ok(())
    }
    // README: end
}

#[allow(dead_code)]
mod readme_wait {
    // README: wait
    use std::time::Duration;

    use kube_dynamic_informer::informer::{InformerError, ObjectSelection, Wait, WaitFor};
    use kube_dynamic_informer::prelude::*;
    use kube_dynamic_informer::vocabulary::Selector;

    async fn web_ready(factory: &InformerFactory) -> Result<bool, Box<dyn std::error::Error>> {
        let deployments = factory.for_resource("deployments.apps").await?;
        let widgets = factory.for_resource("widgets.example.com").await?; // installed later is fine
        factory.start()?;
        let web = ObjectSelection::default()
            .namespace("shop")
            .labels(Selector::parse("app=web")?);
        let wait = Wait::new(WaitFor::condition("status.readyReplicas == spec.replicas")?)
            .on(&deployments, web.clone())
            .on(&widgets, web)
            .timeout(Duration::from_secs(120));
        match wait.run().await {
            Ok(report) => println!("{report}"), // all of 4 objects hold '...'
            Err(InformerError::ConditionTimedOut { report }) => {
                for object in report.blocking() {
                    eprintln!("{} {}: {}", object.resource, object.key, object.state); // not met, missing
                }
                return Ok(false);
            }
            Err(other) => return Err(other.into()),
        }
        Ok(true)
    }
    // README: end
}

#[allow(dead_code)]
mod readme_filter {
    // README: filter
    use kube_dynamic_informer::cache::{ChangePredicate, Condition};
    use kube_dynamic_informer::informer::{Event, HandlerOptions};
    use kube_dynamic_informer::prelude::*;

    fn reconcile_web(widgets: &InformerHandle) -> Result<(), Box<dyn std::error::Error>> {
        let options = HandlerOptions::default()
            .name("reconcile-web")
            .filter(Condition::new("metadata.labels.tier == 'web'")?)
            .changes(ChangePredicate::spec().or(ChangePredicate::labels()))
            .on_mistake(|mistake| eprintln!("{mistake}"));
        let registration = widgets.informer().add_handler_with(
            |event: Event| match event {
                Event::Add { object, .. } => println!("reconcile {:?}", object.name()),
                Event::Update { new, .. } => println!("reconcile {:?}", new.name()),
                Event::Delete {
                    object,
                    left_filter,
                    ..
                } => {
                    println!(
                        "forget {:?} (left the filter: {left_filter})",
                        object.name()
                    )
                }
            },
            options,
        );
        println!("{} events held back so far", registration.filtered());
        Ok(())
    }
    // README: end
}

#[allow(dead_code)]
mod readme_reconcile {
    // README: reconcile
    use std::time::Duration;

    use kube_client::api::{Api, Patch, PatchParams};
    use kube_dynamic_informer::prelude::*;
    use kube_dynamic_informer::reconcile::{Action, Context, Controller};

    async fn run(factory: &InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
        let widgets = factory.for_resource("widgets.example.com").await?;
        let config_maps = factory.for_resource("configmaps").await?;
        factory.start()?;
        let spec_changes = HandlerOptions::default().changes(ChangePredicate::generation());
        let controller = Controller::new("widgets")
            .workers(4)
            .watch_with(&widgets, spec_changes)
            .owns(&config_maps);
        let shutdown = controller.shutdown_handle();
        tokio::spawn(async move {
            let _ = tokio::signal::ctrl_c().await;
            shutdown.shut_down_with_drain().await;
        });
        controller.run(observe).await?;
        Ok(())
    }

    /// Writes `status.observedGeneration` once per change of a Widget's spec.
    async fn observe(ctx: Context) -> Result<Action, kube_client::Error> {
        let (Some(widget), Some(resource)) = (ctx.object(), ctx.handle().api_resource()) else {
            return Ok(Action::Done); // deleted
        };
        let number = |path| widget.pointer(path).and_then(|n| n.as_i64());
        let generation = number("/metadata/generation");
        if generation != number("/status/observedGeneration") {
            let ns = ctx.key().namespace.as_deref().unwrap_or_default();
            let api = Api::<DynamicObject>::namespaced_with(ctx.client(), ns, &resource);
            let status = serde_json::json!({ "status": { "observedGeneration": generation } });
            let patch = Patch::Merge(status);
            api.patch_status(&ctx.key().name, &PatchParams::default(), &patch)
                .await?;
        }
        Ok(Action::RequeueAfter(Duration::from_secs(600)))
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
        ("**Checking a file without a cluster.**", "check"),
        ("**Running a file from Rust.**", "resource set"),
        ("**Waiting from Rust.**", "wait"),
        ("**Filtering from Rust.**", "filter"),
        ("**Reconciling from Rust.**", "reconcile"),
    ] {
        assert_eq!(
            block_after(&readme, after, "rust"),
            compiled(name),
            "README's block after {after:?} and `// README: {name}` in tests/readme.rs differ"
        );
    }
}

/// The config file of the README's "Config files".
fn readme_config() -> String {
    block_after(&read("README.md"), "## Config files", "yaml").to_owned()
}

#[test]
fn the_readme_config_file_loads_with_the_entries_it_shows() {
    use kube_dynamic_informer::declarative::InformerSet;
    use kube_dynamic_informer::informer::WhenNotServed;
    use std::time::Duration;

    let set =
        InformerSet::load_str(&readme_config(), "informers.yaml").unwrap_or_else(|e| panic!("{e}"));
    let names: Vec<&str> = set.informers.iter().map(|i| i.name()).collect();
    assert_eq!(names, ["pods", "gold-deployments", "widgets.example.com"]);
    let [pods, gold, widgets] = &set.informers[..] else {
        unreachable!()
    };
    let ten_minutes = Duration::from_secs(600);
    assert_eq!(set.defaults.cache.resync, ten_minutes);

    assert!(pods.indexes.contains_key("node") && pods.indexes.contains_key("labelKeys"));
    let o = &pods.options;
    assert_eq!(
        o.watch.label_selector.as_deref(),
        Some("app in (web, api), !canary")
    );
    assert_eq!(
        o.watch.field_selector.as_deref(),
        Some("status.phase=Running")
    );
    assert!(o.cache.strip_managed_fields, "inherited from defaults");
    assert_eq!(o.cache.resync, ten_minutes, "inherited from defaults");

    assert_eq!(gold.resource, "deployments.apps");
    assert!(gold.indexes.contains_key("image"));
    assert!(
        gold.options.cache.strip_managed_fields,
        "inherited from defaults"
    );
    assert_eq!(
        gold.options.cache.resync,
        Duration::ZERO,
        "its own, not the default"
    );

    assert_eq!(widgets.options.when_not_served, WhenNotServed::Wait);
    assert!(widgets.indexes.contains_key("color"));
    assert_eq!(
        widgets.filter.as_deref(),
        Some("metadata.labels.tier == 'web'")
    );
    assert_eq!(widgets.changes, ["spec", "metadata.labels"]);

    let [pattern] = &set.patterns[..] else {
        panic!("one pattern: {:?}", set.patterns)
    };
    assert_eq!(pattern.name, "example-crds");
    assert!(pattern.indexes.contains_key("owner"));
    assert!(
        pattern.options.cache.strip_managed_fields,
        "patterns inherit too"
    );
    assert_eq!(
        pattern.options.watch.label_selector.as_deref(),
        Some("!kdi-ignore")
    );

    // The spellings the README gives for whenNotServed.
    for (word, when) in [("skip", WhenNotServed::Skip), ("fail", WhenNotServed::Fail)] {
        let text =
            readme_config().replace("whenNotServed: wait", &format!("whenNotServed: {word}"));
        let set = InformerSet::load_str(&text, "informers.yaml").unwrap_or_else(|e| panic!("{e}"));
        assert_eq!(set.informers[2].options.when_not_served, when);
    }
}

#[test]
fn the_readme_check_function_accepts_its_config_and_refuses_a_broken_one() {
    let dir = std::env::temp_dir().join(format!("kdi-readme-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let good = dir.join("informers.yaml");
    std::fs::write(&good, readme_config()).unwrap();
    assert!(readme_check::check(good.to_str().unwrap()));
    let bad = dir.join("broken.yaml");
    std::fs::write(&bad, readme_config().replace("tier=gold", "tier in (gold")).unwrap();
    assert!(!readme_check::check(bad.to_str().unwrap()));
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn what_the_readme_says_the_loader_refuses_it_refuses_where_the_readme_says() {
    use kube_dynamic_informer::declarative::{InformerSet, position_of};

    let readme = read("README.md");
    let config = readme_config();
    let problems = |text: &str| -> Vec<String> {
        match InformerSet::load_str(text, "informers.yaml") {
            Ok(_) => panic!("loaded:\n{text}"),
            Err(e) => e.problems().iter().map(ToString::to_string).collect(),
        }
    };

    // The position in the check block's comment is that of the pods'
    // label selector.
    let broken = config.replace("\"app in (web, api), !canary\"", "\"app in (web\"");
    let said = problems(&broken);
    let prefix = "informers.yaml:9:20: informers[0].labelSelector: ";
    assert!(said[0].starts_with(prefix), "{said:?}");
    assert!(compiled("check").contains(prefix.trim_end()));

    // And the one given for a resource the cluster refuses is where the
    // widgets' resource stands.
    let at = position_of(&config, "/informers/2/resource").expect("parses");
    let located = format!(
        "`informers.yaml:{}:{}: informers[2].resource: ...`",
        at.line, at.column
    );
    assert!(readme.contains(&located), "README should say {located}");

    // An anchor alone is read; an alias, or a merge key through one, is
    // refused with the words the README quotes.
    let anchored = config.replace("labelSelector: tier=gold", "labelSelector: &gold tier=gold");
    InformerSet::load_str(&anchored, "informers.yaml").unwrap_or_else(|e| panic!("{e}"));
    let aliased = anchored.replace("labelSelector: \"!kdi-ignore\"", "labelSelector: *gold");
    let merged = config
        .replace(
            "  resync: 10m\n",
            "  resync: 10m\nshared: &shared\n  resync: 1m\n",
        )
        .replace("    resync: 0s ", "    <<: *shared\n    resync: 0s ");
    for text in [aliased, merged] {
        let said = problems(&text);
        let words = "not valid YAML or JSON: YAML aliases are not supported in config files";
        assert!(said.iter().any(|p| p.ends_with(words)), "{said:?}");
        assert!(
            readme.contains(&format!("`{words}`")),
            "README should quote {words:?}"
        );
    }

    // The reserved index name.
    let said = problems(&config.replace(
        "      node: spec.nodeName",
        "      namespace: spec.nodeName",
    ));
    assert!(said[0].contains("\"namespace\" is reserved"), "{said:?}");

    // Only the first document is read.
    let two = format!("{config}---\napiVersion: nothing\n");
    let set = InformerSet::load_str(&two, "informers.yaml").unwrap_or_else(|e| panic!("{e}"));
    assert_eq!(set.informers.len(), 3);
}

#[test]
fn the_readme_names_the_files_testenv_writes() {
    let readme = read("README.md");
    let main_go = read("testenv/main.go");
    let script = read("scripts/testenv");
    for (source, text) in [
        (&main_go, "\"kubeconfig-\"+u.name+\".yaml\""),
        (&main_go, "{\"alice\", \"\"}"),
        (&main_go, "{\"bob\", \"\"}"),
        (&main_go, "\"ready.json\""),
        (&main_go, "- name: %s@testenv"),
        (&script, "run_dir=\"$out/run\""),
        (&script, "--data-dir \"$run_dir/data\""),
    ] {
        assert!(source.contains(text), "testenv no longer has {text}");
    }
    for file in [
        "`kubeconfig-admin.yaml`",
        "`kubeconfig-alice.yaml`",
        "`kubeconfig-bob.yaml`",
        "`ready.json`",
        "`target/testenv/run/data`",
        "`admin@testenv`",
    ] {
        assert!(readme.contains(file), "README should name {file}");
    }
}

/// The README's table of client-go names and the crate docs' say the same:
/// each client-go name, in both, maps to the same type of ours.
#[test]
fn the_readme_and_the_crate_docs_map_client_go_names_alike() {
    let readme = read("README.md");
    let lib = read("src/lib.rs");
    let rows = |text: &str, after: &str, prefix: &str| -> Vec<(String, String)> {
        let start = text.find(after).unwrap_or_else(|| panic!("no {after:?}"));
        text[start..]
            .lines()
            .map(|l| l.strip_prefix(prefix).unwrap_or(l).trim())
            .skip_while(|l| !l.starts_with("| client-go"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| {
                let cells: Vec<&str> = l.trim_matches('|').split(" | ").collect();
                // The first type named in the right cell, without links.
                let ours = cells[1]
                    .split('`')
                    .nth(1)
                    .unwrap_or_default()
                    .rsplit("::")
                    .next()
                    .unwrap_or_default()
                    .to_owned();
                (cells[0].trim().to_owned(), ours)
            })
            .collect()
    };
    let in_readme = rows(&readme, "### For client-go users", "");
    let in_docs = rows(&lib, "# For client-go users", "//!");
    assert!(in_readme.len() >= 12, "{in_readme:?}");
    assert_eq!(in_readme, in_docs);
    for name in [
        "DynamicSharedInformerFactory",
        "GenericInformer",
        "GenericLister",
        "SharedIndexInformer",
        "IndexFunc",
        "ResourceEventHandler",
        "WaitForCacheSync",
        "HasSynced",
        "MetaNamespaceKeyFunc",
        "DeletedFinalStateUnknown",
    ] {
        assert!(
            in_readme.iter().any(|(theirs, _)| theirs.contains(name)),
            "{name} in the table"
        );
    }
}
