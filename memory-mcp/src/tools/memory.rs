//! The `memory` tool: the command set of Anthropic's client-side memory tool (`memory_20250818`: view, create,
//! str_replace, insert, delete, rename) over governed IDs, answering with the texts of the reference handlers
//! (the Python SDK's `BetaLocalFilesystemMemoryTool`), so a model trained on that tool works unchanged.
//!
//! Every command goes through the service's doors: `view` of a file is a `get`, of a directory a `list` (one
//! `search` record); `create` a `create`; `str_replace` and `insert` a `get` and an update at the version read
//! (a concurrent change is a `VERSION_CONFLICT`, never a lost update); `delete` a `get` and a `delete` at that
//! version; `rename` a `get` and the service's `rename` (a `create` and a `delete` record). So str_replace, insert,
//! delete and rename need read access to the file as well as write access. A path that names no entry is refused
//! before any door (see [`crate::path`]) and audited like an invalid ID under the door the command would have used.
//!
//! Departures from the reference handlers, all forced by governed memory: files are entries and directories are
//! ID prefixes, so `create`, `str_replace`, `insert`, `delete` and `rename` take file paths (`….md`) only (the
//! reference also deletes and renames directories); a directory exists while it holds an entry the role may read;
//! sizes in a listing are the bytes of the entries' content (a directory: of everything below it), not file-system
//! sizes; and entries with no path (an ID segment holding `%`) are not listed.

use alp_memory::memory_audit::{AuditOperation, AuditSink, Door};
use alp_memory::memory_entry::{ExistsReason, MemoryEntry};
use alp_memory::memory_id::{MemoryId, MemoryPrefix};
use alp_memory::memory_policy::PolicyEngine;
use alp_memory::memory_store::{Cancel, MemoryStore};
use alp_memory::{
    ActorSource, CreateRequest, FieldInput, ListRequest, MAX_ANSWER_ENTRIES, MemoryError, MemoryService,
    UpdateRequest,
};
use rmcp::model::{CallToolResult, ContentBlock};
use serde_json::{Map, Value};

use super::args::Args;
use super::catalogue::MEMORY;
use super::error_result;
use crate::path::{FILE_SUFFIX, MEMORIES, MemoryPath, directory_path, file_path, parse_memory_path};

/// The most lines a file may have to be viewed (the reference handlers' limit).
const MAX_LINES: usize = 999_999;

/// A failed command: the service's error, and for the errors the reference handlers word themselves (a missing
/// path, an existing destination), their text as the message.
struct Failure {
    error: MemoryError,
    message: Option<String>,
}

impl From<MemoryError> for Failure {
    fn from(error: MemoryError) -> Failure {
        Failure { error, message: None }
    }
}

fn usage(message: String) -> Failure {
    Failure::from(MemoryError::Usage(message))
}

/// The path does not exist: the reference text, with the code of the service (`NOT_FOUND`).
fn missing(path: &str, wording: Wording) -> impl FnOnce(MemoryError) -> Failure + '_ {
    move |error| match error {
        MemoryError::NotFound { expired: false, .. } => {
            let message = match wording {
                Wording::PleaseValid => {
                    format!("The path {path} does not exist. Please provide a valid path.")
                }
                Wording::Plain => format!("The path {path} does not exist"),
            };
            Failure { error, message: Some(message) }
        }
        other => Failure::from(other),
    }
}

/// The two wordings the reference handlers use for a missing path.
#[derive(Clone, Copy)]
enum Wording {
    /// view, str_replace, insert.
    PleaseValid,
    /// delete, rename.
    Plain,
}

/// Runs one call of the `memory` tool; a directory's listing stops at the store's next file or row once `cancel`
/// is raised.
pub(super) fn call<S, A, P, R>(
    service: &MemoryService<S, A, P, R>,
    role: &str,
    arguments: Option<Map<String, Value>>,
    cancel: &Cancel,
) -> CallToolResult
where
    S: MemoryStore,
    A: AuditSink,
    P: PolicyEngine,
    R: ActorSource,
{
    let tool = Tool { service, role, cancel };
    match tool.run(arguments) {
        Ok(text) => CallToolResult::success(vec![ContentBlock::text(text)]),
        Err(Failure { error, message }) => error_result(&error, message),
    }
}

