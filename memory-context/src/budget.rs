//! The character-budgeted context and its diagnostics.

use memory_ranker::RankItem;
use serde::Serialize;

use crate::plan::{PlannedEntry, Tier};

/// Characters every block adds besides the ID and the content: `"## "`, the `\n` after the ID, and `"\n\n"`.
const BLOCK_OVERHEAD_CHARS: usize = 6;

/// Context text for an agent, built from ranked entries within a character budget, with the diagnostics that say
/// what was left out.
///
/// Serialised (with serde) as the CLI prints it:
/// `{"text","entryIds":[…],"diagnostics":{"characterBudget","charactersUsed","truncated","omittedEntryIds":[…]}}`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct MemoryContext {
    text: String,
    entry_ids: Vec<String>,
    diagnostics: ContextDiagnostics,
    /// The tier of each included entry when built from a read plan (not part of the JSON document).
    #[serde(skip)]
    entry_tiers: Vec<Tier>,
}

impl MemoryContext {
    /// The blocks of the included entries, in rank order.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// The IDs of the included entries, in the order their blocks appear.
    pub fn entry_ids(&self) -> &[String] {
        &self.entry_ids
    }

    /// Why each included entry is there, when the context was built from a read plan
    /// ([`build_planned_context`]): its tier, in the order of [`MemoryContext::entry_ids`]. Empty for context built
    /// by [`build_memory_context`], where the query alone selected the entries.
    pub fn entry_tiers(&self) -> &[Tier] {
        &self.entry_tiers
    }

    /// What the budget allowed and what it left out.
    pub fn diagnostics(&self) -> &ContextDiagnostics {
        &self.diagnostics
    }

    /// The text, consuming the context.
    pub fn into_text(self) -> String {
        self.text
    }
}

/// How the budget was spent.
///
/// Invariants: `characters_used <= character_budget`; `characters_used` is the number of Unicode scalar values of
/// the text; `truncated` is true exactly when `omitted_entry_ids` is not empty.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct ContextDiagnostics {
    character_budget: usize,
    characters_used: usize,
    truncated: bool,
    omitted_entry_ids: Vec<String>,
}

impl ContextDiagnostics {
    /// The budget the context was built with, in Unicode scalar values.
    pub fn character_budget(&self) -> usize {
        self.character_budget
    }

    /// The length of the text in Unicode scalar values (`text.chars().count()`); never above the budget.
    pub fn characters_used(&self) -> usize {
        self.characters_used
    }

    /// Whether any entry was left out for lack of room.
    pub fn truncated(&self) -> bool {
        self.truncated
    }

    /// The entries left out for lack of room, in rank order.
    pub fn omitted_entry_ids(&self) -> &[String] {
        &self.omitted_entry_ids
    }
}

/// The content as it appears in a block: every trailing `\n` and `\r` removed, nothing else touched.
///
/// ```
/// use memory_context::content_in_block;
///
/// assert_eq!(content_in_block("line\r\n\n"), "line");
/// assert_eq!(content_in_block("  indented\n  kept  \n"), "  indented\n  kept  ");
/// ```
pub fn content_in_block(content: &str) -> &str {
    content.trim_end_matches(['\n', '\r'])
}

/// Builds the context for `ranked` entries (already in rank order) within `character_budget` Unicode scalar values.
///
/// Walks the entries in order and includes each whole entry whose block fits in what is left of the budget; an entry
/// that does not fit is omitted, never cut, and the walk goes on, so a smaller entry further down may still fit. The
/// block of an entry is exactly `"## " + id + "\n" + content_in_block(content) + "\n\n"`, and the text is the blocks
/// in order.
///
/// ```
/// use memory_context::build_memory_context;
/// use memory_ranker::RankItem;
///
/// struct Note(&'static str, String);
/// impl RankItem for Note {
///     fn id(&self) -> &str { self.0 }
///     fn content(&self) -> &str { &self.1 }
///     fn updated_at(&self) -> i128 { 0 }
/// }
///
/// let notes = [Note("shared:big", "x".repeat(100)), Note("shared:vi", "Tiếng Việt\n".to_owned())];
/// let context = build_memory_context(&notes, 40);
/// assert_eq!(context.text(), "## shared:vi\nTiếng Việt\n\n");
/// assert_eq!(context.entry_ids(), ["shared:vi"]);
/// assert_eq!(context.diagnostics().characters_used(), 25);
/// assert_eq!(context.diagnostics().omitted_entry_ids(), ["shared:big"]);
/// assert!(context.diagnostics().truncated());
/// ```
pub fn build_memory_context<I>(ranked: I, character_budget: usize) -> MemoryContext
where
    I: IntoIterator,
    I::Item: RankItem,
{
    build(ranked.into_iter().map(|item| (item, None)), character_budget)
}

