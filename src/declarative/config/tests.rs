use std::time::Duration;

use proptest::prelude::*;

use super::validate::PATTERN_FIELDS;
use super::*;
use crate::informer::WhenNotServed;

const HEADER: &str = "apiVersion: kube-dynamic-informer.io/v1alpha1\nkind: InformerSet\n";

fn load(body: &str) -> Result<InformerSet, DeclarativeError> {
    InformerSet::load_str(&format!("{HEADER}{body}"), "test.yaml")
}

/// The errors as `line:column message` strings.
fn errors(body: &str) -> Vec<String> {
    load(body)
        .unwrap_err()
        .problems()
        .iter()
        .map(|e| {
            let at = e.position.expect("a position");
            format!("{}:{} {}", at.line, at.column, e.message)
        })
        .collect()
}

#[test]
fn a_full_file_loads_with_defaults_applied() {
    let set = load(
        r#"defaults:
  stripManagedFields: true
  resync: 10m
  whenNotServed: skip
informers:
  - resource: pods
    namespaces: [shop, ops]
    labelSelector: "app in (web, api), !canary"
    fieldSelector: status.phase=Running
    indexes:
      node: spec.nodeName
      labelKeys: keys(metadata.labels)
  - name: widgets-meta
    resource: widgets.example.com
    metadataOnly: true
    resync: "0"
    whenNotServed: wait
    pageSize: 100
    streamingList: true
"#,
    )
    .unwrap();
    assert_eq!(set.informers.len(), 2);
    let resolved = &set.informers;
    assert!(resolved[0].options.cache.strip_managed_fields);
    assert_eq!(resolved[0].options.cache.resync, Duration::from_secs(600));
    assert_eq!(resolved[0].options.when_not_served, WhenNotServed::Skip);
    assert_eq!(
        resolved[0].options.watch.namespaces,
        crate::vocabulary::scope::Namespaces::only(["ops", "shop"])
    );
    assert_eq!(resolved[1].options.cache.resync, Duration::ZERO);
    assert!(resolved[1].options.cache.strip_managed_fields, "inherited");
    assert!(resolved[1].options.watch.metadata_only && resolved[1].options.watch.streaming_list);
    assert_eq!(resolved[1].options.watch.page_size, 100);
    assert_eq!(resolved[1].options.when_not_served, WhenNotServed::Wait);
    assert_eq!(resolved[1].name(), "widgets-meta");
    assert_eq!(resolved[0].name(), "pods");
    assert_eq!(resolved[0].indexes.len(), 2);
}

