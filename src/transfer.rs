//! Import and export of ALP 80 `.alp` memory files (`docs/CLI.md`: `memory import` and `memory export`): compositions
//! on the doors, not doors.

use memory_alp::{AlpMemory, parse_alp, serialize_alp};
use memory_audit::{AuditOperation, AuditSink, Door};
use memory_entry::{Fields, Filter, Kind, NewEntry, Timestamp};
use memory_id::{MemoryId, parse_memory_id};
use memory_policy::{Operation, PolicyEngine};
use memory_store::{Batch, Cancel, MemoryStore, OnExisting, Order, Scored, Step};

use crate::service::{ActorSource, Call, Reading, field_error, receipt};
use crate::{MemoryError, MemoryService};

/// Something an import or export left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The ID (or, for an object of another kind in an `.alp` file, its `id` field or `@<kind>`).
    pub id: String,
    /// Why: `exists` or `unchanged` for an entry an import left alone, else a sentence for people.
    pub reason: String,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The IDs created, in file order.
    pub imported: Vec<MemoryId>,
    /// The IDs updated (`--on-existing update`), in file order.
    pub updated: Vec<MemoryId>,
    /// Entries left alone and objects of other kinds read past.
    pub skipped: Vec<Skipped>,
}

/// What an export produced.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ExportReport {
    /// The `.alp` file.
    pub text: String,
    /// How many entries it holds.
    pub exported: usize,
    /// Entries of the project the file cannot hold, with the reason.
    pub skipped: Vec<Skipped>,
}