/// [`build_memory_context`] over a read plan's entries (in plan order), keeping each included entry's tier
/// ([`MemoryContext::entry_tiers`]), so a reader can be told why each entry is there.
///
/// ```
/// use memory_context::{build_planned_context, plan_read, PlanItem, PlanTarget, Tier};
/// use memory_ranker::{DeterministicContextRanker, RankItem};
///
/// struct E(&'static str, Option<&'static str>, bool);
/// impl RankItem for E {
///     fn id(&self) -> &str { self.0 }
///     fn content(&self) -> &str { "note" }
///     fn updated_at(&self) -> i128 { 0 }
/// }
/// impl PlanItem for E {
///     fn scope_ref(&self) -> Option<&str> { self.1 }
///     fn memory_type(&self) -> Option<&str> { None }
///     fn key(&self) -> Option<&str> { None }
///     fn is_critical(&self) -> bool { self.2 }
/// }
///
/// let entries = [E("project:p:task-note", Some("task-1"), false), E("shared:rule", Some("elsewhere"), true)];
/// let ranker = DeterministicContextRanker::new("");
/// let plan = plan_read(&entries, PlanTarget::Task { task: "task-1", feature: None }, &ranker);
/// let context = build_planned_context(plan.entries(), 1000);
/// assert_eq!(context.entry_ids(), ["shared:rule", "project:p:task-note"]);
/// assert_eq!(context.entry_tiers(), [Tier::Critical, Tier::Task]);
/// ```
pub fn build_planned_context<'a, T, I>(plan: I, character_budget: usize) -> MemoryContext
where
    T: RankItem + 'a,
    I: IntoIterator<Item = &'a PlannedEntry<T>>,
{
    build(plan.into_iter().map(|planned| (planned.item(), Some(planned.tier()))), character_budget)
}

fn build<I, R>(ranked: I, character_budget: usize) -> MemoryContext
where
    I: Iterator<Item = (R, Option<Tier>)>,
    R: RankItem,
{
    let mut entry_tiers = Vec::new();
    let mut text = String::new();
    let mut used = 0usize;
    let mut entry_ids = Vec::new();
    let mut omitted_entry_ids = Vec::new();
    for (item, tier) in ranked {
        let id = item.id();
        let body = content_in_block(item.content());
        let block_chars =
            BLOCK_OVERHEAD_CHARS.saturating_add(id.chars().count()).saturating_add(body.chars().count());
        // `used` never exceeds the budget, so the subtraction cannot underflow.
        if block_chars <= character_budget - used {
            text.reserve(block_chars);
            text.push_str("## ");
            text.push_str(id);
            text.push('\n');
            text.push_str(body);
            text.push_str("\n\n");
            used += block_chars;
            entry_ids.push(id.to_owned());
            entry_tiers.extend(tier);
        } else {
            omitted_entry_ids.push(id.to_owned());
        }
    }
    MemoryContext {
        text,
        entry_ids,
        diagnostics: ContextDiagnostics {
            character_budget,
            characters_used: used,
            truncated: !omitted_entry_ids.is_empty(),
            omitted_entry_ids,
        },
        entry_tiers,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct Note(&'static str, &'static str);

    impl RankItem for Note {
        fn id(&self) -> &str {
            self.0
        }
        fn content(&self) -> &str {
            self.1
        }
        fn updated_at(&self) -> i128 {
            0
        }
    }

    #[test]
    fn trailing_newlines_of_every_kind_are_stripped() {
        for content in ["a", "a\n", "a\r\n", "a\r", "a\n\n\r\n", "a\n\r"] {
            let context = build_memory_context([Note("shared:x", content)], 100);
            assert_eq!(context.text(), "## shared:x\na\n\n", "{content:?}");
        }
    }

    #[test]
    fn inner_and_leading_whitespace_is_kept() {
        let context = build_memory_context([Note("shared:x", "\n a\r\n b \t\n")], 100);
        assert_eq!(context.text(), "## shared:x\n\n a\r\n b \t\n\n");
    }

    #[test]
    fn empty_content_still_has_a_block() {
        let context = build_memory_context([Note("shared:x", "\n\n")], 100);
        assert_eq!(context.text(), "## shared:x\n\n\n");
        assert_eq!(context.diagnostics().characters_used(), 14);
    }

    #[test]
    fn exact_fit_is_included() {
        let block = "## shared:x\nabc\n\n".chars().count();
        let context = build_memory_context([Note("shared:x", "abc")], block);
        assert_eq!(context.diagnostics().characters_used(), block);
        assert!(!context.diagnostics().truncated());
        let context = build_memory_context([Note("shared:x", "abc")], block - 1);
        assert_eq!(context.text(), "");
        assert_eq!(context.diagnostics().omitted_entry_ids(), ["shared:x"]);
    }

    #[test]
    fn characters_not_bytes_are_counted() {
        // 6 + 11 + 2 = 19 scalar values ("ệ" is one in NFC), but 25 bytes.
        let context = build_memory_context([Note("shared:việt", "ệệ\n")], 6 + 11 + 2);
        assert_eq!(context.entry_ids(), ["shared:việt"]);
        assert_eq!(context.diagnostics().characters_used(), 19);
    }

    #[test]
    fn nothing_to_include_is_not_truncated() {
        let context = build_memory_context(Vec::<Note>::new(), 0);
        assert!(!context.diagnostics().truncated());
        assert_eq!(context.text(), "");
    }
}
