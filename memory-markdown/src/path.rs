//! From a parsed ID to a path under the memory root, and the seed's three path checks.

use std::path::{Component, Path, PathBuf};

use memory_entry::{StorageError, StorageErrorKind};
use memory_id::{MemoryId, Scope};

/// The message of the first check: the mapped path leaves the root.
pub(crate) const ESCAPES_ROOT: &str = "memory path escapes root";
/// The message of the second and third checks: a symbolic link was met.
pub(crate) const SYMLINK_ESCAPE: &str = "memory path symlink escape";

/// Maps a parsed [`MemoryId`] to its file under a memory root, and runs the seed's three path checks.
///
/// ```text
/// shared:<segments…>               <root>/shared/<segments…>.md
/// project:<projectId>:<segments…>  <root>/projects/<projectId>/<segments…>.md
/// private:<role>:<segments…>       <root>/private/<role>/<segments…>.md
/// ```
///
/// The mapping is injective (two distinct IDs never map to one path: segments hold no `/`, and only the last one
/// gets the `.md` suffix) and every mapped path lies under the root, component by component. Both are checked by a
/// property test and the `path_map` fuzz target.
///
/// [`map`](MemoryPathMapper::map) runs the seed's first check (the path is inside the root, comparing path
/// components, never string prefixes: `/data/mem-evil` is not inside `/data/mem`). The seed's other two checks
/// (the nearest existing parent, after `realpath`, is inside the root; the target is not a symlink) are not offered
/// as path checks: a check on a path races with anyone who swaps a directory for a symlink between the check and
/// the open. [`MarkdownStore`](crate::MarkdownStore) makes them part of every open instead: it resolves each path
/// from a held root handle, one component at a time, never following a symlink ("memory path symlink escape").
///
/// ```
/// use memory_id::parse_memory_id;
/// use memory_markdown::MemoryPathMapper;
/// use std::path::Path;
///
/// let mapper = MemoryPathMapper::new("/data/mem");
/// let id = parse_memory_id("project:alp:log:2026-09").unwrap();
/// assert_eq!(mapper.map(&id).unwrap(), Path::new("/data/mem/projects/alp/log/2026-09.md"));
/// assert_eq!(MemoryPathMapper::relative_path(&id), Path::new("projects/alp/log/2026-09.md"));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MemoryPathMapper {
    root: PathBuf,
}

impl MemoryPathMapper {
    /// A mapper for `root`, taken as given (not canonicalised).
    pub fn new(root: impl Into<PathBuf>) -> MemoryPathMapper {
        MemoryPathMapper { root: root.into() }
    }

    /// The root.
    pub fn root(&self) -> &Path {
        &self.root
    }

    /// The path of `id`'s file relative to the root (`shared/team/onboarding.md`).
    pub fn relative_path(id: &MemoryId) -> PathBuf {
        let (dirs, file) = entry_components(id);
        let mut path: PathBuf = dirs.into_iter().collect();
        path.push(file);
        path
    }

    /// The directory of a scope root relative to the root: `shared`, `projects/<projectId>`, `private/<role>`.
    pub fn scope_root_dir(id: &MemoryId) -> PathBuf {
        scope_dirs(id.scope(), id.owner()).into_iter().collect()
    }

    /// `id`'s path under the root, after the first check (the path is inside the root, component by component).
    /// Touches no file system.
    ///
    /// # Errors
    ///
    /// [`StorageError`] of kind [`StorageErrorKind::PathEscape`] ("memory path escapes root"). A valid ID never
    /// fails this check; it is kept as defence in depth.
    pub fn map(&self, id: &MemoryId) -> Result<PathBuf, StorageError> {
        let relative = MemoryPathMapper::relative_path(id);
        let path = self.root.join(&relative);
        let only_names = relative.components().all(|c| matches!(c, Component::Normal(_)));
        if !only_names || !path.starts_with(&self.root) || path == self.root {
            return Err(StorageError::new(
                StorageErrorKind::PathEscape,
                Some(id),
                format!("{ESCAPES_ROOT}: `{}`", relative.display()),
            ));
        }
        Ok(path)
    }
}

/// An I/O error as a lowercase phrase.
pub(crate) fn lower(error: &dyn std::fmt::Display) -> String {
    let text = error.to_string();
    let mut chars = text.chars();
    match chars.next() {
        Some(first) => first.to_lowercase().chain(chars).collect(),
        None => text,
    }
}

/// The directory components of a scope root.
pub(crate) fn scope_dirs(scope: Scope, owner: Option<&str>) -> Vec<&str> {
    match (scope, owner) {
        (Scope::Shared, _) => vec!["shared"],
        (Scope::Project, Some(owner)) => vec!["projects", owner],
        (Scope::Private, Some(owner)) => vec!["private", owner],
        (Scope::Project, None) => vec!["projects"],
        (Scope::Private, None) => vec!["private"],
    }
}

/// The directory components of `id`'s file (scope root first) and its file name.
pub(crate) fn entry_components(id: &MemoryId) -> (Vec<&str>, String) {
    let mut dirs = scope_dirs(id.scope(), id.owner());
    let segments: Vec<&str> = id.path_segments().collect();
    let (last, parents) = match segments.split_last() {
        Some((last, parents)) => (*last, parents),
        // `path_segments` is never empty for a parsed ID.
        None => ("", &[][..]),
    };
    dirs.extend_from_slice(parents);
    (dirs, format!("{last}.md"))
}

/// Where a file of an entry lives: the directories from the root (scope root first) and the file name. The entry
/// file itself ([`EntryPath::new`]), or one of its versions in history (`MarkdownStore::history_path`).
pub(crate) struct EntryPath<'a> {
    pub(crate) id: &'a MemoryId,
    pub(crate) dirs: Vec<&'a str>,
    pub(crate) file: String,
    pub(crate) scope_len: usize,
}

impl<'a> EntryPath<'a> {
    pub(crate) fn new(id: &'a MemoryId) -> EntryPath<'a> {
        let (dirs, file) = entry_components(id);
        let scope_len = if id.scope().has_owner() { 2 } else { 1 };
        EntryPath { id, dirs, file, scope_len }
    }

    pub(crate) fn dir_rel(&self) -> String {
        self.dirs.join("/")
    }

    pub(crate) fn rel(&self) -> String {
        format!("{}/{}", self.dir_rel(), self.file)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use memory_id::parse_memory_id;

    #[test]
    fn string_prefix_is_not_containment() {
        let mapper = MemoryPathMapper::new("/data/mem");
        let id = parse_memory_id("shared:x").unwrap();
        let path = mapper.map(&id).unwrap();
        assert!(path.starts_with("/data/mem"));
        assert!(!Path::new("/data/mem-evil/shared/x.md").starts_with("/data/mem"));
    }
}
