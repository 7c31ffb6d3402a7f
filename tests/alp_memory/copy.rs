//! `alp_memory::copy`: a whole store into an empty one — entries, kept versions, tombstones, redactions, tokens and
//! the audit log byte for byte — and the refusals (a target in use, a broken or symlinked source log). The copy
//! between Markdown and PostgreSQL both ways is tested end to end in alp-cli's `postgres` tests.

use std::path::{Path, PathBuf};

use alp_memory::copy::{CopyError, CopySource, CopyTarget, LogSide, check_target, copy_store};
use alp_memory::memory_audit::{AuditError, AuditSink, BreakReason, JsonlAuditSink};
use alp_memory::memory_markdown::{MarkdownStore, StoreOptions};
use alp_memory::memory_policy::GrantPolicy;
use alp_memory::memory_store::MemoryStore;
use alp_memory::token::{Lifetime, TokenStore as _, create_token};
use alp_memory::{CreateRequest, FieldInput, MemoryService, UpdateRequest};

use crate::support::team;

fn open(root: &Path) -> MarkdownStore {
    MarkdownStore::open_with(root, StoreOptions::new()).unwrap()
}

/// A root with a rewritten and redacted entry, a deleted one, an untouched one and a token, each change audited.
fn source(root: &Path) -> MarkdownStore {
    let service = MemoryService::new(
        open(root),
        JsonlAuditSink::open(root.join("audit.jsonl")).unwrap(),
        GrantPolicy,
        team(),
    );
    let create = |id: &str, content: &str| {
        service
            .create(
                "main",
                CreateRequest { id: id.into(), content: content.into(), fields: FieldInput::new() },
            )
            .unwrap()
    };
    let update = |id: &str, expected_version: u64, content: &str| {
        let request = UpdateRequest {
            id: id.into(),
            expected_version,
            content: Some(content.into()),
            fields: FieldInput::new(),
            clear: vec![],
        };
        service.update("main", request).unwrap()
    };
    create("shared:team:a", "secret 1");
    update("shared:team:a", 1, "two");
    update("shared:team:a", 2, "three");
    service.redact("shared:team:a", 1).unwrap();
    create("shared:team:b", "gone soon");
    service.delete("main", "shared:team:b", 1).unwrap();
    create("shared:team:c", "never rewritten");
    let store = open(root);
    let sink = JsonlAuditSink::open(root.join("audit.jsonl")).unwrap();
    create_token(&store, &sink as &dyn AuditSink, &team(), "worker", Some("copied"), Lifetime::Never, now())
        .unwrap();
    store
}

/// A temporary directory with [`source`] in `from`, and where to copy it: `to`, which does not exist yet.
fn setup() -> (tempfile::TempDir, PathBuf, PathBuf, MarkdownStore) {
    let dir = tempfile::tempdir().unwrap();
    let (from, to) = (dir.path().join("from"), dir.path().join("to"));
    std::fs::create_dir(&from).unwrap();
    let store = source(&from);
    (dir, from, to, store)
}

fn now() -> alp_memory::memory_entry::Timestamp {
    alp_memory::memory_entry::Timestamp::now()
}

#[test]
fn a_root_is_copied_whole_into_a_new_one() {
    let (_dir, from, to, store) = setup();
    let mut seen = Vec::new();
    let report = copy_store(CopySource::Markdown(&store), CopyTarget::Root(&to), None, &mut |done, total| {
        seen.push((done, total))
    })
    .unwrap();
    let log = std::fs::read_to_string(from.join("audit.jsonl")).unwrap();
    assert_eq!(report.entries, 2);
    assert_eq!(report.audit_records, log.lines().count());
    assert_eq!(report.target, to.canonicalize().unwrap().display().to_string());
    assert_eq!(seen, [(1, 2), (2, 2)], "progress after each entry");
    assert_eq!(
        std::fs::read_to_string(to.join("audit.jsonl")).unwrap(),
        log,
        "the log is copied byte for byte"
    );

    let copied = open(&to);
    for id in ["shared:team:a", "shared:team:b", "shared:team:c"] {
        let id = alp_memory::memory_id::parse_memory_id(id).unwrap();
        assert_eq!(copied.history(&id, None).unwrap(), store.history(&id, None).unwrap(), "{id}");
    }
    let a = copied.history(&alp_memory::memory_id::parse_memory_id("shared:team:a").unwrap(), None).unwrap();
    assert!(a[2].is_redacted() && a[2].entry().is_some_and(|entry| entry.content.is_empty()), "{a:?}");
    let b = copied.history(&alp_memory::memory_id::parse_memory_id("shared:team:b").unwrap(), None).unwrap();
    assert!(b[0].is_tombstone(), "{b:?}");
    assert_eq!(copied.tokens().unwrap(), store.tokens().unwrap());
    assert_eq!(copied.config(), store.config());
}

#[test]
fn a_target_in_use_is_refused_before_anything_is_read() {
    let (dir, _, _, store) = setup();
    std::fs::write(dir.path().join("stray"), "x").unwrap();
    let error = copy_store(CopySource::Markdown(&store), CopyTarget::Root(dir.path()), None, &mut |_, _| {});
    assert!(matches!(&error, Err(CopyError::DirectoryNotEmpty { path }) if path == dir.path()), "{error:?}");
    assert_eq!(
        error.err().unwrap().to_string(),
        format!("`{}` is not empty; store copy writes only into an empty store", dir.path().display())
    );
    assert!(check_target(CopyTarget::Root(&dir.path().join("missing"))).is_ok());
}

#[test]
fn a_broken_source_log_is_not_copied() {
    let (_dir, from, to, store) = setup();
    let log = from.join("audit.jsonl");
    let text = std::fs::read_to_string(&log).unwrap().replacen("secret", "public", 1);
    std::fs::write(&log, text.replacen("\"create\"", "\"delete\"", 1)).unwrap();
    let error = copy_store(CopySource::Markdown(&store), CopyTarget::Root(&to), None, &mut |_, _| {});
    assert!(
        matches!(
            error,
            Err(CopyError::BrokenLog {
                side: LogSide::Source,
                first_bad_seq: 1,
                reason: BreakReason::Altered
            })
        ),
        "{error:?}"
    );
    assert!(!to.exists(), "nothing was written");
}

#[test]
fn a_symlinked_source_log_is_not_followed() {
    let (dir, from, to, store) = setup();
    let log = from.join("audit.jsonl");
    std::fs::rename(&log, dir.path().join("elsewhere.jsonl")).unwrap();
    std::os::unix::fs::symlink(dir.path().join("elsewhere.jsonl"), &log).unwrap();
    let error = copy_store(CopySource::Markdown(&store), CopyTarget::Root(&to), None, &mut |_, _| {});
    assert!(matches!(&error, Err(CopyError::Audit(AuditError::Io { op: "open", .. }))), "{error:?}");
    assert!(!to.exists(), "nothing was written");
}
