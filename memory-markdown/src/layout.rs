//! Where a memory root keeps what names a role's private memory, in one place: the runtime fences
//! (`alp adapter claude|codex`) deny an agent every one of these places of every other role, so a directory added to
//! the layout is fenced as soon as it is listed here.
//!
//! ```text
//! <root>/private/<role>/…              the role's entries (and the temporary files of writes to them)
//! <root>/history/private/<role>/…      every kept version and tombstone of them (a rename leaves one at the old ID)
//! <root>/audit.jsonl                   the audit log: every call's actor and ID, private ones included
//! <root>/tokens/                       bearer token records: role, name, the secret's hash
//! <root>/.locks/                       lock files named by a hash of an ID or a scope root
//! ```
//!
//! `config.yaml` names no ID and is not listed.

use std::path::PathBuf;

use memory_id::Scope;

use crate::history::HISTORY_DIR;
use crate::locks::LOCK_DIR;
use crate::path::scope_dirs;

/// The audit log of a root, `<root>/audit.jsonl`.
pub const AUDIT_FILE: &str = "audit.jsonl";

/// The directory of bearer token records, `<root>/tokens/<token id>.json`.
pub const TOKENS_DIR: &str = "tokens";

/// A place under a root, relative to it: a directory (everything below it) or one file.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[non_exhaustive]
pub enum Place {
    /// A directory and everything below it.
    Directory(PathBuf),
    /// Exactly one file.
    File(PathBuf),
}

impl Place {
    /// The path relative to the root.
    pub fn path(&self) -> &std::path::Path {
        match self {
            Place::Directory(path) | Place::File(path) => path,
        }
    }

    /// Whether it is a directory (everything below it).
    pub fn is_directory(&self) -> bool {
        matches!(self, Place::Directory(_))
    }

    /// Whether `relative` (a path relative to the root) is this place or lies below it.
    pub fn covers(&self, relative: &std::path::Path) -> bool {
        match self {
            Place::Directory(dir) => relative.starts_with(dir),
            Place::File(file) => relative == file,
        }
    }
}

/// Every place that holds the private memory of `role`, relative to the root: `private/<role>/` (its entries, and
/// the temporary files of writes to them) and `history/private/<role>/` (every kept version, tombstone and rename
/// tombstone of them). Every file the store writes for an ID `private:<role>:…` lies under one of them, but for the
/// lock files of [`places_of_every_role`].
///
/// ```
/// use memory_markdown::layout::{Place, private_places};
///
/// assert_eq!(
///     private_places("lead"),
///     [Place::Directory("private/lead".into()), Place::Directory("history/private/lead".into())]
/// );
/// ```
pub fn private_places(role: &str) -> [Place; 2] {
    let entries: PathBuf = scope_dirs(Scope::Private, Some(role)).iter().collect();
    let history = PathBuf::from(HISTORY_DIR).join(&entries);
    [Place::Directory(entries), Place::Directory(history)]
}

/// The parents of [`private_places`], one per place, in the same order: `private/` and `history/private/`. What is
/// below them and not the acting role's own belongs to other roles.
pub fn private_parents() -> [PathBuf; 2] {
    let entries: PathBuf = scope_dirs(Scope::Private, None).iter().collect();
    let history = PathBuf::from(HISTORY_DIR).join(&entries);
    [entries, history]
}

/// The places at the root that name IDs of every role, private ones included, whoever reads them: the audit log
/// ([`AUDIT_FILE`]: every call's ID), the token records ([`TOKENS_DIR`]: roles and names) and the lock directory
/// (lock files named by a hash of an ID or a scope root, against which a guessed ID could be checked). No agent
/// reads them; the operator's commands (`alp audit`, `alp token`) do.
pub fn places_of_every_role() -> [Place; 3] {
    [
        Place::File(PathBuf::from(AUDIT_FILE)),
        Place::Directory(PathBuf::from(TOKENS_DIR)),
        Place::Directory(PathBuf::from(LOCK_DIR)),
    ]
}