struct Tool<'a, S, A, P, R> {
    service: &'a MemoryService<S, A, P, R>,
    role: &'a str,
    cancel: &'a Cancel,
}

impl<S: MemoryStore, A: AuditSink, P: PolicyEngine, R: ActorSource> Tool<'_, S, A, P, R> {
    fn run(&self, arguments: Option<Map<String, Value>>) -> Result<String, Failure> {
        let mut args = Args::new(MEMORY, arguments);
        let command = args.string("command")?;
        match command.as_str() {
            "view" => {
                let path = args.string("path")?;
                let range = args.optional_range("view_range")?;
                args.finish()?;
                self.view(&path, range)
            }
            "create" => {
                let path = args.string("path")?;
                let text = args.string("file_text")?;
                args.finish()?;
                self.create(&path, text)
            }
            "str_replace" => {
                let path = args.string("path")?;
                let old = args.string("old_str")?;
                let new = args.string("new_str")?;
                args.finish()?;
                self.str_replace(&path, &old, &new)
            }
            "insert" => {
                let path = args.string("path")?;
                let line = args.integer("insert_line")?;
                let text = args.string("insert_text")?;
                args.finish()?;
                self.insert(&path, line, &text)
            }
            "delete" => {
                let path = args.string("path")?;
                args.finish()?;
                self.delete(&path)
            }
            "rename" => {
                let old_path = args.string("old_path")?;
                let new_path = args.string("new_path")?;
                args.finish()?;
                self.rename(&old_path, &new_path)
            }
            other => Err(usage(format!(
                "memory: unknown command `{}`; the commands are view, create, str_replace, insert, delete and rename",
                alp_memory::memory_id::shown(other)
            ))),
        }
    }

    /// What `path` names; a path that names nothing is refused and audited under `door`, and nothing is read.
    fn resolve(&self, path: &str, (door, operation): (Door, AuditOperation)) -> Result<MemoryPath, Failure> {
        parse_memory_path(path).map_err(|invalid| {
            Failure::from(self.service.refuse_path(
                self.role,
                door,
                operation,
                path,
                invalid.problem().code(),
                invalid.to_string(),
            ))
        })
    }

    /// The entry a file path names; a path without `.md` is the tool's own error (`USAGE`, no record), worded for
    /// a model that tried a `.txt` file or a directory: memory files end in `.md`.
    fn file(&self, path: &str, door: (Door, AuditOperation)) -> Result<MemoryId, Failure> {
        match self.resolve(path, door)? {
            MemoryPath::File(id) => Ok(id),
            MemoryPath::Directory(_) => {
                Err(usage(format!("memory files end in {FILE_SUFFIX}: `{path}` is not one")))
            }
        }
    }

    fn get(&self, id: &MemoryId, path: &str, wording: Wording) -> Result<MemoryEntry, Failure> {
        self.service.get(self.role, id.as_str()).map_err(missing(path, wording))
    }

    /// An update of the content only, at the version read.
    fn write(&self, entry: &MemoryEntry, content: String, path: &str) -> Result<(), Failure> {
        let request = UpdateRequest {
            id: entry.id.as_str().to_owned(),
            expected_version: entry.version,
            content: Some(content),
            fields: FieldInput::new(),
            clear: Vec::new(),
        };
        self.service.update(self.role, request).map(|_| ()).map_err(|error| match error {
            // The tool takes no version: the way out is to read the file again.
            MemoryError::VersionConflict { .. } => Failure {
                error,
                message: Some(format!(
                    "The file {path} was changed by someone else since it was read; view it again and retry"
                )),
            },
            other => missing(path, Wording::PleaseValid)(other),
        })
    }

    fn view(&self, path: &str, range: Option<(i64, i64)>) -> Result<String, Failure> {
        let operation =
            if path.ends_with(FILE_SUFFIX) { AuditOperation::Get } else { AuditOperation::Search };
        match self.resolve(path, (Door::View, operation))? {
            MemoryPath::File(id) => {
                let entry = self
                    .service
                    .get_through(self.role, Door::View, id.as_str())
                    .map_err(missing(path, Wording::PleaseValid))?;
                view_file(path, &entry.content, range)
            }
            MemoryPath::Directory(prefix) => {
                let request = ListRequest {
                    prefix: prefix.as_ref().map(|prefix| prefix.as_str().to_owned()),
                    cancel: self.cancel.clone(),
                    ..ListRequest::default()
                };
                let page = self.service.list_through(self.role, Door::View, &request)?;
                let mut view = view_directory(path, prefix.as_ref(), &page.entries)?;
                if page.more {
                    // One answer holds at most MAX_ANSWER_ENTRIES entries: say that the view stops there.
                    view.push_str(&format!(
                        "\n(only the first {MAX_ANSWER_ENTRIES} entries by name are shown; view a subdirectory for the rest)"
                    ));
                }
                Ok(view)
            }
        }
    }

    fn create(&self, path: &str, text: String) -> Result<String, Failure> {
        let id = self.file(path, (Door::Create, AuditOperation::Create))?;
        let request = CreateRequest { id: id.as_str().to_owned(), content: text, fields: FieldInput::new() };
        self.service.create(self.role, request).map_err(|error| match error {
            MemoryError::AlreadyExists { reason: ExistsReason::SameId, .. } => {
                Failure { error, message: Some(format!("File {path} already exists")) }
            }
            other => Failure::from(other),
        })?;
        Ok(format!("File created successfully at: {path}"))
    }

    fn str_replace(&self, path: &str, old: &str, new: &str) -> Result<String, Failure> {
        let id = self.file(path, (Door::Update, AuditOperation::Update))?;
        let entry = self.get(&id, path, Wording::PleaseValid)?;
        let content = &entry.content;
        let count = content.matches(old).count();
        if count == 0 {
            return Err(usage(format!(
                "No replacement was performed, old_str `{old}` did not appear verbatim in {path}."
            )));
        }
        if count > 1 {
            let lines: Vec<String> = occurrence_lines(content, old).iter().map(usize::to_string).collect();
            return Err(usage(format!(
                "No replacement was performed. Multiple occurrences of old_str `{old}` in lines: {}. Please ensure \
                 it is unique",
                lines.join(", ")
            )));
        }
        let at = content.find(old).unwrap_or_default();
        let changed = content.get(..at).unwrap_or_default().matches('\n').count();
        let replaced = content.replacen(old, new, 1);
        self.write(&entry, replaced.clone(), path)?;
        let lines: Vec<&str> = replaced.split('\n').collect();
        let first = changed.saturating_sub(2);
        let last = (changed + 3).min(lines.len());
        let snippet = numbered(lines.get(first..last).unwrap_or_default(), first + 1);
        Ok(format!(
            "The memory file has been edited. Here is the snippet showing the change (with line numbers):\n{snippet}"
        ))
    }

    fn insert(&self, path: &str, line: i64, text: &str) -> Result<String, Failure> {
        let id = self.file(path, (Door::Update, AuditOperation::Update))?;
        let entry = self.get(&id, path, Wording::PleaseValid)?;
        let mut lines = split_lines(&entry.content);
        let at = usize::try_from(line).ok().filter(|at| *at <= lines.len()).ok_or_else(|| {
            usage(format!(
                "Invalid `insert_line` parameter: {line}. It should be within the range [0, {}].",
                lines.len()
            ))
        })?;
        lines.insert(at, text.trim_end_matches('\n'));
        let mut content = lines.join("\n");
        if !content.ends_with('\n') {
            content.push('\n');
        }
        self.write(&entry, content, path)?;
        Ok(format!("The file {path} has been edited."))
    }

    fn delete(&self, path: &str) -> Result<String, Failure> {
        if matches!(parse_memory_path(path), Ok(MemoryPath::Directory(None))) {
            return Err(usage(format!("Cannot delete the {MEMORIES} directory itself")));
        }
        let id = self.file(path, (Door::Delete, AuditOperation::Delete))?;
        let entry = self.get(&id, path, Wording::Plain)?;
        self.service.delete(self.role, id.as_str(), entry.version).map_err(missing(path, Wording::Plain))?;
        Ok(format!("Successfully deleted {path}"))
    }

    fn rename(&self, old_path: &str, new_path: &str) -> Result<String, Failure> {
        let from = self.file(old_path, (Door::Create, AuditOperation::Create))?;
        let to = self.file(new_path, (Door::Create, AuditOperation::Create))?;
        let entry = self.get(&from, old_path, Wording::Plain)?;
        self.service.rename(self.role, from.as_str(), to.as_str(), entry.version).map_err(
            |error| match error {
                MemoryError::AlreadyExists { reason: ExistsReason::SameId, .. } => {
                    Failure { error, message: Some(format!("The destination {new_path} already exists")) }
                }
                other => missing(old_path, Wording::Plain)(other),
            },
        )?;
        Ok(format!("Successfully renamed {old_path} to {new_path}"))
    }
}

