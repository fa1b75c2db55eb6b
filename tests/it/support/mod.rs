//! Test support shared by every integration test.
//!
//! The tests run against a real kube-apiserver. Which one:
//! - `KDI_TEST_KUBECONFIG=/path/to/kubeconfig`: an existing **disposable**
//!   cluster (tests create namespaces and CRDs there). The ordinary users are
//!   played by impersonating `kdi-test-alice` / `kdi-test-bob`, so the
//!   kubeconfig's user needs the `impersonate` verb (cluster-admin has it).
//! - `KDI_TESTENV_DIR=/path/to/data-dir`: a testenv already running there
//!   (`scripts/testenv start` prints the path).
//! - otherwise: one testenv control plane started for this test binary and
//!   gone when it exits, of the Kubernetes release `KDI_TESTENV_VERSION`
//!   names (v1.37.2 when unset; see `scripts/testenv`).
//!
//! Tests that need a newer server than the oldest supported one check the
//! server's `/version` with [`server_at_least`] and skip otherwise.

#![allow(dead_code)]

pub mod controlplane;
pub mod prometheus;
pub mod proxy;

use std::path::PathBuf;
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use futures::{StreamExt, TryStreamExt};
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube_client::api::{Api, ApiResource, DynamicObject, PostParams};
use kube_client::config::{KubeConfigOptions, Kubeconfig};
use kube_client::{Client, Config};
use serde_json::json;

use controlplane::{ControlPlane, Options, Ready};

/// Whose credentials a client carries.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum User {
    /// In `system:masters`: may do anything.
    Admin,
    /// An ordinary user with no role at all.
    Alice,
    /// A second ordinary user with no role at all.
    Bob,
}

impl User {
    pub fn name(self) -> &'static str {
        match self {
            User::Admin => "admin",
            User::Alice => "alice",
            User::Bob => "bob",
        }
    }

    /// The user name the API server sees: testenv's token users, or the
    /// impersonated `kdi-test-*` users on an external cluster.
    pub fn subject_name(self) -> String {
        match env() {
            Env::External { .. } => format!("kdi-test-{}", self.name()),
            Env::Testenv { .. } => self.name().to_string(),
        }
    }
}

/// Where the tests' cluster comes from.
pub enum Env {
    /// A testenv control plane (started here, or already running).
    Testenv {
        ready: Ready,
        /// Held for the life of the test binary; `None` when it was already
        /// running.
        _process: Option<Box<std::sync::Mutex<ControlPlane>>>,
    },
    /// An existing disposable cluster.
    External { kubeconfig: PathBuf },
}

/// Compaction interval of the control plane this binary starts: short, so
/// that old resourceVersions of uncached resources expire (410) quickly.
pub const COMPACTION: Duration = Duration::from_secs(5);

/// A resource served without the watch cache, straight from etcd, so that a
/// watch or a continue token from a compacted revision gets 410 Gone.
pub const UNCACHED_RESOURCE: &str = "podtemplates";

/// The environment, started on first use.
pub fn env() -> &'static Env {
    static ENV: OnceLock<Env> = OnceLock::new();
    ENV.get_or_init(|| {
        if let Ok(path) = std::env::var("KDI_TEST_KUBECONFIG") {
            return Env::External {
                kubeconfig: PathBuf::from(path),
            };
        }
        if let Ok(dir) = std::env::var("KDI_TESTENV_DIR") {
            let ready = Ready::from_data_dir(std::path::Path::new(&dir))
                .unwrap_or_else(|e| panic!("KDI_TESTENV_DIR: {e}"));
            return Env::Testenv {
                ready,
                _process: None,
            };
        }
        let cp = ControlPlane::start(&local_options()).unwrap_or_else(|e| panic!("{e}"));
        Env::Testenv {
            ready: cp.ready().clone(),
            _process: Some(Box::new(std::sync::Mutex::new(cp))),
        }
    })
}

