//! What callers ask the service, and where it finds roles and the time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memory_entry::{FieldName, Filter, MemoryEntry, Timestamp};
use memory_id::{MemoryPrefix, parse_memory_id, shown};
use memory_policy::{Actor, AgentDefinitionError, load_agent};
use memory_ranker::Query;
use memory_store::{Cancel, Scored};

use crate::MemoryError;

/// Where the service reads the time, once per call. Tests inject a fixed clock to check expiry.
pub trait Clock: Send + Sync {
    /// The current instant.
    fn now(&self) -> Timestamp;
}

/// The system clock.
#[derive(Debug, Clone, Copy, Default)]
pub struct SystemClock;

impl Clock for SystemClock {
    fn now(&self) -> Timestamp {
        Timestamp::now()
    }
}

impl<F: Fn() -> Timestamp + Send + Sync> Clock for F {
    fn now(&self) -> Timestamp {
        self()
    }
}

/// Where the service finds a role's grants. The caller names the acting role; the source says what it may do.
pub trait ActorSource: Send + Sync {
    /// The actor for `role`.
    ///
    /// # Errors
    ///
    /// [`AgentDefinitionError`] for an unknown role or a broken definition.
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError>;
}

/// Agent definitions in a directory, `<dir>/<role>.yaml`, read on every call (so an edited definition, a revoked
/// grant, takes effect at once).
#[derive(Debug, Clone)]
pub struct AgentDirectory {
    dir: PathBuf,
}

impl AgentDirectory {
    /// Definitions in `dir`.
    pub fn new(dir: impl Into<PathBuf>) -> AgentDirectory {
        AgentDirectory { dir: dir.into() }
    }

    /// The directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }
}

impl ActorSource for AgentDirectory {
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError> {
        load_agent(&self.dir, role)
    }
}

/// A fixed set of actors, for tests and embedders that keep definitions elsewhere.
#[derive(Debug, Clone, Default)]
pub struct StaticActors {
    actors: BTreeMap<String, Actor>,
}

impl StaticActors {
    /// The given actors, by role.
    pub fn new(actors: impl IntoIterator<Item = Actor>) -> StaticActors {
        StaticActors { actors: actors.into_iter().map(|a| (a.role().as_str().to_owned(), a)).collect() }
    }
}

impl ActorSource for StaticActors {
    fn actor(&self, role: &str) -> Result<Actor, AgentDefinitionError> {
        self.actors
            .get(role)
            .cloned()
            .ok_or_else(|| AgentDefinitionError::unknown_role(role, Path::new("<static actors>")))
    }
}

/// Entry fields exactly as a caller gave them, by name, as text (a command line, a tool's arguments). The service
/// parses them after the policy allowed the call, so a malformed value is an audited
/// [`MemoryError::InvalidEntry`](crate::MemoryError::InvalidEntry), reported after an invalid ID or a denial.
///
/// ```
/// use alp_memory::FieldInput;
/// use alp_memory::memory_entry::FieldName;
/// let fields = FieldInput::new().with(FieldName::Type, "decision").with(FieldName::Ttl, "90d");
/// assert_eq!(fields.iter().count(), 2);
/// ```
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldInput(Vec<(FieldName, String)>);

impl FieldInput {
    /// No fields.
    pub fn new() -> FieldInput {
        FieldInput::default()
    }

    /// The same input with `name` given as `text`.
    #[must_use]
    pub fn with(mut self, name: FieldName, text: impl Into<String>) -> FieldInput {
        self.push(name, text);
        self
    }

    /// Gives `name` as `text`.
    pub fn push(&mut self, name: FieldName, text: impl Into<String>) {
        self.0.push((name, text.into()));
    }

    /// The fields given, in order.
    pub fn iter(&self) -> impl Iterator<Item = (FieldName, &str)> {
        self.0.iter().map(|(name, text)| (*name, text.as_str()))
    }

    /// Whether no field was given.
    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }
}

/// A create: the ID, the content and optional fields.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CreateRequest {
    /// The ID as given.
    pub id: String,
    /// The text.
    pub content: String,
    /// Optional fields, as given.
    pub fields: FieldInput,
}

/// An update: changes only the fields given, clears the ones listed.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct UpdateRequest {
    /// The ID as given.
    pub id: String,
    /// The version the caller read; a mismatch is a version conflict.
    pub expected_version: u64,
    /// New content, if any.
    pub content: Option<String>,
    /// Fields to set, as given.
    pub fields: FieldInput,
    /// Fields to remove (`kind` and `importance` return to their defaults).
    pub clear: Vec<FieldName>,
}

