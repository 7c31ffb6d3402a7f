//! `alp serve` as an OAuth 2.1 protected resource: the trusted issuers and their keys (from `--oauth-jwks` or
//! fetched from the issuer's RFC 8414 / OpenID metadata over verified HTTPS, cached), the RFC 9728 metadata
//! document, and the check of a request's JWT ([`crate::oauth`] does the pure part).
//!
//! Keys are fetched once at start, before the server listens. A token whose `kid` the cached set lacks makes one
//! refresh of its issuer's keys, at most once a minute per issuer (concurrent requests wait for that one fetch);
//! nothing else ever puts a fetch on a request's path. Every fetch is bounded: [`FETCH_TIMEOUT`] for the metadata
//! and the JWKS together, at most [`MAX_DOCUMENT_BYTES`] per document, no redirect followed, `https` only.

use std::path::PathBuf;
use std::sync::{Arc, PoisonError, RwLock};
use std::time::{Duration, Instant};

use bytes::Bytes;
use http::{Request, StatusCode, Uri};
use http_body_util::{BodyExt as _, Empty, Limited};
use hyper_util::rt::TokioIo;
use serde_json::{Value, json};
use tokio::net::TcpStream;

use super::HttpError;
use crate::oauth::{Accepted, Expected, Issuer, JwtRefusal, KeySet, Peeked, peek};

/// How long one fetch of an issuer's keys (its metadata and its JWKS) may take.
pub const FETCH_TIMEOUT: Duration = Duration::from_secs(5);
/// The largest metadata or JWKS document read.
pub const MAX_DOCUMENT_BYTES: usize = 1024 * 1024;
/// The least time between two fetches of one issuer's keys.
pub const REFRESH_INTERVAL: Duration = Duration::from_secs(60);
/// The path of the RFC 9728 metadata document (also served suffixed with `/mcp`).
pub const METADATA_PATH: &str = "/.well-known/oauth-protected-resource";

/// The OAuth flags of `alp serve`.
#[derive(Debug, Clone)]
pub struct OAuthOptions {
    /// `--oauth-issuer`: each a trusted authorization server (at least one).
    pub issuers: Vec<String>,
    /// `--resource`: the audience tokens must name; `None` for the first listen URL.
    pub resource: Option<String>,
    /// `--oauth-role-claim`: the claim naming the role.
    pub role_claim: String,
    /// `--oauth-jwks`: the one issuer's keys, read from this file instead of fetched.
    pub jwks_file: Option<PathBuf>,
    /// `--oauth-ca`: the PEM roots the HTTPS client trusts instead of the system's.
    pub ca: Option<PathBuf>,
}

/// Where an issuer's keys come from.
enum Source {
    /// `--oauth-jwks`, read once at start.
    File,
    /// The issuer's metadata, then its `jwks_uri`.
    Remote,
}

/// One trusted issuer and its cached keys.
struct Trusted {
    issuer: Issuer,
    source: Source,
    keys: RwLock<Arc<KeySet>>,
    /// When the keys were last fetched (or tried), for the once-a-minute rule; held across the fetch, so
    /// concurrent requests with an unknown `kid` wait for one fetch instead of making their own.
    fetched: tokio::sync::Mutex<Option<Instant>>,
}

/// What the front needs of OAuth: the issuers, the resource, the metadata and the challenge.
pub(super) struct OAuth {
    resource: String,
    role_claim: String,
    issuers: Vec<Trusted>,
    client: tokio_rustls::TlsConnector,
    /// The RFC 9728 document, as served.
    metadata: Bytes,
    /// `resource_metadata="…"` of every 401.
    challenge: String,
}

impl std::fmt::Debug for OAuth {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("OAuth").field("resource", &self.resource).finish_non_exhaustive()
    }
}

fn refuse(reason: String) -> HttpError {
    HttpError::OAuth(reason)
}

/// The origin of an `http(s)` URL: scheme and authority.
fn origin(url: &str) -> Option<String> {
    let uri: Uri = url.parse().ok()?;
    Some(format!("{}://{}", uri.scheme_str()?, uri.authority()?))
}

