//! `alp inspect`: a read-only web page over the root or database, for the operator. Loopback only, at a URL that
//! holds a random key (every request without it is 403 and reads nothing); pages rendered on the server with
//! escaping templates (`pages.rs`), no script, nothing fetched from elsewhere. Each page that reads memory writes
//! one audit record through the service's operator reads (actor `""`, door `list` or `history`, the receipt of
//! what the page shows); the audit trail and the chain's status are read from the log and write nothing.
//!
//! - `server.rs`: the HTTP side (hyper on a current-thread tokio runtime; the pages run on its blocking pool);
//! - `pages.rs`: the HTML of each page.

mod pages;
mod server;

use std::net::SocketAddr;
use std::sync::Arc;

use alp_memory::memory_audit::{AuditSink, RecordFilter, VerifyOptions, VerifyReport, Window};
use alp_memory::memory_policy::{Actor, GrantPolicy};
use alp_memory::memory_store::MemoryStore;
use alp_memory::token::{BearerToken, TokenRecord, TokenStore};
use alp_memory::{MemoryError, MemoryService};
use memory_mcp::http::{ListenAddr, parse_listen};
use serde_json::json;

use crate::Printed;
use crate::args::{Cli, ShowArgs};
use crate::commands::{Log, record_filter};
use crate::serve::Opened;
use crate::setup::{AgentsDir, CliAgents, Place, resolve_place};

pub(crate) use pages::Page;

/// How many audit records one page of the trail shows unless `limit` says otherwise, and at most.
const TRAIL_PAGE: u64 = 50;
const TRAIL_MAX: u64 = 500;

/// How many entries one page of a listing shows.
const LIST_PAGE: usize = 100;

/// How many of an entry's receipts its page reads from the end of the log, at most.
const RECEIPTS_MAX: u64 = 500;

/// `alp inspect [--listen ADDR]`.
pub(crate) fn inspect(cli: &Cli, listen: &str) -> Result<Printed, MemoryError> {
    if cli.role.is_some() {
        return Err(MemoryError::Usage(
            "`alp inspect` takes no --as: it is an operator command, its reads recorded with actor \"\""
                .to_owned(),
        ));
    }
    let addr = loopback(listen)?;
    let inspector = Inspector::open(cli)?;
    let key = BearerToken::generate()?.reveal();
    let json = cli.json;
    server::serve(inspector, addr, key, move |url| {
        use std::io::Write as _;
        let mut stdout = std::io::stdout().lock();
        let _ = if json { writeln!(stdout, "{}", json!({ "url": url })) } else { writeln!(stdout, "{url}") };
        let _ = stdout.flush();
        eprintln!(
            "alp inspect: serving {url} (read-only; the key in it is the only way in: share it with nobody)"
        );
    })?;
    Ok(Printed::ok(String::new()))
}

/// A `--listen` value: a loopback TCP address (`localhost:PORT` too), else `USAGE`.
fn loopback(listen: &str) -> Result<SocketAddr, MemoryError> {
    let refuse = |why: String| MemoryError::Usage(format!("--listen `{listen}`: {why}"));
    match parse_listen(listen, false) {
        Ok(ListenAddr::Tcp(addr)) => Ok(addr),
        Ok(_) => Err(refuse(
            "alp inspect listens on a loopback address only (e.g. 127.0.0.1:0), never a unix socket"
                .to_owned(),
        )),
        Err(memory_mcp::http::ListenError::NotLoopback(_)) => Err(refuse(
            "not a loopback address; alp inspect serves memory to the operator on this machine only (e.g. \
             127.0.0.1:0; reach it from elsewhere through an SSH tunnel)"
                .to_owned(),
        )),
        Err(e) => Err(MemoryError::Usage(e.to_string())),
    }
}

/// The service the pages read through (operator reads only), the tokens, the audit log and the agents directory.
pub(crate) struct Inspector {
    service: MemoryService<Arc<dyn MemoryStore>, Arc<dyn AuditSink>, GrantPolicy, CliAgents>,
    tokens: Arc<dyn TokenStore>,
    log: Log,
    agents: AgentsDir,
    /// The place, for people: the root's path or the database URL without its password.
    place: String,
}