/// How far past the clock an imported `created` or `updated` may lie (clocks drift).
const FUTURE_SLACK_MILLIS: i64 = 5 * 60 * 1000;

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// Imports an `.alp` file into project `project`: each `@memory` block becomes `project:<project>:<id>` with all
    /// its fields, `created` and `updated` kept (so TTLs do not restart), kind `reference`.
    ///
    /// The whole file is parsed, checked, validated and authorized, and the batch planned against the store,
    /// before anything is written: a parse error or a time in the future (no audit record), an invalid ID, a
    /// denied ID, an invalid field or a value over a limit, or an entry the store refuses (one that exists, with
    /// [`OnExisting::Fail`]; a clash; a (type, key, scope) already held; a full scope root) aborts the import with
    /// that error and writes nothing but one `denied` or `error` `create` record for that ID (for an unknown role,
    /// the record's ID is `project:<project>`). Then each create and each update writes one `allowed` record, and
    /// the store writes the batch under its scope-root lock, refusing it whole if the store changed since it was
    /// planned. With [`OnExisting::Skip`] an existing entry is left alone (skipped, reason `exists`); with
    /// [`OnExisting::Update`] it gets one versioned update when its content or ALP 80 fields differ, and is left
    /// alone otherwise (reason `unchanged`), so importing the same file twice changes nothing the second time; an
    /// entry the actor may not read is updated either way (a skip would tell it that what it sent equals what is
    /// stored).
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for a project that is not one segment; [`MemoryError::InvalidEntry`] with `line` and
    /// `column` for a parse error or a time in the future; otherwise as described above.
    pub fn import_alp(
        &self,
        role: &str,
        project: &str,
        text: &str,
        on_existing: OnExisting,
    ) -> Result<ImportReport, MemoryError> {
        self.import_alp_with_progress(role, project, text, on_existing, &mut |_, _| {})
    }

    /// [`MemoryService::import_alp`], calling `progress(done, total)` after each entry's audit record (the slow part:
    /// one durable append each).
    ///
    /// # Errors
    ///
    /// As [`MemoryService::import_alp`].
    pub fn import_alp_with_progress(
        &self,
        role: &str,
        project: &str,
        text: &str,
        on_existing: OnExisting,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportReport, MemoryError> {
        let file = parse_alp(text).map_err(|e| MemoryError::InvalidEntry {
            id: None,
            message: format!("invalid .alp file: {e} ({})", e.kind().code()),
            line: Some(e.line()),
            column: Some(e.column()),
        })?;
        check_project(project)?;
        let scope_root = format!("project:{project}");
        let now = self.now();
        for (memory, position) in file.memories.iter().zip(&file.positions) {
            check_times(memory, now).map_err(|(field, message)| {
                let line = if field == "created" { position.created } else { position.updated };
                MemoryError::InvalidEntry {
                    id: None,
                    message: format!("invalid .alp file: {message}"),
                    line: Some(line.unwrap_or(position.line)),
                    column: Some(1),
                }
            })?;
        }
        fn create_call<'a>(role: &'a str, id: &'a str, now: Timestamp) -> Call<'a> {
            Call { role, door: Door::Import, operation: AuditOperation::Create, id, now }
        }

        // IDs first, in file order: the first invalid one is refused (one record).
        let ids: Vec<String> = file.memories.iter().map(|m| format!("{scope_root}:{}", m.id)).collect();
        let mut parsed = Vec::with_capacity(ids.len());
        for id in &ids {
            parsed.push(parse_memory_id(id).map_err(|e| self.refuse(&create_call(role, id, now), e.into()))?);
        }
        let actor = self.resolve(&create_call(role, &scope_root, now))?;
        for (id, text_id) in parsed.iter().zip(&ids) {
            self.authorize(&create_call(role, text_id, now), &actor, Operation::Write, id)?;
        }
        let mut entries = Vec::with_capacity(parsed.len());
        for ((memory, id), text_id) in file.memories.iter().zip(&parsed).zip(&ids) {
            let new = new_entry(memory, id.clone());
            new.validate(self.store().limits(), now)
                .map_err(|e| self.refuse(&create_call(role, text_id, now), field_error(id, e)))?;
            entries.push(new);
        }
        // Planning reads the store before the first record: only with a log that can take one.
        self.ready()?;
        // An entry the actor may not read is updated even when unchanged: a skip would tell it what it holds.
        let unreadable: Vec<_> =
            parsed.iter().filter(|id| !self.permits(&actor, Operation::Read, id)).cloned().collect();
        let batch = Batch::new(entries, on_existing).with_unreadable(unreadable);
        let plan = self.store().plan_batch(&batch, now).map_err(|e| {
            let blamed = blamed_id(&e).unwrap_or_else(|| scope_root.clone());
            let error = match parse_memory_id(&blamed) {
                Ok(id) => self.store_failure(&actor, &id, e),
                Err(_) => e.into(),
            };
            self.refuse(&create_call(role, &blamed, now), error)
        })?;
        let mut report = ImportReport { imported: Vec::new(), updated: Vec::new(), skipped: Vec::new() };
        let total = plan.steps().len();
        for (done, step) in plan.steps().iter().enumerate() {
            progress(done, total);
            match step {
                Step::Create(id) => {
                    self.allow(&create_call(role, id.as_str(), now))?;
                    report.imported.push(id.clone());
                }
                Step::Update { id, .. } => {
                    self.allow(&create_call(role, id.as_str(), now).on(AuditOperation::Update, id.as_str()))?;
                    report.updated.push(id.clone());
                }
                Step::Skip { id, reason } => {
                    report
                        .skipped
                        .push(Skipped { id: id.as_str().to_owned(), reason: reason.as_str().to_owned() });
                }
            }
        }
        progress(total, total);
        self.store().write_batch(&batch, Some(&plan), now).map_err(MemoryError::from)?;
        report.skipped.extend(
            file.skipped
                .into_iter()
                .map(|s| Skipped { id: s.id.unwrap_or_else(|| format!("@{}", s.kind)), reason: s.warning }),
        );
        Ok(report)
    }

    /// Exports project `project`'s typed entries as an `.alp` file, sorted by ID: one search (one `search` audit
    /// record with the prefix `project:<project>`) over what the actor may read. Entries without a type or a key,
    /// whose ID has more than one segment below the project, or that an import would refuse (a value over the limit,
    /// a time in the future) go to `skipped` with the reason; expired entries are left out.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for a project that is not one segment; otherwise as [`MemoryService::search`].
    pub fn export_alp(&self, role: &str, project: &str) -> Result<ExportReport, MemoryError> {
        check_project(project)?;
        let prefix = format!("project:{project}");
        let query = memory_ranker::Query::default();
        let reading = Reading {
            role,
            door: Door::Export,
            prefix: Some(&prefix),
            filter: Filter::default(),
            query: &query,
            order: Order::Id,
            limit: None,
            cancel: &Cancel::never(),
        };
        // Every entry read is named in the answer (exported, or skipped with its ID), so the receipt names them all.
        let entries = self.read_listing(reading, Ok, |entries: &Vec<Scored>| {
            receipt(entries.iter().map(|scored| &scored.entry))
        })?;
        let now = self.now();
        let mut memories = Vec::new();
        let mut skipped = Vec::new();
        for scored in &entries {
            let entry = &scored.entry;
            let rest: Vec<&str> = entry.id.path_segments().collect();
            let reason = match (&entry.fields.memory_type, &entry.fields.key, rest.as_slice()) {
                (None, _, _) => Some("it has no type; an .alp memory needs a type and a key".to_owned()),
                (_, None, _) => Some("it has no key; an .alp memory needs a type and a key".to_owned()),
                (_, _, [_]) => None,
                _ => Some(
                    "its id has more than one segment below the project; an .alp id is one segment"
                        .to_owned(),
                ),
            };
            let memory = AlpMemory {
                id: rest.first().map_or_else(String::new, |id| (*id).to_owned()),
                value: entry.content.clone(),
                fields: Fields { kind: Kind::default(), ..entry.fields.clone() },
                created: Some(entry.created_at),
                updated: Some(entry.updated_at),
            };
            // Only what an import takes back is written.
            match reason.map_or_else(|| self.importable(&memory, &entry.id, now), Err) {
                Ok(()) => memories.push(memory),
                Err(reason) => skipped.push(Skipped { id: entry.id.as_str().to_owned(), reason }),
            }
        }
        memories.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(ExportReport { exported: memories.len(), text: serialize_alp(&memories), skipped })
    }

    /// Whether `memory`, written alone into an `.alp` file, reads back equal and passes an import's checks.
    fn importable(&self, memory: &AlpMemory, id: &MemoryId, now: Timestamp) -> Result<(), String> {
        let refused = |why: String| format!("an import would refuse it: {why}");
        let text = serialize_alp(std::slice::from_ref(memory));
        let file = parse_alp(&text).map_err(|e| refused(e.to_string()))?;
        if file.memories.as_slice() != std::slice::from_ref(memory) {
            return Err(refused("it does not read back the same".to_owned()));
        }
        check_times(memory, now).map_err(|(_, message)| refused(message))?;
        new_entry(memory, id.clone()).validate(self.store().limits(), now).map_err(|e| refused(e.to_string()))
    }
}