#[test]
fn a_projection_is_a_list_of_paths_inherited_like_other_options() {
    let set = load(
        r#"defaults:
  projection: [spec.nodeName, metadata.labels]
informers:
  - resource: pods
  - resource: widgets.example.com
    projection:
      - spec.color
      - metadata.labels["app.kubernetes.io/name"]
      - "metadata.annotations['example.com/owner']"
  - resource: configmaps
    projection: ['data["a.b"]', metadata.labels]
  - resource: secrets
    projection: []
"#,
    )
    .unwrap();
    let paths: Vec<Option<Vec<String>>> = set
        .informers
        .iter()
        .map(|i| i.options.cache.projection.as_ref().map(Projection::paths))
        .collect();
    assert_eq!(
        paths,
        [
            Some(vec!["metadata.labels".into(), "spec.nodeName".into()]),
            Some(vec![
                r#"metadata.annotations["example.com/owner"]"#.into(),
                r#"metadata.labels["app.kubernetes.io/name"]"#.into(),
                "spec.color".into(),
            ]),
            Some(vec![r#"data["a.b"]"#.into(), "metadata.labels".into()]),
            Some(vec![]),
        ]
    );
    assert_eq!(
        set.defaults.cache.projection,
        set.informers[0].options.cache.projection
    );
    let none = load("informers:\n  - resource: pods\n").unwrap();
    assert_eq!(none.informers[0].options.cache.projection, None);
}

#[test]
fn bad_projection_paths_are_reported_where_they_are() {
    let found = errors(
        r#"defaults:
  projection: [spec/nodeName]
informers:
  - resource: pods
    projection:
      - spec.nodeName
      - spec.containers[0].image
      - ""
      - 3
  - resource: configmaps
    projection: metadata.labels
"#,
    );
    let text = found.join("\n");
    for expected in [
        r#"4:16 projection path "spec/nodeName", column 5: expected `.`, `[` or the end, found `/`"#,
        r#"9:9 projection path "spec.containers[0].image", column 17: array elements cannot be chosen"#,
        "10:9 \"\" is shorter than 1 character",
        "11:9 3 is not of type \"string\"",
        "13:17 \"metadata.labels\" is not of types \"null\", \"array\"",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(found.len(), 5, "{text}");
}

#[test]
fn json_files_load_too() {
    let set = InformerSet::load_str(
        r#"{"apiVersion": "kube-dynamic-informer.io/v1alpha1", "kind": "InformerSet",
            "informers": [{"resource": "deployments.apps", "indexes": {"image": "spec.template.spec.containers[].image"}}]}"#,
        "set.json",
    )
    .unwrap();
    assert_eq!(set.informers[0].resource, "deployments.apps");
}

#[test]
fn every_error_is_reported_with_its_position() {
    let found = errors(
        r#"informers:
  - resource: pods
    labelSelector: "app in (web"
    colour: blue
    resync: 10 minutes
    indexes:
      bad: "spec.["
      namespace: metadata.namespace
  - resource: pods
    namespaces: [Shop, ok, ok]
    whenNotServed: sometimes
    pageSize: -1
"#,
    );
    let text = found.join("\n");
    for expected in [
        "5:20 label selector",          // bad selector, at its value
        "6:5 unknown field \"colour\"", // unknown field, at its key
        "7:13 invalid duration \"10 minutes\"",
        "9:12 index \"bad\"", // JMESPath error names the index
        "10:7 index name \"namespace\" is reserved",
        "11:15 duplicate informer name \"pods\"",
        "12:18 namespace \"Shop\" is not a valid name",
        "12:28 namespace \"ok\" is listed twice",
        "13:20 \"sometimes\" is not one of \"wait\", \"skip\", \"fail\"",
        "14:15", // pageSize minimum
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert!(found.len() >= 10, "{text}");
}

#[test]
fn the_offending_value_is_named() {
    let text = load("informers:\n  - resource: pods\n    pageSize: lots\n")
        .unwrap_err()
        .to_string();
    assert!(text.contains("\"lots\""), "{text}");
    assert!(text.contains("test.yaml:5:15"), "{text}");
    assert!(text.contains("informers[0].pageSize"), "{text}");
}

#[test]
fn wrong_api_version_kind_and_missing_informers() {
    let err = InformerSet::load_str("apiVersion: v1\nkind: ConfigMap\n", "x.yaml").unwrap_err();
    let text = err.to_string();
    assert!(text.contains("kube-dynamic-informer.io/v1alpha1"), "{text}");
    assert!(text.contains("InformerSet"), "{text}");
    assert!(text.contains("informers"), "{text}");
    let err = load("informers: []\n").unwrap_err();
    assert_eq!(err.problems().len(), 1, "{err}");
}

#[test]
fn duplicate_keys_are_errors() {
    let found = errors("informers:\n  - resource: pods\n    indexes:\n      a: x\n      a: y\n");
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("7:7 duplicate key \"a\"")),
        "{found:?}"
    );
}

#[test]
fn syntax_errors_and_unreadable_files_are_single_errors() {
    let err = InformerSet::load_str("informers: [", "bad.yaml").unwrap_err();
    assert_eq!(err.problems().len(), 1);
    assert!(err.to_string().contains("bad.yaml:"), "{err}");
    let err = InformerSet::load_file("/nonexistent/informers.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        "/nonexistent/informers.yaml: cannot read the file: No such file or directory (os error 2)",
        "no position for a file that is not there"
    );
}

#[test]
fn an_empty_file_says_it_is_empty() {
    for text in ["", "\n  \n", "# only a comment\n"] {
        let err = InformerSet::load_str(text, "empty.yaml").unwrap_err();
        assert_eq!(err.problems().len(), 1, "{err}");
        assert_eq!(err.problems()[0].position, None);
        assert!(
            err.to_string()
                .starts_with("empty.yaml: the file is empty;"),
            "{err}"
        );
    }
}

#[test]
fn one_problem_is_one_line() {
    let err = load("informers:\n  - resource: pods\n    whenNotServed: sometimes\n").unwrap_err();
    assert_eq!(
        err.to_string(),
        "test.yaml:5:20: informers[0].whenNotServed: \"sometimes\" is not one of \"wait\", \"skip\", \"fail\""
    );
    let err =
        load("informers:\n  - resource: pods\n    pageSize: -1\n    sensitive: 3\n").unwrap_err();
    assert_eq!(err.to_string().lines().count(), 3, "{err}");
    assert!(
        err.to_string().starts_with("2 problems in config:"),
        "{err}"
    );
}

#[test]
fn indexes_are_limited_and_large_values_are_not_quoted() {
    let many: String = (0..=MAX_INDEXES)
        .map(|i| format!("      i{i}: metadata.name\n"))
        .collect();
    let err = load(&format!(
        "informers:\n  - resource: pods\n    indexes:\n{many}"
    ))
    .unwrap_err();
    let text = err.to_string();
    assert_eq!(err.problems().len(), 1, "{text}");
    assert!(
        text.contains(&format!(
            "informers[0].indexes: an object of {} entries: at most {MAX_INDEXES} are allowed",
            MAX_INDEXES + 1
        )),
        "{text}"
    );
    let long = "x".repeat(1000);
    let err = load(&format!(
        "informers:\n  - resource: pods\n    pageSize: \"{long}\"\n"
    ))
    .unwrap_err();
    let text = err.to_string();
    assert!(!text.contains(&long), "{text}");
    assert!(text.contains("a string of 1000 characters"), "{text}");
}

#[test]
fn hundreds_of_thousands_of_indexes_are_counted_not_built() {
    const MANY: usize = 200_000;
    let yaml: String = (0..MANY)
        .map(|i| format!("      i{i}: metadata.name\n"))
        .collect();
    let text = format!("{HEADER}informers:\n  - resource: pods\n    indexes:\n{yaml}");
    let err = InformerSet::load_str(&text, "test.yaml").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "test.yaml:6:7: informers[0].indexes: an object of {MANY} entries: at most {MAX_INDEXES} are allowed"
        )
    );
    // The entries past the limit were counted, never built.
    let doc = yaml::parse(&text, &entry_limit).unwrap();
    assert_eq!(
        doc.value["informers"][0]["indexes"]
            .as_object()
            .map(|m| m.len()),
        Some(MAX_INDEXES)
    );
    assert!(
        doc.values.len() < 2 * MAX_INDEXES,
        "{} positions",
        doc.values.len()
    );
    // The same in JSON, in a pattern, after a valid informer.
    let json: Vec<String> = (0..MANY).map(|i| format!("\"i{i}\": \"spec.x\"")).collect();
    let text = format!(
        r#"{{"apiVersion": "{API_VERSION}", "kind": "{KIND}", "informers": [{{"resource": "pods"}}],
"patterns": [{{"name": "p", "match": {{"groups": ["*"]}}, "indexes": {{{}}}}}]}}"#,
        json.join(", ")
    );
    let err = InformerSet::load_str(&text, "set.json").unwrap_err();
    assert_eq!(
        err.to_string(),
        format!(
            "set.json:2:67: patterns[0].indexes: an object of {MANY} entries: at most {MAX_INDEXES} are allowed"
        )
    );
}

