//! The paths of the `memory` tool and the logical IDs they name (`docs/CLI.md`): a pure function, no I/O.
//!
//! Anthropic's client-side memory tool (`memory_20250818`) names files under `/memories`. Here every path is read
//! as a logical ID, never as a file-system path:
//!
//! | path | names |
//! |---|---|
//! | `/memories/shared/a/b.md` | the entry `shared:a:b` |
//! | `/memories/projects/<p>/a.md` | the entry `project:<p>:a` |
//! | `/memories/private/<role>/a.md` | the entry `private:<role>:a` |
//! | `/memories`, `/memories/shared`, `/memories/projects/<p>/a` | a directory: everything, or the prefix `shared`, `project:<p>:a` |
//!
//! A path ending in `.md` is a file; any other path is a directory, and a trailing `/` also makes a directory
//! (`/memories/shared/x.md/` is the prefix `shared:x.md`). Every segment after `/memories` must be a valid ID segment
//! (non-empty, not `.` or `..`, no `\`, no control character, at most 200 bytes) and may not hold `%` (paths are
//! never percent-decoded, so `%2e%2e` is refused, not read as `..`) or `:` (which would split an ID segment in
//! two). The first segment is the scope directory, `shared`, `projects` or `private`; the ID (or prefix) built from
//! the rest must then parse, so its length, segment count and part count are the rules of `memory_id`.
//!
//! Properties (checked by the fuzz target `memory_path` and its replay test): a path that is accepted starts with
//! `/memories`, and maps to an ID (or prefix) whose rendering is the same path — or the same path without its final
//! `/` where that slash was not needed; nothing outside `/memories` is accepted.
//!
//! ```
//! use memory_mcp::path::{MemoryPath, parse_memory_path};
//!
//! let MemoryPath::File(id) = parse_memory_path("/memories/projects/alp/log/2026-11.md").unwrap() else { panic!() };
//! assert_eq!(id.as_str(), "project:alp:log:2026-11");
//! assert_eq!(memory_mcp::path::file_path(&id).as_deref(), Some("/memories/projects/alp/log/2026-11.md"));
//!
//! let refused = parse_memory_path("/memories/shared/%2e%2e/secret.md").unwrap_err();
//! assert_eq!(refused.problem().code(), "percent_sign");
//! assert_eq!(parse_memory_path("/etc/passwd").unwrap_err().problem().code(), "outside_memories");
//! ```
//!
//! An ID with a segment holding `%` is valid but has no path here ([`file_path`] is `None`); the other tools reach
//! it by ID.

use std::fmt;

use memory_id::{
    InvalidIdReason, MemoryId, MemoryPrefix, Scope, SegmentProblem, parse_memory_id, shown, validate_segment,
};

/// The directory every path of the `memory` tool lies in.
pub const MEMORIES: &str = "/memories";

/// The suffix of a file path.
pub const FILE_SUFFIX: &str = ".md";

/// What a path of the `memory` tool names.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum MemoryPath {
    /// A file (`….md`): one entry.
    File(MemoryId),
    /// A directory: `/memories` itself (`None`), or the subtree of a prefix.
    Directory(Option<MemoryPrefix>),
}

impl MemoryPath {
    /// The canonical path: [`file_path`] or [`directory_path`]. `None` only for an ID or prefix holding `%`, which
    /// [`parse_memory_path`] never returns.
    pub fn to_path(&self) -> Option<String> {
        match self {
            MemoryPath::File(id) => file_path(id),
            MemoryPath::Directory(prefix) => directory_path(prefix.as_ref()),
        }
    }
}

/// Why a path does not name an entry or a directory: one machine-readable problem, the first found.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum PathProblem {
    /// The path is not `/memories` or below it.
    OutsideMemories,
    /// A segment breaks the ID segment rules (empty, `.` or `..`, `\`, a control character, too long).
    Segment {
        /// The 1-based position after `/memories` (the scope directory is segment 1).
        index: usize,
        /// What is wrong with it.
        problem: SegmentProblem,
    },
    /// A segment holds `%`: paths are never percent-decoded.
    PercentSign {
        /// The 1-based position after `/memories`.
        index: usize,
    },
    /// A segment holds `:`, which would split an ID segment.
    Colon {
        /// The 1-based position after `/memories`.
        index: usize,
    },
    /// The first segment is not `shared`, `projects` or `private`.
    UnknownScope,
    /// The segments are fine but the ID (or prefix) they build is not: too long, too many segments, or a file with
    /// too few parts for its scope (`/memories/projects/alp.md`).
    Id(InvalidIdReason),
}