/// The most characters (Unicode scalar values, counted before folding) the query of a search or a context may hold:
/// the text of the tool's `query`, or the command line's terms joined with single spaces.
pub const MAX_QUERY_CHARS: usize = 4096;

/// The most distinct terms the query of a search or a context may hold, counted as the ranker counts them: split on
/// Unicode whitespace, each folded (NFC, then lower case), duplicates dropped, so `A a` is one term.
pub const MAX_QUERY_TERMS: usize = 64;

/// The most characters (Unicode scalar values) any filter value of a search, a listing or a context may hold: the
/// prefix, `kind`, `type`, `importance`, `key`, `source`, `scope`, `task` and `feature`.
pub const MAX_FILTER_CHARS: usize = 1024;

/// Whether `query` is within [`MAX_QUERY_CHARS`] and [`MAX_QUERY_TERMS`]. These bounds make one call's cost depend
/// on the entries it may read, not on what its caller sends; every door (the command line, the MCP tools, an
/// embedding program) checks them here, and the service checks them again before its gate, so a query over them
/// reads nothing and writes no audit record.
///
/// ```
/// use alp_memory::{MAX_QUERY_TERMS, check_query};
///
/// let terms: Vec<String> = (0..MAX_QUERY_TERMS).map(|i| format!("t{i}")).collect();
/// assert!(check_query(&terms.join(" ")).is_ok());
/// assert!(check_query(&format!("{} T0 t0", terms.join(" "))).is_ok(), "duplicates after folding count once");
/// let error = check_query(&format!("{} one-more", terms.join(" "))).unwrap_err();
/// assert_eq!((error.kind(), error.code()), ("UsageError", "USAGE"));
/// ```
///
/// # Errors
///
/// [`MemoryError::Usage`] naming the bound that is passed.
pub fn check_query(query: &str) -> Result<(), MemoryError> {
    QueryTerms::from(query).check()
}

/// The terms of a query, split and folded once, where the caller read the query ([`Query`]: split on Unicode
/// whitespace, each folded, duplicates dropped), with what its bounds need to know: how long the text was. A text
/// over [`MAX_QUERY_CHARS`] is not split at all (so a 4 MiB request costs no more than a legal one); [`check`]
/// refuses it, as it refuses more than [`MAX_QUERY_TERMS`] terms.
///
/// ```
/// use alp_memory::{MAX_QUERY_CHARS, QueryTerms};
///
/// let terms = QueryTerms::from_pieces(&["Auth token", "AUTH"]);
/// assert_eq!(terms.query().terms(), ["auth", "token"]);
/// assert_eq!(terms, QueryTerms::from("auth token auth"));
/// assert!(terms.check().is_ok());
/// assert!(QueryTerms::from("x".repeat(MAX_QUERY_CHARS + 1).as_str()).check().is_err());
/// ```
///
/// [`check`]: QueryTerms::check
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct QueryTerms {
    query: Query,
    /// Whether the text was longer than [`MAX_QUERY_CHARS`] (then `query` is empty).
    too_long: bool,
}

impl QueryTerms {
    /// The terms of a query given in pieces, as a command line gives them (`alp memory search auth token`): each
    /// piece split too, the length that of the pieces joined with single spaces.
    pub fn from_pieces<S: AsRef<str>>(pieces: &[S]) -> QueryTerms {
        let mut chars = pieces.len().saturating_sub(1);
        for piece in pieces {
            // Stops counting at the first character over the bound.
            chars += piece.as_ref().chars().take(MAX_QUERY_CHARS + 1).count();
            if chars > MAX_QUERY_CHARS {
                return QueryTerms { query: Query::default(), too_long: true };
            }
        }
        QueryTerms { query: Query::from_terms(pieces), too_long: false }
    }

    /// The distinct folded terms.
    pub fn query(&self) -> &Query {
        &self.query
    }

    /// Whether the query is within [`MAX_QUERY_CHARS`] and [`MAX_QUERY_TERMS`] ([`check_query`]).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] naming the bound that is passed.
    pub fn check(&self) -> Result<(), MemoryError> {
        if self.too_long {
            return Err(MemoryError::Usage(format!(
                "the query is longer than {MAX_QUERY_CHARS} characters, the limit; search with fewer or shorter terms"
            )));
        }
        let terms = self.query.len();
        if terms > MAX_QUERY_TERMS {
            return Err(MemoryError::Usage(format!(
                "the query holds {terms} distinct terms, the limit is {MAX_QUERY_TERMS}; search with fewer terms"
            )));
        }
        Ok(())
    }
}

