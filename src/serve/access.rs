//! Who may read: the serving certificate (made at start, signed by a CA of
//! its own), the bearer token, and the kubeconfig clients use.

use std::fmt::Write as _;
use std::net::{IpAddr, Ipv4Addr, Ipv6Addr, SocketAddr};
use std::path::Path;
use std::sync::Arc;

use base64::Engine as _;
use rand::Rng as _;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls;
use tokio_rustls::rustls::pki_types::{PrivateKeyDer, PrivatePkcs8KeyDer};

use super::ServeError;

/// What a client needs to reach a listening server: its address, the CA
/// that signed its certificate, and the token.
#[derive(Clone)]
pub struct Credentials {
    pub(super) addr: SocketAddr,
    pub(super) ca_pem: Option<String>,
    pub(super) token: Option<String>,
}

impl std::fmt::Debug for Credentials {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Credentials")
            .field("addr", &self.addr)
            .field("tls", &self.ca_pem.is_some())
            .field("token", &self.token.as_ref().map(|_| "<redacted>"))
            .finish()
    }
}

impl Credentials {
    /// The server's URL (`https://127.0.0.1:PORT`, or `http://` without TLS).
    #[must_use]
    pub fn url(&self) -> String {
        let scheme = if self.ca_pem.is_some() {
            "https"
        } else {
            "http"
        };
        format!("{scheme}://{}", connectable(self.addr))
    }

    /// The PEM of the CA that signed the serving certificate (`None`
    /// without TLS).
    #[must_use]
    pub fn ca_pem(&self) -> Option<&str> {
        self.ca_pem.as_deref()
    }

    /// The bearer token clients must send (`None` when any client may
    /// read).
    #[must_use]
    pub fn token(&self) -> Option<&str> {
        self.token.as_deref()
    }

    /// A kubeconfig (YAML) with one cluster, user and context named `name`,
    /// its current context, that reaches this server.
    #[must_use]
    pub fn kubeconfig(&self, name: &str) -> String {
        let quoted = |s: &str| serde_json::Value::String(s.to_owned()).to_string();
        let mut out = String::new();
        let _ = writeln!(out, "apiVersion: v1\nkind: Config");
        let _ = writeln!(out, "clusters:\n- name: {}\n  cluster:", quoted(name));
        let _ = writeln!(out, "    server: {}", quoted(&self.url()));
        if let Some(pem) = &self.ca_pem {
            let data = base64::engine::general_purpose::STANDARD.encode(pem);
            let _ = writeln!(out, "    certificate-authority-data: {data}");
        }
        let _ = writeln!(out, "users:\n- name: {}\n  user:", quoted(name));
        match &self.token {
            Some(token) => {
                let _ = writeln!(out, "    token: {}", quoted(token));
            }
            None => out.push_str("    {}\n"),
        }
        let _ = writeln!(
            out,
            "contexts:\n- name: {n}\n  context:\n    cluster: {n}\n    user: {n}\ncurrent-context: {n}",
            n = quoted(name)
        );
        out
    }

    /// Writes [`kubeconfig`](Self::kubeconfig) to `path`, readable by its
    /// owner only (it holds the token).
    ///
    /// # Errors
    /// [`ServeError::Kubeconfig`] when the file cannot be written.
    pub fn write_kubeconfig(&self, path: &Path, name: &str) -> Result<(), ServeError> {
        let failed = |source| ServeError::Kubeconfig {
            path: path.to_owned(),
            source,
        };
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create(true).truncate(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut file = options.open(path).map_err(failed)?;
        // An existing file keeps its mode through `open`: narrowed here.
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt as _;
            file.set_permissions(std::fs::Permissions::from_mode(0o600))
                .map_err(failed)?;
        }
        std::io::Write::write_all(&mut file, self.kubeconfig(name).as_bytes()).map_err(failed)
    }
}

/// An address a client can connect to: the unspecified address (listening
/// on every interface) is reached through loopback.
fn connectable(addr: SocketAddr) -> String {
    let ip = match addr.ip() {
        IpAddr::V4(ip) if ip.is_unspecified() => IpAddr::V4(Ipv4Addr::LOCALHOST),
        IpAddr::V6(ip) if ip.is_unspecified() => IpAddr::V6(Ipv6Addr::LOCALHOST),
        ip => ip,
    };
    SocketAddr::new(ip, addr.port()).to_string()
}

/// A random token: 32 bytes, hex.
pub(super) fn new_token() -> String {
    let bytes: [u8; 32] = rand::rng().random();
    bytes.iter().fold(String::with_capacity(64), |mut s, b| {
        let _ = write!(s, "{b:02x}");
        s
    })
}

