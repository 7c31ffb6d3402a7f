//! memory-audit