impl Inspector {
    fn open(cli: &Cli) -> Result<Inspector, MemoryError> {
        let agents = AgentsDir::resolve(cli)?;
        let place = match resolve_place(cli)? {
            Place::Root(root) => format!("Markdown root {}", root.display()),
            Place::Database(url) => format!("PostgreSQL {}", memory_postgres::redacted(&url)),
        };
        let log = Log::open(cli)?;
        let (store, tokens, sink): (Arc<dyn MemoryStore>, Arc<dyn TokenStore>, Arc<dyn AuditSink>) =
            match crate::serve::open(cli)? {
                Opened::Root(root) => {
                    let (store, sink) = *root;
                    let store = Arc::new(store);
                    (Arc::clone(&store) as _, store as _, Arc::new(sink))
                }
                Opened::Database(store, sink) => {
                    let store = Arc::new(store);
                    (Arc::clone(&store) as _, store as _, Arc::new(sink))
                }
            };
        let service = MemoryService::new(store, sink, GrantPolicy, CliAgents::new(agents.clone()));
        Ok(Inspector { service, tokens, log, agents, place })
    }

    /// The page at `path` (below the key) with the query string `query`.
    pub(crate) fn page(&self, path: &str, query: &str) -> Page {
        let params = Params(form_urlencoded::parse(query.as_bytes()).into_owned().collect());
        let param = |name: &str| params.get(name);
        let answer = match path {
            "" => self.overview(),
            "matrix" => self.matrix(),
            "entry" => match param("id") {
                Some(id) => self.entry(id),
                None => Err(MemoryError::Usage("give the entry's ID: entry?id=ID".to_owned())),
            },
            "entries" => self.entries(param("prefix").unwrap_or("shared"), param("after")),
            "audit" => self.trail(&params),
            _ => return pages::not_found(path),
        };
        answer.unwrap_or_else(|error| pages::error(&error))
    }

    fn overview(&self) -> Result<Page, MemoryError> {
        let survey = self.service.survey()?;
        let roles = self.roles()?;
        let mut tokens = self.tokens.tokens()?;
        tokens.sort_by(|a, b| (a.created_at(), a.id()).cmp(&(b.created_at(), b.id())));
        let chain = self.log.verify(&VerifyOptions::new())?;
        let head = self.log.head()?;
        Ok(pages::overview(&pages::Overview {
            place: &self.place,
            agents: &self.agents.path().display().to_string(),
            survey: &survey,
            roles: &roles,
            tokens: &tokens,
            chain: &chain,
            head: &head,
        }))
    }

    fn matrix(&self) -> Result<Page, MemoryError> {
        let survey = self.service.survey()?;
        let roles = self.roles()?;
        Ok(pages::matrix(&survey, &roles))
    }

    fn entry(&self, id: &str) -> Result<Page, MemoryError> {
        let versions = self.service.operator_history(id)?;
        let filter = RecordFilter { disclosed: Some(id.to_owned()), ..RecordFilter::default() };
        let mut lines = Vec::new();
        self.log.last(&filter, RECEIPTS_MAX, &mut lines)?;
        let receipts = pages::receipts(id, &lines);
        Ok(pages::entry(id, &versions, &receipts, RECEIPTS_MAX))
    }

    fn entries(&self, prefix: &str, after: Option<&str>) -> Result<Page, MemoryError> {
        let page = self.service.operator_list(prefix, after, LIST_PAGE)?;
        Ok(pages::entries(prefix, &page))
    }

