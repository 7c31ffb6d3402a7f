//! Where the server listens: the `--listen` addresses, unix sockets, TLS, and the accept loop that holds at most
//! `--max-connections` connections open (past it, new ones wait in the listen backlog: nothing of theirs is read
//! or held until one closes).

use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use rmcp::ServerHandler;
use tokio::net::{TcpListener, UnixListener};
use tokio::sync::{Semaphore, watch};
use tokio::task::JoinSet;

use super::connection::serve_connection;
use super::front::Front;
use super::{HEADER_TIMEOUT, HttpError};

/// The PEM files of `--tls-cert` and `--tls-key`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TlsFiles {
    /// The certificate chain, leaf first.
    pub cert: PathBuf,
    /// The private key (PKCS#8, PKCS#1 or SEC1).
    pub key: PathBuf,
}

/// Why a `--listen` value is refused.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ListenError {
    /// Not `HOST:PORT` or `[V6]:PORT`.
    #[error("--listen `{0}` is not HOST:PORT or [V6]:PORT (e.g. 127.0.0.1:7707)")]
    Invalid(String),
    /// `unix:` with no path, or a path that cannot be made absolute.
    #[error("--listen `{0}`: a unix socket needs a path (e.g. unix:/run/alp-memory/alp.sock)")]
    Unix(String),
    /// Not loopback, and so not without TLS.
    #[error(
        "--listen `{0}` is not a loopback address: a bearer token must never cross a network in plaintext; give \
         --tls-cert and --tls-key, or listen on loopback (behind a TLS-terminating proxy)"
    )]
    NotLoopback(String),
}

/// Where one listener listens.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum ListenAddr {
    /// A TCP address.
    Tcp(SocketAddr),
    /// A unix socket's absolute path.
    Unix(PathBuf),
}

impl std::fmt::Display for ListenAddr {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ListenAddr::Tcp(addr) => write!(f, "{addr}"),
            ListenAddr::Unix(path) => write!(f, "unix:{}", path.display()),
        }
    }
}

/// Parses a `--listen` value: `HOST:PORT` with an IP or `localhost`, or `[V6]:PORT` (only loopback addresses), or
/// `unix:PATH` (made absolute against the current directory). A TCP address that is not loopback needs `tls`.
///
/// # Errors
///
/// [`ListenError`].
pub fn parse_listen(text: &str, tls: bool) -> Result<ListenAddr, ListenError> {
    if let Some(path) = text.strip_prefix("unix:") {
        if path.is_empty() {
            return Err(ListenError::Unix(text.to_owned()));
        }
        let path = std::path::absolute(path).map_err(|_| ListenError::Unix(text.to_owned()))?;
        return Ok(ListenAddr::Unix(path));
    }
    let addr = match text.strip_prefix("localhost:") {
        Some(port) => port
            .parse::<u16>()
            .map(|port| SocketAddr::from(([127, 0, 0, 1], port)))
            .map_err(|_| ListenError::Invalid(text.to_owned()))?,
        None => text.parse::<SocketAddr>().map_err(|_| ListenError::Invalid(text.to_owned()))?,
    };
    if !addr.ip().is_loopback() && !tls {
        return Err(ListenError::NotLoopback(text.to_owned()));
    }
    Ok(ListenAddr::Tcp(addr))
}

/// The unix socket files this server made, removed when it stops.
pub(super) struct Sockets(pub(super) Vec<PathBuf>);

impl Drop for Sockets {
    fn drop(&mut self) {
        for path in &self.0 {
            let _ = std::fs::remove_file(path);
        }
    }
}

/// Binds a unix socket at `path`, readable and writable by its owner and group (0660). A socket file left by a
/// server that is gone (nothing answers on it) is replaced; anything else at `path` is refused.
pub(super) fn bind_unix(path: &Path) -> std::io::Result<UnixListener> {
    use std::os::unix::fs::{FileTypeExt as _, PermissionsExt as _};
    match std::fs::symlink_metadata(path) {
        Ok(meta) if meta.file_type().is_socket() => match std::os::unix::net::UnixStream::connect(path) {
            Err(e) if e.kind() == std::io::ErrorKind::ConnectionRefused => std::fs::remove_file(path)?,
            Err(e) => return Err(e),
            Ok(_) => {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::AddrInUse,
                    "a server is already listening on this socket",
                ));
            }
        },
        Ok(_) => {
            return Err(std::io::Error::new(
                std::io::ErrorKind::AlreadyExists,
                "the path exists and is not a socket",
            ));
        }
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {}
        Err(e) => return Err(e),
    }
    let listener = UnixListener::bind(path)?;
    if let Err(e) = std::fs::set_permissions(path, std::fs::Permissions::from_mode(0o660)) {
        let _ = std::fs::remove_file(path);
        return Err(e);
    }
    Ok(listener)
}