impl OAuth {
    /// Reads the options and fetches every remote issuer's keys (concurrently, each bounded by
    /// [`FETCH_TIMEOUT`]); an issuer whose keys cannot be fetched is logged and tried again on its first token.
    /// `first_url` is the first listen URL (the default resource).
    pub(super) async fn start(options: &OAuthOptions, first_url: &str) -> Result<Arc<OAuth>, HttpError> {
        let issuers = options
            .issuers
            .iter()
            .map(|url| Issuer::parse(url).map_err(|e| refuse(e.to_string())))
            .collect::<Result<Vec<_>, _>>()?;
        if issuers.is_empty() {
            return Err(refuse("OAuth needs at least one --oauth-issuer".to_owned()));
        }
        if options.jwks_file.is_some() && issuers.len() != 1 {
            return Err(refuse("--oauth-jwks goes with exactly one --oauth-issuer".to_owned()));
        }
        let resource = options.resource.clone().unwrap_or_else(|| first_url.to_owned());
        let Some(resource_origin) = origin(&resource).filter(|_| resource.starts_with("http")) else {
            return Err(refuse(format!(
                "--resource `{resource}` is not an http or https URL (the first listen URL must be one)"
            )));
        };
        if options.role_claim.is_empty() {
            return Err(refuse("--oauth-role-claim is empty".to_owned()));
        }
        let client = https_client(options.ca.as_ref())?;
        let file_keys = match &options.jwks_file {
            Some(path) => {
                let text = std::fs::read(path)
                    .map_err(|e| refuse(format!("cannot read --oauth-jwks `{}`: {e}", path.display())))?;
                let keys = KeySet::parse(&text)
                    .map_err(|e| refuse(format!("--oauth-jwks `{}`: {e}", path.display())))?;
                Some(Arc::new(keys))
            }
            None => None,
        };
        let metadata = json!({
            "resource": resource,
            "authorization_servers": issuers.iter().map(Issuer::url).collect::<Vec<_>>(),
            "bearer_methods_supported": ["header"],
            "scopes_supported": [],
        });
        let challenge = format!("resource_metadata=\"{resource_origin}{METADATA_PATH}/mcp\"");
        let oauth = OAuth {
            issuers: issuers
                .into_iter()
                .map(|issuer| Trusted {
                    issuer,
                    source: if file_keys.is_some() { Source::File } else { Source::Remote },
                    keys: RwLock::new(file_keys.clone().unwrap_or_default()),
                    fetched: tokio::sync::Mutex::new(None),
                })
                .collect(),
            resource,
            role_claim: options.role_claim.clone(),
            client,
            metadata: Bytes::from(metadata.to_string()),
            challenge,
        };
        let oauth = Arc::new(oauth);
        let mut fetches = tokio::task::JoinSet::new();
        for at in 0..oauth.issuers.len() {
            let oauth = Arc::clone(&oauth);
            fetches.spawn(async move {
                let trusted = &oauth.issuers[at];
                if matches!(trusted.source, Source::Remote) {
                    let mut fetched = trusted.fetched.lock().await;
                    oauth.refresh(trusted, &mut fetched).await;
                }
            });
        }
        while fetches.join_next().await.is_some() {}
        Ok(oauth)
    }

    /// The RFC 9728 document.
    pub(super) fn metadata(&self) -> Bytes {
        self.metadata.clone()
    }

    /// `Bearer resource_metadata="…"`, plus `error="invalid_token"` when a token was sent.
    pub(super) fn challenge(&self, token_sent: bool) -> String {
        if token_sent {
            format!("Bearer {}, error=\"invalid_token\"", self.challenge)
        } else {
            format!("Bearer {}", self.challenge)
        }
    }

