//! Serving the caches: a read-only Kubernetes API over informers, so that
//! any program — kubectl, client-go, kube-rs, curl — reads from one warm
//! cache instead of the API server.
//!
//! A [`CacheServer`] serves the [`ServedResource`]s it is given (an informer
//! and what discovery says of its resource) in the protocol every
//! Kubernetes client speaks:
//!
//! - discovery: `/api`, `/api/v1`, `/apis`, `/apis/GROUP`,
//!   `/apis/GROUP/VERSION`, listing only what is served, with kinds,
//!   short names, categories and scope, so that `kubectl get wdg` resolves;
//! - `get` of one object, and `list` with `labelSelector`, `fieldSelector`
//!   (`metadata.name`, `metadata.namespace`), `limit` and `continue` (the
//!   pages of one list show the cache at one resourceVersion), and the
//!   resourceVersion rules of the API server's cache: `""` and `"0"` answer
//!   from the cache as it is, `NotOlderThan` waits up to 3 s for the cache
//!   to get there (then 504 `Timeout`), `Exact` answers only at the cache's
//!   own resourceVersion (else 410 `Expired`); a list at `"0"` is answered
//!   whole, `limit` notwithstanding;
//! - the answer in the form the `Accept` header negotiates, as the API
//!   server negotiates it: the objects; a `Table` (`as=Table;g=meta.k8s.io`,
//!   `v1` or `v1beta1`, as `kubectl get` asks) with the columns the API
//!   server would print — a CRD's `additionalPrinterColumns` (see
//!   [`ServedResource::from_factory`]), the API server's own printers' for
//!   common built-in kinds, else `Name` and `Created At` — and rows holding
//!   what `includeObject` says; or `PartialObjectMetadata(List)`, as
//!   client-go's metadata clients ask. A watch asked as a table gets a
//!   one-row table an event, the column definitions in the first only.
//!   Everything is JSON: a client that accepts nothing else gets 406
//!   `NotAcceptable`;
//! - the informer's indexes as a query: `?index=NAME&indexValue=VALUE` on a
//!   list path gives the objects filed under VALUE
//!   (`kubectl get --raw '/apis/example.com/v1/widgets?index=node&indexValue=n1'`);
//! - `/healthz`, `/livez`, and `/readyz` (ready when every served cache
//!   has synced, else 503 saying which has not and why).
//!
//! - `watch` from a resourceVersion the cache can replay: the last
//!   [`ServeOptions::history`] changes of each resource are kept; older is
//!   410 `Expired` (the client lists again, as from an API server), and so
//!   is a watch that falls further behind. Bookmarks when asked
//!   (`allowWatchBookmarks`, every 30 s and at the end of initial events),
//!   and streaming lists (`sendInitialEvents=true`: the cache as ADDED
//!   events, then the bookmark annotated `k8s.io/initial-events-end`).
//!
//! Metrics, through the `metrics` facade as the informers' (see
//! [`crate::informer`]'s metrics table): `kdi_serve_requests_total`
//! (counter; labels `verb`: `get`, `list`, `watch`, `discovery`, `health`,
//! `other`, and `code`), `kdi_serve_request_duration_seconds` (histogram of
//! every verb but `watch`; label `verb`) and `kdi_serve_watches` (gauge:
//! watches open). Each request is logged at debug level.
//!
//! Writes answer 405 `MethodNotAllowed`, anything not served 404
//! `NotFound`, bad parameters 400 `BadRequest`, each a `Status` object.
//! Secrets are redacted as `kdi get` redacts them ([`Redaction`]) unless a
//! [`ServedResource`] says otherwise; table cells are computed from the
//! object as shown, so no column shows what is redacted.
//!
//! **Who may read.** By default a server listens on loopback with TLS (a
//! certificate signed by a CA made at start) and a random bearer token;
//! [`Listening::credentials`] gives what a client needs, as a kubeconfig
//! too; [`ServeOptions::credentials_dir`] keeps the CA and token across
//! restarts, so that a kubeconfig written once stays good. It refuses to listen beyond loopback without both
//! ([`ServeError::Insecure`]). `/healthz`, `/livez` and `/readyz` answer
//! without a token, as the API server's do. A resource whose informer the
//! API server refuses (401, 403) is absent — from discovery, its paths
//! 404, and from `/readyz` — not empty, until access is granted and its
//! informer lists: kdi never serves what it may not read.
//!
//! ```no_run
//! # async fn demo(factory: kube_dynamic_informer::InformerFactory) -> Result<(), Box<dyn std::error::Error>> {
//! use kube_dynamic_informer::serve::{CacheServer, ServeOptions, ServedResource};
//! use tokio_util::sync::CancellationToken;
//!
//! let widgets = factory.for_resource("widgets.example.com").await?;
//! factory.start()?;
//! let server = CacheServer::new(ServeOptions::default());
//! server.serve(
//!     ServedResource::from_factory(widgets, &factory).expect("resolved through discovery"),
//! );
//! let listening = server.listen(CancellationToken::new()).await?;
//! listening.credentials().write_kubeconfig("kdi.kubeconfig".as_ref(), "kdi")?;
//! // KUBECONFIG=kdi.kubeconfig kubectl get widgets -o wide
//! listening.stopped().await;
//! # Ok(()) }
//! ```
//!
//! [`Redaction`]: crate::cache::Redaction