/// `Here's the content of {path} with line numbers:` and the lines (split on `\n`), numbered like the reference:
/// right-aligned in six columns, a tab, the line. `view_range` is `[first, last]`, 1-based, `-1` meaning the end.
fn view_file(path: &str, content: &str, range: Option<(i64, i64)>) -> Result<String, Failure> {
    let lines: Vec<&str> = content.split('\n').collect();
    if lines.len() > MAX_LINES {
        return Err(usage(format!("File {path} exceeds maximum line limit of 999,999 lines.")));
    }
    let (first, shown) = match range {
        None => (0, lines.as_slice()),
        Some((start, end)) => {
            let first = usize::try_from(start.max(1) - 1).unwrap_or_default();
            let end = match end {
                -1 => lines.len(),
                end => usize::try_from(end).map_err(|_| {
                    usage(format!("Invalid `view_range` parameter: [{start}, {end}]. The end must be -1 or a line number."))
                })?,
            }
            .min(lines.len());
            (first, lines.get(first..end).unwrap_or_default())
        }
    };
    Ok(format!("Here's the content of {path} with line numbers:\n{}", numbered(shown, first + 1)))
}

/// Lines numbered from `first`, as the reference handlers print them.
fn numbered(lines: &[&str], first: usize) -> String {
    let numbered: Vec<String> =
        lines.iter().enumerate().map(|(i, line)| format!("{:>6}\t{line}", first + i)).collect();
    numbered.join("\n")
}

