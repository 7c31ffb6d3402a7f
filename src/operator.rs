//! The audit record of an operator's command: actor `""`, the command's own door, allowed.

use memory_audit::{AuditEvent, AuditOperation, AuditSink, Door, Outcome};
use memory_entry::Timestamp;

use crate::MemoryError;

/// Appends the record of the operator's command `operation` on `id` (a token ID, a role), with `grant` for the
/// `agent-*` commands; an operator's command writes it before it changes anything, so a record that cannot be
/// written stops the command (fail closed).
pub(crate) fn operator_record(
    audit: &dyn AuditSink,
    operation: AuditOperation,
    id: &str,
    grant: Option<Vec<String>>,
    now: Timestamp,
) -> Result<(), MemoryError> {
    let event = AuditEvent {
        timestamp: now.as_offset_date_time(),
        actor: String::new(),
        operation,
        // The operator's words are their own doors (`token-create`, `agent-grant`, …).
        door: Door::parse(operation.as_str()),
        id: id.to_owned(),
        outcome: Outcome::Allowed,
        code: None,
        grant,
        shown: Vec::new(),
        via: None,
    };
    audit.record(&event).map(|_| ()).map_err(|e| MemoryError::AuditUnavailable(e.to_string()))
}