/// The options every testenv started by the tests uses.
/// The informer options of the tests: the defaults, in the storage mode
/// `KDI_TEST_STORAGE` names (`compact`, the default, or `objects`), so that
/// the whole suite can run against either:
/// `KDI_TEST_STORAGE=objects cargo test --features cli --test it`.
pub fn options() -> kube_dynamic_informer::InformerOptions {
    let storage = match std::env::var("KDI_TEST_STORAGE").as_deref() {
        Ok("compact") | Err(_) => kube_dynamic_informer::cache::Storage::Compact,
        Ok("objects") => kube_dynamic_informer::cache::Storage::Objects,
        Ok(other) => panic!("KDI_TEST_STORAGE={other:?}: expected objects or compact"),
    };
    kube_dynamic_informer::InformerOptions::default().storage(storage)
}

pub fn local_options() -> Options {
    Options {
        compaction: Some(COMPACTION),
        apiserver_args: vec![format!("--watch-cache-sizes={UNCACHED_RESOURCE}#0")],
        ..Options::default()
    }
}

/// True when the tests run against a testenv control plane (so they may
/// rely on its users, compaction interval and uncached resource).
pub fn is_testenv() -> bool {
    matches!(env(), Env::Testenv { .. })
}

/// A Kubernetes release as the server's `/version` names it (major and
/// minor; a provider suffix such as `34+` is ignored).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub struct ServerVersion {
    pub major: u32,
    pub minor: u32,
}

impl ServerVersion {
    /// Reads `major` and `minor` of a `/version` answer.
    pub fn parse(major: &str, minor: &str) -> Option<ServerVersion> {
        let number = |s: &str| {
            let digits: String = s.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().ok()
        };
        Some(ServerVersion {
            major: number(major)?,
            minor: number(minor)?,
        })
    }
}

impl std::fmt::Display for ServerVersion {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)
    }
}

/// The release of the tests' server, read from its `/version` once.
pub async fn server_version() -> ServerVersion {
    static VERSION: OnceLock<ServerVersion> = OnceLock::new();
    if let Some(v) = VERSION.get() {
        return *v;
    }
    let info = admin()
        .await
        .apiserver_version()
        .await
        .expect("reading the server's /version");
    let v = ServerVersion::parse(&info.major, &info.minor).unwrap_or_else(|| {
        panic!(
            "/version: cannot read major {:?} minor {:?} ({})",
            info.major, info.minor, info.git_version
        )
    });
    *VERSION.get_or_init(|| v)
}

/// Whether the server is Kubernetes `1.minor` or newer. When it is older,
/// says that the test is skipped, what for (`needs`) and on which release,
/// and returns false; the test then returns:
///
/// ```ignore
/// if !support::server_at_least(36, "a feature of v1.36").await {
///     return;
/// }
/// ```
pub async fn server_at_least(minor: u32, needs: &str) -> bool {
    let v = server_version().await;
    if v >= (ServerVersion { major: 1, minor }) {
        return true;
    }
    eprintln!("skipped: needs Kubernetes 1.{minor} or newer ({needs}); the server is {v}");
    false
}

/// Whether the server of `client` (an admin's) has the feature gate `name`
/// enabled, from the `kubernetes_feature_enabled` metric of its `/metrics`
/// (`None` when the server does not report that gate).
pub async fn feature_enabled(client: &Client, name: &str) -> Option<bool> {
    let text = server_metrics(client).await;
    let label = format!("name=\"{name}\"");
    text.lines()
        .filter(|l| l.starts_with("kubernetes_feature_enabled{") && l.contains(&label))
        .find_map(|l| l.rsplit(' ').next())
        .map(|value| value.trim() == "1")
}

/// A client configuration for `user`.
pub async fn config(user: User) -> Config {
    match env() {
        Env::Testenv { ready, .. } => config_from_file(ready.kubeconfig(user.name())).await,
        Env::External { kubeconfig } => {
            let mut cfg = config_from_file(kubeconfig).await;
            if user != User::Admin {
                cfg.auth_info.impersonate = Some(format!("kdi-test-{}", user.name()));
            }
            cfg
        }
    }
}