/// The 1-based line of every occurrence of `needle`, overlapping ones included (the reference's error message).
fn occurrence_lines(content: &str, needle: &str) -> Vec<usize> {
    let mut lines = Vec::new();
    let (mut start, mut counted, mut line) = (0, 0, 1);
    while let Some(found) = content.get(start..).and_then(|rest| rest.find(needle)) {
        let at = start + found;
        line += content.get(counted..at).unwrap_or_default().matches('\n').count();
        counted = at;
        lines.push(line);
        match content.get(at..).and_then(|rest| rest.chars().next()) {
            Some(c) => start = at + c.len_utf8(),
            None => break,
        }
    }
    lines
}

/// Lines as Python's `str.splitlines` gives them (the reference handler's `insert`): split at `\n`, `\r\n`, `\r`,
/// `\v`, `\f`, `\x1c`–`\x1e`, `\x85`, U+2028 and U+2029, without the separators and without a final empty line.
fn split_lines(text: &str) -> Vec<&str> {
    let mut lines = Vec::new();
    let mut start = 0;
    let mut chars = text.char_indices().peekable();
    while let Some((at, c)) = chars.next() {
        let end = match c {
            '\r' => match chars.peek() {
                Some((_, '\n')) => {
                    chars.next();
                    at + 2
                }
                _ => at + 1,
            },
            '\n' | '\u{b}' | '\u{c}' | '\u{1c}' | '\u{1d}' | '\u{1e}' | '\u{85}' | '\u{2028}'
            | '\u{2029}' => at + c.len_utf8(),
            _ => continue,
        };
        lines.push(text.get(start..at).unwrap_or_default());
        start = end;
    }
    if start < text.len() {
        lines.push(text.get(start..).unwrap_or_default());
    }
    lines
}