mod access;
mod http;
mod list;
mod negotiate;
mod represent;
mod request;
mod served;
mod status;
mod table;
mod watch;

use std::net::{Ipv4Addr, SocketAddr};
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::RwLock;
use tokio::task::JoinHandle;
use tokio_util::sync::CancellationToken;

use crate::vocabulary::resource::ResourceKey;

pub use access::Credentials;
pub use served::ServedResource;

/// How a [`CacheServer`] listens.
///
/// ```
/// use kube_dynamic_informer::serve::ServeOptions;
///
/// let options = ServeOptions::default().addr("127.0.0.1:6443".parse().unwrap());
/// assert!(options.tls && options.token.is_none());
/// ```
#[derive(Clone, Debug)]
#[non_exhaustive]
pub struct ServeOptions {
    /// The address to listen on; by default a free port of 127.0.0.1.
    pub addr: SocketAddr,
    /// Serve HTTPS with a certificate made at start (the default); off
    /// serves plain HTTP, on loopback only.
    pub tls: bool,
    /// Require this bearer token; `None` makes a random one (the default).
    pub token: Option<String>,
    /// Require no token at all, on loopback only.
    pub anonymous: bool,
    /// Changes kept per served resource for watches to resume from (10,000
    /// by default, at least 1); a watch from an older resourceVersion, or
    /// one that falls further behind, gets 410 `Expired` and lists again.
    pub history: usize,
    /// Keep the CA, its key and the token in this directory (made on the
    /// first start, readable by the owner only, and reused by every later
    /// one), so that a kubeconfig written once keeps working across
    /// restarts. `None` (the default) makes new ones at each start. A
    /// [`token`](Self::token) given explicitly wins over the kept one.
    pub credentials_dir: Option<PathBuf>,
}

impl Default for ServeOptions {
    fn default() -> Self {
        ServeOptions {
            addr: SocketAddr::from((Ipv4Addr::LOCALHOST, 0)),
            tls: true,
            token: None,
            anonymous: false,
            history: watch::HISTORY,
            credentials_dir: None,
        }
    }
}

impl ServeOptions {
    crate::vocabulary::setters! {
        /// Sets [`addr`](Self::addr).
        addr(addr: SocketAddr) => addr;

        /// Sets [`tls`](Self::tls).
        tls(tls: bool) => tls;

        /// Sets [`token`](Self::token).
        token(token: impl Into<String>) => Some(token.into());

        /// Sets [`anonymous`](Self::anonymous).
        anonymous(anonymous: bool) => anonymous;

        /// Sets [`history`](Self::history).
        history(changes: usize) => changes.max(1);

        /// Sets [`credentials_dir`](Self::credentials_dir).
        credentials_dir(dir: impl Into<PathBuf>) => Some(dir.into());
    }
}

/// Why a server could not start.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// Listening beyond loopback was asked for without TLS or a token.
    #[error(
        "refusing to listen on {addr} without {missing}: beyond loopback kdi serves only over TLS with a bearer token"
    )]
    Insecure {
        /// The address asked for.
        addr: SocketAddr,
        /// What is missing: `TLS`, `a token`, or both.
        missing: &'static str,
    },
    /// The address could not be bound.
    #[error("listening on {addr}: {source}")]
    Bind {
        /// The address asked for.
        addr: SocketAddr,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
    /// The serving certificate could not be made.
    #[error("making the serving certificate: {0}")]
    Tls(String),
    /// The credentials directory could not be read or written.
    #[error("the credentials in {path}: {reason}")]
    Credentials {
        /// The file or directory.
        path: PathBuf,
        /// What failed.
        reason: String,
    },
    /// The kubeconfig could not be written.
    #[error("writing the kubeconfig {path}: {source}")]
    Kubeconfig {
        /// The file.
        path: PathBuf,
        /// The system's error.
        #[source]
        source: std::io::Error,
    },
}

