//! memory-ranker