/// What an agent of a role must not read, given the `others` roles: [`private_places`] of each of them, then
/// [`places_of_every_role`].
pub fn fenced_places<'a>(others: impl IntoIterator<Item = &'a str>) -> Vec<Place> {
    let mut places: Vec<Place> = others.into_iter().flat_map(private_places).collect();
    places.extend(places_of_every_role());
    places
}

#[cfg(test)]
mod tests {
    #![allow(clippy::unwrap_used, reason = "tests fail loudly")]

    use std::path::{Path, PathBuf};

    use memory_entry::{NewEntry, Patch, Timestamp};
    use memory_id::parse_memory_id;
    use memory_store::MemoryStore;
    use proptest::prelude::*;

    use super::*;
    use crate::{MarkdownStore, MemoryPathMapper};

    fn covered(role: &str, relative: &Path) -> bool {
        fenced_places([role]).iter().any(|place| place.covers(relative))
    }

    proptest! {
        /// The entry file of any private ID of `role`, and its history directory, lie under `role`'s places.
        #[test]
        fn every_private_path_of_a_role_lies_in_its_places(
            role in "[a-z][a-z0-9_-]{0,12}",
            segments in proptest::collection::vec("[a-zA-Z0-9._-]{1,12}", 1..5),
        ) {
            let Ok(id) = parse_memory_id(&format!("private:{role}:{}", segments.join(":"))) else {
                return Ok(());
            };
            let entry = MemoryPathMapper::relative_path(&id);
            let history = Path::new(HISTORY_DIR).join(&entry);
            let [entries, kept] = private_places(&role);
            prop_assert!(entries.covers(&entry), "{}", entry.display());
            prop_assert!(kept.covers(&history.join("0000000000000001.md")), "{}", history.display());
            // And never under another role's: `lead` and `lead2` are different directories.
            let [other, other_kept] = private_places(&format!("{role}x"));
            prop_assert!(!other.covers(&entry) && !other_kept.covers(&history));
        }
    }

    fn files_under(root: &Path, dir: &Path, out: &mut Vec<PathBuf>) {
        for entry in std::fs::read_dir(dir).unwrap() {
            let entry = entry.unwrap();
            if entry.file_type().unwrap().is_dir() {
                files_under(root, &entry.path(), out);
            } else {
                out.push(entry.path().strip_prefix(root).unwrap().to_owned());
            }
        }
    }

    /// Every file the store writes while one role creates, updates, deletes and renames its private entries lies
    /// in that role's places or the places of every role; only `config.yaml`, which names no ID, is elsewhere.
    #[test]
    fn every_file_the_store_writes_for_a_private_id_is_in_a_fenced_place() {
        let dir = tempfile::tempdir().unwrap();
        let store = MarkdownStore::open(dir.path().join("memory")).unwrap();
        let now = Timestamp::parse("2026-11-29T12:00:00Z").unwrap();
        let id = |text: &str| parse_memory_id(text).unwrap();
        store.create(NewEntry::new(id("private:lead:plan"), "SECRET one"), now).unwrap();
        store.update(&id("private:lead:plan"), 1, &Patch::content_only("SECRET two"), now).unwrap();
        store.create(NewEntry::new(id("private:lead:a:gone"), "SECRET gone"), now).unwrap();
        store.delete(&id("private:lead:a:gone"), 1, now).unwrap();
        store.create(NewEntry::new(id("private:lead:old"), "SECRET moved"), now).unwrap();
        store.rename(&id("private:lead:old"), &id("private:lead:b:new"), 1, now).unwrap();

        let root = store.root().to_owned();
        let mut files = Vec::new();
        files_under(&root, &root, &mut files);
        assert!(files.iter().any(|f| f.starts_with("history/private/lead/old.md")), "{files:?}");
        for file in &files {
            if file == Path::new(crate::CONFIG_FILE) {
                continue;
            }
            assert!(covered("lead", file), "`{}` is in no fenced place", file.display());
        }
    }
}
