//! The fenced blocks of a Markdown file, for the tests that run a document's commands as written (`readme.rs`,
//! `operations.rs`) or compare a block with the file it shows.

use std::path::{Path, PathBuf};

/// The clone this test binary was built from.
pub(crate) fn repo() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

/// A fenced block: the line its fence opens on, and its text (every line ending in a newline).
#[derive(Debug, Clone)]
pub(crate) struct Block {
    pub(crate) line: usize,
    pub(crate) text: String,
}

/// Every block fenced with ```` ```lang ```` in `file` (a path under the repository), in order.
pub(crate) fn fenced(file: &str, lang: &str) -> Vec<Block> {
    let text = std::fs::read_to_string(repo().join(file)).unwrap_or_else(|e| panic!("{file}: {e}"));
    let fence = format!("```{lang}");
    let mut blocks = Vec::new();
    let mut open: Option<Block> = None;
    let mut other = false;
    for (at, line) in text.lines().enumerate() {
        let trimmed = line.trim_start();
        match &mut open {
            None if other => other = !trimmed.starts_with("```"),
            None if trimmed == fence => open = Some(Block { line: at + 1, text: String::new() }),
            None => other = trimmed.starts_with("```"),
            Some(_) if trimmed.starts_with("```") => blocks.extend(open.take()),
            Some(block) => {
                block.text.push_str(line);
                block.text.push('\n');
            }
        }
    }
    assert!(open.is_none() && !other, "an unclosed block in {file}");
    blocks
}

/// Every ```` ```sh ```` block of `file`: the commands a reader runs.
pub(crate) fn shell_blocks(file: &str) -> Vec<Block> {
    fenced(file, "sh")
}

/// A heading's anchor as GitHub makes it: lower case, punctuation but `-` and `_` dropped, spaces as `-`.
fn anchor(heading: &str) -> String {
    heading
        .to_lowercase()
        .chars()
        .filter(|c| c.is_alphanumeric() || matches!(c, '-' | '_' | ' '))
        .map(|c| if c == ' ' { '-' } else { c })
        .collect()
}

/// The anchors of every heading of a Markdown text.
pub(crate) fn anchors(text: &str) -> Vec<String> {
    text.lines()
        .filter_map(|l| l.strip_prefix('#'))
        .map(|l| anchor(l.trim_start_matches('#').trim()))
        .collect()
}