/// The TLS side of every TCP listener: rustls on ring, TLS 1.2 and 1.3, HTTP/1.1 by ALPN.
pub(super) fn tls_acceptor(files: &TlsFiles) -> Result<tokio_rustls::TlsAcceptor, HttpError> {
    use rustls_pki_types::pem::PemObject as _;
    use rustls_pki_types::{CertificateDer, PrivateKeyDer};
    let fail = |reason: String| HttpError::Tls {
        cert: files.cert.display().to_string(),
        key: files.key.display().to_string(),
        reason,
    };
    let certs = CertificateDer::pem_file_iter(&files.cert)
        .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
        .map_err(|e| fail(format!("the certificate: {e}")))?;
    if certs.is_empty() {
        return Err(fail("the certificate file holds no certificate".to_owned()));
    }
    let key = PrivateKeyDer::from_pem_file(&files.key).map_err(|e| fail(format!("the key: {e}")))?;
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ServerConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| fail(e.to_string()))?
        .with_no_client_auth()
        .with_single_cert(certs, key)
        .map_err(|e| fail(e.to_string()))?;
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsAcceptor::from(Arc::new(config)))
}

/// One bound listener.
pub(super) enum Listener {
    Tcp(TcpListener),
    Tls(TcpListener, tokio_rustls::TlsAcceptor),
    Unix(UnixListener),
}

/// One accepted connection.
enum Accepted {
    Tcp(tokio::net::TcpStream),
    Tls(tokio::net::TcpStream, tokio_rustls::TlsAcceptor),
    Unix(tokio::net::UnixStream),
}

impl Listener {
    async fn accept(&self) -> std::io::Result<Accepted> {
        match self {
            Listener::Tcp(listener) => listener.accept().await.map(|(stream, _)| Accepted::Tcp(stream)),
            Listener::Tls(listener, acceptor) => {
                listener.accept().await.map(|(stream, _)| Accepted::Tls(stream, acceptor.clone()))
            }
            Listener::Unix(listener) => listener.accept().await.map(|(stream, _)| Accepted::Unix(stream)),
        }
    }
}

/// Accepts connections until asked to stop, then waits for the connections it started. A connection is accepted
/// only once one of `open`'s permits is free (the permits are shared by every listener), and holds it until it
/// closes.
pub(super) async fn accept_loop<H: ServerHandler + Send + 'static>(
    listener: Listener,
    front: Arc<Front<H>>,
    open: Arc<Semaphore>,
    mut stop: watch::Receiver<bool>,
) {
    let mut running = JoinSet::new();
    loop {
        let permit = tokio::select! {
            _ = stop.changed() => break,
            permit = Arc::clone(&open).acquire_owned() => match permit {
                Ok(permit) => permit,
                Err(_) => break,
            },
            Some(_) = running.join_next(), if !running.is_empty() => continue,
        };
        let accepted = tokio::select! {
            _ = stop.changed() => break,
            accepted = listener.accept() => accepted,
        };
        // A failed accept (out of descriptors, a reset before accept) ends nothing but that connection.
        let (front, stop) = (Arc::clone(&front), stop.clone());
        match accepted {
            Ok(Accepted::Tcp(stream)) => {
                running.spawn(async move {
                    serve_connection(stream, front, stop).await;
                    drop(permit);
                });
            }
            Ok(Accepted::Tls(stream, acceptor)) => {
                running.spawn(async move {
                    // The handshake is held to the header deadline; a failed one ends the connection.
                    if let Ok(Ok(stream)) =
                        tokio::time::timeout(HEADER_TIMEOUT, acceptor.accept(stream)).await
                    {
                        serve_connection(stream, front, stop).await;
                    }
                    drop(permit);
                });
            }
            Ok(Accepted::Unix(stream)) => {
                running.spawn(async move {
                    serve_connection(stream, front, stop).await;
                    drop(permit);
                });
            }
            Err(_) => {}
        }
    }
    drop(listener);
    while running.join_next().await.is_some() {}
}
