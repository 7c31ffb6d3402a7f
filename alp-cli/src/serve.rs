//! `alp serve` and `alp token create|list|revoke|rotate` (operator commands: no `--as`), and `alp adapter mcp ROLE
//! --url URL`. The server itself lives in `memory_mcp::http`; the token rules in `alp_memory::token`.

use std::io::Write as _;
use std::sync::Arc;

use alp_memory::MemoryError;
use alp_memory::memory_audit::{AuditSink as _, JsonlAuditSink};
use alp_memory::memory_entry::Timestamp;
use alp_memory::memory_markdown::MarkdownStore;
use alp_memory::memory_policy::GrantPolicy;
use alp_memory::token::{self, Lifetime, TokenStore};
use memory_mcp::http::{DEFAULT_LISTEN, HttpOptions, HttpServer, OAuthOptions, TlsFiles, parse_listen};
use serde_json::json;

use crate::Printed;
use crate::args::{Cli, McpFormat, OAuthArgs, TokenCommand};
use crate::setup::{
    AUDIT_FILE, AgentsDir, CliAgents, Place, audit_key, json_string, open_server_store, open_store,
    resolve_place,
};

pub(crate) fn operator(cli: &Cli, what: &str, why: &str) -> Result<(), MemoryError> {
    if cli.role.is_some() {
        return Err(MemoryError::Usage(format!("`alp {what}` takes no --as: {why}")));
    }
    Ok(())
}

/// Where `alp token` and `alp serve` keep tokens and write records: a Markdown root (tokens in the root, the JSONL
/// log) or a database (the tokens table, the audit table).
pub(crate) enum Opened {
    Root(Box<(MarkdownStore, JsonlAuditSink)>),
    Database(memory_postgres::PostgresStore, memory_postgres::PostgresAuditSink),
}

impl Opened {
    fn tokens(&self) -> &dyn TokenStore {
        match self {
            Opened::Root(root) => &root.0,
            Opened::Database(store, _) => store,
        }
    }

    pub(crate) fn sink(&self) -> &dyn alp_memory::memory_audit::AuditSink {
        match self {
            Opened::Root(root) => &root.1,
            Opened::Database(_, sink) => sink,
        }
    }
}

/// The store and its audit log.
pub(crate) fn open(cli: &Cli) -> Result<Opened, MemoryError> {
    let root = match resolve_place(cli)? {
        Place::Root(root) => root,
        Place::Database(url) => {
            let store = crate::setup::open_database(&url)?;
            let sink = store.audit_sink(audit_key(None)?);
            return Ok(Opened::Database(store, sink));
        }
    };
    let store = open_server_store(&root)?;
    let log = store.root().join(AUDIT_FILE);
    let sink = match audit_key(Some(store.root()))? {
        Some(key) => JsonlAuditSink::with_key(&log, key),
        None => JsonlAuditSink::open(&log),
    }
    .map_err(|e| MemoryError::AuditUnavailable(e.to_string()))?
    .with_lock_timeout(store.config().lock_timeout)
    // Errors of appends reach token holders of `alp serve`: the log is named relative to the root.
    .named(AUDIT_FILE);
    Ok(Opened::Root(Box::new((store, sink))))
}