    /// Checks a JWT: its issuer's cached keys, refreshed once (at most once a minute) when they lack its `kid`.
    /// Returns the issuer and what the token says; whether its role has a definition is the caller's check.
    pub(super) async fn check(&self, token: &str, now: u64) -> Result<(&Issuer, Accepted), JwtRefusal> {
        let peeked = peek(token)?;
        let trusted = self
            .issuers
            .iter()
            .find(|trusted| trusted.issuer.url() == peeked.issuer())
            .ok_or(JwtRefusal::Issuer)?;
        let expect = Expected { resource: &self.resource, role_claim: &self.role_claim };
        let keys = trusted.keys.read().unwrap_or_else(PoisonError::into_inner).clone();
        match keys.verify(token, &peeked, &trusted.issuer, &expect, now) {
            Err(JwtRefusal::UnknownKey) if matches!(trusted.source, Source::Remote) => {
                let keys = self.refresh_for(trusted, &peeked, &keys).await;
                keys.verify(token, &peeked, &trusted.issuer, &expect, now).map_err(|refusal| match refusal {
                    JwtRefusal::UnknownKey if keys.is_empty() => JwtRefusal::KeysUnavailable,
                    other => other,
                })
            }
            result => result,
        }
        .map(|accepted| (&trusted.issuer, accepted))
    }

    /// The keys to check a token whose `kid` `seen` lacks: fetched again unless the last fetch was less than
    /// [`REFRESH_INTERVAL`] ago (or another request's fetch already brought the `kid`).
    async fn refresh_for(&self, trusted: &Trusted, peeked: &Peeked, seen: &Arc<KeySet>) -> Arc<KeySet> {
        let mut fetched = trusted.fetched.lock().await;
        let current = trusted.keys.read().unwrap_or_else(PoisonError::into_inner).clone();
        if !Arc::ptr_eq(&current, seen) && current.contains(peeked.kid()) {
            return current;
        }
        if fetched.is_some_and(|at| at.elapsed() < REFRESH_INTERVAL) {
            return current;
        }
        self.refresh(trusted, &mut fetched).await;
        trusted.keys.read().unwrap_or_else(PoisonError::into_inner).clone()
    }

    /// Fetches `trusted`'s keys and caches them (a failed fetch keeps the keys cached before it).
    async fn refresh(&self, trusted: &Trusted, fetched: &mut Option<Instant>) {
        *fetched = Some(Instant::now());
        let result = match tokio::time::timeout(FETCH_TIMEOUT, self.fetch_keys(&trusted.issuer)).await {
            Ok(result) => result,
            Err(_) => Err(format!("no answer within {} s", FETCH_TIMEOUT.as_secs())),
        };
        match result {
            Ok(keys) => {
                eprintln!(
                    "alp serve: fetched {} key(s) of OAuth issuer {}",
                    keys.len(),
                    trusted.issuer.url()
                );
                *trusted.keys.write().unwrap_or_else(PoisonError::into_inner) = Arc::new(keys);
            }
            Err(reason) => {
                eprintln!(
                    "alp serve: cannot fetch the keys of OAuth issuer {}: {reason}",
                    trusted.issuer.url()
                );
            }
        }
    }

    /// The issuer's metadata (RFC 8414, else OpenID Connect discovery), whose `issuer` must be the issuer, then
    /// its `jwks_uri`.
    async fn fetch_keys(&self, issuer: &Issuer) -> Result<KeySet, String> {
        let url = issuer.url().trim_end_matches('/');
        let (base, path) = match url.get(8..).and_then(|rest| rest.find('/')) {
            Some(at) => url.split_at(8 + at),
            None => (url, ""),
        };
        let candidates = [
            format!("{base}/.well-known/oauth-authorization-server{path}"),
            format!("{url}/.well-known/openid-configuration"),
        ];
        let mut reasons = Vec::new();
        let mut metadata = None;
        for candidate in &candidates {
            match self.get_json(candidate).await {
                Ok(document) => {
                    metadata = Some(document);
                    break;
                }
                Err(reason) => reasons.push(format!("{candidate}: {reason}")),
            }
        }
        let metadata = metadata.ok_or_else(|| reasons.join("; "))?;
        if metadata.get("issuer").and_then(Value::as_str) != Some(issuer.url()) {
            return Err(format!("its metadata names another issuer: {}", metadata["issuer"]));
        }
        let jwks_uri =
            metadata.get("jwks_uri").and_then(Value::as_str).ok_or("its metadata has no jwks_uri")?;
        let body = self.get(jwks_uri).await.map_err(|reason| format!("{jwks_uri}: {reason}"))?;
        KeySet::parse(&body).map_err(|e| format!("{jwks_uri}: {e}"))
    }