/// The terms of the query text (the text of the MCP tools' `query`).
impl From<&str> for QueryTerms {
    fn from(text: &str) -> QueryTerms {
        QueryTerms::from_pieces(&[text])
    }
}

/// The terms of the query text.
impl From<String> for QueryTerms {
    fn from(text: String) -> QueryTerms {
        QueryTerms::from(text.as_str())
    }
}

/// Whether the filter value `value`, given as `name` (the caller's own spelling: `--prefix`, `prefix`, …), is
/// within [`MAX_FILTER_CHARS`].
///
/// ```
/// use alp_memory::{MAX_FILTER_CHARS, check_filter};
///
/// assert!(check_filter("task", &"é".repeat(MAX_FILTER_CHARS)).is_ok());
/// let error = check_filter("task", &"é".repeat(MAX_FILTER_CHARS + 1)).unwrap_err();
/// assert_eq!(error.to_string(), "`task` is longer than 1024 characters, the limit; give a shorter value");
/// ```
///
/// # Errors
///
/// [`MemoryError::Usage`] naming the value by `name`.
pub fn check_filter(name: &str, value: &str) -> Result<(), MemoryError> {
    if value.chars().nth(MAX_FILTER_CHARS).is_some() {
        return Err(MemoryError::Usage(format!(
            "`{name}` is longer than {MAX_FILTER_CHARS} characters, the limit; give a shorter value"
        )));
    }
    Ok(())
}

/// [`check_filter`] for a prefix and the values of a filter, named as the tool arguments are.
pub(crate) fn check_filters(prefix: Option<&str>, filter: &Filter) -> Result<(), MemoryError> {
    if let Some(prefix) = prefix {
        check_filter("prefix", prefix)?;
    }
    for value in filter.values() {
        check_filter(value.name().as_str(), &value.text())?;
    }
    Ok(())
}

/// A search: query terms, an optional prefix, filters and an optional limit. (Filters are typed: a malformed filter
/// value is a usage error of the caller, refused before the call.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchRequest {
    /// The query's terms; none matches everything. At most [`MAX_QUERY_CHARS`] characters and [`MAX_QUERY_TERMS`]
    /// distinct terms.
    pub query: QueryTerms,
    /// The subtree to search, as given; `None` searches everything the actor may read. At most
    /// [`MAX_FILTER_CHARS`] characters, like each filter value.
    pub prefix: Option<String>,
    /// Exact-match filters.
    pub filter: Filter,
    /// At most this many results, at most [`MAX_ANSWER_ENTRIES`]; `None` returns up to that many.
    pub limit: Option<usize>,
    /// Raised by the caller when it no longer wants the answer: the store stops at its next file or row.
    pub cancel: Cancel,
}

impl SearchRequest {
    /// Whether the request is within the bounds of a query, of filter values and of an answer ([`check_query`],
    /// [`check_filter`], [`check_limit`]); [`MemoryService::search`](crate::MemoryService::search) checks it before
    /// its gate.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for the first value over its bound.
    pub fn check(&self) -> Result<(), MemoryError> {
        self.query.check()?;
        check_filters(self.prefix.as_deref(), &self.filter)?;
        check_limit(self.limit)
    }
}

/// The most entries one answer holds (a search, a listing, the memory tool's view of a directory), so that the
/// receipt of one call, which names each of them, stays bounded. A listing with more pages on with `after`.
pub const MAX_ANSWER_ENTRIES: usize = 1_000;

/// Whether `limit` (a search's or a listing's) is at most [`MAX_ANSWER_ENTRIES`].
///
/// ```
/// assert!(alp_memory::check_limit(Some(1_000)).is_ok());
/// let error = alp_memory::check_limit(Some(1_001)).unwrap_err();
/// assert_eq!(error.code(), "USAGE");
/// ```
///
/// # Errors
///
/// [`MemoryError::Usage`] for a larger limit.
pub fn check_limit(limit: Option<usize>) -> Result<(), MemoryError> {
    match limit {
        Some(limit) if limit > MAX_ANSWER_ENTRIES => Err(MemoryError::Usage(format!(
            "`limit` is {limit}; one answer holds at most {MAX_ANSWER_ENTRIES} entries (page a listing with `after`)"
        ))),
        _ => Ok(()),
    }
}

