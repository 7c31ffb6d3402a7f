#![doc = include_str!("../README.md")]

pub mod adapter;
mod error;
mod service;
mod transfer;

pub use error::MemoryError;
pub use service::{
    ActorSource, AgentDirectory, ClearField, Clock, ContextRequest, CreateRequest, EntryFields,
    MemoryService, ScoredEntry, SearchFilter, SearchRequest, StaticActors, SystemClock, UpdateRequest,
};
pub use transfer::{ExportReport, ImportReport, Skipped};

pub use memory_audit;
pub use memory_context;
pub use memory_id;
pub use memory_policy;
pub use memory_ranker;
pub use memory_store;
