//! `path_map`: where `MemoryPathMapper` puts an ID (`docs/STORAGE.md`). Touches no file system.
//!
//! Input: UTF-8 text `<id>\n<id>`; the second ID is the rest of the text (one that holds a newline is refused by
//! the parser). Each part that parses as an ID is mapped under the fixed root `/fuzz-root`.
//!
//! Properties:
//! - `map` never refuses a valid ID, and the path lies under the root: after the root come only normal components
//!   (no `..`, no `.`, no root or prefix component), at least two of them, and `relative_path` is exactly that rest;
//! - the layout is the documented one: `shared/…`, `projects/<projectId>/…` or `private/<role>/…`, one directory
//!   per segment, the last segment plus `.md` as the file name, under `scope_root_dir`;
//! - the mapping is invertible (reading the path back gives the ID), so it is injective; and two distinct IDs in
//!   one input map to two distinct paths.

use std::path::{Component, Path, PathBuf};

use memory_id::{MemoryId, Scope, parse_memory_id};
use memory_markdown::MemoryPathMapper;

/// The root the IDs are mapped under. It need not exist: `map` does not touch the file system.
pub const ROOT: &str = "/fuzz-root";

/// Checks the properties on `data`; inputs that are not UTF-8 are skipped.
pub fn check(data: &[u8]) {
    if let Ok(text) = std::str::from_utf8(data) {
        let (first, second) = text.split_once('\n').unwrap_or((text, ""));
        check_pair(first, second);
    }
}

/// Checks the properties on two ID texts.
pub fn check_pair(first: &str, second: &str) {
    let mapper = MemoryPathMapper::new(ROOT);
    let a = parse_memory_id(first).ok().map(|id| (check_one(&mapper, &id), id));
    let b = parse_memory_id(second).ok().map(|id| (check_one(&mapper, &id), id));
    if let (Some((path_a, a)), Some((path_b, b))) = (a, b) {
        assert_eq!(
            a == b,
            path_a == path_b,
            "{a} and {b} map to {} and {}",
            path_a.display(),
            path_b.display()
        );
    }
}

fn check_one(mapper: &MemoryPathMapper, id: &MemoryId) -> PathBuf {
    let path = match mapper.map(id) {
        Ok(path) => path,
        Err(e) => panic!("the valid ID {id} is refused by the mapper: {e}"),
    };
    assert!(path.starts_with(ROOT), "{id} maps outside the root: {}", path.display());
    let Ok(relative) = path.strip_prefix(ROOT) else {
        panic!("{id}: {} is not below the root", path.display())
    };
    assert_eq!(relative, MemoryPathMapper::relative_path(id), "{id}: map and relative_path disagree");
    let mut names = Vec::new();
    for component in relative.components() {
        match component {
            Component::Normal(name) => match name.to_str() {
                Some(name) => names.push(name),
                None => panic!("{id}: a component of {} is not UTF-8", relative.display()),
            },
            other => panic!("{id} maps to {} with the component {other:?}", path.display()),
        }
    }
    assert!(names.len() >= 2, "{id}: {} is the root or a scope directory", relative.display());
    assert_eq!(
        unmap(&names).as_deref(),
        Some(id.as_str()),
        "{id}: {} does not read back",
        relative.display()
    );
    assert!(
        relative.starts_with(MemoryPathMapper::scope_root_dir(id)),
        "{id}: outside its scope root directory"
    );
    let scope_dir: &Path = match id.scope() {
        Scope::Shared => Path::new("shared"),
        Scope::Project => Path::new("projects"),
        Scope::Private => Path::new("private"),
    };
    assert!(relative.starts_with(scope_dir));
    path
}

/// The ID a relative path names, reading the documented layout backwards; `None` when it is not that layout.
fn unmap(names: &[&str]) -> Option<String> {
    let (scope_root, rest) = match names {
        ["shared", rest @ ..] => ("shared".to_owned(), rest),
        ["projects", project, rest @ ..] => (format!("project:{project}"), rest),
        ["private", role, rest @ ..] => (format!("private:{role}"), rest),
        _ => return None,
    };
    let (file, dirs) = rest.split_last()?;
    let last = file.strip_suffix(".md")?;
    let mut id = scope_root;
    for segment in dirs.iter().copied().chain([last]) {
        id.push(':');
        id.push_str(segment);
    }
    Some(id)
}