/// The ID a store error of a batch names.
fn blamed_id(error: &memory_entry::StoreError) -> Option<String> {
    use memory_entry::StoreError;
    match error {
        StoreError::AlreadyExists { id, .. }
        | StoreError::NotFound { id, .. }
        | StoreError::VersionConflict { id, .. }
        | StoreError::BatchStale { id }
        | StoreError::NotExpired { id }
        | StoreError::VersionLimit { id, .. } => Some(id.as_str().to_owned()),
        StoreError::Storage(e) => e.id().map(str::to_owned),
        _ => None,
    }
}

/// An imported memory's times may not lie in the future (an entry updated in 2999 would never expire and would
/// sort first forever); `created` after `updated` is refused by the parser. Returns the field and why.
fn check_times(memory: &AlpMemory, now: Timestamp) -> Result<(), (&'static str, String)> {
    let latest = now.unix_millis().saturating_add(FUTURE_SLACK_MILLIS);
    for (field, at) in [("created", memory.created), ("updated", memory.updated)] {
        if let Some(at) = at.filter(|at| at.unix_millis() > latest) {
            return Err((
                field,
                format!(
                    "`{field}` {at} of memory `{}` lies in the future (the clock says {now}); fix the timestamp",
                    memory_id::shown(&memory.id)
                ),
            ));
        }
    }
    Ok(())
}

/// A project ID is one segment (no `:`), so that `project:<P>` names exactly one scope root. A malformed one is a
/// usage error of the caller, refused before the gate (no audit record), like any other malformed argument.
fn check_project(project: &str) -> Result<(), MemoryError> {
    let problem = if project.contains(':') {
        Some("it holds a `:`".to_owned())
    } else {
        memory_id::validate_segment(project)
            .err()
            .map(|p| format!("it is not a valid segment ({})", p.code()))
    };
    match problem {
        Some(why) => Err(MemoryError::Usage(format!(
            "invalid project `{}`: {why}; a project id is one segment such as `alp`",
            memory_id::shown(project)
        ))),
        None => Ok(()),
    }
}

fn new_entry(memory: &AlpMemory, id: MemoryId) -> NewEntry {
    NewEntry {
        id,
        content: memory.value.clone(),
        fields: Fields { kind: Kind::default(), ..memory.fields.clone() },
        created_at: memory.created,
        updated_at: memory.updated,
    }
}
