//! TLS verification and secrets: verification stays on unless the
//! kubeconfig turns it off, and no bearer token or client key shows up in
//! logs, statuses or errors.

use std::fmt::Write as _;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use kube_client::api::{Api, DynamicObject};
use kube_dynamic_informer::informer::InformerError;
use kube_dynamic_informer::informer::{InformerStatus, SharedInformer};
use kube_dynamic_informer::vocabulary::Scope;
use tokio_util::sync::CancellationToken;

use super::{config_map_maker, configmaps};
use crate::support::{self, wait_for};

/// A CA certificate that signed nothing testenv uses (made once with
/// `openssl req -x509 -newkey rsa:2048 -subj /CN=kdi-test-unrelated-ca`; its
/// key was thrown away).
const UNRELATED_CA: &str = "-----BEGIN CERTIFICATE-----
MIIDMzCCAhugAwIBAgIUBbQLMNIQrwxiqTAj9SLWfOt/4VwwDQYJKoZIhvcNAQEL
BQAwIDEeMBwGA1UEAwwVa2RpLXRlc3QtdW5yZWxhdGVkLWNhMCAXDTI2MTIwMjE2
MTUxMFoYDzIxMjYxMTA4MTYxNTEwWjAgMR4wHAYDVQQDDBVrZGktdGVzdC11bnJl
bGF0ZWQtY2EwggEiMA0GCSqGSIb3DQEBAQUAA4IBDwAwggEKAoIBAQCQp1QNELLB
JDDGbuc+bQdxrUUW9ocjBaspVkGDmjHBM1r0403kgotDVnLKGF/M+zbYYbop3rnx
jJM6bSm8sprCx3dTy0kNVFikGFw5s0J/n3bWCq2mSpKp/1OWwlZn2dbcOY3Un3RJ
7hmcSb3u5b2yp5BkfXYaL7etTx24MyiWbL9r1OBGzUihIarigwJ8vkGlSU0PE3la
wky8+7RcuTxNqjW/IiK7FV5uu4ILLNqjxGjRbKGBkJBl/sapaHZkiXUdYRPvmmKJ
amABm5T83i3VDr1eFv0YluZKUnaOxZmVByqudI9R8QbdQ4nTcamdNvDsDVETERpj
ZzA1HDCwwcqHAgMBAAGjYzBhMB0GA1UdDgQWBBS9i/LjcCehdrgu68zG6fOb5xN4
cTAfBgNVHSMEGDAWgBS9i/LjcCehdrgu68zG6fOb5xN4cTAPBgNVHRMBAf8EBTAD
AQH/MA4GA1UdDwEB/wQEAwIBBjANBgkqhkiG9w0BAQsFAAOCAQEADImNCpsSqv3s
Gc+jEv842wrsPbVcdRop1R1WiPW1tatgTOG7PNAvNS4LYVqwB3ZmOqIQTKRoNXyk
qo5u2BBAu1eoWcCXYo8yuQD8Wh6bSWicoRlT9SORcigCtVzuUWN1/LP9fOX4wjuf
0i50oCVwvf3eBs0/R89v2yvvCuZm966qriCfvPIwfNMiszr3P0Oav34teOvbWJrn
g872HyVaVfXPWrQOKSeKzwyxm4wiTH6dZfMXnkSpY4hPFvMvEWAOtV7IS64+kTLh
pJz3roaE9eElOASZuN392R3GEaeYlxgIL7YVerYW6D894IdVch+NPecTlsmljPZA
Q0+/H/IdtQ==
-----END CERTIFICATE-----
";

/// A `tracing` writer into a shared buffer.
#[derive(Clone, Default)]
struct Captured(Arc<Mutex<Vec<u8>>>);