/// A directory listing as the reference handlers print it, from the entries the role may read inside `prefix`:
/// a header ([`listing_header`]), the directory, then its files and directories two levels deep (for `/memories`,
/// two levels below each scope root), each level sorted by name, hidden
/// names (starting with `.`) and what lies below them left out. A directory that holds nothing to show does not
/// exist (`/memories` always does).
fn view_directory(
    path: &str,
    prefix: Option<&MemoryPrefix>,
    entries: &[MemoryEntry],
) -> Result<String, Failure> {
    let directory = directory_path(prefix).unwrap_or_else(|| path.to_owned());
    let base = if directory.ends_with('/') { directory.clone() } else { format!("{directory}/") };
    let mut tree = Tree::default();
    let mut total = 0;
    for entry in entries {
        let Some(file) = file_path(&entry.id) else { continue };
        let Some(relative) = file.strip_prefix(&base) else { continue };
        // Hidden names are left out, and so is what lies below them, sizes included.
        if relative.split('/').any(|name| name.starts_with('.')) {
            continue;
        }
        let size = entry.content.len();
        total += size;
        let names: Vec<&str> = relative.split('/').collect();
        tree.add(&names, size);
    }
    if prefix.is_some() && tree.nodes.is_empty() {
        return Err(directory_not_found(path, prefix));
    }
    let directory = directory.trim_end_matches('/');
    let mut lines = vec![format!("{}\t{directory}", file_size(total))];
    if prefix.is_none() {
        // `/memories` itself: two levels below each scope root (`shared/`, `projects/<p>/`, `private/<role>/`),
        // so the notes of a project are visible from the top.
        for ((name, is_directory), (size, children)) in &tree.nodes {
            let depth = if name == "shared" { 3 } else { 4 };
            Tree::render_node(
                &format!("{directory}/"),
                name,
                *is_directory,
                *size,
                children,
                1,
                depth,
                &mut lines,
            );
        }
    } else {
        tree.render(&format!("{directory}/"), 1, 2, &mut lines);
    }
    Ok(format!("{}\n{}", listing_header(path, prefix), lines.join("\n")))
}

/// The first line of a listing: the reference handlers' words for a directory, listed two levels deep; for
/// `/memories` itself, which lists two levels below each scope root (so four below `/memories` for a project or a
/// private memory), the depth it really has.
fn listing_header(path: &str, prefix: Option<&MemoryPrefix>) -> String {
    if prefix.is_some() {
        format!("Here're the files and directories up to 2 levels deep in {path}, excluding hidden items:")
    } else {
        format!(
            "Here're the files and directories in {path}, up to 2 levels deep below each of shared/, \
             projects/<project>/ and private/<role>/, excluding hidden items:"
        )
    }
}

/// A directory that holds nothing the role may read does not exist for it.
fn directory_not_found(path: &str, prefix: Option<&MemoryPrefix>) -> Failure {
    Failure {
        error: MemoryError::NotFound {
            id: prefix.map(|p| p.as_str().to_owned()).unwrap_or_default(),
            expired: false,
        },
        message: Some(format!("The path {path} does not exist. Please provide a valid path.")),
    }
}

/// The files and directories below a listed directory, two levels deep.
#[derive(Default)]
struct Tree {
    /// By name (a directory's name without its `/`) and whether it is a directory: the size and the children.
    nodes: std::collections::BTreeMap<(String, bool), (usize, Tree)>,
}

impl Tree {
    fn add(&mut self, names: &[&str], size: usize) {
        let Some((first, rest)) = names.split_first() else { return };
        let node = self.nodes.entry(((*first).to_owned(), !rest.is_empty())).or_default();
        node.0 += size;
        node.1.add(rest, size);
    }

