//! The HTTP side: connections (TLS or not), the token, and each request
//! routed to its answer.

use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;

use bytes::Bytes;
use http::{Method, Request, Response, StatusCode, header};
use http_body_util::BodyExt as _;
use http_body_util::Full;
use http_body_util::combinators::BoxBody;
use hyper::body::Incoming;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::net::TcpListener;
use tokio_rustls::TlsAcceptor;
use tokio_util::sync::CancellationToken;

use super::negotiate::Accepted;
use super::represent::Representation;
use super::request::{Query, Route, Target};
use super::served::ServedResource;
use super::status::Refusal;
use super::watch::Feed;
use super::{Credentials, Shared, access, list, watch};

/// A response body.
pub(super) type Body = BoxBody<Bytes, Infallible>;

/// How long a client may take to send a request's headers.
const HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// What a connection buffers of a response not yet written to its socket
/// (and of a request's headers): enough for a few of a watch's chunks, so
/// that a slow reader holds little in the server.
const CONNECTION_BUFFER: usize = 16 * 1024;

/// Accepts connections until `cancel`, then lets open ones finish.
pub(super) async fn run(
    listener: TcpListener,
    tls: Option<TlsAcceptor>,
    shared: Arc<Shared>,
    credentials: Credentials,
    cancel: CancellationToken,
) {
    let credentials = Arc::new(credentials);
    let mut connections = tokio::task::JoinSet::new();
    loop {
        let accepted = tokio::select! {
            () = cancel.cancelled() => break,
            accepted = listener.accept() => accepted,
        };
        let (stream, peer) = match accepted {
            Ok(accepted) => accepted,
            Err(e) => {
                // Out of file descriptors and the like: pause, not spin.
                tracing::warn!(error = %e, "accepting a connection");
                tokio::time::sleep(Duration::from_millis(50)).await;
                continue;
            }
        };
        let (shared, credentials, cancel, tls) = (
            shared.clone(),
            credentials.clone(),
            cancel.clone(),
            tls.clone(),
        );
        connections.spawn(async move {
            let cancel_requests = cancel.clone();
            let service = service_fn(move |request| {
                let (shared, credentials) = (shared.clone(), credentials.clone());
                let cancel = cancel_requests.clone();
                async move {
                    Ok::<_, Infallible>(answer(&shared, &credentials, &cancel, request).await)
                }
            });
            let result = match tls {
                Some(acceptor) => match acceptor.accept(stream).await {
                    Ok(mut stream) => {
                        stream.get_mut().1.set_buffer_limit(Some(CONNECTION_BUFFER));
                        serve_connection(TokioIo::new(stream), service, cancel).await
                    }
                    Err(e) => {
                        tracing::debug!(%peer, error = %e, "TLS handshake failed");
                        return;
                    }
                },
                None => serve_connection(TokioIo::new(stream), service, cancel).await,
            };
            if let Err(e) = result {
                tracing::debug!(%peer, error = %e, "connection ended");
            }
        });
        // Reap the connections that ended.
        while connections.try_join_next().is_some() {}
    }
    while connections.join_next().await.is_some() {}
}

async fn serve_connection<I, S>(
    io: I,
    service: S,
    cancel: CancellationToken,
) -> Result<(), hyper::Error>
where
    I: hyper::rt::Read + hyper::rt::Write + Unpin + Send + 'static,
    S: hyper::service::Service<Request<Incoming>, Response = Response<Body>, Error = Infallible>
        + Send
        + 'static,
    S::Future: Send + 'static,
{
    let connection = hyper::server::conn::http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_TIMEOUT)
        .max_buf_size(CONNECTION_BUFFER)
        .serve_connection(io, service);
    tokio::pin!(connection);
    tokio::select! {
        result = connection.as_mut() => result,
        () = cancel.cancelled() => {
            connection.as_mut().graceful_shutdown();
            connection.await
        }
    }
}

