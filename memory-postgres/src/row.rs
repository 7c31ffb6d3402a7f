//! An entry as a row: the columns read back into a [`MemoryEntry`], and the values a write binds.

use memory_entry::{
    Extra, Fields, Importance, Key, Kind, MAX_VERSION, MemoryEntry, MemoryType, ScopeRef, Source,
    StorageError, StorageErrorKind, Timestamp, Ttl, Version,
};
use memory_id::parse_memory_id;
use memory_ranker::FoldBuffer;
use tokio_postgres::Row;
use tokio_postgres::types::ToSql;

/// The columns every read selects, in [`decode`]'s order; `$1` is `maxFileBytes`, above which the content is not
/// sent (the entry is refused, like an oversized file).
macro_rules! select_entries {
    ($($rest:literal),* $(,)?) => {
        concat!(
            "SELECT id, version, created_at, updated_at, kind, type, key, importance, source, scope, ttl, \
             octet_length(content), CASE WHEN octet_length(content) <= $1::bigint THEN content END FROM alp_memories ",
            $($rest),*
        )
    };
}
pub(crate) use select_entries;

/// The columns a read of kept versions selects, in [`decode_version`]'s order.
macro_rules! select_versions {
    ($($rest:literal),* $(,)?) => {
        concat!(
            "SELECT id, version, created_at, updated_at, kind, type, key, importance, source, scope, ttl, \
             coalesce(octet_length(content), 0), content, state FROM alp_history ",
            $($rest),*
        )
    };
}
pub(crate) use select_versions;

/// Reads a row selected by [`select_versions!`].
pub(crate) fn decode_version(row: &Row) -> Result<Version, StorageError> {
    let state: String = column(row, 13, None)?;
    if state == "tombstone" {
        let id_text: String = column(row, 0, None)?;
        let id = stored_id(&id_text)?;
        let version: i64 = column(row, 1, Some(&id_text))?;
        let millis: i64 = column(row, 3, Some(&id_text))?;
        let deleted_at = Timestamp::from_unix_millis(millis).ok_or_else(|| {
            StorageError::new(
                StorageErrorKind::Corrupt,
                Some(&id),
                format!("the stored time {millis} is not a time"),
            )
        })?;
        let version = u64::try_from(version).unwrap_or(0);
        return Ok(Version::Tombstone { id, version, deleted_at });
    }
    match decode(row)? {
        Stored::Entry(entry) if state == "redacted" => Ok(Version::Redacted(*entry)),
        Stored::Entry(entry) => Ok(Version::Entry(*entry)),
        Stored::TooLarge { .. } => Err(StorageError::new(
            StorageErrorKind::Corrupt,
            None,
            "a kept version without content that is not a tombstone",
        )),
    }
}

/// What a row holds.
#[derive(Debug)]
pub(crate) enum Stored {
    /// An entry.
    Entry(Box<MemoryEntry>),
    /// An entry whose content is larger than `maxFileBytes`: it is not read.
    TooLarge {
        /// Its size in bytes.
        size: i64,
    },
}

/// Reads a row selected by [`select_entries!`].
pub(crate) fn decode(row: &Row) -> Result<Stored, StorageError> {
    let id_text: String = column(row, 0, None)?;
    let id = stored_id(&id_text)?;
    let corrupt = |what: String| StorageError::new(StorageErrorKind::Corrupt, Some(&id), what);
    let size: i32 = column(row, 11, Some(&id_text))?;
    let Some(content) = column::<Option<String>>(row, 12, Some(&id_text))? else {
        return Ok(Stored::TooLarge { size: i64::from(size) });
    };
    let version: i64 = column(row, 1, Some(&id_text))?;
    let version = u64::try_from(version).ok().filter(|v| (1..=MAX_VERSION).contains(v)).ok_or_else(|| {
        StorageError::new(
            StorageErrorKind::VersionOverCap,
            Some(&id),
            format!("the stored version {version} is outside 1 to {MAX_VERSION}"),
        )
    })?;
    let time = |index: usize, name: &str| -> Result<Timestamp, StorageError> {
        let millis: i64 = column(row, index, Some(&id_text))?;
        Timestamp::from_unix_millis(millis)
            .ok_or_else(|| corrupt(format!("the stored {name} {millis} is not a time")))
    };
    let created_at = time(2, "createdAt")?;
    let updated_at = time(3, "updatedAt")?;
    let text = |index: usize| column::<Option<String>>(row, index, Some(&id_text));
    let keyword = |index: usize, name: &str| -> Result<String, StorageError> {
        text(index)?.ok_or_else(|| corrupt(format!("the stored {name} is missing")))
    };
    let bad = |name: &str, value: &str| {
        corrupt(format!("the stored {name} `{}` is invalid", memory_id::shown(value)))
    };
    let kind_text = keyword(4, "kind")?;
    let importance_text = keyword(7, "importance")?;
    let fields = Fields {
        kind: Kind::parse(&kind_text).ok_or_else(|| bad("kind", &kind_text))?,
        memory_type: match text(5)? {
            Some(value) => Some(MemoryType::parse(&value).ok_or_else(|| bad("type", &value))?),
            None => None,
        },
        key: text(6)?.map(|value| Key::parse(&value).map_err(|_| bad("key", &value))).transpose()?,
        importance: Importance::parse(&importance_text).ok_or_else(|| bad("importance", &importance_text))?,
        source: text(8)?.map(|value| Source::parse(&value).map_err(|_| bad("source", &value))).transpose()?,
        scope: text(9)?.map(|value| ScopeRef::parse(&value).map_err(|_| bad("scope", &value))).transpose()?,
        ttl: text(10)?.map(|value| Ttl::parse(&value).map_err(|_| bad("ttl", &value))).transpose()?,
    };
    let entry = MemoryEntry { id, version, created_at, updated_at, content, fields, extra: Extra::default() };
    Ok(Stored::Entry(Box::new(entry)))
}