impl std::io::Write for Captured {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.lock().unwrap().extend_from_slice(buf);
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

impl Captured {
    fn text(&self) -> String {
        String::from_utf8_lossy(&self.0.lock().unwrap()).into_owned()
    }
}

/// How a scenario's kubeconfig reaches and trusts the server.
struct Kubeconfig<'a> {
    server: &'a str,
    /// `certificate-authority` file, if any.
    ca: Option<&'a Path>,
    /// `insecure-skip-tls-verify`, if written.
    insecure: Option<bool>,
    token: &'a str,
    /// `client-certificate` and `client-key` files, if any.
    client_cert: Option<(&'a Path, &'a Path)>,
}

impl Kubeconfig<'_> {
    fn write(&self, path: &Path) {
        let mut cluster = format!("    server: {}\n", self.server);
        if let Some(ca) = self.ca {
            writeln!(cluster, "    certificate-authority: {}", ca.display()).unwrap();
        }
        if let Some(insecure) = self.insecure {
            writeln!(cluster, "    insecure-skip-tls-verify: {insecure}").unwrap();
        }
        let mut user = format!("    token: {}\n", self.token);
        if let Some((cert, key)) = self.client_cert {
            writeln!(user, "    client-certificate: {}", cert.display()).unwrap();
            writeln!(user, "    client-key: {}", key.display()).unwrap();
        }
        let text = format!(
            "apiVersion: v1\nkind: Config\nclusters:\n- name: c\n  cluster:\n{cluster}users:\n- name: u\n  user:\n{user}contexts:\n- name: x\n  context:\n    cluster: c\n    user: u\ncurrent-context: x\n"
        );
        std::fs::File::create(path)
            .and_then(|mut f| f.write_all(text.as_bytes()))
            .unwrap();
    }
}

/// What one scenario produced that a user or a log could see.
struct Outcome {
    status: InformerStatus,
    /// Status, errors and their sources, as Display and Debug text.
    texts: Vec<String>,
    synced: bool,
}

/// Runs an informer on configmaps of `ns` with `kubeconfig` until it syncs
/// or has failed at least twice.
async fn run_scenario(kubeconfig: &Path, ns: &str) -> Outcome {
    let config = support::config_from_file(kubeconfig).await;
    let client = kube_client::Client::try_from(config).expect("client");
    let hooked: Arc<Mutex<Vec<String>>> = Arc::default();
    let h = hooked.clone();
    let options = crate::support::options()
        .namespace(ns)
        .backoff(super::quick_backoff());
    let informer =
        SharedInformer::new(client, configmaps(), Scope::Namespaced, options.clone()).unwrap();
    informer.on_error(move |e: &InformerError| {
        let mut texts = vec![e.to_string(), format!("{e:?}")];
        let mut source = std::error::Error::source(e);
        while let Some(s) = source {
            texts.push(s.to_string());
            texts.push(format!("{s:?}"));
            source = s.source();
        }
        h.lock().unwrap().extend(texts);
    });
    let cancel = CancellationToken::new();
    informer.start(cancel.clone()).unwrap();
    let synced = wait_for("sync or two failures", Duration::from_secs(30), || async {
        match informer.status() {
            InformerStatus::Synced => Ok(true),
            InformerStatus::BackingOff { attempt, .. } if attempt >= 2 => Ok(false),
            other => Err(other.to_string()),
        }
    })
    .await;
    let status = informer.status();
    let mut texts = hooked.lock().unwrap().clone();
    texts.push(status.to_string());
    texts.push(format!("{status:?}"));
    texts.push(format!("{informer:?}"));
    texts.push(format!("{options:?}"));
    if let Err(e) = informer.wait_for_sync(Duration::from_millis(200)).await {
        texts.push(e.to_string());
        texts.push(format!("{e:?}"));
    }
    cancel.cancel();
    Outcome {
        status,
        texts,
        synced,
    }
}

fn is_tls_failure(status: &InformerStatus) -> bool {
    match status {
        InformerStatus::BackingOff { error, code, .. } => {
            let e = error.to_lowercase();
            code.is_none()
                && (e.contains("certificate") || e.contains("tls") || e.contains("issuer"))
        }
        _ => false,
    }
}

