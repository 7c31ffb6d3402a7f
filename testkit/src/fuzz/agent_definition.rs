//! `agent_definition`: any bytes as the agent definition `worker.yaml` (`conformance/README.md`, `docs/STORAGE.md`;
//! `memory_policy::parse_agent_definition`).
//!
//! Properties:
//! - parsing never panics, and costs bounded time and memory whatever the text (the fuzzer runs this target with
//!   `-rss_limit_mb=512`: an alias bomb or deep nesting would exceed it if expanded);
//! - text that is not UTF-8 or longer than 64 KiB is never a definition;
//! - an accepted definition is for role `worker` (the file's name), its grants read back as themselves, and every
//!   grant on another role's private memory is reported by a warning;
//! - a refused definition names the file in a one-line message.

use std::path::Path;

use memory_policy::{Grant, MAX_DEFINITION_BYTES, Operation, parse_agent_definition};

/// The file every input is read as.
pub const FILE: &str = "agents/worker.yaml";

/// Checks the properties on `data`.
pub fn check(data: &[u8]) {
    let Ok(text) = std::str::from_utf8(data) else { return };
    match parse_agent_definition(text, "worker", Path::new(FILE)) {
        Ok(actor) => {
            assert!(text.len() as u64 <= MAX_DEFINITION_BYTES, "a definition over 64 KiB was accepted");
            assert_eq!(actor.role().as_str(), "worker", "the file's name decides the role");
            for operation in [Operation::Read, Operation::Write] {
                for grant in actor.grants(operation) {
                    let again = Grant::parse(grant.as_str());
                    assert_eq!(again.as_ref(), Ok(grant), "a grant does not read back as itself");
                }
            }
            let foreign = [Operation::Read, Operation::Write]
                .iter()
                .flat_map(|&op| actor.grants(op))
                .filter(|g| {
                    let text = g.as_str();
                    text == "private:*"
                        || text
                            .strip_prefix("private:")
                            .is_some_and(|rest| rest.split(':').next() != Some("worker"))
                })
                .count();
            assert!(
                actor.warnings().len() >= foreign.min(1),
                "a grant on another role's memory without a warning"
            );
        }
        Err(error) => {
            let message = error.to_string();
            assert!(!message.contains(['\n', '\r']), "a message over several lines: {message:?}");
            assert!(message.contains("worker"), "the message names neither the file nor the role: {message}");
        }
    }
}
