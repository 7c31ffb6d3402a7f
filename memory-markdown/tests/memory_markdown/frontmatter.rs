//! The on-disk format: canonical serialisation (snapshot), broken and missing frontmatter, per-field fallbacks,
//! unknown keys, byte-for-byte content, invalid UTF-8.

use memory_entry::{
    FieldValue, Fields, Importance, Key, Kind, MemoryEntry, MemoryType, NewEntry, Patch, ScopeRef, Source,
    StorageErrorKind, StoreError, Timestamp, Ttl,
};
use memory_markdown::{FrontmatterStatus, MarkdownStore, parse_entry_file, render_entry_file};
use memory_store::MemoryStore;
use proptest::prelude::*;

use crate::{at, id};

fn mtime() -> Timestamp {
    Timestamp::parse("2026-03-04T05:06:07.089Z").unwrap()
}

fn parse(bytes: &[u8]) -> memory_markdown::ParsedEntryFile {
    parse_entry_file(id("shared:note"), bytes, mtime())
}

fn full_entry() -> MemoryEntry {
    let mut entry =
        NewEntry::new(id("project:alp:decisions:db"), "We use Postgres.\n\n---\nNot frontmatter.\n");
    entry.fields = Fields {
        kind: Kind::Decision,
        memory_type: Some(MemoryType::Decision),
        key: Some(Key::parse("db-choice").unwrap()),
        importance: Importance::High,
        source: Some(Source::parse("agent: main #1").unwrap()),
        scope: Some(ScopeRef::parse("feat-dashboard").unwrap()),
        ttl: Some(Ttl::parse("90d").unwrap()),
    };
    entry.created_at = Some(Timestamp::parse("2026-11-29T12:00:00.5+02:00").unwrap());
    entry.updated_at = Some(Timestamp::parse("2026-11-30T08:15:00Z").unwrap());
    entry.into_entry(at(0))
}

#[test]
fn canonical_serialisation_snapshot() {
    let mut entry = full_entry();
    let with_extra = parse(
        b"---\nkind: fact\nowner: ana\nreview: {due: 2026-12-01, by: [ana, bo]}\nnote: |\n  two\n  lines\n---\n",
    );
    entry.extra = with_extra.entry.extra;
    let text = render_entry_file(&entry);
    insta::assert_snapshot!("canonical_full_entry", text);
    let minimal =
        NewEntry::new(id("shared:x"), "text").into_entry(Timestamp::parse("2026-01-01T00:00:00Z").unwrap());
    insta::assert_snapshot!("canonical_minimal_entry", render_entry_file(&minimal));
    // And it reads back as written.
    let back = parse_entry_file(entry.id.clone(), text.as_bytes(), mtime());
    assert_eq!(back.entry, entry);
}

/// One row: the file, then what it reads as.
struct Case {
    name: &'static str,
    file: &'static [u8],
    status: FrontmatterStatus,
    kind: Kind,
    version: u64,
    content: &'static str,
}