/// A read-only Kubernetes API over informers (see the [module
/// documentation](self)). Cheap to clone; clones serve the same resources.
#[derive(Clone)]
pub struct CacheServer {
    shared: Arc<Shared>,
}

/// What every request reads.
pub(crate) struct Shared {
    options: ServeOptions,
    served: RwLock<served::Served>,
    pages: list::Pages,
}

impl CacheServer {
    /// A server with nothing served yet.
    #[must_use]
    pub fn new(options: ServeOptions) -> Self {
        CacheServer {
            shared: Arc::new(Shared {
                options,
                served: RwLock::default(),
                pages: list::Pages::default(),
            }),
        }
    }

    /// Serves `resource` (replacing what was served under the same group,
    /// version and plural); it appears in discovery at once.
    pub fn serve(&self, resource: ServedResource) {
        let history = self.shared.options.history;
        self.shared.served.write().insert(resource, history);
    }

    /// Stops serving `key`; whether it was served.
    pub fn withdraw(&self, key: &ResourceKey) -> bool {
        self.shared.served.write().remove(key)
    }

    /// The resources served: those given, but for any whose informer the
    /// API server refuses (401, 403), which are absent until it lists.
    #[must_use]
    pub fn served(&self) -> Vec<ResourceKey> {
        self.shared
            .served
            .read()
            .all()
            .map(ServedResource::key)
            .collect()
    }

    /// Binds the address and serves until `cancel`.
    ///
    /// # Errors
    /// [`ServeError::Insecure`] for an address beyond loopback without TLS
    /// and a token; [`ServeError::Bind`]; [`ServeError::Tls`].
    pub async fn listen(&self, cancel: CancellationToken) -> Result<Listening, ServeError> {
        let options = &self.shared.options;
        let addr = options.addr;
        if !addr.ip().is_loopback() {
            let missing = match (options.tls, !options.anonymous) {
                (true, true) => None,
                (false, true) => Some("TLS"),
                (true, false) => Some("a token"),
                (false, false) => Some("TLS and a token"),
            };
            if let Some(missing) = missing {
                return Err(ServeError::Insecure { addr, missing });
            }
        }
        let listener = tokio::net::TcpListener::bind(addr)
            .await
            .map_err(|source| ServeError::Bind { addr, source })?;
        let bound = listener
            .local_addr()
            .map_err(|source| ServeError::Bind { addr, source })?;
        let kept = options.credentials_dir.as_deref().map(access::Kept::new);
        let (tls, ca_pem) = if options.tls {
            let ca = match &kept {
                Some(kept) => kept.ca()?,
                None => access::Ca::new()?,
            };
            let (acceptor, pem) = access::serving(&ca, bound)?;
            (Some(acceptor), Some(pem))
        } else {
            (None, None)
        };
        let token = match (&options.token, &kept) {
            _ if options.anonymous => None,
            (Some(token), _) => Some(token.clone()),
            (None, Some(kept)) => Some(kept.token()?),
            (None, None) => Some(access::new_token()),
        };
        let credentials = Credentials {
            addr: bound,
            ca_pem,
            token,
        };
        let task = tokio::spawn(http::run(
            listener,
            tls,
            self.shared.clone(),
            credentials.clone(),
            cancel,
        ));
        tracing::info!(url = %credentials.url(), "serving the caches");
        Ok(Listening { credentials, task })
    }
}

/// A server listening: its credentials, and its task.
#[derive(Debug)]
pub struct Listening {
    credentials: Credentials,
    task: JoinHandle<()>,
}

impl Listening {
    /// The address, CA and token clients need.
    #[must_use]
    pub fn credentials(&self) -> &Credentials {
        &self.credentials
    }

    /// Waits until the server has stopped (its cancellation token was
    /// cancelled and open connections closed).
    pub async fn stopped(self) {
        let _ = self.task.await;
    }
}