#[test]
fn bad_resource_names_are_rejected_at_load() {
    let found = errors("informers:\n  - resource: pods/status\n  - resource: \"\"\n");
    assert!(
        found
            .iter()
            .any(|e| e.starts_with("4:15") && e.contains("subresource")),
        "{found:?}"
    );
    assert_eq!(
        found.iter().filter(|e| e.starts_with("5:15")).count(),
        1,
        "{found:?}"
    );
}

#[test]
fn durations() {
    use crate::vocabulary::duration::parse_duration;
    assert_eq!(parse_duration("0"), Ok(Duration::ZERO));
    assert_eq!(parse_duration("1.5s"), Ok(Duration::from_millis(1500)));
    assert_eq!(parse_duration("2h"), Ok(Duration::from_secs(7200)));
    for bad in [
        "",
        "s",
        "10",
        "5d",
        "1h 30m",
        "-1s",
        "1e400h",
        "99999999999h",
    ] {
        assert!(parse_duration(bad).is_err(), "{bad:?} accepted");
    }
}

#[test]
fn committed_schema_matches_the_types() {
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/schemas/informer-set.schema.json"
    );
    let generated = serde_json::to_string_pretty(&json_schema()).unwrap() + "\n";
    if std::env::var_os("KDI_UPDATE_SCHEMA").is_some() {
        std::fs::create_dir_all(concat!(env!("CARGO_MANIFEST_DIR"), "/schemas")).unwrap();
        std::fs::write(path, &generated).unwrap();
    }
    let committed = std::fs::read_to_string(path).unwrap_or_default();
    assert!(
        committed == generated,
        "schemas/informer-set.schema.json is out of date with the config types; regenerate it with:\n  KDI_UPDATE_SCHEMA=1 cargo test --lib config::tests::committed_schema_matches_the_types"
    );
}