/// Whether `header` (an `Authorization` value) carries `token`, compared
/// in time independent of where they differ.
pub(super) fn bearer_matches(header: Option<&[u8]>, token: &str) -> bool {
    let Some(given) = header.and_then(|h| h.strip_prefix(b"Bearer ")) else {
        return false;
    };
    let given = given.trim_ascii();
    if given.len() != token.len() {
        return false;
    }
    given
        .iter()
        .zip(token.as_bytes())
        .fold(0u8, |diff, (a, b)| diff | (a ^ b))
        == 0
}

/// The CA that signs the serving certificate: made for this run, or kept
/// in a credentials directory.
pub(super) struct Ca {
    issuer: rcgen::Issuer<'static, rcgen::KeyPair>,
    pem: String,
}

/// What the CA's certificate says of it; its issuer is rebuilt from these
/// and its key, so that a kept CA signs as the one made first.
fn ca_params() -> Result<rcgen::CertificateParams, rcgen::Error> {
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new())?;
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Constrained(0));
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kdi serve CA");
    params.key_usages = vec![
        rcgen::KeyUsagePurpose::KeyCertSign,
        rcgen::KeyUsagePurpose::DigitalSignature,
    ];
    Ok(params)
}

impl Ca {
    /// A new CA.
    pub(super) fn new() -> Result<Ca, ServeError> {
        let failed = |e: rcgen::Error| ServeError::Tls(e.to_string());
        let key = rcgen::KeyPair::generate().map_err(failed)?;
        let certified = rcgen::CertifiedIssuer::self_signed(ca_params().map_err(failed)?, key)
            .map_err(failed)?;
        let pem = certified.pem();
        let key = rcgen::KeyPair::from_pem(&certified.key().serialize_pem()).map_err(failed)?;
        Ok(Ca {
            issuer: rcgen::Issuer::new(ca_params().map_err(failed)?, key),
            pem,
        })
    }

    /// The CA of this certificate (PEM) and key (PEM).
    fn of(pem: String, key: &str) -> Result<Ca, String> {
        let key = rcgen::KeyPair::from_pem(key).map_err(|e| format!("the CA key: {e}"))?;
        let params = ca_params().map_err(|e| e.to_string())?;
        Ok(Ca {
            issuer: rcgen::Issuer::new(params, key),
            pem,
        })
    }
}

/// A credentials directory ([`ServeOptions::credentials_dir`]): `ca.crt`,
/// `ca.key` and `token`, each made when missing.
///
/// [`ServeOptions::credentials_dir`]: super::ServeOptions::credentials_dir
pub(super) struct Kept<'a> {
    dir: &'a Path,
}

impl<'a> Kept<'a> {
    pub(super) fn new(dir: &'a Path) -> Kept<'a> {
        Kept { dir }
    }

    fn failed(&self, file: &str, reason: impl std::fmt::Display) -> ServeError {
        ServeError::Credentials {
            path: self.dir.join(file),
            reason: reason.to_string(),
        }
    }

    /// The kept CA, made and written first when the directory has none.
    pub(super) fn ca(&self) -> Result<Ca, ServeError> {
        let cert = self.read("ca.crt")?;
        let key = self.read("ca.key")?;
        match (cert, key) {
            (Some(cert), Some(key)) => Ca::of(cert, &key).map_err(|e| self.failed("ca.key", e)),
            (None, None) => {
                let ca = Ca::new()?;
                self.write("ca.key", &ca.issuer.key().serialize_pem())?;
                self.write("ca.crt", &ca.pem)?;
                Ok(ca)
            }
            (Some(_), None) => Err(self.failed("ca.key", "missing beside ca.crt")),
            (None, Some(_)) => Err(self.failed("ca.crt", "missing beside ca.key")),
        }
    }

    /// The kept token, made and written first when the directory has none.
    pub(super) fn token(&self) -> Result<String, ServeError> {
        match self.read("token")? {
            Some(token) if !token.trim().is_empty() => Ok(token.trim().to_owned()),
            Some(_) => Err(self.failed("token", "the file is empty")),
            None => {
                let token = new_token();
                self.write("token", &format!("{token}\n"))?;
                Ok(token)
            }
        }
    }

    fn read(&self, file: &str) -> Result<Option<String>, ServeError> {
        match std::fs::read_to_string(self.dir.join(file)) {
            Ok(text) => Ok(Some(text)),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.failed(file, e)),
        }
    }

    /// Writes `file` readable by the owner only, in a directory made so.
    fn write(&self, file: &str, text: &str) -> Result<(), ServeError> {
        let mut dir = std::fs::DirBuilder::new();
        dir.recursive(true);
        #[cfg(unix)]
        std::os::unix::fs::DirBuilderExt::mode(&mut dir, 0o700);
        dir.create(self.dir).map_err(|e| self.failed("", e))?;
        let mut options = std::fs::OpenOptions::new();
        options.write(true).create_new(true);
        #[cfg(unix)]
        std::os::unix::fs::OpenOptionsExt::mode(&mut options, 0o600);
        let mut out = options
            .open(self.dir.join(file))
            .map_err(|e| self.failed(file, e))?;
        std::io::Write::write_all(&mut out, text.as_bytes()).map_err(|e| self.failed(file, e))
    }
}