/// The answer to one request, logged at debug level.
async fn answer(
    shared: &Shared,
    credentials: &Credentials,
    cancel: &CancellationToken,
    request: Request<Incoming>,
) -> Response<Body> {
    let started = std::time::Instant::now();
    let method = request.method().clone();
    let uri = request.uri().clone();
    let mut verb = "other";
    let response = match respond(shared, credentials, cancel, &request, &mut verb).await {
        Ok(response) => response,
        Err(refusal) => status_response(&refusal),
    };
    let code = response.status().as_u16();
    let elapsed = started.elapsed();
    metrics::counter!("kdi_serve_requests_total", "verb" => verb, "code" => code.to_string())
        .increment(1);
    if verb != "watch" {
        metrics::histogram!("kdi_serve_request_duration_seconds", "verb" => verb)
            .record(elapsed.as_secs_f64());
    }
    tracing::debug!(
        %method,
        %uri,
        verb,
        status = code,
        elapsed_ms = elapsed.as_secs_f64() * 1e3,
        "request"
    );
    response
}

async fn respond(
    shared: &Shared,
    credentials: &Credentials,
    cancel: &CancellationToken,
    request: &Request<Incoming>,
    verb: &mut &'static str,
) -> Result<Response<Body>, Refusal> {
    let route = Route::of(request.uri().path());
    *verb = match &route {
        Route::Live | Route::Ready => "health",
        Route::Object(_) => "list",
        Route::Unknown => "other",
        _ => "discovery",
    };
    if !matches!(route, Route::Live | Route::Ready)
        && let Some(token) = credentials.token()
        && !access::bearer_matches(
            request
                .headers()
                .get(header::AUTHORIZATION)
                .map(http::HeaderValue::as_bytes),
            token,
        )
    {
        return Err(Refusal::unauthorized());
    }
    if request.method() != Method::GET && request.method() != Method::HEAD {
        return Err(Refusal::method_not_allowed(request.method().as_str()));
    }
    match route {
        Route::Live => Ok(text(StatusCode::OK, "ok".into())),
        Route::Ready => Ok(ready(shared)),
        Route::Version => Ok(json(&serde_json::json!({
            "major": "1",
            "minor": "",
            "gitVersion": concat!("kdi-serve-", env!("CARGO_PKG_VERSION")),
            "platform": std::env::consts::OS,
        }))),
        Route::CoreVersions => Ok(json(
            &shared
                .served
                .read()
                .core_versions(&credentials.addr.to_string()),
        )),
        Route::Groups => Ok(json(&shared.served.read().group_list())),
        Route::Group(group) => shared
            .served
            .read()
            .group(&group)
            .map(|g| json(&g))
            .ok_or_else(|| {
                Refusal::not_found(format!(
                    "the server could not find the requested resource (group {group} is not served)"
                ))
            }),
        Route::Resources { group, version } => shared
            .served
            .read()
            .resource_list(&group, &version)
            .map(|r| json(&r))
            .ok_or_else(|| {
                Refusal::not_found(format!(
                    "the server could not find the requested resource ({} is not served)",
                    if group.is_empty() {
                        version
                    } else {
                        format!("{group}/{version}")
                    }
                ))
            }),
        Route::Object(target) => object(shared, cancel, request, target, verb).await,
        Route::Unknown => Err(Refusal::not_found(
            "the server could not find the requested resource",
        )),
    }
}

