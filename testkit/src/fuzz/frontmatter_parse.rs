//! `frontmatter_parse`: any bytes as an entry file (`docs/STORAGE.md`, `memory_markdown::parse_entry_file`).
//!
//! Properties:
//! - reading never fails and never panics, whatever the bytes;
//! - the entry keeps the ID it was given (a frontmatter `id:` is ignored);
//! - the content is a suffix of the file when it is valid UTF-8 (the frontmatter is cut off, nothing else is
//!   changed), and the whole file when the frontmatter is missing;
//! - the entry read is written back and that text reads back as an equal entry, with present frontmatter and no
//!   lossy content, whatever the file's mtime (unknown keys are kept only when they read back the same);
//! - writing is canonical: writing the entry read back gives the same text again.

use memory_entry::{MemoryEntry, Timestamp};
use memory_id::{MemoryId, parse_memory_id};
use memory_markdown::{FrontmatterStatus, parse_entry_file, render_entry_file};

/// The ID every input is read as.
pub const ID: &str = "shared:fuzz:entry";
/// The mtime of the first read; the second read uses another, so a timestamp that was not written shows.
pub const MTIME: &str = "2026-01-02T03:04:05.006Z";
const OTHER_MTIME: &str = "1999-12-31T23:59:59.999Z";

/// Checks the properties on `data`.
pub fn check(data: &[u8]) {
    let (Ok(id), Ok(mtime), Ok(other_mtime)) =
        (parse_memory_id(ID), Timestamp::parse(MTIME), Timestamp::parse(OTHER_MTIME))
    else {
        panic!("the fixed ID and timestamps are valid")
    };
    check_with(&id, data, mtime, other_mtime);
}

fn check_with(id: &MemoryId, data: &[u8], mtime: Timestamp, other_mtime: Timestamp) {
    let parsed = parse_entry_file(id.clone(), data, mtime);
    let entry = &parsed.entry;
    assert_eq!(&entry.id, id, "the path decides the ID");
    if std::str::from_utf8(data).is_ok() {
        assert!(!parsed.lossy_utf8, "a UTF-8 file read as lossy");
    }
    if parsed.lossy_utf8 {
        assert!(entry.content.contains('\u{FFFD}'), "lossy content without a replacement character");
    }
    if !parsed.lossy_utf8 {
        assert!(data.ends_with(entry.content.as_bytes()), "the content is not a suffix of the file");
        if parsed.frontmatter == FrontmatterStatus::Missing {
            assert_eq!(entry.content.as_bytes(), data, "without frontmatter the whole file is content");
        }
    }

    let written = render_entry_file(entry);
    let again = parse_entry_file(id.clone(), written.as_bytes(), other_mtime);
    assert_eq!(
        again.frontmatter,
        FrontmatterStatus::Present,
        "written frontmatter reads back as present:\n{written}"
    );
    assert!(!again.lossy_utf8);
    // Timestamps first, in nanoseconds: their `Debug` shows milliseconds, which would hide the difference.
    let nanos = |e: &MemoryEntry| (e.created_at.unix_nanos(), e.updated_at.unix_nanos());
    assert_eq!(
        nanos(&again.entry),
        nanos(entry),
        "written and read back, a timestamp changed; written:\n{written}"
    );
    assert_eq!(&again.entry, entry, "written and read back, the entry changed; written:\n{written}");
    assert_eq!(render_entry_file(&again.entry), written, "writing is not canonical");
}
