#![doc = include_str!("../README.md")]

pub mod adapter;
#[cfg(target_os = "linux")]
pub mod agents;
#[cfg(target_os = "linux")]
pub mod copy;
mod error;
pub mod json;
mod operator;
mod service;
pub mod token;
mod transfer;

pub use error::MemoryError;
pub use service::{
    ActorSource, AgentDirectory, Clock, ContextRequest, CreateRequest, FieldInput, ListRequest,
    MAX_ANSWER_ENTRIES, MAX_FILTER_CHARS, MAX_QUERY_CHARS, MAX_QUERY_TERMS, MemoryService, Page, Pruned,
    QueryTerms, SearchRequest, StaticActors, Survey, SystemClock, UpdateRequest, Written, check_filter,
    check_limit, check_query,
};
pub use transfer::{ExportReport, ImportReport, Skipped};

pub use memory_alp;
pub use memory_audit;
pub use memory_context;
pub use memory_entry;
pub use memory_id;
#[cfg(target_os = "linux")]
pub use memory_markdown;
pub use memory_policy;
pub use memory_ranker;
pub use memory_store;