/// A get or list of a served resource.
async fn object(
    shared: &Shared,
    cancel: &CancellationToken,
    request: &Request<Incoming>,
    target: Target,
    verb: &mut &'static str,
) -> Result<Response<Body>, Refusal> {
    if target.name.is_some() {
        *verb = "get";
    }
    let (served, feed, target) = resolve(shared, target)?;
    if let Some(sub) = &target.subresource {
        return Err(Refusal::not_found(format!(
            "the server could not find the requested resource (kdi serves no subresources: {sub})"
        )));
    }
    if target.namespace.is_some() && !served.known.namespaced {
        return Err(Refusal::not_found(format!(
            "the server could not find the requested resource ({} is cluster-scoped)",
            list::resource_name(&served)
        )));
    }
    let query = Query::parse(request.uri().query())?;
    if query.watch {
        *verb = "watch";
    }
    // As Go's `Header.Get`: the first Accept header.
    let accept = request
        .headers()
        .get(header::ACCEPT)
        .map(|h| String::from_utf8_lossy(h.as_bytes()));
    let accepted = Accepted::of(accept.as_deref())?;
    let list = target.name.is_none() && !query.watch;
    let representation = Representation::of(accepted, &query, &served, list).await?;
    if query.watch {
        let events = watch::watch(&served, &feed, &target, &query, representation, cancel)?;
        return Ok(stream(events));
    }
    if target.name.is_some() {
        return list::get(&served, &target, &representation).map(json_bytes);
    }
    // The watch history starts no later than the cache this list shows:
    // a client that lists, then watches from the list's resourceVersion,
    // finds every change after it.
    feed.establish(&served);
    list::list(&served, &shared.pages, &target, &query, &representation)
        .await
        .map(json_bytes)
}

/// The served resource a target names. `namespaces/X/Y` is the Namespace
/// X's subresource Y when Y names no served resource.
fn resolve(
    shared: &Shared,
    target: Target,
) -> Result<(ServedResource, Arc<Feed>, Target), Refusal> {
    let served = shared.served.read();
    if let Some((found, feed)) = served.get(&target.group, &target.version, &target.plural) {
        return Ok((found.clone(), feed.clone(), target));
    }
    if let Some(namespace_path) = target.as_namespace_subresource()
        && let Some((found, feed)) = served.get("", &namespace_path.version, "namespaces")
    {
        return Ok((found.clone(), feed.clone(), namespace_path));
    }
    let group_version = if target.group.is_empty() {
        target.version.clone()
    } else {
        format!("{}/{}", target.group, target.version)
    };
    Err(Refusal::not_found(format!(
        "the server could not find the requested resource ({} in {group_version} is not served)",
        target.plural
    )))
}

/// `/readyz`: 200 when every served cache has synced, else 503 naming
/// those that have not.
fn ready(shared: &Shared) -> Response<Body> {
    let served = shared.served.read();
    let waiting: Vec<String> = served
        .all()
        .filter_map(|r| list::ready(r).err())
        .map(|refusal| refusal.message)
        .collect();
    if waiting.is_empty() {
        text(StatusCode::OK, "ok".into())
    } else {
        text(
            StatusCode::SERVICE_UNAVAILABLE,
            format!("not synced:\n{}\n", waiting.join("\n")),
        )
    }
}

/// A watch's response: its events as they come, one JSON object a line.
fn stream(events: tokio::sync::mpsc::Receiver<Bytes>) -> Response<Body> {
    let frames = futures::stream::unfold(events, |mut events| async move {
        let chunk = events.recv().await?;
        Some((Ok::<_, Infallible>(hyper::body::Frame::data(chunk)), events))
    });
    let mut response = Response::new(http_body_util::StreamBody::new(frames).boxed());
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn body(bytes: impl Into<Bytes>) -> Body {
    Full::new(bytes.into()).boxed()
}

fn text(status: StatusCode, text: String) -> Response<Body> {
    let mut response = Response::new(body(text));
    *response.status_mut() = status;
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("text/plain; charset=utf-8"),
    );
    response
}

fn json(value: &serde_json::Value) -> Response<Body> {
    json_bytes(value.to_string().into_bytes())
}

fn json_bytes(bytes: Vec<u8>) -> Response<Body> {
    let mut response = Response::new(body(bytes));
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        http::HeaderValue::from_static("application/json"),
    );
    response
}

fn status_response(refusal: &Refusal) -> Response<Body> {
    let mut response = json(&refusal.status());
    *response.status_mut() =
        StatusCode::from_u16(refusal.code).unwrap_or(StatusCode::INTERNAL_SERVER_ERROR);
    response
}
