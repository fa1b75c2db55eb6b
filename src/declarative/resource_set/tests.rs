use std::path::Path;
use std::time::Duration;

use super::*;

#[test]
fn content_hashes_are_fnv1a_64() {
    // The FNV-1a reference values.
    assert_eq!(reload::content_hash(b""), "cbf29ce484222325");
    assert_eq!(reload::content_hash(b"a"), "af63dc4c8601ec8c");
    assert_eq!(reload::content_hash(b"foobar"), "85944171f73967e8");
}

#[test]
fn planning_errors_are_located_in_the_text() {
    let text = "apiVersion: v\nkind: k\ninformers:\n  - resource: pods\n  - resource: nosuch.example.com\n";
    let error = |pointer: &str, message: &str| PlanError {
        pointer: pointer.into(),
        message: message.into(),
        entry: None,
        answer: None,
    };
    let errors = locate(
        &[error("/informers/1/resource", "not served")],
        Some((Path::new("set.yaml"), text)),
    );
    assert_eq!(errors.len(), 1);
    assert_eq!(
        errors[0].to_string(),
        "set.yaml:5:15: informers[1].resource: not served"
    );
    // Without the text: the place in the document still.
    let errors = locate(&[error("/patterns/0/match", "boom")], None);
    assert_eq!(errors[0].to_string(), "<config>: patterns[0].match: boom");
}

#[test]
fn factory_errors_point_at_the_field_they_are_about() {
    let scoped = FactoryError::ClusterScoped(
        crate::vocabulary::scope::Scope::Cluster
            .check(
                "nodes.v1",
                &crate::vocabulary::scope::Namespaces::only(["a"]),
            )
            .unwrap_err(),
    );
    assert_eq!(
        error_pointer("/informers/2", &scoped),
        "/informers/2/namespaces"
    );
    assert_eq!(
        error_pointer("/informers/2", &FactoryError::ShutDown),
        "/informers/2/resource"
    );
}

#[test]
fn a_refused_reload_reads_like_config_errors() {
    let err = DeclarativeError::Config {
        reason: "failed",
        errors: vec![
            ConfigProblem {
                file: "a.yaml".into(),
                position: Some(crate::declarative::config::Position { line: 3, column: 7 }),
                path: "informers[0].resource".into(),
                message: "bad".into(),
            },
            ConfigProblem {
                file: "a.yaml".into(),
                position: None,
                path: String::new(),
                message: "worse".into(),
            },
        ],
    };
    assert_eq!(
        err.to_string(),
        "2 problems in config:\n  a.yaml:3:7: informers[0].resource: bad\n  a.yaml: worse"
    );
    let status = reload::failed("00".into(), &err);
    assert!(!status.success);
    assert_eq!(status.errors.len(), 2);
    assert!(status.at_unix_seconds() > 0.0);
}

#[test]
fn access_rechecks_are_never_more_often_than_a_second() {
    assert_eq!(AccessPolicy::Watch.recheck_period(), None);
    assert_eq!(
        AccessPolicy::skip().recheck_period(),
        Some(Duration::from_secs(30))
    );
    let eager = AccessPolicy::Skip {
        recheck: Duration::ZERO,
    };
    assert_eq!(eager.recheck_period(), Some(Duration::from_secs(1)));
}

#[test]
fn removals_say_why() {
    assert_eq!(
        Removal::NoLongerSelected.to_string(),
        "no longer selected by its pattern"
    );
    assert_eq!(
        Removal::Forbidden("list denied".into()).to_string(),
        "access denied: list denied"
    );
}
