//! The HTTP side of `alp inspect`: HTTP/1.1 on hyper over one loopback listener, on a current-thread tokio runtime.
//! Every request's first path segment must be the key (compared in constant time) before anything is read; pages
//! are made on the runtime's blocking pool, since the store and the log are read synchronously. Every answer
//! carries the same strict headers: no script, no asset from anywhere, no referrer, no caching, no sniffing.

use std::convert::Infallible;
use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use alp_memory::MemoryError;
use bytes::Bytes;
use http::{HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::Full;
use hyper::body::Incoming;
use hyper::server::conn::http1;
use hyper::service::service_fn;
use hyper_util::rt::{TokioIo, TokioTimer};
use subtle::ConstantTimeEq as _;
use tokio::net::TcpListener;

use super::{Inspector, Page};

/// The Content-Security-Policy of every answer: nothing may load or run but the page's own inline stylesheet, and
/// forms may only be sent back to this server.
const CSP: &str = "default-src 'none'; style-src 'unsafe-inline'; form-action 'self'; base-uri 'none'; \
                   frame-ancestors 'none'";

/// How long a request's headers may take to arrive.
const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

struct Shared {
    inspector: Inspector,
    key: String,
}

/// Serves `inspector` on `addr` under `/<key>/` until SIGINT or SIGTERM; `ready` is told the URL once it listens.
pub(super) fn serve(
    inspector: Inspector,
    addr: SocketAddr,
    key: String,
    ready: impl FnOnce(&str),
) -> Result<(), MemoryError> {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| MemoryError::Usage(format!("cannot start alp inspect's runtime: {e}")))?;
    runtime.block_on(async move {
        let listener = TcpListener::bind(addr)
            .await
            .map_err(|e| MemoryError::Usage(format!("cannot listen on {addr}: {e}")))?;
        let local =
            listener.local_addr().map_err(|e| MemoryError::Usage(format!("cannot listen on {addr}: {e}")))?;
        let mut terminate = tokio::signal::unix::signal(tokio::signal::unix::SignalKind::terminate())
            .map_err(|e| MemoryError::Usage(format!("cannot watch for SIGTERM: {e}")))?;
        ready(&format!("http://{local}/{key}/"));
        let shared = Arc::new(Shared { inspector, key });
        loop {
            let stream = tokio::select! {
                _ = tokio::signal::ctrl_c() => break,
                _ = terminate.recv() => break,
                accepted = listener.accept() => match accepted {
                    Ok((stream, _)) => stream,
                    // A connection that failed before it was accepted (reset, out of descriptors): the next one.
                    Err(_) => continue,
                },
            };
            let shared = Arc::clone(&shared);
            tokio::spawn(async move {
                let service = service_fn(move |request| {
                    let shared = Arc::clone(&shared);
                    async move { Ok::<_, Infallible>(respond(shared, request).await) }
                });
                let _ = http1::Builder::new()
                    .timer(TokioTimer::new())
                    .header_read_timeout(HEADER_TIMEOUT)
                    .serve_connection(TokioIo::new(stream), service)
                    .await;
            });
        }
        Ok(())
    })
}

/// The answer to one request. The body is never read: every page is a GET.
async fn respond(shared: Arc<Shared>, request: Request<Incoming>) -> Response<Full<Bytes>> {
    let path = request.uri().path().trim_start_matches('/');
    let (first, rest) = match path.split_once('/') {
        Some((first, rest)) => (first, Some(rest)),
        None => (path, None),
    };
    if !bool::from(first.as_bytes().ct_eq(shared.key.as_bytes())) {
        return answer(
            StatusCode::FORBIDDEN,
            "text/plain; charset=utf-8",
            "forbidden: this URL needs the key `alp inspect` printed\n".into(),
        );
    }
    if !matches!(*request.method(), Method::GET | Method::HEAD) {
        let mut response = answer(
            StatusCode::METHOD_NOT_ALLOWED,
            "text/plain; charset=utf-8",
            "read-only: GET only\n".into(),
        );
        response.headers_mut().insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
        return response;
    }
    let Some(rest) = rest else {
        let mut response = answer(StatusCode::PERMANENT_REDIRECT, "text/plain; charset=utf-8", String::new());
        if let Ok(location) = HeaderValue::from_str(&format!("/{}/", shared.key)) {
            response.headers_mut().insert(header::LOCATION, location);
        }
        return response;
    };
    let (rest, query) = (rest.to_owned(), request.uri().query().unwrap_or_default().to_owned());
    let page = tokio::task::spawn_blocking(move || shared.inspector.page(&rest, &query)).await;
    match page {
        Ok(Page { status, html }) => answer(status, "text/html; charset=utf-8", html),
        Err(_) => {
            answer(StatusCode::INTERNAL_SERVER_ERROR, "text/plain; charset=utf-8", "the page failed\n".into())
        }
    }
}

fn answer(status: StatusCode, content_type: &'static str, body: String) -> Response<Full<Bytes>> {
    let mut response = Response::new(Full::new(Bytes::from(body)));
    *response.status_mut() = status;
    let headers = response.headers_mut();
    headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    headers.insert(header::CONTENT_SECURITY_POLICY, HeaderValue::from_static(CSP));
    headers.insert(header::X_CONTENT_TYPE_OPTIONS, HeaderValue::from_static("nosniff"));
    headers.insert(header::REFERRER_POLICY, HeaderValue::from_static("no-referrer"));
    headers.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-store"));
    headers.insert(header::X_FRAME_OPTIONS, HeaderValue::from_static("DENY"));
    response
}
