//! Deterministic ranking of memory entries by query terms: no embeddings, nothing learned, no clock, no I/O.
//!
//! The same query on the same entries gives the same order, always, so a session can be replayed and a context bug
//! can be debugged.
//!
//! * **Terms.** The query is split on Unicode whitespace ([`char::is_whitespace`]); each term is [folded](fold):
//!   NFC-normalised, then lower-cased with full Unicode case mapping ([`str::to_lowercase`]). Lower-casing is not
//!   case folding: `ß` does not match `ss`, and Turkish `İ` lower-cases to `i` + U+0307 (so it matches `i̇`, not a
//!   plain `i`). Terms equal after folding count once.
//! * **Score.** The number of distinct terms that occur as substrings of the entry's `id + "\n" + content`, folded
//!   the same way. NFC on both sides means precomposed and decomposed spellings (`ệ` and `e` + U+0323 + U+0302)
//!   match each other; nothing else is equated (no compatibility mapping, no accent stripping).
//! * **Order.** Score descending, then `updated_at` newer first, then ID ascending in byte order.
//! * **Filter.** A search ([`DeterministicContextRanker::rank`]) keeps only entries with score ≥ 1, or every entry
//!   (all with score 0) when the query has no terms. [`DeterministicContextRanker::rank_all`] orders without
//!   dropping, for the task read plan.
//!
//! ```
//! use memory_ranker::{DeterministicContextRanker, RankItem};
//!
//! struct Note { id: &'static str, content: &'static str, updated_at: i128 }
//! impl RankItem for Note {
//!     fn id(&self) -> &str { self.id }
//!     fn content(&self) -> &str { self.content }
//!     fn updated_at(&self) -> i128 { self.updated_at }
//! }
//!
//! let notes = [
//!     Note { id: "project:alp:db", content: "Cơ sở dữ liệu: PostgreSQL", updated_at: 1 },
//!     Note { id: "project:alp:style", content: "Tabs, not spaces", updated_at: 2 },
//! ];
//! let ranked = DeterministicContextRanker::new("DỮ postgresql").rank(&notes);
//! assert_eq!(ranked.len(), 1); // project:alp:style matches no term and is dropped
//! assert_eq!((ranked[0].id(), ranked[0].score()), ("project:alp:db", 2));
//! ```
//!
//! Entries are anything implementing [`RankItem`] (ID, content, update instant), so this crate does not depend on
//! a store. For large collections, build a [`Scorer`] once, share it across threads (it is `Send + Sync`), give
//! each thread its own [`FoldBuffer`], and sort the gathered results with [`sort_ranked`]: ASCII entries are folded
//! in place without allocating, and each term is searched with a precompiled `memchr::memmem` finder.
//!
//! Most users want the `alp-memory` crate, which ranks only entries the acting role may read; this crate is for
//! projects that want the same explainable ranking on their own data.

mod fold;
mod rank;
mod score;

pub use fold::{FoldBuffer, fold};
pub use rank::{DeterministicContextRanker, RankItem, Ranked, sort_ranked};
pub use score::{Query, Scorer, Trigrams};