#[test]
fn schema_is_draft_2020_12() {
    let schema = json_schema();
    assert_eq!(
        schema["$schema"],
        "https://json-schema.org/draft/2020-12/schema"
    );
    assert_eq!(schema["properties"]["kind"]["const"], KIND);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, ..ProptestConfig::default() })]

    #[test]
    fn arbitrary_text_never_panics(text in ".{0,400}") {
        let _ = InformerSet::load_str(&text, "fuzz.yaml");
    }

    #[test]
    fn yaml_like_text_never_panics(
        lines in proptest::collection::vec(
            prop_oneof![
                Just("informers:".to_string()),
                Just("  - resource: pods".to_string()),
                Just("    indexes:".to_string()),
                "[ -]{0,6}[a-zA-Z{}\\[\\]:,\"' ]{0,20}",
            ],
            0..20,
        )
    ) {
        let _ = InformerSet::load_str(&format!("{HEADER}{}", lines.join("\n")), "fuzz.yaml");
    }
}

/// Every example config validates against the committed schema (with a JSON
/// Schema validator, as an editor would) and loads.
#[test]
fn example_configs_validate_against_the_schema() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
    let schema: serde_json::Value = serde_json::from_str(
        &std::fs::read_to_string(root.join("schemas/informer-set.schema.json")).unwrap(),
    )
    .unwrap();
    let validator = jsonschema::draft202012::new(&schema).unwrap();
    let mut checked = 0;
    for entry in std::fs::read_dir(root.join("examples/configs")).unwrap() {
        let path = entry.unwrap().path();
        let text = std::fs::read_to_string(&path).unwrap();
        let value = yaml::parse(&text, &|_| None).unwrap().value;
        let problems: Vec<String> = validator
            .iter_errors(&value)
            .map(|e| e.to_string())
            .collect();
        assert!(problems.is_empty(), "{}: {problems:?}", path.display());
        InformerSet::load_file(&path).unwrap_or_else(|e| panic!("{e}"));
        checked += 1;
    }
    assert!(checked >= 3, "found {checked} example configs");
}

#[test]
fn patterns_load_with_defaults_and_their_problems_are_located() {
    let set = load(
        r#"defaults:
  stripManagedFields: true
patterns:
  - name: example-crds
    match:
      groups: ["*.example.com"]
      customResources: true
      exclude: [gadgets.example.com]
      scope: Namespaced
    namespaces: [shop]
    indexes:
      color: spec.color
"#,
    )
    .unwrap();
    assert!(set.informers.is_empty());
    let p = &set.patterns[0];
    assert_eq!(p.name, "example-crds");
    assert!(p.options.cache.strip_managed_fields, "inherited");
    assert_eq!(p.pattern.groups, ["*.example.com"]);
    assert_eq!(
        p.pattern.scope,
        Some(crate::factory::pattern::ScopeFilter::Namespaced)
    );
    assert_eq!(p.indexes.len(), 1);

    let found = errors(
        r#"informers:
  - resource: pods
patterns:
  - name: pods
    match:
      groups: [ok.io, Bad_Group]
      exclude: [""]
      colour: blue
    indexes:
      x: "spec.[("
  - name: nothing
    match: {}
"#,
    );
    assert_eq!(found.len(), 6, "{found:#?}");
    assert!(
        found[0].starts_with("6:11 duplicate informer name \"pods\""),
        "{found:#?}"
    );
    assert!(
        found[1].starts_with("8:23 group pattern \"Bad_Group\""),
        "{found:#?}"
    );
    assert!(
        found[2].starts_with("9:17 exclude entry \"\""),
        "{found:#?}"
    );
    assert!(
        found[3].starts_with("10:7 unknown field \"colour\""),
        "{found:#?}"
    );
    assert!(found[4].starts_with("12:10"), "{found:#?}");
    assert!(
        found[5].starts_with("14:12 a pattern needs at least one"),
        "{found:#?}"
    );
}

