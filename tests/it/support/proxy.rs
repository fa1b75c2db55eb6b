//! A loopback TCP proxy that can cut every connection through it on command.
//!
//! It forwards bytes between a client and the API server without looking at
//! them (TLS ends at the server, so the proxy sees only ciphertext; the
//! server certificate's IP SAN 127.0.0.1 stays valid because the proxy
//! listens on 127.0.0.1 too). A test points a client at [`Proxy::url`] and
//! then:
//!
//! - [`Proxy::cut`] resets every open connection at once (both sides get a
//!   TCP RST, as after a NAT or load-balancer timeout);
//! - [`Proxy::cut_after_bytes`] arms a cut that fires once that many more
//!   bytes have flowed from the server to the client — with large list
//!   pages in flight, that lands in the middle of a page;
//! - [`Proxy::set_refusing`] makes new connections fail at once, as if the
//!   server were down;
//! - [`Proxy::set_hanging`] accepts new connections and never answers, as a
//!   server that is unreachable behind a load balancer (until the next cut).
//!
//! The proxy runs on the tokio runtime it was started on and stops when the
//! [`Proxy`] is dropped (its open connections are cut then too).

use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use parking_lot::Mutex;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::watch;
use tokio::task::JoinHandle;

/// Counters and switches shared by the accept loop and the connections.
#[derive(Debug)]
struct Inner {
    target: SocketAddr,
    /// Bumped by every cut; each connection ends when it changes.
    generation: watch::Sender<u64>,
    accepted: AtomicU64,
    open: AtomicU64,
    cuts: AtomicU64,
    connections_cut: AtomicU64,
    to_client: AtomicU64,
    to_server: AtomicU64,
    /// `to_client` value at which the armed cut fires.
    cut_at: Mutex<Option<u64>>,
    refusing: AtomicBool,
    hanging: AtomicBool,
}

impl Inner {
    fn cut(&self) -> u64 {
        let open = self.open.load(Ordering::SeqCst);
        self.cuts.fetch_add(1, Ordering::SeqCst);
        self.generation.send_modify(|g| *g += 1);
        open
    }
}

/// A running proxy; see the module docs.
#[derive(Debug)]
pub struct Proxy {
    addr: SocketAddr,
    inner: Arc<Inner>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Starts a proxy on 127.0.0.1 (a free port) in front of `target`.
    pub async fn start(target: SocketAddr) -> Proxy {
        assert!(
            target.ip().is_loopback(),
            "the proxy only forwards to loopback, not {target}"
        );
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .expect("binding the proxy");
        let addr = listener.local_addr().expect("proxy address");
        let inner = Arc::new(Inner {
            target,
            generation: watch::Sender::new(0),
            accepted: AtomicU64::new(0),
            open: AtomicU64::new(0),
            cuts: AtomicU64::new(0),
            connections_cut: AtomicU64::new(0),
            to_client: AtomicU64::new(0),
            to_server: AtomicU64::new(0),
            cut_at: Mutex::new(None),
            refusing: AtomicBool::new(false),
            hanging: AtomicBool::new(false),
        });
        let accept = tokio::spawn(accept_loop(listener, inner.clone()));
        Proxy {
            addr,
            inner,
            accept,
        }
    }

    /// Where clients connect.
    pub fn addr(&self) -> SocketAddr {
        self.addr
    }

    /// `https://127.0.0.1:<port>` of the proxy (parse it into
    /// `kube_client::Config::cluster_url`).
    pub fn url(&self) -> String {
        format!("https://{}", self.addr)
    }

    /// Resets every open connection; returns how many were open.
    pub fn cut(&self) -> u64 {
        self.inner.cut()
    }

    /// Cuts every connection once `bytes` more bytes have gone from the
    /// server to the client (the chunk that crosses the mark is dropped).
    pub fn cut_after_bytes(&self, bytes: u64) {
        let now = self.inner.to_client.load(Ordering::SeqCst);
        *self.inner.cut_at.lock() = Some(now + bytes);
    }

    /// Whether an armed [`cut_after_bytes`](Self::cut_after_bytes) is still
    /// waiting.
    pub fn cut_armed(&self) -> bool {
        self.inner.cut_at.lock().is_some()
    }