    async fn get_json(&self, url: &str) -> Result<Value, String> {
        let body = self.get(url).await?;
        match serde_json::from_slice(&body) {
            Ok(value @ Value::Object(_)) => Ok(value),
            _ => Err("not a JSON object".to_owned()),
        }
    }

    /// `GET url` over HTTPS (HTTP/1.1, TLS verified), the body at most [`MAX_DOCUMENT_BYTES`]; any status but
    /// 200 is a failure (no redirect is followed).
    async fn get(&self, url: &str) -> Result<Bytes, String> {
        let uri: Uri = url.parse().map_err(|_| "not a URL".to_owned())?;
        if uri.scheme_str() != Some("https") {
            return Err("not an https URL".to_owned());
        }
        let authority = uri.authority().ok_or("no host")?.clone();
        let host = authority.host().trim_start_matches('[').trim_end_matches(']').to_owned();
        let port = authority.port_u16().unwrap_or(443);
        let name = rustls_pki_types::ServerName::try_from(host.clone()).map_err(|e| e.to_string())?;
        let tcp = TcpStream::connect((host.as_str(), port)).await.map_err(|e| e.to_string())?;
        let tls = self.client.connect(name, tcp).await.map_err(|e| format!("TLS: {e}"))?;
        let (mut sender, connection) =
            hyper::client::conn::http1::handshake(TokioIo::new(tls)).await.map_err(|e| e.to_string())?;
        let driver = tokio::spawn(connection);
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let request = Request::get(path)
            .header(http::header::HOST, authority.as_str())
            .header(http::header::ACCEPT, "application/json")
            .header(http::header::USER_AGENT, concat!("alp-memory/", env!("CARGO_PKG_VERSION")))
            .body(Empty::<Bytes>::new())
            .map_err(|e| e.to_string())?;
        let result = async {
            let response = sender.send_request(request).await.map_err(|e| e.to_string())?;
            if response.status() != StatusCode::OK {
                return Err(format!("answered {}", response.status()));
            }
            if response
                .headers()
                .get(http::header::CONTENT_LENGTH)
                .and_then(|length| length.to_str().ok()?.parse::<u64>().ok())
                .is_some_and(|length| length > MAX_DOCUMENT_BYTES as u64)
            {
                return Err(format!("longer than {MAX_DOCUMENT_BYTES} bytes"));
            }
            Limited::new(response.into_body(), MAX_DOCUMENT_BYTES)
                .collect()
                .await
                .map(|collected| collected.to_bytes())
                .map_err(|e| {
                    if e.is::<http_body_util::LengthLimitError>() {
                        format!("longer than {MAX_DOCUMENT_BYTES} bytes")
                    } else {
                        e.to_string()
                    }
                })
        }
        .await;
        driver.abort();
        result
    }
}

/// The HTTPS client of the fetches: rustls on ring, trusting `--oauth-ca`'s certificates or the system's roots.
fn https_client(ca: Option<&PathBuf>) -> Result<tokio_rustls::TlsConnector, HttpError> {
    use rustls_pki_types::CertificateDer;
    use rustls_pki_types::pem::PemObject as _;
    let mut roots = rustls::RootCertStore::empty();
    match ca {
        Some(path) => {
            let certs = CertificateDer::pem_file_iter(path)
                .and_then(|certs| certs.collect::<Result<Vec<_>, _>>())
                .map_err(|e| refuse(format!("cannot read --oauth-ca `{}`: {e}", path.display())))?;
            if certs.is_empty() {
                return Err(refuse(format!("--oauth-ca `{}` holds no certificate", path.display())));
            }
            for cert in certs {
                roots.add(cert).map_err(|e| refuse(format!("--oauth-ca `{}`: {e}", path.display())))?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                eprintln!(
                    "alp serve: no trusted root certificates found on this system; give the issuers' CA with --oauth-ca"
                );
            }
        }
    }
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let mut config = rustls::ClientConfig::builder_with_provider(provider)
        .with_safe_default_protocol_versions()
        .map_err(|e| refuse(e.to_string()))?
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"http/1.1".to_vec()];
    Ok(tokio_rustls::TlsConnector::from(Arc::new(config)))
}