#[test]
fn a_file_needs_informers_or_patterns() {
    let found = errors("informers: []\n");
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(
        found[0].contains("no informers and no patterns"),
        "{found:?}"
    );
    let found = errors("defaults: {}\n");
    assert!(
        found[0].contains("no informers and no patterns"),
        "{found:?}"
    );
}

#[test]
fn pattern_fields_are_those_of_the_type() {
    let full = crate::factory::pattern::ResourcePattern::default()
        .groups(["a"])
        .categories(["b"])
        .custom_resources(true)
        .include(["c"])
        .exclude(["d"])
        .scope(crate::factory::pattern::ScopeFilter::Cluster)
        .version("v1");
    let value = serde_json::to_value(full).unwrap();
    let mut keys: Vec<&str> = value
        .as_object()
        .unwrap()
        .keys()
        .map(String::as_str)
        .collect();
    let mut known = PATTERN_FIELDS.to_vec();
    keys.sort_unstable();
    known.sort_unstable();
    assert_eq!(keys, known);
}

#[test]
fn a_bad_duration_is_said_once_in_words_and_snapshots_are_checked() {
    let found = errors(
        "defaults:\n  resync: 10 minutes\n  snapshot: { interval: soon, bogus: 1 }\ninformers:\n  - resource: pods\n",
    );
    assert_eq!(
        found,
        [
            "4:11 invalid duration \"10 minutes\": expected e.g. \"30s\", \"10m\", \"1h30m\", \"500ms\" or \"0\"",
            "5:13 a snapshot needs `dir`: the directory of the snapshot files",
            "5:25 invalid duration \"soon\": expected e.g. \"30s\", \"10m\", \"1h30m\", \"500ms\" or \"0\"",
            "5:31 unknown field \"bogus\"",
        ]
    );
}

#[test]
fn filters_and_changes_load_and_their_mistakes_are_located() {
    let set = load(
        r#"informers:
  - resource: widgets.example.com
    filter: "metadata.labels.tier == 'web'"
    changes: [spec, metadata.labels]
patterns:
  - name: crds
    match: { groups: ["*.example.com"] }
    changes: [metadata.generation]
"#,
    )
    .unwrap();
    let widgets = &set.informers[0];
    assert_eq!(
        widgets.filter.as_deref(),
        Some("metadata.labels.tier == 'web'")
    );
    assert_eq!(widgets.changes, ["spec", "metadata.labels"]);
    assert_eq!(set.patterns[0].filter, None);
    assert_eq!(set.patterns[0].changes, ["metadata.generation"]);

    let found = errors(
        r#"informers:
  - resource: pods
    filter: "status.["
    changes: [spec, "lenght(spec)", 3]
  - resource: deploy
    filter: [not, a, string]
    changes: spec
"#,
    );
    let text = found.join("\n");
    for expected in [
        "5:13 condition 'status.[' invalid at column",
        "6:21 change expression 'lenght(spec)' invalid at column 0: unknown function lenght()",
        "6:37",
        "8:13",
        "9:14",
    ] {
        assert!(text.contains(expected), "missing {expected:?} in:\n{text}");
    }
    assert_eq!(found.len(), 5, "{text}");
}

#[test]
fn an_entry_lists_at_most_max_changes_expressions() {
    let many: Vec<String> = (0..=MAX_CHANGES).map(|i| format!("spec.f{i}")).collect();
    let found = errors(&format!(
        "informers:\n  - resource: pods\n    changes: [{}]\n",
        many.join(", ")
    ));
    assert_eq!(found.len(), 1, "{found:?}");
    assert!(found[0].starts_with("5:14"), "{found:?}");
}
