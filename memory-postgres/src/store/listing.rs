//! A listing's candidate SQL: the roots, the expiry, the first value of each filter and the query terms' `LIKE`
//! patterns, chunked to stay below the protocol's bind-parameter limit; the rows are admitted and scored in Rust.

use memory_entry::{FieldValue, StoreError};
use memory_id::MemoryPrefix;
use memory_ranker::FoldBuffer;
use memory_store::{Expiry, Listing, Scored};

use super::PostgresStore;
use crate::db::Built;
use crate::row::{Stored, decode, select_entries};

/// The most roots, and the most `LIKE` patterns, one listing statement binds: with the nine other parameters, a
/// statement stays far below the protocol's limit of 65,535 (`crate::pool::MAX_BIND_PARAMS`); a listing with more
/// is split into several statements.
const LIST_CHUNK: usize = 4096;
const _: () = assert!(2 * LIST_CHUNK + 10 <= crate::pool::MAX_BIND_PARAMS);

impl PostgresStore {
    /// What [`memory_store::MemoryStore::list`] returns: candidates from the database, each
    /// admitted and scored again by the listing.
    pub(super) fn list_entries(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        if listing.roots().is_empty() {
            return Ok(Vec::new());
        }
        let terms = listing.terms();
        // U+0000 is never stored, so a term holding it matches nothing (and cannot be bound).
        let patterns: Vec<String> =
            terms.iter().filter(|t| !t.contains('\0')).map(|t| like_pattern(t)).collect();
        if !terms.is_empty() && patterns.is_empty() {
            return Ok(Vec::new());
        }
        // The statement only preselects (every row is admitted and scored again below), so the roots and the
        // patterns are sent in chunks that keep each statement far below the protocol's bind-parameter limit: one
        // statement per pair of chunks, the rows merged by ID. Almost every listing is one statement.
        let roots: Vec<&str> = listing.roots().iter().map(MemoryPrefix::as_str).collect();
        let pattern_chunks: Vec<&[String]> =
            if patterns.is_empty() { vec![&[]] } else { patterns.chunks(LIST_CHUNK).collect() };
        let statements: Vec<Built> = roots
            .chunks(LIST_CHUNK)
            .flat_map(|roots| pattern_chunks.iter().map(move |patterns| (roots, *patterns)))
            .map(|(roots, patterns)| self.listing_statement(listing, roots, patterns))
            .collect();
        listing.check_cancelled()?;
        let mut conn = self.db.conn().map_err(|f| f.into_store(None))?;
        let failed = |e: crate::error::DbError| self.failure(&e, "listing entries", None);
        let mut buffer = FoldBuffer::new();
        let mut keep = |rows: Vec<tokio_postgres::Row>, kept: &mut Vec<Scored>| -> Result<(), StoreError> {
            for row in &rows {
                // A caller that gave up is not served any further: the rows left are not decoded or scored.
                listing.check_cancelled()?;
                let entry = match decode(row) {
                    Ok(Stored::Entry(entry)) => *entry,
                    Ok(Stored::TooLarge { .. }) => continue,
                    Err(e) => {
                        tracing::warn!(error = %e, "skipping a row that is not a valid entry");
                        continue;
                    }
                };
                if listing.admits(&entry)
                    && let Some(score) = listing.score(&entry, &mut buffer)
                {
                    kept.push(Scored { entry, score });
                }
            }
            Ok(())
        };
        let mut kept = Vec::new();
        if let [built] = statements.as_slice() {
            let rows = conn.session().query_built(&built.sql, &built.params()).map_err(failed)?;
            keep(rows, &mut kept)?;
            return Ok(listing.finish(kept));
        }
        // Several statements read one snapshot; an entry two of them found is kept once, in ID order.
        let mut tx = conn.snapshot().map_err(failed)?;
        for built in &statements {
            let rows = tx.query_built(&built.sql, &built.params()).map_err(failed)?;
            keep(rows, &mut kept)?;
        }
        tx.commit().map_err(failed)?;
        Ok(listing.finish(kept))
    }

    /// The candidate statement of `listing` for these roots and `LIKE` patterns (none: no query terms): at most
    /// 2 + 7 + `roots.len()` + `patterns.len()` parameters. Only the first value of each filter column is sent (the
    /// listing admits every row again), so the filters add at most seven.
    fn listing_statement(&self, listing: &Listing, roots: &[&str], patterns: &[String]) -> Built {
        let mut built = Built::default();
        let max = built.param(self.max_bytes());
        debug_assert_eq!(max, "$1", "select_entries! takes maxFileBytes as $1");
        let roots: Vec<String> = roots
            .iter()
            .map(|root| {
                let p = built.param((*root).to_owned());
                format!("(id = {p} OR (id >= {p} || ':' AND id < {p} || ';'))")
            })
            .collect();
        let mut sql =
            format!("{}WHERE ({}) AND octet_length(content) <= $1", select_entries!(), roots.join(" OR "));
        match listing.expiry() {
            Expiry::Live => {
                let now = built.param(listing.now().unix_millis());
                sql.push_str(&format!(" AND (expires_at IS NULL OR expires_at > {now})"));
            }
            Expiry::Expired => {
                let now = built.param(listing.now().unix_millis());
                sql.push_str(&format!(" AND expires_at <= {now}"));
            }
            Expiry::Any => {}
        }
        let mut filtered = Vec::new();
        for value in listing.filter().values() {
            let column = match value {
                FieldValue::Kind(_) => "kind",
                FieldValue::Type(_) => "type",
                FieldValue::Key(_) => "key",
                FieldValue::Importance(_) => "importance",
                FieldValue::Source(_) => "source",
                FieldValue::Scope(_) => "scope",
                FieldValue::Ttl(_) => "ttl",
            };
            if filtered.contains(&column) {
                continue;
            }
            filtered.push(column);
            let p = built.param(value.text());
            sql.push_str(&format!(" AND {column} = {p}"));
        }
        if !patterns.is_empty() {
            let likes: Vec<String> = patterns
                .iter()
                .map(|pattern| format!("folded LIKE {}", built.param(pattern.clone())))
                .collect();
            sql.push_str(&format!(" AND ({})", likes.join(" OR ")));
        }
        sql.push_str(" ORDER BY id");
        built.sql = sql;
        built
    }
}

/// `%term%` for `LIKE`, with the pattern characters of the term escaped (`\` is `LIKE`'s escape character).
fn like_pattern(term: &str) -> String {
    let mut pattern = String::with_capacity(term.len() + 2);
    pattern.push('%');
    for c in term.chars() {
        if matches!(c, '\\' | '%' | '_') {
            pattern.push('\\');
        }
        pattern.push(c);
    }
    pattern.push('%');
    pattern
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn like_patterns_escape_every_pattern_character() {
        for (term, pattern) in [
            ("plain", "%plain%"),
            ("100%", "%100\\%%"),
            ("snake_case", "%snake\\_case%"),
            ("c:\\temp", "%c:\\\\temp%"),
            ("việt", "%việt%"),
        ] {
            assert_eq!(like_pattern(term), pattern, "{term}");
        }
    }
}