fn read_token(kubeconfig: &Path) -> String {
    let text = std::fs::read_to_string(kubeconfig).unwrap();
    text.lines()
        .find_map(|l| l.trim().strip_prefix("token: "))
        .expect("token in kubeconfig")
        .trim()
        .to_string()
}

/// Every line of a PEM body (the base64 text), and every 24-character
/// window of it, so that a partial leak is caught too.
fn secret_fragments(pem: &str) -> Vec<String> {
    let body: String = pem.lines().filter(|l| !l.starts_with("-----")).collect();
    let chars: Vec<char> = body.chars().collect();
    chars
        .chunks(24)
        .filter(|c| c.len() == 24)
        .map(|c| c.iter().collect())
        .collect()
}

#[tokio::test(flavor = "current_thread")]
async fn tls_is_verified_unless_turned_off_and_no_secret_reaches_logs_or_errors() {
    let ready = match support::env() {
        support::Env::Testenv { ready, .. } => ready.clone(),
        support::Env::External { .. } => {
            eprintln!("skipped: needs testenv's certificates and tokens");
            return;
        }
    };
    // Everything below runs on this thread (current-thread runtime), so a
    // thread-local subscriber sees every log line, at every level.
    let captured = Captured::default();
    let writer = captured.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_max_level(tracing::Level::TRACE)
        .with_ansi(false)
        .with_writer(move || writer.clone())
        .finish();
    // tracing decides once per log statement, when a thread first reaches
    // it, whether anyone wants it. While a single subscriber is registered,
    // it asks only the default subscriber of that thread: a statement first
    // reached by another test's thread (which has none) would stay off here
    // too. A second registered subscriber, alive as long as this test, makes
    // it ask every registered subscriber instead (tracing-core 0.1).
    let _second = tracing::Dispatch::new(tracing::subscriber::NoSubscriber::default());
    let _guard = tracing::subscriber::set_default(subscriber);

    let admin = support::admin().await;
    let ns = support::namespace(&admin, "rel-secrets").await;
    let api = Api::<DynamicObject>::namespaced_with(admin.clone(), &ns, &configmaps());
    support::create_many(&api, vec![config_map_maker(8)(&configmaps(), "one", 0)], 1).await;

    let dir: PathBuf = super::tempdir("secrets");
    let pki = ready.data_dir.join("pki");
    let ca = pki.join("ca.crt");
    let unrelated = dir.join("unrelated-ca.crt");
    std::fs::write(&unrelated, UNRELATED_CA).unwrap();
    // Client key material: the serving key pair, which the server does not
    // accept as a client certificate (wrong key usage) but which the client
    // loads and uses in every handshake.
    let (cert, key) = (pki.join("serving.crt"), pki.join("serving.key"));
    let key_pem = std::fs::read_to_string(&key).unwrap();
    let admin_token = read_token(ready.kubeconfig("admin"));
    let alice_token = read_token(ready.kubeconfig("alice"));
    let bad_token = format!("not-a-real-token-{}", support::suffix());
    let server = ready.server.clone();
    let refused = {
        let l = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
        format!("https://{}", l.local_addr().unwrap())
    };

    let mut outcomes = Vec::new();
    let scenario = |name: &str, kc: Kubeconfig<'_>| {
        let path = dir.join(format!("{name}.yaml"));
        kc.write(&path);
        (name.to_string(), path)
    };
    let scenarios = vec![
        scenario(
            "forbidden-with-client-key",
            Kubeconfig {
                server: &server,
                ca: Some(&ca),
                insecure: None,
                token: &alice_token,
                client_cert: Some((&cert, &key)),
            },
        ),
        scenario(
            "bad-token",
            Kubeconfig {
                server: &server,
                ca: Some(&ca),
                insecure: None,
                token: &bad_token,
                client_cert: None,
            },
        ),
        scenario(
            "unrelated-ca",
            Kubeconfig {
                server: &server,
                ca: Some(&unrelated),
                insecure: None,
                token: &admin_token,
                client_cert: Some((&cert, &key)),
            },
        ),
        scenario(
            "unrelated-ca-insecure-false",
            Kubeconfig {
                server: &server,
                ca: Some(&unrelated),
                insecure: Some(false),
                token: &admin_token,
                client_cert: None,
            },
        ),
        scenario(
            "system-roots",
            Kubeconfig {
                server: &server,
                ca: None,
                insecure: None,
                token: &admin_token,
                client_cert: None,
            },
        ),
        scenario(
            "refused",
            Kubeconfig {
                server: &refused,
                ca: Some(&ca),
                insecure: None,
                token: &admin_token,
                client_cert: Some((&cert, &key)),
            },
        ),
        scenario(
            "insecure-true",
            Kubeconfig {
                server: &server,
                ca: None,
                insecure: Some(true),
                token: &admin_token,
                client_cert: None,
            },
        ),
    ];
    for (name, path) in &scenarios {
        let outcome = run_scenario(path, &ns).await;
        eprintln!("{name}: {}", outcome.status);
        outcomes.push((name.clone(), outcome));
    }
    let by_name = |n: &str| &outcomes.iter().find(|(name, _)| name == n).unwrap().1;

    // TLS: only `insecure-skip-tls-verify: true` lets an unverifiable server in.
    assert!(
        matches!(
            by_name("forbidden-with-client-key").status,
            InformerStatus::BackingOff {
                code: Some(403),
                ..
            }
        ),
        "{}",
        by_name("forbidden-with-client-key").status
    );
    assert!(
        matches!(
            by_name("bad-token").status,
            InformerStatus::BackingOff {
                code: Some(401),
                ..
            }
        ),
        "{}",
        by_name("bad-token").status
    );
    for name in [
        "unrelated-ca",
        "unrelated-ca-insecure-false",
        "system-roots",
    ] {
        let o = by_name(name);
        assert!(!o.synced, "{name} synced without a verifiable certificate");
        assert!(
            is_tls_failure(&o.status),
            "{name}: status should name the TLS failure: {}",
            o.status
        );
    }
    assert!(
        matches!(
            by_name("refused").status,
            InformerStatus::BackingOff { code: None, .. }
        ),
        "{}",
        by_name("refused").status
    );
    assert!(
        by_name("insecure-true").synced,
        "{}",
        by_name("insecure-true").status
    );

    // Secrets: nowhere.
    let logs = captured.text();
    assert!(
        logs.contains("list/watch failed"),
        "the capture saw the reflector's warnings"
    );
    let mut secrets: Vec<(String, String)> = [
        ("admin token", &admin_token),
        ("alice's token", &alice_token),
        ("the bad token", &bad_token),
    ]
    .into_iter()
    .map(|(what, s)| (what.to_string(), s.clone()))
    .collect();
    secrets.extend(
        secret_fragments(&key_pem)
            .into_iter()
            .map(|f| ("client key".to_string(), f)),
    );
    let mut leaks = Vec::new();
    for (what, secret) in &secrets {
        if logs.contains(secret.as_str()) {
            leaks.push(format!("{what} in the logs"));
        }
        for (name, o) in &outcomes {
            if o.texts.iter().any(|t| t.contains(secret.as_str())) {
                leaks.push(format!("{what} in a status or error of {name}"));
            }
        }
    }
    leaks.dedup();
    assert!(leaks.is_empty(), "leaked: {leaks:?}");
    eprintln!(
        "security: {} bytes of logs and {} status/error texts searched for {} secret fragments",
        logs.len(),
        outcomes.iter().map(|(_, o)| o.texts.len()).sum::<usize>(),
        secrets.len()
    );
    let _ = std::fs::remove_dir_all(&dir);
}