/// The kubeconfig file of `user` (on an external cluster: the admin's,
/// which impersonation turns into another user only through [`config`]).
pub fn kubeconfig_path(user: User) -> PathBuf {
    match env() {
        Env::Testenv { ready, .. } => ready.kubeconfig(user.name()).to_path_buf(),
        Env::External { kubeconfig } => kubeconfig.clone(),
    }
}

/// Loads a client configuration from a kubeconfig file.
pub async fn config_from_file(path: &std::path::Path) -> Config {
    let kc = Kubeconfig::read_from(path)
        .unwrap_or_else(|e| panic!("reading kubeconfig {}: {e}", path.display()));
    Config::from_custom_kubeconfig(kc, &KubeConfigOptions::default())
        .await
        .unwrap_or_else(|e| panic!("loading kubeconfig {}: {e}", path.display()))
}

/// A client for `user`. Make one per test: a client belongs to the tokio
/// runtime it was made in.
pub async fn client(user: User) -> Client {
    Client::try_from(config(user).await).expect("building client")
}

/// The admin client.
pub async fn admin() -> Client {
    client(User::Admin).await
}

/// Lets `user` get, list and watch ConfigMaps in `ns` (a Role and a
/// RoleBinding named `read-cm-<user>`).
pub async fn grant_configmap_read(admin: &Client, ns: &str, user: User) {
    grant_read(
        admin,
        ns,
        user,
        "",
        "configmaps",
        &format!("read-cm-{}", user.name()),
    )
    .await;
}

/// Lets `user` get, list and watch `plural` of `api_group` in `ns`: a Role
/// and a RoleBinding, both named `name`.
pub async fn grant_read(
    admin: &Client,
    ns: &str,
    user: User,
    api_group: &str,
    plural: &str,
    name: &str,
) {
    use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
    let role: Role = serde_json::from_value(json!({
        "metadata": { "name": name },
        "rules": [{ "apiGroups": [api_group], "resources": [plural], "verbs": ["get", "list", "watch"] }]
    }))
    .unwrap();
    let binding: RoleBinding = serde_json::from_value(json!({
        "metadata": { "name": name },
        "roleRef": { "apiGroup": "rbac.authorization.k8s.io", "kind": "Role", "name": name },
        "subjects": [{ "apiGroup": "rbac.authorization.k8s.io", "kind": "User", "name": user.subject_name() }]
    }))
    .unwrap();
    Api::<Role>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &role)
        .await
        .unwrap();
    Api::<RoleBinding>::namespaced(admin.clone(), ns)
        .create(&PostParams::default(), &binding)
        .await
        .unwrap();
}

/// A number field of `/proc/PID/status` (`pid`: a process id or `self`),
/// in its unit (`VmRSS:` in kB, `Threads:` a count); 0 when unreadable.
pub fn proc_status(pid: &str, field: &str) -> u64 {
    std::fs::read_to_string(format!("/proc/{pid}/status"))
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix(field))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse().ok())
        })
        .unwrap_or(0)
}

/// A short random lowercase suffix for names.
pub fn suffix() -> String {
    const CHARS: &[u8] = b"abcdefghijklmnopqrstuvwxyz0123456789";
    (0..6)
        .map(|_| CHARS[rand::random_range(0..CHARS.len())] as char)
        .collect()
}

/// Creates a fresh namespace `<prefix>-<random>` and returns its name. Tests
/// do not delete it: without a controller-manager a deleted namespace stays
/// Terminating.
pub async fn namespace(client: &Client, prefix: &str) -> String {
    let name = format!("{}-{}", prefix.to_lowercase().replace('_', "-"), suffix());
    let ns: Namespace = serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "kdi-test": "true" } }
    }))
    .unwrap();
    Api::<Namespace>::all(client.clone())
        .create(&PostParams::default(), &ns)
        .await
        .unwrap_or_else(|e| panic!("creating namespace {name}: {e}"));
    name
}

