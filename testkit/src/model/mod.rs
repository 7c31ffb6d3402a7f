//! Reference models: the definitions of `conformance/README.md` written as plainly as possible, with no
//! fast paths, for property tests, fuzz properties and conformance runners to compare the real code against.
//!
//! A model is written from the text, not from the code it checks: it works on strings and never calls the function
//! it is compared with (it may use the crates' plain data types, such as `Decision`, `DenyCode` or `Tier`, to say
//! its answer). The limits (1024 bytes, 64 segments, 200 bytes a segment) are written out again rather than taken
//! from `memory-id`'s constants, for the same reason.
//!
//! - [`id`]: logical IDs and prefixes: the reason an input is refused, segment by segment, and
//!   whole-segment containment.
//! - [`grant`]: grants and the grant policy: the grant grammar, coverage, overlap, the grant a role
//!   actually gets, and the decisions for one ID and for a subtree.
//! - [`ranking`]: the ranking definition: fold, terms, score, order, and [`ranking::Entry`], the entry
//!   type the ranker's and the context's tests share.
//! - [`context`]: the character-budgeted context and the task/feature read plan.

pub mod context;
pub mod grant;
pub mod id;
pub mod ranking;