fn column<'a, T: tokio_postgres::types::FromSql<'a>>(
    row: &'a Row,
    index: usize,
    id: Option<&str>,
) -> Result<T, StorageError> {
    row.try_get(index).map_err(|e| {
        StorageError::about(StorageErrorKind::Corrupt, id, format!("column {index} cannot be read: {e}"))
    })
}

/// The values a write binds for one entry, in [`INSERT`]'s order.
pub(crate) struct Values {
    id: String,
    scope_root: String,
    version: i64,
    created_at: i64,
    updated_at: i64,
    expires_at: Option<i64>,
    kind: &'static str,
    memory_type: Option<&'static str>,
    key: Option<String>,
    importance: &'static str,
    source: Option<String>,
    scope: Option<String>,
    ttl: Option<String>,
    content: String,
    folded: String,
}

impl Values {
    /// The row of `entry`, with its content folded as the ranker folds `id + "\n" + content`.
    ///
    /// Refuses content holding U+0000 (no PostgreSQL text can hold it, and no store keeps it) and
    /// a version outside 1 to 2^53 − 1.
    pub(crate) fn of(entry: &MemoryEntry, buffer: &mut FoldBuffer) -> Result<Values, StorageError> {
        check_content(&entry.content, Some(&entry.id))?;
        let version = i64::try_from(entry.version)
            .ok()
            .filter(|v| (1..=crate::schema::MAX_VERSION_I64).contains(v))
            .ok_or_else(|| {
                StorageError::new(
                    StorageErrorKind::VersionOverCap,
                    Some(&entry.id),
                    format!("version {} is outside 1 to {MAX_VERSION}", entry.version),
                )
            })?;
        let fields = &entry.fields;
        Ok(Values {
            id: entry.id.as_str().to_owned(),
            scope_root: entry.id.scope_root().as_str().to_owned(),
            version,
            created_at: entry.created_at.unix_millis(),
            updated_at: entry.updated_at.unix_millis(),
            expires_at: entry.expires_at().map(Timestamp::unix_millis),
            kind: fields.kind.as_str(),
            memory_type: fields.memory_type.map(MemoryType::as_str),
            key: fields.key.as_ref().map(|k| k.as_str().to_owned()),
            importance: fields.importance.as_str(),
            source: fields.source.as_ref().map(|s| s.as_str().to_owned()),
            scope: fields.scope.as_ref().map(|s| s.as_str().to_owned()),
            ttl: fields.ttl.map(|t| t.to_string()),
            content: entry.content.clone(),
            folded: buffer.fold_entry(entry.id.as_str(), &entry.content).to_owned(),
        })
    }

    /// Parameters of [`INSERT`].
    pub(crate) fn insert_params(&self) -> [&(dyn ToSql + Sync); 15] {
        [
            &self.id,
            &self.scope_root,
            &self.version,
            &self.created_at,
            &self.updated_at,
            &self.expires_at,
            &self.kind,
            &self.memory_type,
            &self.key,
            &self.importance,
            &self.source,
            &self.scope,
            &self.ttl,
            &self.content,
            &self.folded,
        ]
    }