#[test]
fn broken_and_missing_frontmatter_table_11_cases() {
    use FrontmatterStatus::{Broken, Missing, Present};
    let cases = [
        Case {
            name: "no frontmatter",
            file: b"just text\n",
            status: Missing,
            kind: Kind::Reference,
            version: 1,
            content: "just text\n",
        },
        Case {
            name: "empty file",
            file: b"",
            status: Missing,
            kind: Kind::Reference,
            version: 1,
            content: "",
        },
        Case {
            name: "no closing line",
            file: b"---\nkind: fact\nbody\n",
            status: Missing,
            kind: Kind::Reference,
            version: 1,
            content: "---\nkind: fact\nbody\n",
        },
        Case {
            name: "dashes not on the first line",
            file: b"\n---\nkind: fact\n---\nx",
            status: Missing,
            kind: Kind::Reference,
            version: 1,
            content: "\n---\nkind: fact\n---\nx",
        },
        Case {
            name: "opening line with trailing space",
            file: b"--- \nkind: fact\n---\nx",
            status: Missing,
            kind: Kind::Reference,
            version: 1,
            content: "--- \nkind: fact\n---\nx",
        },
        Case {
            name: "broken yaml",
            file: b"---\nkind: [fact\n---\nbody",
            status: Broken,
            kind: Kind::Reference,
            version: 1,
            content: "body",
        },
        Case {
            name: "not a mapping",
            file: b"---\n- a\n- b\n---\nbody",
            status: Broken,
            kind: Kind::Reference,
            version: 1,
            content: "body",
        },
        Case {
            name: "duplicate key",
            file: b"---\nkind: fact\nkind: log\n---\nbody",
            status: Broken,
            kind: Kind::Reference,
            version: 1,
            content: "body",
        },
        Case {
            name: "empty frontmatter",
            file: b"---\n---\nbody",
            status: Present,
            kind: Kind::Reference,
            version: 1,
            content: "body",
        },
        Case {
            name: "crlf lines, closing at end of file",
            file: b"---\r\nkind: log\r\nversion: 4\r\n---",
            status: Present,
            kind: Kind::Log,
            version: 4,
            content: "",
        },
        Case {
            name: "content with more dashes",
            file: b"---\nkind: draft\n---\n---\nstill content\n---\n",
            status: Present,
            kind: Kind::Draft,
            version: 1,
            content: "---\nstill content\n---\n",
        },
    ];
    for case in &cases {
        let parsed = parse(case.file);
        assert_eq!(parsed.frontmatter, case.status, "{}", case.name);
        assert_eq!(
            (parsed.entry.fields.kind, parsed.entry.version),
            (case.kind, case.version),
            "{}",
            case.name
        );
        assert_eq!(parsed.entry.content, case.content, "{}", case.name);
        assert!(!parsed.lossy_utf8, "{}", case.name);
        if case.status != Present {
            let e = &parsed.entry;
            assert_eq!((e.created_at, e.updated_at), (mtime(), mtime()), "{}", case.name);
            assert_eq!(e.fields, Fields::default(), "{}", case.name);
            assert!(e.extra.is_empty(), "{}", case.name);
        }
    }
}

#[test]
fn malformed_fields_fall_back_one_by_one_10_fields() {
    let file = b"---\n\
        id: shared:somewhere-else\n\
        kind: banana\n\
        version: banana\n\
        createdAt: yesterday\n\
        updatedAt: 2026-02-03T04:05:06+01:00\n\
        type: gossip\n\
        key: 2026\n\
        importance: extreme\n\
        source: [a, b]\n\
        scope: true\n\
        ttl: soon\n\
        ---\nbody";
    let parsed = parse(file);
    assert_eq!(parsed.frontmatter, FrontmatterStatus::Present);
    let e = parsed.entry;
    assert_eq!(e.id.as_str(), "shared:note", "the path wins over `id:`");
    assert_eq!((e.fields.kind, e.version, e.fields.importance), (Kind::Reference, 1, Importance::Medium));
    assert_eq!(e.created_at, mtime());
    assert_eq!(
        e.updated_at,
        Timestamp::parse("2026-02-03T03:05:06Z").unwrap(),
        "any offset is read as an instant"
    );
    assert_eq!((e.fields.memory_type, e.fields.ttl), (None, None));
    assert_eq!(
        (
            e.fields.key.as_ref().map(Key::as_str),
            e.fields.source.as_ref(),
            e.fields.scope.as_ref().map(ScopeRef::as_str)
        ),
        (Some("2026"), None, Some("true"))
    );
    assert!(e.extra.is_empty(), "known keys, even malformed, are not unknown keys; `id` is dropped");
    assert_eq!(e.content, "body");
    // Other bad versions.
    for bad in ["0", "-3", "1.5", "99999999999999999999999", "null"] {
        let text = format!("---\nversion: {bad}\n---\n");
        assert_eq!(parse(text.as_bytes()).entry.version, 1, "version: {bad}");
    }
    assert_eq!(parse(b"---\nversion: \"7\"\n---\n").entry.version, 7);
    assert_eq!(parse(b"---\nttl: 0s\n---\n").entry.fields.ttl, None);
    // A key, source or scope must be a valid one: a control character or more than 200 bytes falls back to none.
    let invalid = parse(
        format!("---\nkey: \"a\\u0001b\"\nsource: {}\nscope: \"two words\"\n---\n", "s".repeat(201))
            .as_bytes(),
    );
    assert_eq!(invalid.entry.fields, Fields::default());
}

