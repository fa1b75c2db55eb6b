//! `kdi serve`: the caches of `-r` served until SIGTERM, reached through the
//! kubeconfig it writes.

use std::time::Duration;

use kube_client::api::{Api, DynamicObject, ListParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use kube_core::ApiResource;

use super::Running;
use crate::support::{self, User, wait_for};

#[tokio::test]
async fn kdi_serve_writes_a_kubeconfig_that_reads_its_caches_and_stops_at_sigterm() {
    let admin = support::admin().await;
    let ns = support::namespace(&admin, "cli-serve").await;
    let config_maps: Api<k8s_openapi::api::core::v1::ConfigMap> =
        Api::namespaced(admin.clone(), &ns);
    for name in ["a", "b"] {
        config_maps
            .create(
                &Default::default(),
                &serde_json::from_value(serde_json::json!({ "metadata": { "name": name } }))
                    .unwrap(),
            )
            .await
            .unwrap();
    }
    let dir = support::scratch_dir("cli-serve");
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kdi.kubeconfig");
    let kubeconfig_arg = kubeconfig.display().to_string();
    let mut running = Running::start(
        User::Admin,
        &[
            "serve",
            "-r",
            "configmaps",
            "-n",
            &ns,
            "--kubeconfig-out",
            &kubeconfig_arg,
        ],
        &[],
    );
    running
        .stderr_until("every cache synced", Duration::from_secs(60), |line| {
            line.contains("every cache synced")
        })
        .await;
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(&kubeconfig).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600, "the kubeconfig holds a token");
    }
    let config = Config::from_custom_kubeconfig(
        Kubeconfig::read_from(&kubeconfig).unwrap(),
        &KubeConfigOptions::default(),
    )
    .await
    .unwrap();
    let served: Api<DynamicObject> = Api::namespaced_with(
        Client::try_from(config).unwrap(),
        &ns,
        &ApiResource::erase::<k8s_openapi::api::core::v1::ConfigMap>(&()),
    );
    let names = wait_for("the served list", Duration::from_secs(30), || async {
        let list = served
            .list(&ListParams::default())
            .await
            .map_err(|e| e.to_string())?;
        let mut names: Vec<String> = list
            .items
            .into_iter()
            .filter_map(|o| o.metadata.name)
            .collect();
        names.sort();
        Ok(names)
    })
    .await;
    assert_eq!(names, ["a", "b"]);

    let sent = std::process::Command::new("kill")
        .args(["-TERM", &running.child.id().unwrap().to_string()])
        .status()
        .expect("running kill");
    assert!(sent.success());
    let (code, _, err) = running.end().await;
    assert_eq!(code, Some(0), "{err}");
}