    /// Parameters of [`KEEP`]: this entry as a kept version in `state` (`entry` or `redacted`), keeping `keep`.
    pub(crate) fn keep_params<'a>(
        &'a self,
        state: &'a &'static str,
        keep: &'a i64,
    ) -> [&'a (dyn ToSql + Sync); 14] {
        [
            &self.id,
            &self.version,
            state,
            &self.created_at,
            &self.updated_at,
            &self.kind,
            &self.memory_type,
            &self.key,
            &self.importance,
            &self.source,
            &self.scope,
            &self.ttl,
            &self.content,
            keep,
        ]
    }

    /// Parameters of [`UPDATE`], the entry being at `expected` before, keeping `keep` versions.
    pub(crate) fn update_params<'a>(
        &'a self,
        expected: &'a i64,
        keep: &'a i64,
    ) -> [&'a (dyn ToSql + Sync); 15] {
        [
            &self.id,
            &self.version,
            &self.updated_at,
            &self.expires_at,
            &self.kind,
            &self.memory_type,
            &self.key,
            &self.importance,
            &self.source,
            &self.scope,
            &self.ttl,
            &self.content,
            &self.folded,
            expected,
            keep,
        ]
    }
}

/// Inserts one row; nothing when the ID or its (type, key, scope) is taken (then 0 rows).
pub(crate) const INSERT: &str = "INSERT INTO alp_memories (id, scope_root, version, created_at, updated_at, \
     expires_at, kind, type, key, importance, source, scope, ttl, content, folded) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15) ON CONFLICT DO NOTHING";

/// Compare-and-swap: writes the new row only if the stored version is still `$14`, and in the same statement keeps
/// it as a version and drops the versions beyond `$15` (`history.keepVersions`). Returns how many rows changed.
///
/// Versions are dropped by number: an ID's versions are consecutive above the oldest kept (every write takes one
/// past the highest), so the `$15` newest are those above `$2 - $15`.
pub(crate) const UPDATE: &str = "WITH changed AS (UPDATE alp_memories SET version = $2, updated_at = $3, \
     expires_at = $4, kind = $5, type = $6, key = $7, importance = $8, source = $9, scope = $10, ttl = $11, \
     content = $12, folded = $13 WHERE id = $1 AND version = $14 RETURNING created_at), \
     kept AS (INSERT INTO alp_history (id, version, state, created_at, updated_at, kind, type, key, importance, \
     source, scope, ttl, content) SELECT $1, $2, 'entry', created_at, $3, $5, $6, $7, $8, $9, $10, $11, $12 \
     FROM changed), \
     dropped AS (DELETE FROM alp_history WHERE id = $1 AND version <= $2 - $15::bigint \
     AND EXISTS (SELECT 1 FROM changed)) \
     SELECT count(*) FROM changed";

/// Keeps one version (`$3`: `entry` or `redacted`) and drops the versions of its ID beyond `$14`
/// (`history.keepVersions`), as [`UPDATE`] does.
pub(crate) const KEEP: &str = "WITH kept AS (INSERT INTO alp_history (id, version, state, created_at, \
     updated_at, kind, type, key, importance, source, scope, ttl, content) \
     VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13)) \
     DELETE FROM alp_history WHERE id = $1 AND version <= $2 - $14::bigint";

/// Keeps a tombstone of `$1` at version `$2`, deleted at `$3`, and drops the versions beyond `$4`.
pub(crate) const TOMBSTONE: &str = "WITH kept AS (INSERT INTO alp_history (id, version, state, updated_at) \
     VALUES ($1, $2, 'tombstone', $3)) \
     DELETE FROM alp_history WHERE id = $1 AND version <= $2 - $4::bigint";

/// The highest version `$1` ever had (NULL: none kept).
pub(crate) const HIGHEST: &str = "SELECT max(version) FROM alp_history WHERE id = $1";

/// Refuses content holding U+0000: PostgreSQL text cannot hold it, and no store keeps it.
pub(crate) fn check_content(content: &str, id: Option<&memory_id::MemoryId>) -> Result<(), StorageError> {
    match content.find('\0') {
        None => Ok(()),
        Some(at) => Err(StorageError::new(
            StorageErrorKind::Backend,
            id,
            format!(
                "content holds U+0000 at character {}, which no store keeps; remove it",
                content[..at].chars().count() + 1
            ),
        )),
    }
}

/// An ID read back from the database: one that does not parse is a corrupt row.
pub(crate) fn stored_id(text: &str) -> Result<memory_id::MemoryId, StorageError> {
    parse_memory_id(text).map_err(|e| {
        StorageError::about(StorageErrorKind::Corrupt, Some(text), format!("the stored id is invalid: {e}"))
    })
}