/// A serving certificate signed by `ca` for `localhost`, the loopback
/// addresses and `addr`'s address. Returns the acceptor and the CA's PEM.
pub(super) fn serving(ca: &Ca, addr: SocketAddr) -> Result<(TlsAcceptor, String), ServeError> {
    let failed = |e: rcgen::Error| ServeError::Tls(e.to_string());
    let mut names = vec![
        "localhost".to_owned(),
        "127.0.0.1".to_owned(),
        "::1".to_owned(),
    ];
    if !addr.ip().is_unspecified() && !addr.ip().is_loopback() {
        names.push(addr.ip().to_string());
    }
    let mut params = rcgen::CertificateParams::new(names).map_err(failed)?;
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "kdi serve");
    params.extended_key_usages = vec![rcgen::ExtendedKeyUsagePurpose::ServerAuth];
    let key = rcgen::KeyPair::generate().map_err(failed)?;
    let cert = params.signed_by(&key, &ca.issuer).map_err(failed)?;
    let ca_der =
        pem_der(&ca.pem).ok_or_else(|| ServeError::Tls("the CA certificate is not PEM".into()))?;

    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| ServeError::Tls(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(
            vec![cert.der().clone(), ca_der],
            PrivateKeyDer::Pkcs8(PrivatePkcs8KeyDer::from(key.serialize_der())),
        )
        .map_err(|e| ServeError::Tls(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok((TlsAcceptor::from(Arc::new(config)), ca.pem.clone()))
}

/// The DER of the first certificate of a PEM text.
fn pem_der(pem: &str) -> Option<rustls::pki_types::CertificateDer<'static>> {
    let body: String = pem
        .lines()
        .skip_while(|l| !l.starts_with("-----BEGIN CERTIFICATE-----"))
        .skip(1)
        .take_while(|l| !l.starts_with("-----END"))
        .collect();
    let der = base64::engine::general_purpose::STANDARD
        .decode(body)
        .ok()?;
    Some(rustls::pki_types::CertificateDer::from(der))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_token_is_compared_whole() {
        let token = new_token();
        assert_eq!(token.len(), 64);
        let header = format!("Bearer {token}");
        assert!(bearer_matches(Some(header.as_bytes()), &token));
        assert!(!bearer_matches(Some(b"Bearer "), &token));
        assert!(!bearer_matches(Some(token.as_bytes()), &token));
        let mut wrong = header.into_bytes();
        *wrong.last_mut().unwrap() ^= 1;
        assert!(!bearer_matches(Some(&wrong), &token));
        assert!(!bearer_matches(None, &token));
    }

    #[test]
    fn the_kubeconfig_names_the_server_its_ca_and_token() {
        let credentials = Credentials {
            addr: "0.0.0.0:6443".parse().unwrap(),
            ca_pem: Some("-----BEGIN CERTIFICATE-----\n".into()),
            token: Some("abc".into()),
        };
        let config = credentials.kubeconfig("kdi");
        assert!(
            config.contains("server: \"https://127.0.0.1:6443\""),
            "{config}"
        );
        assert!(config.contains("token: \"abc\""), "{config}");
        assert!(
            config.contains("certificate-authority-data: LS0t"),
            "{config}"
        );
        assert!(config.contains("current-context: \"kdi\""), "{config}");
        assert!(!format!("{credentials:?}").contains("abc"));
    }

    #[test]
    fn a_credentials_directory_is_made_once_and_kept() {
        let dir = std::env::temp_dir().join(format!("kdi-credentials-{}", new_token()));
        let kept = Kept::new(&dir);
        let first = (kept.ca().unwrap().pem, kept.token().unwrap());
        let second = (kept.ca().unwrap().pem, kept.token().unwrap());
        assert_eq!(first, second);
        assert!(first.0.starts_with("-----BEGIN CERTIFICATE-----"));
        let addr = "127.0.0.1:6443".parse().unwrap();
        assert!(serving(&kept.ca().unwrap(), addr).is_ok());

        // What is broken is named, never replaced.
        std::fs::write(dir.join("ca.key"), "not a key").unwrap();
        let broken = kept.ca().err().unwrap().to_string();
        assert!(broken.contains("ca.key"), "{broken}");
        std::fs::remove_file(dir.join("ca.key")).unwrap();
        let missing = kept.ca().err().unwrap().to_string();
        assert!(missing.contains("missing beside ca.crt"), "{missing}");
        std::fs::write(dir.join("token"), "\n").unwrap();
        let empty = kept.token().unwrap_err().to_string();
        assert!(empty.contains("empty"), "{empty}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
