//! str_replace and insert are a get and an update at the version read: a change made in between (by another
//! server, the CLI, a hand edit) is a VERSION_CONFLICT, never a lost update.

use std::sync::atomic::{AtomicBool, Ordering};

use alp_memory::memory_entry::{
    Batch, BatchPlan, InMemoryStore, Limits, Listing, MemoryEntry, MemoryStore, NewEntry, Patch, Scored,
    StoreError, Timestamp,
};
use alp_memory::memory_id::MemoryId;
use serde_json::json;

use crate::support::{call, error, server_over};

/// An in-memory store where someone else rewrites an entry right after the first read of it, once.
struct Meddled {
    inner: InMemoryStore,
    armed: AtomicBool,
}

impl MemoryStore for Meddled {
    fn limits(&self) -> &Limits {
        self.inner.limits()
    }

    fn get(&self, id: &MemoryId, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        let entry = self.inner.get(id, now)?;
        if self.armed.swap(false, Ordering::SeqCst) {
            let patch =
                Patch::new(Some("rewritten by someone else\n".to_owned()), Vec::new(), Vec::new()).unwrap();
            self.inner.update(id, entry.version, &patch, now)?;
        }
        Ok(entry)
    }

    fn list(&self, listing: &Listing) -> Result<Vec<Scored>, StoreError> {
        self.inner.list(listing)
    }

    fn plan_batch(&self, batch: &Batch, now: Timestamp) -> Result<BatchPlan, StoreError> {
        self.inner.plan_batch(batch, now)
    }

    fn write_batch(
        &self,
        batch: &Batch,
        expected: Option<&BatchPlan>,
        now: Timestamp,
    ) -> Result<Vec<MemoryEntry>, StoreError> {
        self.inner.write_batch(batch, expected, now)
    }

    fn create(&self, entry: NewEntry, now: Timestamp) -> Result<MemoryEntry, StoreError> {
        self.inner.create(entry, now)
    }

    fn update(
        &self,
        id: &MemoryId,
        expected: u64,
        patch: &Patch,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.inner.update(id, expected, patch, now)
    }

    fn delete(&self, id: &MemoryId, expected: u64, now: Timestamp) -> Result<(), StoreError> {
        self.inner.delete(id, expected, now)
    }

    fn delete_expired(&self, id: &MemoryId, expected: u64, now: Timestamp) -> Result<(), StoreError> {
        self.inner.delete_expired(id, expected, now)
    }

    fn rename(
        &self,
        from: &MemoryId,
        to: &MemoryId,
        expected: u64,
        now: Timestamp,
    ) -> Result<MemoryEntry, StoreError> {
        self.inner.rename(from, to, expected, now)
    }
}

#[test]
fn a_change_between_the_read_and_the_write_is_a_version_conflict() {
    let path = "/memories/private/worker/notes.md";
    for args in [
        json!({ "command": "str_replace", "path": path, "old_str": "two", "new_str": "2" }),
        json!({ "command": "insert", "path": path, "insert_line": 0, "insert_text": "zero" }),
        json!({ "command": "delete", "path": path }),
        json!({ "command": "rename", "old_path": path, "new_path": "/memories/private/worker/moved.md" }),
    ] {
        let server =
            server_over(Meddled { inner: InMemoryStore::new(), armed: AtomicBool::new(false) }, "worker");
        let created =
            call(&server, "memory", json!({ "command": "create", "path": path, "file_text": "one\ntwo\n" }));
        assert_eq!(created.is_error, Some(false), "{created:?}");
        server.service().store().armed.store(true, Ordering::SeqCst);
        let conflict = error(&server, "memory", args.clone());
        assert_eq!(conflict["code"], "VERSION_CONFLICT", "{args}: {conflict}");
        assert_eq!(
            (conflict["expected"].as_u64(), conflict["actual"].as_u64()),
            (Some(1), Some(2)),
            "{args}"
        );
        if matches!(args["command"].as_str(), Some("str_replace" | "insert")) {
            // The memory tool takes no version: the message says what to do instead, and names none.
            assert_eq!(
                conflict["message"],
                "The file /memories/private/worker/notes.md was changed by someone else since it was read; view it \
                 again and retry",
                "{args}"
            );
        }
        let entry = call(&server, "memory_get", json!({ "id": "private:worker:notes" }));
        let entry = entry.structured_content.unwrap();
        assert_eq!(
            entry["content"], "rewritten by someone else\n",
            "{args}: the other writer's change is kept"
        );
        assert_eq!(entry["version"], 2);
    }
}
