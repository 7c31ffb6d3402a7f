//! What callers ask the service, and where it finds roles and the time.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use memory_entry::{FieldName, Filter, Timestamp};
use memory_policy::{Actor, AgentDefinitionError, load_agent};

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

/// A search: query terms, an optional prefix, filters and an optional limit. (Filters are typed: a malformed filter
/// value is a usage error of the caller, refused before the call.)
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct SearchRequest {
    /// Whitespace-separated terms; empty matches everything.
    pub query: String,
    /// The subtree to search, as given; `None` searches everything the actor may read.
    pub prefix: Option<String>,
    /// Exact-match filters.
    pub filter: Filter,
    /// At most this many results; `None` returns all.
    pub limit: Option<usize>,
}

/// A context build: query terms, a character budget, an optional prefix, and an optional task/feature plan.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct ContextRequest {
    /// Whitespace-separated terms. Without a plan they select and order entries; with one they only order.
    pub query: String,
    /// The most characters (Unicode scalar values) the context text may hold.
    pub budget: usize,
    /// The subtree to draw from, as given; `None` draws from everything the actor may read.
    pub prefix: Option<String>,
    /// Plan for this task: entries scoped to it, to its feature, unscoped ones and critical ones.
    pub task: Option<String>,
    /// The task's feature; without a task, plan for this feature alone.
    pub feature: Option<String>,
}
