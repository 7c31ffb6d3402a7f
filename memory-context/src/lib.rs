//! Character-budgeted context for an agent, built from ranked memory entries, with diagnostics that say exactly
//! what was left out; and the task/feature read plan that decides which entries a task starts with.
//!
//! **The context.** [`build_memory_context`] walks entries in rank order and includes each *whole* entry whose block
//! fits in what is left of the budget; an entry that does not fit is omitted (never cut in half) and the walk goes
//! on. The block of an entry is exactly
//!
//! ```text
//! "## " + id + "\n" + content_in_block(content) + "\n\n"
//! ```
//!
//! where [`content_in_block`] removes every trailing `\n` and `\r` (so `\n`, `\r\n` and a lone `\r` line ending
//! alike, any number of them) and touches nothing else: leading newlines, inner line endings and trailing spaces or
//! tabs are kept. The budget and every count are in Unicode scalar values (`chars()`), not bytes and not grapheme
//! clusters. [`ContextDiagnostics`] report the budget, the characters used (never above the budget), whether
//! anything was omitted, and the omitted IDs in rank order, so "the agent did not know that fact" can be checked.
//!
//! ```
//! use memory_context::build_memory_context;
//! use memory_ranker::{DeterministicContextRanker, RankItem};
//!
//! struct Note(&'static str, String, i128);
//! impl RankItem for Note {
//!     fn id(&self) -> &str { self.0 }
//!     fn content(&self) -> &str { &self.1 }
//!     fn updated_at(&self) -> i128 { self.2 }
//! }
//!
//! let notes = [
//!     Note("project:alp:db", "Cơ sở dữ liệu: PostgreSQL 16.\n".to_owned(), 2),
//!     Note("project:alp:history", "Long story about the database. ".repeat(20), 3),
//! ];
//! let ranked = DeterministicContextRanker::new("database dữ").rank(&notes);
//! let context = build_memory_context(&ranked, 120);
//! // Both match one term; the newer history ranks first but does not fit: it is omitted, not cut, and the walk
//! // goes on to the entry that fits.
//! assert_eq!(context.text(), "## project:alp:db\nCơ sở dữ liệu: PostgreSQL 16.\n\n");
//! assert_eq!(context.diagnostics().omitted_entry_ids(), ["project:alp:history"]);
//! assert!(context.diagnostics().characters_used() <= 120);
//! ```
//!
//! The blocks are not escaped: content holding a line that starts with `## ` looks like another block to a reader.
//! [`MemoryContext::entry_ids`] is the authoritative list of what the text holds.
//!
//! **The read plan.** [`plan_read`] takes every entry the agent may read and a [`PlanTarget`] (a task, with its
//! feature when it has one, or a feature alone) and returns the candidates tier by tier (critical, task, feature,
//! unscoped `project`/`architecture`, other unscoped), each tier in the ranker's order; the query orders but never
//! drops. Candidates sharing (type, key) with a narrower one are shadowed and reported, not planned. See
//! [`plan_read`] for the exact rules.
//!
//! Entries are anything implementing [`memory_ranker::RankItem`] (and [`PlanItem`] for the plan), so this crate
//! depends on no store. It does no I/O and reads no clock. Most users want the `alp-memory` crate, which builds
//! context only from entries the acting role may read; this crate is for projects that want the same budgeting and
//! plan on their own data.

mod budget;
mod plan;

pub use budget::{
    ContextDiagnostics, MemoryContext, build_memory_context, build_planned_context, content_in_block,
};
pub use plan::{PlanItem, PlanTarget, PlannedEntry, ReadPlan, Shadowed, Tier, plan_read};
