//! memory-store
