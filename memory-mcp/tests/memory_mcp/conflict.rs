//! str_replace and insert are a get and an update at the version read: a change made in between (by another
//! server, the CLI, a hand edit) is a VERSION_CONFLICT, never a lost update.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use alp_memory::memory_entry::Patch;
use alp_memory::memory_store::{InMemoryStore, MemoryStore as _};
use serde_json::json;
use testkit::store::{Forwarding, StoreCall};

use crate::support::{call, error, server_over};

/// An in-memory store where someone else rewrites an entry right after the first read of it, once armed.
fn meddled(armed: Arc<AtomicBool>) -> Forwarding<InMemoryStore> {
    Forwarding::new(InMemoryStore::new()).after(move |inner, call| {
        if let StoreCall::Get { id, now } = *call
            && armed.swap(false, Ordering::SeqCst)
        {
            let entry = inner.get(id, now).unwrap();
            let patch =
                Patch::new(Some("rewritten by someone else\n".to_owned()), Vec::new(), Vec::new()).unwrap();
            inner.update(id, entry.version, &patch, now).unwrap();
        }
    })
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
        let armed = Arc::new(AtomicBool::new(false));
        let server = server_over(meddled(armed.clone()), "worker");
        let created =
            call(&server, "memory", json!({ "command": "create", "path": path, "file_text": "one\ntwo\n" }));
        assert_eq!(created.is_error, Some(false), "{created:?}");
        armed.store(true, Ordering::SeqCst);
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