impl PathProblem {
    /// The stable machine-readable reason: `outside_memories`, `percent_sign`, `colon`, `unknown_scope`, or one of
    /// the ID reasons (`empty`, `dot_segment`, `separator`, `control_char`, `segment_too_long`, `too_long`,
    /// `too_many_segments`, `too_few_parts`).
    pub fn code(&self) -> &'static str {
        match self {
            PathProblem::OutsideMemories => "outside_memories",
            PathProblem::Segment { problem, .. } => problem.code(),
            PathProblem::PercentSign { .. } => "percent_sign",
            PathProblem::Colon { .. } => "colon",
            PathProblem::UnknownScope => "unknown_scope",
            PathProblem::Id(reason) => reason.code(),
        }
    }
}

/// A path that names no entry or directory, with the path as given and the first problem found.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct InvalidMemoryPath {
    path: String,
    problem: PathProblem,
}

impl InvalidMemoryPath {
    /// The path exactly as given.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Why it was refused.
    pub fn problem(&self) -> PathProblem {
        self.problem
    }

    fn detail(&self) -> String {
        let segment = |index: usize| {
            let segments = split(&self.path).map(|(segments, _)| segments).unwrap_or_default();
            segments.get(index - 1).copied().unwrap_or_default().to_owned()
        };
        match self.problem {
            PathProblem::OutsideMemories => "it does not lie under /memories".to_owned(),
            PathProblem::Segment { index, problem } => {
                let what = match problem {
                    SegmentProblem::Empty => "empty".to_owned(),
                    SegmentProblem::DotSegment => "a dot segment (paths are never resolved)".to_owned(),
                    SegmentProblem::Separator => "holding `\\`".to_owned(),
                    SegmentProblem::ControlChar => "holding a control character".to_owned(),
                    SegmentProblem::TooLong => "longer than 200 bytes".to_owned(),
                    _ => problem.code().to_owned(),
                };
                format!("segment {index} is `{}`, {what}", shown(&segment(index)))
            }
            PathProblem::PercentSign { index } => format!(
                "segment {index} is `{}`, holding `%` (paths are never percent-decoded)",
                shown(&segment(index))
            ),
            PathProblem::Colon { index } => {
                format!("segment {index} is `{}`, holding `:`", shown(&segment(index)))
            }
            PathProblem::UnknownScope => format!(
                "`{}` is not a scope directory (expected `shared`, `projects` or `private`)",
                shown(&segment(1))
            ),
            PathProblem::Id(InvalidIdReason::TooFewParts { .. }) => {
                "a file directly in a project's or role's directory names no entry".to_owned()
            }
            PathProblem::Id(reason) => format!("the id it names is invalid ({})", reason.code()),
        }
    }
}

impl fmt::Display for InvalidMemoryPath {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "invalid memory path `{}`: {}; paths look like /memories/shared/<name>.md, \
             /memories/projects/<project>/<name>.md or /memories/private/<role>/<name>.md",
            shown(&self.path),
            self.detail()
        )
    }
}

impl std::error::Error for InvalidMemoryPath {}