#[test]
fn unknown_keys_are_kept_on_update_in_file_order() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path().join("shared")).unwrap();
    let path = dir.path().join("shared/note.md");
    std::fs::write(
        &path,
        "---\nzeta: 1\nkind: fact\nid: shared:elsewhere\nalpha:\n  nested: [1, 2]\nversion: 2\nlink: https://x.y/z\n---\nbody\n",
    )
    .unwrap();
    let before = store.get(&id("shared:note"), at(0)).unwrap();
    assert_eq!(before.extra.keys().collect::<Vec<_>>(), ["zeta", "alpha", "link"]);
    let patch = Patch::content_only("new body\n".to_owned());
    let after = store.update(&id("shared:note"), 2, &patch, at(1)).unwrap();
    assert_eq!(after.extra, before.extra);
    let text = std::fs::read_to_string(&path).unwrap();
    let tail = text.split_once("importance: medium\n").unwrap().1;
    // Unknown keys are written back in file order: strings as YAML strings, anything else in JSON notation (a YAML
    // flow collection that reads back as the same value).
    assert_eq!(tail, "zeta: 1\nalpha: {\"nested\":[1,2]}\nlink: \"https://x.y/z\"\n---\nnew body\n");
    assert!(!text.contains("id:"), "a frontmatter `id:` is dropped on update");
    assert_eq!(store.get(&id("shared:note"), at(2)).unwrap(), after);
}

#[test]
fn content_round_trips_byte_for_byte_on_disk() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    let contents =
        ["a\r\nb\r\n", "no newline at end", "---\n---\n", "---", "\r\n---\r\n", "", "\u{0}\u{7f}\u{85}"];
    for (n, content) in contents.iter().enumerate() {
        let target = id(&format!("shared:c{n}"));
        store.create(NewEntry::new(target.clone(), *content), at(0)).unwrap();
        let bytes = std::fs::read(dir.path().join(format!("shared/c{n}.md"))).unwrap();
        assert!(bytes.ends_with(format!("---\n{content}").as_bytes()), "content {n}: {bytes:?}");
        assert_eq!(store.get(&target, at(0)).unwrap().content, *content);
    }
}

#[test]
fn hand_written_note_without_frontmatter_is_readable_and_updatable() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path().join("private/worker")).unwrap();
    let path = dir.path().join("private/worker/todo.md");
    std::fs::write(&path, "- [ ] write tests\n").unwrap();
    let modified =
        Timestamp::from(time::OffsetDateTime::from(std::fs::metadata(&path).unwrap().modified().unwrap()))
            .truncated_to_millis();
    let entry = store.get(&id("private:worker:todo"), at(0)).unwrap();
    assert_eq!(
        (entry.fields.kind, entry.version, entry.content.as_str()),
        (Kind::Reference, 1, "- [ ] write tests\n")
    );
    assert_eq!((entry.created_at, entry.updated_at), (modified, modified));
    let updated = store.update(&id("private:worker:todo"), 1, &Patch::default(), at(1)).unwrap();
    assert_eq!(updated.version, 2);
    assert!(std::fs::read_to_string(&path).unwrap().starts_with("---\nkind: reference\nversion: 2\n"));
}

