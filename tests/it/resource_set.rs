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

/// A namespace restriction an informer inherits from the config's
/// defaults does not apply to a cluster-scoped resource it names (as in a
/// factory's own defaults), even in a factory whose defaults differ; one it
/// sets itself is refused there, located at its `namespaces`.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_inherited_namespace_restriction_does_not_apply_to_a_cluster_scoped_resource() {
    use kube_dynamic_informer::declarative::{AccessPolicy, InformerSet, ResourceSet};
    use kube_dynamic_informer::factory::InformerFactory;
    use kube_dynamic_informer::vocabulary::Namespaces;

    let admin = crate::support::admin().await;
    let ns = crate::support::namespace(&admin, "rs-inherit").await;
    let names = ["configmaps".to_owned(), "clusterroles".to_owned()];
    let only = Namespaces::only([ns.clone()]);
    let mut config = InformerSet::from_names(&names, Default::default(), &only, &[], None).unwrap();
    config.defaults.watch.namespaces = only.clone();
    for informer in &mut config.informers {
        informer.options.cache.storage = crate::support::options().cache.storage;
    }
    // A factory of its own, watching all namespaces by default.
    let factory = InformerFactory::new(admin.clone());
    let set = ResourceSet::in_factory(factory, config.clone(), AccessPolicy::Watch, None)
        .await
        .unwrap();
    let members = set.members().await;
    let namespaces = |resource: &str| {
        let member = members.iter().find(|m| m.resource == resource).unwrap();
        member.informer.options().watch.namespaces.clone()
    };
    assert_eq!(namespaces("configmaps"), only);
    assert_eq!(namespaces("clusterroles"), Namespaces::All);
    set.shutdown().await;

    // Set by the entry itself: refused, at the entry's namespaces.
    config.defaults.watch.namespaces = Namespaces::All;
    let Err(err) = ResourceSet::new(admin.clone(), config).await else {
        panic!("a namespace restriction on clusterroles refuses the set");
    };
    let problem = &err.problems()[0];
    assert_eq!(problem.path, "informers[1].namespaces", "{err}");
}