    /// The audit trail: the filters of `alp audit show` from the query, newest first, a page at a time (`before`:
    /// older than that `seq`; `after`: newer).
    fn trail(&self, params: &Params) -> Result<Page, MemoryError> {
        let param = |name: &str| params.get(name);
        let form = pages::TrailForm::read(params);
        let parsed = |name: &str| -> Result<Option<u64>, MemoryError> {
            param(name)
                .map(|text| {
                    text.parse::<u64>().map_err(|_| {
                        MemoryError::Usage(format!("`{name}` takes a number of records, not `{text}`"))
                    })
                })
                .transpose()
        };
        let args = ShowArgs {
            tail: None,
            since: parsed("since")?,
            limit: None,
            from: filter_value(params, "from", crate::args::parse_time_bound)?,
            to: filter_value(params, "to", crate::args::parse_time_bound)?,
            // The empty string names the operator: the form sends `(operator)`.
            actor: param("actor")
                .map(|actor| if actor == "(operator)" { String::new() } else { actor.to_owned() }),
            door: filter_value(params, "door", crate::args::parse_door)?,
            outcome: filter_value(params, "outcome", crate::args::parse_outcome)?,
            code: filter_value(params, "code", crate::args::parse_code)?,
            via: param("via").map(str::to_owned),
            id: param("id").map(str::to_owned),
            disclosed: param("disclosed").map(str::to_owned),
            archive: None,
            wide: false,
        };
        let mut filter = record_filter(&args)?;
        let size = parsed("limit")?.unwrap_or(TRAIL_PAGE).clamp(1, TRAIL_MAX);
        let window = match (parsed("before")?, parsed("after")?) {
            (Some(before), _) => {
                filter.before = Some(before);
                Window::Last(size)
            }
            (None, Some(after)) => {
                filter.since = Some(filter.since.unwrap_or(0).max(after.saturating_add(1)));
                Window::First(size)
            }
            (None, None) => Window::Last(size),
        };
        let mut lines = Vec::new();
        // The newest page, or the one before a record, is read back from the end of the log.
        self.log.reading(None, window)?.write(&filter, &mut lines)?;
        let (head, _) = self.log.head()?;
        Ok(pages::trail(&form, &lines, size, head))
    }

    /// Every definition in the agents directory, by role: its actor, or why it does not load.
    fn roles(&self) -> Result<Vec<Definition>, MemoryError> {
        Ok(self
            .agents
            .roles()?
            .iter()
            .map(|role| {
                (role.as_str().to_owned(), self.agents.load(role.as_str()).map_err(|e| e.to_string()))
            })
            .collect())
    }
}

/// A role of the agents directory: its actor, or why its definition does not load.
pub(crate) type Definition = (String, Result<Actor, String>);

/// The parameters of a query string; an empty value is no value (an empty form field).
pub(crate) struct Params(Vec<(String, String)>);

impl Params {
    pub(crate) fn get(&self, name: &str) -> Option<&str> {
        self.0.iter().find(|(key, value)| key == name && !value.is_empty()).map(|(_, value)| value.as_str())
    }
}

/// A filter of the trail parsed as `alp audit show` parses it; a bad value is `USAGE` naming the filter.
fn filter_value<T>(
    params: &Params,
    name: &str,
    parse: fn(&str) -> Result<T, String>,
) -> Result<Option<T>, MemoryError> {
    params
        .get(name)
        .map(|text| parse(text).map_err(|e| MemoryError::Usage(format!("{name}: {e}"))))
        .transpose()
}

/// What the overview says of a chain.
pub(crate) fn chain_status(report: &VerifyReport) -> (bool, String) {
    match report {
        VerifyReport::Ok { records, from: (from, _), .. } if *from == 0 => {
            (true, format!("intact: {records} records"))
        }
        VerifyReport::Ok { records, from: (from, _), .. } => {
            (true, format!("intact: {records} records, continuing from archived record {from}"))
        }
        VerifyReport::Broken { first_bad_seq, reason } => {
            (false, format!("BROKEN at record {first_bad_seq}: {reason} (run `alp audit verify`)"))
        }
    }
}

/// A token's state, for people.
pub(crate) fn token_state(record: &TokenRecord) -> String {
    match (record.revoked_at(), record.expires_at()) {
        (Some(at), _) => format!("revoked {at}"),
        (None, Some(at)) if at <= alp_memory::memory_entry::Timestamp::now() => format!("expired {at}"),
        (None, Some(at)) => format!("expires {at}"),
        (None, None) => "never expires".to_owned(),
    }
}
