//! alp-memory: governed, audited memory for AI agents.
pub use memory_id;
pub use memory_policy;
