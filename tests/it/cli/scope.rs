//! One rule for a namespace on a cluster-scoped resource, in every entry
//! point: named with `-r` and `-n`, or in a config file's entry, it is
//! refused with the same words.

use super::{assert_exit, documented_exit, kdi, stderr};
use crate::support::User;

#[tokio::test]
async fn a_namespace_on_a_cluster_scoped_resource_is_refused_everywhere() {
    let refused = documented_exit("Invalid arguments");
    for command in ["get", "watch"] {
        let out = kdi(
            User::Admin,
            &[
                command,
                "-r",
                "namespaces",
                "-n",
                "team-a",
                "--timeout",
                "10s",
            ],
        )
        .await;
        assert_exit(&out, refused);
        let err = stderr(&out);
        assert!(
            err.contains("is cluster-scoped: it cannot be restricted to namespaces (team-a)"),
            "{command}: {err}"
        );
    }
    let path = std::env::temp_dir().join(format!("kdi-scope-{}.yaml", crate::support::suffix()));
    std::fs::write(
        &path,
        "apiVersion: kube-dynamic-informer.io/v1alpha1\n\
         kind: InformerSet\n\
         informers:\n\
         - resource: namespaces\n\
         \x20 namespaces: [team-a]\n",
    )
    .unwrap();
    let path = path.to_str().unwrap();
    let out = kdi(User::Admin, &["get", "-f", path, "--timeout", "10s"]).await;
    assert_exit(&out, refused);
    assert!(
        stderr(&out).contains("is cluster-scoped: it cannot be restricted to namespaces (team-a)"),
        "{}",
        stderr(&out)
    );
    let out = kdi(User::Admin, &["check", "--cluster", path]).await;
    assert_exit(&out, refused);
    assert!(
        stderr(&out).contains("is cluster-scoped: it cannot be restricted to namespaces (team-a)"),
        "check --cluster: {}",
        stderr(&out)
    );
    std::fs::remove_file(path).unwrap();
}