    /// The nodes at `depth` (1 for the listed directory's children) and below, down to `max` levels.
    fn render(&self, parent: &str, depth: usize, max: usize, lines: &mut Vec<String>) {
        for ((name, is_directory), (size, children)) in &self.nodes {
            Tree::render_node(parent, name, *is_directory, *size, children, depth, max, lines);
        }
    }

    #[expect(
        clippy::too_many_arguments,
        reason = "one node of the walk: its place, its fields and the depths"
    )]
    fn render_node(
        parent: &str,
        name: &str,
        is_directory: bool,
        size: usize,
        children: &Tree,
        depth: usize,
        max: usize,
        lines: &mut Vec<String>,
    ) {
        if is_directory {
            lines.push(format!("{}\t{parent}{name}/", file_size(size)));
            if depth < max {
                children.render(&format!("{parent}{name}/"), depth + 1, max, lines);
            }
        } else {
            lines.push(format!("{}\t{parent}{name}", file_size(size)));
        }
    }
}

/// A size as the reference handlers print it: `0B`, `512B`, `1.5K`, `2M`.
fn file_size(bytes: usize) -> String {
    if bytes == 0 {
        return "0B".to_owned();
    }
    let units = ["B", "K", "M", "G"];
    let exponent = ((usize::BITS - 1 - bytes.leading_zeros()) / 10).min(3);
    let size = bytes as f64 / 1024f64.powi(exponent as i32);
    let unit = units.get(exponent as usize).copied().unwrap_or("G");
    if size.fract() == 0.0 { format!("{size:.0}{unit}") } else { format!("{size:.1}{unit}") }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_header_tells_the_depth_listed() {
        let top = view_directory("/memories", None, &[]).ok().unwrap();
        assert_eq!(
            top,
            "Here're the files and directories in /memories, up to 2 levels deep below each of shared/, \
             projects/<project>/ and private/<role>/, excluding hidden items:\n0B\t/memories"
        );
        assert!(!top.contains("up to 2 levels deep in /memories"));
    }

    #[test]
    fn sizes_like_the_reference() {
        for (bytes, shown) in [
            (0, "0B"),
            (1, "1B"),
            (1023, "1023B"),
            (1024, "1K"),
            (1536, "1.5K"),
            (4096, "4K"),
            (1_048_576, "1M"),
        ] {
            assert_eq!(file_size(bytes), shown, "{bytes}");
        }
    }

    #[test]
    fn split_lines_like_python() {
        assert_eq!(split_lines("a\nb\r\nc\rd"), ["a", "b", "c", "d"]);
        assert_eq!(split_lines("a\n"), ["a"]);
        assert_eq!(split_lines("a\n\n"), ["a", ""]);
        assert_eq!(split_lines(""), Vec::<&str>::new());
        assert_eq!(split_lines("a\u{2028}b\u{85}c"), ["a", "b", "c"]);
    }

    #[test]
    fn occurrence_lines_count_overlaps_and_lines() {
        assert_eq!(occurrence_lines("ab\nab\nxab", "ab"), [1, 2, 3]);
        assert_eq!(occurrence_lines("aaa", "aa"), [1, 1]);
        assert_eq!(occurrence_lines("é\né", ""), [1, 1, 2, 2]);
    }

    #[test]
    fn numbered_lines_like_the_reference() {
        let text = view_file("/memories/shared/a.md", "one\ntwo\n", None).ok().unwrap();
        assert_eq!(
            text,
            "Here's the content of /memories/shared/a.md with line numbers:\n     1\tone\n     2\ttwo\n     3\t"
        );
        let text = view_file("/memories/shared/a.md", "1\n2\n3\n4", Some((2, 3))).ok().unwrap();
        assert_eq!(
            text,
            "Here's the content of /memories/shared/a.md with line numbers:\n     2\t2\n     3\t3"
        );
        let text = view_file("/memories/shared/a.md", "1\n2\n3", Some((2, -1))).ok().unwrap();
        assert_eq!(
            text,
            "Here's the content of /memories/shared/a.md with line numbers:\n     2\t2\n     3\t3"
        );
    }
}