/// `alp token …`.
pub(crate) fn token(cli: &Cli, command: &TokenCommand) -> Result<Printed, MemoryError> {
    operator(cli, "token", "a token is bound to the role given with --role")?;
    match command {
        TokenCommand::Create { role, name, expires } => {
            let lifetime = Lifetime::parse(expires)?;
            // The definition is checked the way every command checks it (its message names the agents directory).
            let agents = AgentsDir::resolve(cli)?;
            agents.load(role)?;
            let opened = open(cli)?;
            let actors = CliAgents::new(agents);
            let (secret, record) = token::create_token(
                opened.tokens(),
                opened.sink(),
                &actors,
                role,
                name.as_deref(),
                lifetime,
                Timestamp::now(),
            )?;
            issued(cli, &secret, &record, None)
        }
        TokenCommand::List => {
            let opened = open(cli)?;
            let mut records = opened.tokens().tokens()?;
            records.sort_by(|a, b| (a.created_at(), a.id()).cmp(&(b.created_at(), b.id())));
            if cli.json {
                let listing: Vec<_> = records.iter().map(|r| r.listing()).collect();
                return Ok(Printed::ok(json_string(&json!({ "tokens": listing }))?));
            }
            let mut text = String::new();
            for record in &records {
                let state = match (record.revoked_at(), record.expires_at()) {
                    (Some(at), _) => format!("revoked {at}"),
                    (None, Some(at)) => format!("expires {at}"),
                    (None, None) => "never expires".to_owned(),
                };
                text.push_str(&format!(
                    "{}  {}  {}  created {}  {state}\n",
                    record.id(),
                    record.role(),
                    record.name().unwrap_or("-"),
                    record.created_at()
                ));
            }
            if records.is_empty() {
                text.push_str("no tokens; make one with `alp token create --role ROLE`\n");
            }
            Ok(Printed::people(text.trim_end()))
        }
        TokenCommand::Revoke { token } => {
            let opened = open(cli)?;
            let record = token::revoke_token(opened.tokens(), opened.sink(), token, Timestamp::now())?;
            if cli.json {
                return Ok(Printed::ok(json_string(&json!({ "id": record.id(), "revoked": true }))?));
            }
            Ok(Printed::ok(format!("revoked token {}; its next request is refused", record.id())))
        }
        TokenCommand::Rotate { token } => {
            let actors = CliAgents::new(AgentsDir::resolve(cli)?);
            let opened = open(cli)?;
            let (secret, record, old) =
                token::rotate_token(opened.tokens(), opened.sink(), &actors, token, Timestamp::now())?;
            issued(cli, &secret, &record, Some(&old))
        }
    }
}

/// What `token create` and `token rotate` print: with `--json`, the token's document (and `"revoked"`, the token
/// a rotation replaced, first); else the secret alone on stdout, so `TOKEN=$(alp token create --role dev)`
/// captures exactly it, and a note for people on stderr.
fn issued(
    cli: &Cli,
    secret: &token::BearerToken,
    record: &token::TokenRecord,
    replaced: Option<&token::TokenRecord>,
) -> Result<Printed, MemoryError> {
    if cli.json {
        let mut document = serde_json::Map::new();
        if let Some(old) = replaced {
            document.insert("revoked".into(), old.id().into());
        }
        document.insert("id".into(), record.id().into());
        document.insert("role".into(), record.role().into());
        document.insert("name".into(), record.name().into());
        document.insert("createdAt".into(), record.created_at().to_string().into());
        document.insert("expiresAt".into(), record.expires_at().map(|t| t.to_string()).into());
        document.insert("token".into(), secret.reveal().into());
        return Ok(Printed::ok(json_string(&document)?));
    }
    let expires = record.expires_at().map_or_else(|| "never".to_owned(), |t| t.to_string());
    let replaced =
        replaced.map(|old| format!(", replacing token {}, now revoked", old.id())).unwrap_or_default();
    eprintln!(
        "note: token {} for role `{}` (expires {expires}){replaced}; it is shown only this once: give it to the \
         agent's runtime as ALP_MEMORY_TOKEN",
        record.id(),
        record.role()
    );
    Ok(Printed::ok(secret.reveal()))
}

/// The numeric limits of `alp serve`, as given on its command line.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Limits {
    /// `--max-concurrency`.
    pub(crate) max_concurrency: u32,
    /// `--max-connections`.
    pub(crate) max_connections: u32,
    /// The idle timeout, in seconds.
    pub(crate) idle_timeout: u32,
}