#[test]
fn invalid_utf8_is_read_lossily_and_only_replaced_by_an_update() {
    let dir = tempfile::tempdir().unwrap();
    let store = MarkdownStore::open(dir.path()).unwrap();
    std::fs::create_dir_all(dir.path().join("shared")).unwrap();
    let path = dir.path().join("shared/latin1.md");
    std::fs::write(&path, b"---\nkind: fact\n---\ncaf\xe9\n").unwrap();
    let parsed = parse(b"---\nkind: fact\n---\ncaf\xe9\n");
    assert!(parsed.lossy_utf8);
    let entry = store.get(&id("shared:latin1"), at(0)).unwrap();
    assert_eq!((entry.fields.kind, entry.content.as_str()), (Kind::Fact, "caf\u{fffd}\n"));
    // An update that keeps the content would rewrite bytes it could not read: refused, file untouched.
    let keep = Patch::new(None, vec![FieldValue::Importance(Importance::High)], vec![]).unwrap();
    match store.update(&id("shared:latin1"), 1, &keep, at(1)) {
        Err(StoreError::Storage(e)) => {
            assert_eq!(e.kind(), StorageErrorKind::Corrupt);
            assert!(e.to_string().contains("utf-8"), "{e}");
        }
        other => panic!("expected a storage error, got {other:?}"),
    }
    assert_eq!(std::fs::read(&path).unwrap(), b"---\nkind: fact\n---\ncaf\xe9\n");
    // Replacing the content is fine.
    let replace = Patch::content_only("café\n".to_owned());
    assert_eq!(store.update(&id("shared:latin1"), 1, &replace, at(1)).unwrap().content, "café\n");
    // Frontmatter that is not UTF-8 is broken frontmatter.
    assert_eq!(parse(b"---\nkind: f\xe9\n---\nx").frontmatter, FrontmatterStatus::Broken);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(500))]

    /// 500 entries with arbitrary key, source, scope and content (including `---` lines): written and read back
    /// identically.
    #[test]
    fn any_strings_round_trip_500_cases(
        key in prop::option::of(any::<String>()),
        source in prop::option::of(any::<String>()),
        scope in prop::option::of(any::<String>()),
        content in prop_oneof![any::<String>(), "(---|---\r|[a-z]{0,3}|)(\r?\n(---|[ a-z-]{0,4}))*"],
    ) {
        let mut entry = full_entry();
        entry.fields.key = key.and_then(|k| Key::parse(&k).ok());
        entry.fields.source = source.and_then(|s| Source::parse(&s).ok());
        entry.fields.scope = scope.and_then(|s| ScopeRef::parse(&s).ok());
        entry.content = content;
        let text = render_entry_file(&entry);
        let back = parse_entry_file(entry.id.clone(), text.as_bytes(), mtime());
        prop_assert_eq!(back.frontmatter, FrontmatterStatus::Present);
        prop_assert_eq!(back.entry, entry);
    }
}

/// Found by the `frontmatter_parse` fuzz target: a key that is not a string (here a tagged null) once made every
/// later update of the note fail. Frontmatter keys are strings: anything else makes the frontmatter broken, so the
/// note stays readable with every field at its fallback, and an update writes canonical frontmatter.
#[test]
fn a_key_that_is_not_a_string_makes_the_frontmatter_broken() {
    for text in
        [&b"---\nkind: fact\n!a : 1\nowner: ana\n---\nbody"[..], b"---\nkind: fact\n? [a]\n: 1\n---\nbody"]
    {
        let parsed = parse(text);
        assert_eq!(parsed.frontmatter, FrontmatterStatus::Broken);
        assert_eq!((parsed.entry.fields.kind, parsed.entry.content.as_str()), (Kind::Reference, "body"));
        let written = render_entry_file(&parsed.entry);
        assert_eq!(parse(written.as_bytes()).entry, parsed.entry);
    }
}

/// Found by the `frontmatter_parse` fuzz target: a hand-written timestamp finer than a millisecond read back
/// differently after an update wrote it. Timestamps are read to the millisecond, the precision they are written with.
#[test]
fn sub_millisecond_timestamps_read_as_written_back() {
    let parsed =
        parse(b"---\nupdatedAt: 2026-01-01T00:00:00.0001Z\ncreatedAt: 2026-01-01T00:00:00.9999+01:00\n---\n");
    assert_eq!(parsed.entry.updated_at.to_string(), "2026-01-01T00:00:00.000Z");
    assert_eq!(parsed.entry.created_at.unix_nanos() % 1_000_000, 0);
    let written = render_entry_file(&parsed.entry);
    assert_eq!(parse(written.as_bytes()).entry, parsed.entry);
}
