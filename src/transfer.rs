//! Import and export of ALP 80 `.alp` memory files (DESIGN.md §8): compositions on the doors, not doors.

use std::collections::{BTreeMap, BTreeSet};

use memory_audit::{AuditOperation, AuditSink};
use memory_id::{MemoryId, MemoryPrefix, parse_memory_id};
use memory_policy::{Operation, PolicyEngine};
use memory_store::{
    AlpMemory, ExistsReason, ExpiryFilter, Importance, ListQuery, MemoryStore, NewEntry, parse_alp,
    paths_clash, serialize_alp,
};

use crate::service::{ActorSource, Call, field_error, store_error};
use crate::{MemoryError, MemoryService};

/// Something an import or export left out, and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Skipped {
    /// The ID (or, for an object of another kind in an `.alp` file, its `id` field or `@<kind>`).
    pub id: String,
    /// Why, for people.
    pub reason: String,
}

/// What an import did.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ImportReport {
    /// The IDs created, in file order.
    pub imported: Vec<MemoryId>,
    /// Objects of other kinds, read past.
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

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// Imports an `.alp` file into project `project`: each `@memory` block becomes `project:<project>:<id>` with all
    /// its fields, `created` and `updated` kept (so TTLs do not restart), kind `reference`.
    ///
    /// The whole file is parsed, validated, authorized and checked against the store before anything is written:
    /// a parse error (no audit record), an invalid ID, a denied ID, an invalid field or a value over a limit, an ID
    /// that exists (live or expired) or clashes, a (type, key, scope) already held, or a full scope root aborts the
    /// import with that error and writes nothing but one `denied` or `error` `create` record for that ID (for an
    /// unknown role, the record's ID is `project:<project>`). Then each create writes one `allowed` `create` record
    /// before its entry. Known limit: the checks and the creates are not one transaction, so a concurrent writer can
    /// still make a later create fail; the error then names it, and the entries created before it remain.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for a project that is not one segment; [`MemoryError::InvalidEntry`] with `line` and
    /// `column` for a parse error; otherwise as described above.
    pub fn import_alp(&self, role: &str, project: &str, text: &str) -> Result<ImportReport, MemoryError> {
        self.import_alp_with_progress(role, project, text, &mut |_, _| {})
    }

    /// [`MemoryService::import_alp`], calling `progress(done, total)` after each create.
    ///
    /// # Errors
    ///
    /// As [`MemoryService::import_alp`].
    pub fn import_alp_with_progress(
        &self,
        role: &str,
        project: &str,
        text: &str,
        progress: &mut dyn FnMut(usize, usize),
    ) -> Result<ImportReport, MemoryError> {
        let file = parse_alp(text).map_err(|e| MemoryError::InvalidEntry {
            id: None,
            message: format!("invalid .alp file: {e} ({})", e.kind().code()),
            line: Some(e.line()),
            column: Some(e.column()),
        })?;
        let scope_root = format!("project:{project}");
        let now = self.now();
        check_project(project)?;
        for (memory, position) in file.memories.iter().zip(&file.positions) {
            check_times(memory, now).map_err(|(field, message)| {
                let line = match field {
                    "created" => position.created,
                    _ => position.updated,
                };
                MemoryError::InvalidEntry {
                    id: None,
                    message: format!("invalid .alp file: {message}"),
                    line: Some(line.unwrap_or(position.line)),
                    column: Some(1),
                }
            })?;
        }
        fn create_call<'a>(role: &'a str, id: &'a str, now: memory_store::Timestamp) -> Call<'a> {
            Call { role, operation: AuditOperation::Create, id, now }
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
        let mut news = Vec::with_capacity(parsed.len());
        for ((memory, id), text_id) in file.memories.iter().zip(&parsed).zip(&ids) {
            let new = new_entry(memory, id.clone());
            new.validate(self.store().limits(), now)
                .map_err(|e| self.refuse(&create_call(role, text_id, now), field_error(id, e)))?;
            news.push(new);
        }
        // The pre-check lists the scope root before the first `allowed` record: only with a log that can take one.
        self.ready()?;
        self.check_import(&news, &scope_root, now)
            .map_err(|(id, e)| self.refuse(&create_call(role, &id, now), e))?;

        let total = news.len();
        let mut imported = Vec::with_capacity(total);
        for new in news {
            let id = new.id.clone();
            self.allow(&create_call(role, id.as_str(), now))?;
            self.store().create(new, now).map_err(|e| store_error(&id, e))?;
            imported.push(id);
            progress(imported.len(), total);
        }
        let skipped = file
            .skipped
            .into_iter()
            .map(|s| Skipped { id: s.id.unwrap_or_else(|| format!("@{}", s.kind)), reason: s.warning })
            .collect();
        Ok(ImportReport { imported, skipped })
    }

    /// The store-side checks of an import, before any write: existing IDs, file/directory clashes, (type, key,
    /// scope) held twice, and the entry limit of the scope root. Returns the ID to blame and the error.
    fn check_import(
        &self,
        news: &[NewEntry],
        scope_root: &str,
        now: memory_store::Timestamp,
    ) -> Result<(), (String, MemoryError)> {
        let Ok(root) = MemoryPrefix::parse(scope_root) else { return Ok(()) };
        let query = ListQuery { expiry: ExpiryFilter::Any, ..ListQuery::default() };
        let existing = self
            .store()
            .list(std::slice::from_ref(&root), &query, now)
            .map_err(|e| (scope_root.to_owned(), MemoryError::from(e)))?;
        let existing_ids: BTreeSet<&MemoryId> = existing.iter().map(|e| &e.id).collect();
        let mut holders: BTreeMap<(Option<&str>, &str, Option<&str>), &MemoryId> = existing
            .iter()
            .filter_map(|e| {
                e.key.as_deref().map(|k| ((e.memory_type.map(|t| t.as_str()), k, e.scope.as_deref()), &e.id))
            })
            .collect();
        let exists = |id: &MemoryId, existing: &MemoryId, reason| {
            (
                id.as_str().to_owned(),
                MemoryError::AlreadyExists {
                    id: id.as_str().to_owned(),
                    existing: existing.as_str().to_owned(),
                    reason,
                },
            )
        };
        for new in news {
            if let Some(entry) = existing.iter().find(|e| e.id == new.id) {
                let reason = if entry.is_expired(now) { ExistsReason::Expired } else { ExistsReason::SameId };
                return Err(exists(&new.id, &entry.id, reason));
            }
            if let Some(other) = existing_ids.iter().find(|other| paths_clash(&new.id, other)) {
                return Err(exists(&new.id, other, ExistsReason::FileDirectoryClash));
            }
            if let Some(key) = new.key.as_deref() {
                let slot = (new.memory_type.map(|t| t.as_str()), key, new.scope.as_deref());
                if let Some(holder) = holders.get(&slot) {
                    return Err(exists(&new.id, holder, ExistsReason::DuplicateKey));
                }
                holders.insert(slot, &new.id);
            }
        }
        let limit = self.store().limits().max_entries_per_scope_root;
        let count = existing.len() as u64;
        if count + news.len() as u64 > limit {
            let blame =
                news.get(usize::try_from(limit.saturating_sub(count)).unwrap_or(0)).map(|n| n.id.clone());
            let id = blame.map_or_else(|| scope_root.to_owned(), MemoryId::into_string);
            let message = format!(
                "cannot import {} entries into `{scope_root}`: it holds {count}, the limit is {limit}; prune expired entries or remove some",
                news.len()
            );
            return Err((id.clone(), MemoryError::LimitExceeded { id, limit, count, message }));
        }
        Ok(())
    }

    /// Exports project `project`'s typed entries as an `.alp` file, sorted by ID: one search (one `search` audit
    /// record with the prefix `project:<project>`) over what the actor may read. Entries without a type or a key, or
    /// whose ID has more than one segment below the project, go to `skipped` with the reason; expired entries are left
    /// out.
    ///
    /// # Errors
    ///
    /// [`MemoryError::Usage`] for a project that is not one segment; otherwise as [`MemoryService::search`].
    pub fn export_alp(&self, role: &str, project: &str) -> Result<ExportReport, MemoryError> {
        check_project(project)?;
        let prefix = format!("project:{project}");
        let (entries, _actor) = self.readable(role, Some(&prefix), &ListQuery::default(), &|_| true)?;
        let now = self.now();
        let mut memories = Vec::new();
        let mut skipped = Vec::new();
        for entry in &entries {
            let rest: Vec<&str> = entry.id.path_segments().collect();
            let reason = match (&entry.memory_type, &entry.key, rest.as_slice()) {
                (None, _, _) => Some("it has no type; an .alp memory needs a type and a key"),
                (_, None, _) => Some("it has no key; an .alp memory needs a type and a key"),
                (_, _, [_]) => None,
                _ => Some("its id has more than one segment below the project; an .alp id is one segment"),
            };
            let memory = match (reason, entry.memory_type, &entry.key, rest.as_slice()) {
                (None, Some(memory_type), Some(key), [id]) => AlpMemory {
                    id: (*id).to_owned(),
                    memory_type,
                    key: key.clone(),
                    value: entry.content.clone(),
                    scope: entry.scope.clone(),
                    importance: Some(entry.importance),
                    source: entry.source.clone(),
                    ttl: entry.ttl,
                    created: Some(entry.created_at.truncated_to_millis()),
                    updated: Some(entry.updated_at.truncated_to_millis()),
                },
                (reason, ..) => {
                    skipped.push(Skipped {
                        id: entry.id.as_str().to_owned(),
                        reason: reason.unwrap_or("it cannot be written as an .alp memory").to_owned(),
                    });
                    continue;
                }
            };
            // Only what an import takes back is written: a hand-written entry may hold a key, source or content
            // that the format or the entry model refuses.
            match self.importable(&memory, &entry.id, now) {
                Ok(()) => memories.push(memory),
                Err(why) => skipped.push(Skipped {
                    id: entry.id.as_str().to_owned(),
                    reason: format!("an import would refuse it: {why}"),
                }),
            }
        }
        memories.sort_by(|a, b| a.id.cmp(&b.id));
        Ok(ExportReport { exported: memories.len(), text: serialize_alp(&memories), skipped })
    }
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> MemoryService<S, A, P, R> {
    /// Whether `memory`, written alone into an `.alp` file, reads back equal and passes an import's checks.
    fn importable(
        &self,
        memory: &AlpMemory,
        id: &MemoryId,
        now: memory_store::Timestamp,
    ) -> Result<(), String> {
        let text = serialize_alp(std::slice::from_ref(memory));
        let file = parse_alp(&text).map_err(|e| e.to_string())?;
        if file.memories.as_slice() != std::slice::from_ref(memory) {
            return Err("it does not read back the same".to_owned());
        }
        check_times(memory, now).map_err(|(_, message)| message)?;
        new_entry(memory, id.clone()).validate(self.store().limits(), now).map_err(|e| e.to_string())
    }
}

/// How far past the clock an imported `created` or `updated` may lie (clocks drift).
const FUTURE_SLACK_MILLIS: i64 = 5 * 60 * 1000;

/// An imported memory's times may not lie in the future (an entry updated in 2999 would never expire and would
/// sort first forever); `created` after `updated` is refused by the parser. Returns the field and why.
fn check_times(memory: &AlpMemory, now: memory_store::Timestamp) -> Result<(), (&'static str, String)> {
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
    let mut new = NewEntry::new(id, memory.value.clone());
    new.memory_type = Some(memory.memory_type);
    new.key = Some(memory.key.clone());
    new.importance = memory.importance.unwrap_or(Importance::Medium);
    new.source.clone_from(&memory.source);
    new.scope.clone_from(&memory.scope);
    new.ttl = memory.ttl;
    new.created_at = memory.created;
    new.updated_at = memory.updated;
    new
}