/// Reads a path of the `memory` tool as the entry or directory it names.
///
/// # Errors
///
/// [`InvalidMemoryPath`] with the first problem found, in this order: outside `/memories`; then segment by segment
/// from the left, the ID segment rules, `%`, `:`; then the scope directory; then the ID (or prefix) rules.
pub fn parse_memory_path(path: &str) -> Result<MemoryPath, InvalidMemoryPath> {
    let fail = |problem| Err(InvalidMemoryPath { path: path.to_owned(), problem });
    let (segments, file) = match split(path) {
        Some((segments, _)) if segments.is_empty() => return Ok(MemoryPath::Directory(None)),
        Some(layout) => layout,
        None => return fail(PathProblem::OutsideMemories),
    };
    for (offset, segment) in segments.iter().enumerate() {
        let index = offset + 1;
        if let Err(problem) = validate_segment(segment) {
            return fail(PathProblem::Segment { index, problem });
        }
        if segment.contains('%') {
            return fail(PathProblem::PercentSign { index });
        }
        if segment.contains(':') {
            return fail(PathProblem::Colon { index });
        }
    }
    let (scope, below) = match segments.split_first() {
        Some((first, below)) => (*first, below),
        None => return fail(PathProblem::UnknownScope),
    };
    let keyword = match scope {
        "shared" => Scope::Shared,
        "projects" => Scope::Project,
        "private" => Scope::Private,
        _ => return fail(PathProblem::UnknownScope),
    }
    .keyword();
    let mut text = String::with_capacity(path.len());
    text.push_str(keyword);
    for segment in below {
        text.push(':');
        text.push_str(segment);
    }
    if file {
        parse_memory_id(&text).map(MemoryPath::File).or_else(|e| fail(PathProblem::Id(e.reason())))
    } else {
        MemoryPrefix::parse(&text)
            .map(|prefix| MemoryPath::Directory(Some(prefix)))
            .or_else(|e| fail(PathProblem::Id(e.reason())))
    }
}

/// The segments after `/memories` (none for `/memories` itself) and whether the path names a file: a trailing `/`
/// makes a directory, otherwise `.md` makes a file (and is not part of the last segment). `None` outside
/// `/memories`.
fn split(path: &str) -> Option<(Vec<&str>, bool)> {
    let after = path.strip_prefix(MEMORIES)?;
    if after.is_empty() || after == "/" {
        return Some((Vec::new(), false));
    }
    let rest = after.strip_prefix('/')?;
    let (rest, file) = match rest.strip_suffix('/') {
        Some(directory) => (directory, false),
        None => match rest.strip_suffix(FILE_SUFFIX) {
            Some(stem) => (stem, true),
            None => (rest, false),
        },
    };
    Some((rest.split('/').collect(), file))
}

/// The path of an entry: `/memories/<scope directory>/<segments…>.md`. `None` when a segment holds `%`: such an
/// ID is valid, but the `memory` tool cannot name it.
///
/// ```
/// use memory_mcp::path::file_path;
/// use memory_id::parse_memory_id;
/// let id = parse_memory_id("private:worker:drafts:plan").unwrap();
/// assert_eq!(file_path(&id).as_deref(), Some("/memories/private/worker/drafts/plan.md"));
/// ```
pub fn file_path(id: &MemoryId) -> Option<String> {
    let mut path = segments_path(id.scope(), id.segments().skip(1))?;
    path.push_str(FILE_SUFFIX);
    Some(path)
}

/// The path of a directory: `/memories` for `None`, else `/memories/<scope directory>/<segments…>`, with a final `/`
/// when the last segment ends in `.md` (so that it reads back as a directory). `None` when a segment holds `%`.
pub fn directory_path(prefix: Option<&MemoryPrefix>) -> Option<String> {
    let Some(prefix) = prefix else {
        return Some(MEMORIES.to_owned());
    };
    let mut path = segments_path(prefix.scope(), prefix.segments().skip(1))?;
    if path.ends_with(FILE_SUFFIX) {
        path.push('/');
    }
    Some(path)
}

/// The directory name of a scope under `/memories`.
pub fn scope_directory(scope: Scope) -> &'static str {
    match scope {
        Scope::Shared => "shared",
        Scope::Project => "projects",
        Scope::Private => "private",
    }
}

