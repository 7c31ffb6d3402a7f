//! Who may read or write which memory: grants, the default grant policy and agent definitions.
//!
//! A role's memory grants are ID-shaped patterns (see [`Grant`]). The [`GrantPolicy`] judges a request
//! `{ type: memory, actor, operation, id }` in three steps: another role's private memory is denied
//! (`PRIVATE_MEMORY_DENIED`) whatever the grants say; a covering grant allows; anything else is
//! `MEMORY_NOT_GRANTED`. [`PolicyEngine`] is a trait, so an adopter can plug in another engine without touching
//! storage.
//!
//! ```
//! use memory_id::parse_memory_id;
//! use memory_policy::{AccessRequest, Actor, Decision, DenyCode, Grant, GrantPolicy, Operation, PolicyEngine, Role};
//!
//! let worker = Actor::new(Role::parse("worker").unwrap())
//!     .with_read([Grant::parse("project:alp").unwrap()]);
//! let ask = |id: &str| {
//!     let id = parse_memory_id(id).unwrap();
//!     GrantPolicy.authorize(&AccessRequest { actor: &worker, operation: Operation::Read, id: &id })
//! };
//! assert_eq!(ask("project:alp:goals"), Decision::Allow);
//! assert_eq!(ask("project:other:goals"), Decision::Deny(DenyCode::MemoryNotGranted));
//! assert_eq!(ask("private:main:drafts"), Decision::Deny(DenyCode::PrivateMemoryDenied));
//! ```
//!
//! Grants and IDs are compared byte for byte, with no case folding and no Unicode normalisation: a grant written in
//! NFC does not cover an ID written in NFD.
//!
//! Most users want the `alp-memory` crate, whose service applies this policy before any I/O and audits every
//! decision; this crate is for projects that only need grant matching or agent definitions. Apart from loading
//! definition files (and writing them, [`DefinitionWriter`] on Linux) it does no I/O.

mod definition;
mod edit;
mod engine;
mod file;
mod grant;
#[cfg(target_os = "linux")]
mod write;

pub use definition::{
    AgentDefinitionError, AgentDefinitionProblem, DEFINITION_EXTENSION, DefinitionCache,
    MAX_DEFINITION_BYTES, list_roles, load_agent, load_agents, parse_agent_definition,
};
pub use edit::{GrantEdit, edit_grant, new_definition};
pub use engine::{
    AccessRequest, Actor, Coverage, Decision, DenyCode, GrantPolicy, InvalidRoleError, InvalidRoleReason,
    Operation, PolicyEngine, Role, SubtreeDecision,
};
pub use grant::{Grant, InvalidGrantError, InvalidGrantReason};
#[cfg(target_os = "linux")]
pub use write::DefinitionWriter;
