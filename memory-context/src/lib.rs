//! memory-context