    /// While on, new connections are closed as soon as they are accepted.
    pub fn set_refusing(&self, refusing: bool) {
        self.inner.refusing.store(refusing, Ordering::SeqCst);
    }

    /// While on, new connections are accepted and held without a byte
    /// forwarded either way, until the next cut.
    pub fn set_hanging(&self, hanging: bool) {
        self.inner.hanging.store(hanging, Ordering::SeqCst);
    }

    /// Connections accepted so far (refused ones included).
    pub fn accepted(&self) -> u64 {
        self.inner.accepted.load(Ordering::SeqCst)
    }

    /// Connections open now.
    pub fn open(&self) -> u64 {
        self.inner.open.load(Ordering::SeqCst)
    }

    /// Cuts so far (explicit and armed).
    pub fn cuts(&self) -> u64 {
        self.inner.cuts.load(Ordering::SeqCst)
    }

    /// Connections ended by a cut so far.
    pub fn connections_cut(&self) -> u64 {
        self.inner.connections_cut.load(Ordering::SeqCst)
    }

    /// Bytes forwarded from the server to clients so far.
    pub fn bytes_to_client(&self) -> u64 {
        self.inner.to_client.load(Ordering::SeqCst)
    }

    /// Bytes forwarded from clients to the server so far.
    pub fn bytes_to_server(&self) -> u64 {
        self.inner.to_server.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.accept.abort();
        self.inner.cut();
    }
}

async fn accept_loop(listener: TcpListener, inner: Arc<Inner>) {
    loop {
        let Ok((client, _)) = listener.accept().await else {
            continue;
        };
        inner.accepted.fetch_add(1, Ordering::SeqCst);
        if inner.refusing.load(Ordering::SeqCst) {
            let _ = client.set_zero_linger();
            drop(client);
            continue;
        }
        if inner.hanging.load(Ordering::SeqCst) {
            let mut generation = inner.generation.subscribe();
            generation.borrow_and_update();
            tokio::spawn(async move {
                let _ = generation.changed().await;
                let _ = client.set_zero_linger();
                drop(client);
            });
            continue;
        }
        tokio::spawn(connection(client, inner.clone()));
    }
}

/// Forwards one connection until either side closes or a cut comes.
async fn connection(client: TcpStream, inner: Arc<Inner>) {
    let mut generation = inner.generation.subscribe();
    generation.borrow_and_update();
    let Ok(server) = TcpStream::connect(inner.target).await else {
        let _ = client.set_zero_linger();
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    inner.open.fetch_add(1, Ordering::SeqCst);
    let (mut client_read, mut client_write) = client.into_split();
    let (mut server_read, mut server_write) = server.into_split();
    let up = async {
        let mut buf = vec![0u8; 64 * 1024];
        loop {
            let n = match client_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            if server_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
            inner.to_server.fetch_add(n as u64, Ordering::SeqCst);
        }
        let _ = server_write.shutdown().await;
    };
    let down = async {
        let mut buf = vec![0u8; 16 * 1024];
        loop {
            let n = match server_read.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let total = inner.to_client.fetch_add(n as u64, Ordering::SeqCst) + n as u64;
            let fire = {
                let mut at = inner.cut_at.lock();
                match *at {
                    Some(mark) if total >= mark => {
                        *at = None;
                        true
                    }
                    _ => false,
                }
            };
            if fire {
                inner.cut();
                // The cut ends this connection through `generation`.
                futures::future::pending::<()>().await;
            }
            if client_write.write_all(&buf[..n]).await.is_err() {
                break;
            }
        }
        let _ = client_write.shutdown().await;
    };
    let mut cut = false;
    tokio::select! {
        _ = async { tokio::join!(up, down) } => {}
        _ = generation.changed() => cut = true,
    }
    if cut {
        inner.connections_cut.fetch_add(1, Ordering::SeqCst);
        // Reset both sides rather than closing politely.
        if let (Ok(c), Ok(s)) = (
            client_read.reunite(client_write),
            server_read.reunite(server_write),
        ) {
            let _ = c.set_zero_linger();
            let _ = s.set_zero_linger();
        }
    }
    inner.open.fetch_sub(1, Ordering::SeqCst);
}