/// `alp serve`.
pub(crate) fn serve(
    cli: &Cli,
    listen: &[String],
    allowed_hosts: &[String],
    limits: Limits,
    tls: Option<TlsFiles>,
    oauth: &OAuthArgs,
) -> Result<Printed, MemoryError> {
    operator(cli, "serve", "serve takes each request's role from its token")?;
    if oauth.jwks.is_some() && oauth.issuers.len() != 1 {
        return Err(MemoryError::Usage("--oauth-jwks goes with exactly one --oauth-issuer".to_owned()));
    }
    for issuer in &oauth.issuers {
        memory_mcp::oauth::Issuer::parse(issuer).map_err(|e| MemoryError::Usage(e.to_string()))?;
    }
    let default = [DEFAULT_LISTEN.to_owned()];
    let listen = if listen.is_empty() { &default[..] } else { listen };
    let addrs = listen
        .iter()
        .map(|text| parse_listen(text, tls.is_some()).map_err(|e| MemoryError::Usage(e.to_string())))
        .collect::<Result<Vec<_>, _>>()?;
    let agents = CliAgents::new(AgentsDir::resolve(cli)?);
    let options = HttpOptions {
        listen: addrs,
        tls,
        allowed_hosts: allowed_hosts.to_vec(),
        max_concurrency: usize::try_from(limits.max_concurrency).unwrap_or(usize::MAX),
        max_connections: usize::try_from(limits.max_connections).unwrap_or(usize::MAX),
        idle_timeout: std::time::Duration::from_secs(limits.idle_timeout.into()),
        oauth: (!oauth.issuers.is_empty()).then(|| OAuthOptions {
            issuers: oauth.issuers.clone(),
            resource: oauth.resource.clone(),
            role_claim: oauth.role_claim.clone(),
            jwks_file: oauth.jwks.clone(),
            ca: oauth.ca.clone(),
        }),
    };
    let json = cli.json;
    let ready = move |urls: &[String]| {
        if json {
            let mut stdout = std::io::stdout().lock();
            let _ = writeln!(stdout, "{}", json!({ "listening": urls }));
            let _ = stdout.flush();
        }
        eprintln!("alp serve: listening on {}", urls.join(", "));
    };
    match open(cli)? {
        // Healthy while the store can be reached and the audit log appended to (what every call needs first).
        Opened::Root(root) => {
            let (store, sink) = *root;
            let dir = store.root().to_path_buf();
            let (store, sink) = (Arc::new(store), Arc::new(sink));
            let tokens: Arc<dyn TokenStore> = Arc::clone(&store) as Arc<dyn TokenStore>;
            let audit = Arc::clone(&sink);
            HttpServer::new(store, sink, GrantPolicy, agents, tokens)
                .with_health(move || std::fs::read_dir(&dir).is_ok() && audit.check_ready().is_ok())
                .serve(options, ready)
        }
        Opened::Database(store, sink) => {
            let (store, sink) = (Arc::new(store), Arc::new(sink));
            let tokens: Arc<dyn TokenStore> = Arc::clone(&store) as Arc<dyn TokenStore>;
            let audit = Arc::clone(&sink);
            HttpServer::new(store, sink, GrantPolicy, agents, tokens)
                .with_health(move || audit.check_ready().is_ok())
                .serve(options, ready)
        }
    }
    .map_err(|e| MemoryError::Usage(e.to_string()))?;
    Ok(Printed::ok(String::new()))
}

/// `alp adapter mcp ROLE --url URL`: Claude Code's HTTP entry, or Codex's table with `--format toml`.
pub(crate) fn adapter_http(
    cli: &Cli,
    role: &str,
    url: &str,
    format: McpFormat,
) -> Result<Printed, MemoryError> {
    match resolve_place(cli)? {
        Place::Root(root) => {
            open_store(&root)?;
        }
        Place::Database(url) => {
            crate::setup::open_database(&url)?;
        }
    }
    AgentsDir::resolve(cli)?.load(role)?;
    let scheme_ok = ["http://", "https://"].iter().any(|scheme| {
        url.get(..scheme.len()).is_some_and(|s| s.eq_ignore_ascii_case(scheme)) && url.len() > scheme.len()
    });
    if !scheme_ok || url.chars().any(|c| c.is_whitespace() || c.is_control() || c == '"') {
        return Err(MemoryError::Usage(format!(
            "--url `{}` is not an http or https URL (e.g. http://127.0.0.1:7707/mcp)",
            alp_memory::memory_id::shown(url)
        )));
    }
    let entry = json!({ "mcpServers": { "alp-memory": {
        "type": "http",
        "url": url,
        "headers": { "Authorization": "Bearer ${ALP_MEMORY_TOKEN}" },
    } } });
    let toml = format!(
        "[mcp_servers.alp-memory]\nurl = {}\nbearer_token_env_var = \"ALP_MEMORY_TOKEN\"\n",
        serde_json::Value::String(url.to_owned())
    );
    Ok(Printed::ok(match (format, cli.json) {
        (McpFormat::Json, true) => json_string(&entry)?,
        (McpFormat::Json, false) => serde_json::to_string_pretty(&entry)
            .map_err(|e| MemoryError::Usage(format!("cannot write JSON output: {e}")))?,
        (McpFormat::Toml, true) => json_string(&json!({ "configToml": toml }))?,
        (McpFormat::Toml, false) => toml,
    }))
}
