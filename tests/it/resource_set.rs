//! Resource sets against the real server: patterns following CRDs as they
//! come, change version and go; reloads of a running `kdi watch`; access
//! checks for a user who may watch only part of what is declared.

mod access;
#[cfg(feature = "cli")]
mod cli;
mod example;
mod patterns;
mod shard_group;

/// A set built in code gets its indexes compiled once, when it is built:
/// each member carries its index functions (the cache has them under the
/// declared names), and an expression that does not compile refuses the
/// set, located at its index, rather than being left out with a warning.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_set_built_in_code_compiles_its_indexes_once_and_refuses_a_bad_one() {
    use kube_dynamic_informer::declarative::{DeclarativeError, InformerSet, ResourceSet};
    use kube_dynamic_informer::vocabulary::Namespaces;

    let admin = crate::support::admin().await;
    let ns = crate::support::namespace(&admin, "rs-indexes").await;
    let set_with = |expression: &str| {
        let mut set = InformerSet::from_names(
            &["configmaps".to_owned()],
            Default::default(),
            &Namespaces::only([ns.clone()]),
            &[],
            None,
        )
        .unwrap();
        // Set in code after loading: nothing has checked it.
        set.informers[0]
            .indexes
            .insert("team".to_owned(), expression.to_owned());
        set
    };
    let set = ResourceSet::new(admin.clone(), set_with("metadata.labels.team"))
        .await
        .unwrap();
    let members = set.members().await;
    assert_eq!(members.len(), 1);
    let team = &members[0].indexes["team"];
    assert_eq!(team.expression(), Some("metadata.labels.team"));
    assert!(
        members[0]
            .informer
            .informer()
            .store()
            .index_names()
            .contains(&"team".to_owned())
    );
    set.shutdown().await;

    let Err(err) = ResourceSet::new(admin.clone(), set_with("metadata.labels.(")).await else {
        panic!("a bad expression refuses the set");
    };
    assert!(matches!(err, DeclarativeError::Config { .. }), "{err:?}");
    let problem = &err.problems()[0];
    assert_eq!(problem.path, "informers[0].indexes.team", "{err}");
    assert!(problem.message.contains(r#"index "team""#), "{err}");
}