fn segments_path<'a>(scope: Scope, segments: impl Iterator<Item = &'a str>) -> Option<String> {
    let mut path = format!("{MEMORIES}/{}", scope_directory(scope));
    for segment in segments {
        if segment.contains('%') {
            return None;
        }
        path.push('/');
        path.push_str(segment);
    }
    Some(path)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn file(path: &str) -> String {
        match parse_memory_path(path) {
            Ok(MemoryPath::File(id)) => id.as_str().to_owned(),
            other => panic!("{path}: {other:?}"),
        }
    }

    fn directory(path: &str) -> Option<String> {
        match parse_memory_path(path) {
            Ok(MemoryPath::Directory(prefix)) => prefix.map(|p| p.as_str().to_owned()),
            other => panic!("{path}: {other:?}"),
        }
    }

    fn refused(path: &str) -> &'static str {
        match parse_memory_path(path) {
            Err(e) => e.problem().code(),
            Ok(other) => panic!("{path} was accepted as {other:?}"),
        }
    }

    #[test]
    fn files_and_directories_both_ways() {
        for (path, id) in [
            ("/memories/shared/a.md", "shared:a"),
            ("/memories/shared/a/b.md", "shared:a:b"),
            ("/memories/projects/alp/goals.md", "project:alp:goals"),
            ("/memories/projects/alp/log/2026-11.md", "project:alp:log:2026-11"),
            ("/memories/private/worker/drafts.md", "private:worker:drafts"),
            ("/memories/shared/x.md.md", "shared:x.md"),
            ("/memories/shared/.hidden.md", "shared:.hidden"),
            ("/memories/shared/with space.md", "shared:with space"),
            ("/memories/shared/ünïcode.md", "shared:ünïcode"),
        ] {
            assert_eq!(file(path), id, "{path}");
            let parsed = parse_memory_id(id).unwrap();
            assert_eq!(file_path(&parsed).as_deref(), Some(path), "{id}");
        }
        for (path, prefix) in [
            ("/memories", None),
            ("/memories/shared", Some("shared")),
            ("/memories/projects", Some("project")),
            ("/memories/projects/alp", Some("project:alp")),
            ("/memories/private/worker", Some("private:worker")),
            ("/memories/shared/team", Some("shared:team")),
            ("/memories/shared/x.md/", Some("shared:x.md")),
        ] {
            assert_eq!(directory(path).as_deref(), prefix, "{path}");
            let parsed = prefix.map(|p| MemoryPrefix::parse(p).unwrap());
            assert_eq!(directory_path(parsed.as_ref()).as_deref(), Some(path), "{prefix:?}");
        }
        // A trailing slash where none is needed is accepted and dropped.
        assert_eq!(directory("/memories/"), None);
        assert_eq!(directory("/memories/shared/"), Some("shared".to_owned()));
        assert_eq!(directory("/memories/shared/notes.txt"), Some("shared:notes.txt".to_owned()));
    }

    #[test]
    fn refused_paths() {
        for (path, code) in [
            ("/etc/passwd", "outside_memories"),
            ("memories/shared/a.md", "outside_memories"),
            ("/memoriesx/shared/a.md", "outside_memories"),
            ("/Memories/shared/a.md", "outside_memories"),
            ("", "outside_memories"),
            ("/memories/../etc/passwd", "dot_segment"),
            ("/memories/shared/../private/main/a.md", "dot_segment"),
            ("/memories/shared/./a.md", "dot_segment"),
            ("/memories/shared/...md", "dot_segment"),
            ("/memories/shared/%2e%2e/a.md", "percent_sign"),
            ("/memories/shared/a%2fb.md", "percent_sign"),
            ("/memories//shared/a.md", "empty"),
            ("/memories/shared//a.md", "empty"),
            ("/memories/shared/a.md//", "empty"),
            ("/memories/shared/.md", "empty"),
            ("/memories/shared/a\\b.md", "separator"),
            ("/memories/shared/a\nb.md", "control_char"),
            ("/memories/shared/a:b.md", "colon"),
            ("/memories/project/alp/a.md", "unknown_scope"),
            ("/memories/notes.md", "unknown_scope"),
            ("/memories/shared.md", "too_few_parts"),
            ("/memories/projects/alp.md", "too_few_parts"),
            ("/memories/private/worker.md", "too_few_parts"),
        ] {
            assert_eq!(refused(path), code, "{path}");
        }
        let long = format!("/memories/shared/{}.md", "a".repeat(201));
        assert_eq!(refused(&long), "segment_too_long");
        let deep = format!("/memories/shared/{}a.md", "a/".repeat(70));
        assert_eq!(refused(&deep), "too_many_segments");
    }

    #[test]
    fn an_id_holding_a_percent_sign_has_no_path() {
        let id = parse_memory_id("shared:100%").unwrap();
        assert_eq!(file_path(&id), None);
    }

    #[test]
    fn messages_name_the_path_and_the_layout() {
        let error = parse_memory_path("/memories/shared/../x.md").unwrap_err();
        assert_eq!(
            error.to_string(),
            "invalid memory path `/memories/shared/../x.md`: segment 2 is `..`, a dot segment (paths are never \
             resolved); paths look like /memories/shared/<name>.md, /memories/projects/<project>/<name>.md or \
             /memories/private/<role>/<name>.md"
        );
    }
}