/// Polls `check` every 100 ms until it returns `Some`, or panics after
/// `timeout` naming `what` and the last state seen.
pub async fn wait_for<T, F, Fut>(what: &str, timeout: Duration, mut check: F) -> T
where
    F: FnMut() -> Fut,
    Fut: std::future::Future<Output = Result<T, String>>,
{
    let deadline = Instant::now() + timeout;
    loop {
        let last = match check().await {
            Ok(v) => return v,
            Err(e) => e,
        };
        if Instant::now() > deadline {
            panic!("timed out after {timeout:?} waiting for {what}; last: {last}");
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
}

/// A namespaced CRD `widgets.<group>` (kind `Widget`, short name `wdg`)
/// with a free-form spec and status, versions v1 (served, storage).
pub fn widget_crd(group: &str) -> CustomResourceDefinition {
    serde_json::from_value(json!({
        "apiVersion": "apiextensions.k8s.io/v1",
        "kind": "CustomResourceDefinition",
        "metadata": { "name": format!("widgets.{group}") },
        "spec": {
            "group": group,
            "scope": "Namespaced",
            "names": {
                "plural": "widgets", "singular": "widget", "kind": "Widget",
                "listKind": "WidgetList", "shortNames": ["wdg"]
            },
            "versions": [{
                "name": "v1", "served": true, "storage": true,
                "schema": { "openAPIV3Schema": {
                    "type": "object",
                    "properties": {
                        "spec": { "type": "object", "x-kubernetes-preserve-unknown-fields": true },
                        "status": { "type": "object", "x-kubernetes-preserve-unknown-fields": true }
                    }
                }},
                "subresources": { "status": {} }
            }]
        }
    }))
    .unwrap()
}

/// A group name no other test uses.
pub fn unique_group() -> String {
    format!("t{}.kdi-test.example.com", suffix())
}

/// Creates a CRD and waits until discovery serves its first version;
/// returns the `ApiResource` of that version.
pub async fn install_crd(client: &Client, crd: &CustomResourceDefinition) -> ApiResource {
    let crds = Api::<CustomResourceDefinition>::all(client.clone());
    let name = crd.metadata.name.clone().expect("CRD has a name");
    crds.create(&PostParams::default(), crd)
        .await
        .unwrap_or_else(|e| panic!("creating CRD {name}: {e}"));
    wait_until_served(client, crd).await
}

/// Waits until discovery lists the CRD's resource in its first version.
pub async fn wait_until_served(client: &Client, crd: &CustomResourceDefinition) -> ApiResource {
    let group = crd.spec.group.clone();
    let version = crd.spec.versions[0].name.clone();
    let plural = crd.spec.names.plural.clone();
    let gv = kube_client::core::GroupVersion::gv(&group, &version);
    wait_for(
        &format!("discovery to serve {plural}.{version}.{group}"),
        Duration::from_secs(60),
        || {
            let gv = gv.clone();
            let plural = plural.clone();
            async move {
                let g = kube_client::discovery::pinned_group(client, &gv)
                    .await
                    .map_err(|e| e.to_string())?;
                g.recommended_resources()
                    .into_iter()
                    .find(|(ar, _)| ar.plural == plural)
                    .map(|(ar, _)| ar)
                    .ok_or_else(|| format!("group {gv:?} served without {plural}"))
            }
        },
    )
    .await
}

/// Creates `objects` with up to `concurrency` requests in flight; returns
/// the created objects (in completion order).
pub async fn create_many(
    api: &Api<DynamicObject>,
    objects: Vec<DynamicObject>,
    concurrency: usize,
) -> Vec<DynamicObject> {
    futures::stream::iter(objects.into_iter().map(|o| {
        let api = api.clone();
        async move { api.create(&PostParams::default(), &o).await }
    }))
    .buffer_unordered(concurrency)
    .try_collect()
    .await
    .expect("creating objects")
}

/// `podtemplates.v1`: the resource testenv serves without the watch cache
/// ([`UNCACHED_RESOURCE`]), so a compacted resourceVersion gets 410.
pub fn pod_templates() -> ApiResource {
    ApiResource {
        group: String::new(),
        version: "v1".into(),
        api_version: "v1".into(),
        kind: "PodTemplate".into(),
        plural: "podtemplates".into(),
    }
}

/// A small PodTemplate labelled `app=demo`.
pub fn pod_template(name: &str) -> k8s_openapi::api::core::v1::PodTemplate {
    serde_json::from_value(json!({
        "metadata": { "name": name, "labels": { "app": "demo" } },
        "template": { "spec": { "containers": [{ "name": "c", "image": "busybox" }] } }
    }))
    .unwrap()
}

/// A `Widget` object for `widget_crd`.
pub fn widget(ar: &ApiResource, name: &str, spec: serde_json::Value) -> DynamicObject {
    let mut o = DynamicObject::new(name, ar);
    o.data = json!({ "spec": spec });
    o
}

/// Waits until `rv` is compacted away: a watch of the pod templates of
/// `api` from it gets 410. Writes a `pacer` template meanwhile, so that the
/// revision moves and compaction has something to do.
pub async fn wait_until_compacted(api: &Api<k8s_openapi::api::core::v1::PodTemplate>, rv: &str) {
    use kube_client::api::{Patch, PatchParams, WatchParams};
    wait_for(
        "the resourceVersion to be compacted",
        COMPACTION * 8,
        || {
            let api = api.clone();
            let rv = rv.to_string();
            async move {
                let _ = api
                    .patch(
                        "pacer",
                        &PatchParams::apply("kdi-test"),
                        &Patch::Apply(&pod_template("pacer")),
                    )
                    .await;
                match api.watch(&WatchParams::default().timeout(1), &rv).await {
                    Err(kube_client::Error::Api(s)) if s.code == 410 => Ok(()),
                    Ok(s) => match s.boxed().next().await {
                        Some(Ok(kube_client::api::WatchEvent::Error(e))) if e.code == 410 => Ok(()),
                        _ => Err("still served".into()),
                    },
                    Err(e) => Err(e.to_string()),
                }
            }
        },
    )
    .await;
}

/// How many list requests of `resource` (a plural, in any group) the API
/// server of `client` (an admin's) has served, from
/// `apiserver_request_total` in its `/metrics`.
pub async fn server_list_requests(client: &Client, resource: &str) -> f64 {
    let text = server_metrics(client).await;
    let label = format!("resource=\"{resource}\"");
    text.lines()
        .filter(|l| {
            l.starts_with("apiserver_request_total{")
                && l.contains("verb=\"LIST\"")
                && l.contains(&label)
        })
        .filter_map(|l| l.rsplit(' ').next()?.trim().parse::<f64>().ok())
        .sum()
}

/// The `/metrics` text of the API server of `client` (an admin's).
async fn server_metrics(client: &Client) -> String {
    let request = http::Request::get("/metrics")
        .body(Vec::new())
        .expect("a /metrics request");
    client
        .request_text(request)
        .await
        .expect("reading the server's /metrics")
}

/// A directory of its own under the system's temporary directory, empty:
/// `kdi-NAME-SUFFIX`.
pub fn scratch_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("kdi-{name}-{}", suffix()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// A kubeconfig, in a scratch directory, of a server on a local port
/// nothing listens on any more.
pub fn unreachable_kubeconfig(name: &str) -> (PathBuf, u16) {
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .unwrap()
        .port();
    let dir = scratch_dir(name);
    std::fs::create_dir_all(&dir).unwrap();
    let kubeconfig = dir.join("kubeconfig");
    std::fs::write(
        &kubeconfig,
        format!(
            "apiVersion: v1\nkind: Config\ncurrent-context: c\n\
             clusters: [{{ name: c, cluster: {{ server: \"https://127.0.0.1:{port}\" }} }}]\n\
             users: [{{ name: u, user: {{ token: t }} }}]\n\
             contexts: [{{ name: c, context: {{ cluster: c, user: u }} }}]\n"
        ),
    )
    .unwrap();
    (kubeconfig, port)
}

/// Each cached object's name and resourceVersion, sorted by name.
pub fn cached_versions(store: &kube_dynamic_informer::cache::Store) -> Vec<(String, String)> {
    let mut cached: Vec<(String, String)> = store
        .list_all()
        .iter()
        .map(|o| {
            (
                o.name().unwrap_or_default().to_owned(),
                o.resource_version().unwrap_or_default().to_owned(),
            )
        })
        .collect();
    cached.sort();
    cached
}