/// A listing by ID: an optional prefix, filters, a limit, and where to continue.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ListRequest {
    /// The subtree to list, as given; `None` lists everything the actor may read. At most [`MAX_FILTER_CHARS`]
    /// characters, like each filter value.
    pub prefix: Option<String>,
    /// Exact-match filters.
    pub filter: Filter,
    /// At most this many entries, at most [`MAX_ANSWER_ENTRIES`]; `None` returns up to that many.
    pub limit: Option<usize>,
    /// Only entries whose ID sorts after this one (byte order): the last ID of the previous page. At most
    /// [`MAX_FILTER_CHARS`] characters.
    pub after: Option<String>,
    /// Raised by the caller when it no longer wants the answer: the store stops at its next file or row.
    pub cancel: Cancel,
}

impl ListRequest {
    /// Whether the request is within the bounds of filter values and of an answer ([`check_filter`],
    /// [`check_limit`]); [`MemoryService::list`](crate::MemoryService::list) checks it before its gate.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for the first value over its bound.
    pub fn check(&self) -> Result<(), MemoryError> {
        check_filters(self.prefix.as_deref(), &self.filter)?;
        if let Some(after) = &self.after {
            check_filter("after", after)?;
            // A page continues a listing from one of its IDs: anything else is a mistake, not an empty page.
            let outside = |why: &str| {
                MemoryError::Usage(format!(
                    "`after` {} {why}; give the last ID of the previous page",
                    shown(after)
                ))
            };
            let id = parse_memory_id(after).map_err(|_| outside("is not a memory ID"))?;
            if let Some(prefix) = self.prefix.as_deref().and_then(|p| MemoryPrefix::parse(p).ok())
                && !prefix.contains(&id)
            {
                return Err(outside(&format!("is not in the listing of `{prefix}`")));
            }
        }
        check_limit(self.limit)
    }
}

/// One page of an answer: its entries, and whether more matched than it holds (a search: more than its limit; a
/// listing: more after its last entry, which the next page asks for with `after`).
#[derive(Debug, Clone, PartialEq)]
pub struct Page<T> {
    /// The entries, in the answer's order.
    pub entries: Vec<T>,
    /// Whether more matched.
    pub more: bool,
}

impl<T> Default for Page<T> {
    fn default() -> Page<T> {
        Page { entries: Vec::new(), more: false }
    }
}

impl<T> Page<T> {
    /// The first `limit` of `entries` (at most [`MAX_ANSWER_ENTRIES`]), saying whether there were more.
    pub(crate) fn cut(mut entries: Vec<T>, limit: Option<usize>) -> Page<T> {
        let limit = limit.unwrap_or(MAX_ANSWER_ENTRIES).min(MAX_ANSWER_ENTRIES);
        let more = entries.len() > limit;
        entries.truncate(limit);
        Page { entries, more }
    }
}

impl Page<MemoryEntry> {
    /// A listing's page: the entries of `listed` (in ID order) whose IDs come after `after`, cut to `limit`.
    pub(crate) fn after(listed: Vec<Scored>, after: Option<&str>, limit: Option<usize>) -> Page<MemoryEntry> {
        let following = listed
            .into_iter()
            .map(|scored| scored.entry)
            .filter(|entry| after.is_none_or(|after| entry.id.as_str() > after))
            .collect();
        Page::cut(following, limit)
    }
}

/// A context build: query terms, a character budget, an optional prefix, and an optional task/feature plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextRequest {
    /// The query's terms. Without a plan they select and order entries; with one they only order. At most
    /// [`MAX_QUERY_CHARS`] characters and [`MAX_QUERY_TERMS`] distinct terms.
    pub query: QueryTerms,
    /// The most characters (Unicode scalar values) the context text may hold.
    pub budget: usize,
    /// The subtree to draw from, as given; `None` draws from everything the actor may read. At most
    /// [`MAX_FILTER_CHARS`] characters, like the task and the feature.
    pub prefix: Option<String>,
    /// Plan for this task: entries scoped to it, to its feature, unscoped ones and critical ones.
    pub task: Option<String>,
    /// The task's feature; without a task, plan for this feature alone.
    pub feature: Option<String>,
    /// Raised by the caller when it no longer wants the answer: the store stops at its next file or row, and the
    /// context is not built.
    pub cancel: Cancel,
}

impl ContextRequest {
    /// Whether the request is within the bounds of a query and of filter values ([`check_query`],
    /// [`check_filter`]); [`MemoryService::context`](crate::MemoryService::context) checks it before its gate.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for the first value over its bound.
    pub fn check(&self) -> Result<(), MemoryError> {
        self.query.check()?;
        check_filters(self.prefix.as_deref(), &Filter::default())?;
        for (name, value) in [("task", &self.task), ("feature", &self.feature)] {
            if let Some(value) = value {
                check_filter(name, value)?;
            }
        }
        Ok(())
    }
}
