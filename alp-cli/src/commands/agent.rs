//! `alp agent …`: the agent definitions as the policy reads them, and the operator's changes to them.

use alp_memory::MemoryError;
use alp_memory::agents::{self, Change, Grants};
use alp_memory::memory_entry::Timestamp;
use alp_memory::memory_policy::{Actor, GrantEdit, Operation};
use serde_json::{Value, json};

use crate::Printed;
use crate::args::{AgentCommand, Cli, OneGrant};
use crate::output::to_json;
use crate::setup::AgentsDir;

/// `alp agent …`: `show` and `list` read definitions only and need no root; `add`, `grant`, `revoke` and `remove`
/// are operator commands that write their record to the root's or the database's audit log.
pub(crate) fn agent(cli: &Cli, command: &AgentCommand) -> Result<Printed, MemoryError> {
    match command {
        AgentCommand::Show { role } => agent_show(cli, role),
        AgentCommand::List => agent_list(cli),
        AgentCommand::Add { role, read, write, reports_to } => {
            let grants = if read.is_empty() && write.is_empty() {
                Grants::Defaults
            } else {
                Grants::These { read, write }
            };
            let (dir, opened) = operator(cli)?;
            let actor = agents::add_agent(
                dir.path(),
                opened.sink(),
                role,
                reports_to.as_deref(),
                grants,
                Timestamp::now(),
            )
            .map_err(|e| explained(&dir, e))?;
            eprintln!("added role `{}`: {}", actor.role(), definition_file(&dir, &actor));
            Ok(shown(cli, &actor))
        }
        AgentCommand::Grant { role, grant } => change(cli, role, GrantEdit::Add, grant),
        AgentCommand::Revoke { role, grant } => change(cli, role, GrantEdit::Remove, grant),
        AgentCommand::Remove { role } => {
            let (dir, opened) = operator(cli)?;
            let had = agents::remove_agent(dir.path(), opened.sink(), role, Timestamp::now())
                .map_err(|e| explained(&dir, e))?;
            if cli.json {
                return Ok(Printed::ok(to_json(&json!({ "role": role, "removed": true }))));
            }
            let had = if had.is_empty() { "no grants".to_owned() } else { had.join(", ") };
            Ok(Printed::people(&format!(
                "removed role `{role}` (it had {had}); its memory stays, and its tokens are refused from their next \
                 request on"
            )))
        }
    }
}

/// `agent grant` and `agent revoke`: the definition after the change, and a line on stderr saying what happened (or
/// that nothing did).
fn change(cli: &Cli, role: &str, edit: GrantEdit, grant: &OneGrant) -> Result<Printed, MemoryError> {
    let (operation, text) = match (&grant.read, &grant.write) {
        (Some(read), _) => (Operation::Read, read.as_str()),
        (None, Some(write)) => (Operation::Write, write.as_str()),
        // clap requires exactly one of the two.
        (None, None) => (Operation::Read, ""),
    };
    let (dir, opened) = operator(cli)?;
    let change =
        agents::change_grant(dir.path(), opened.sink(), role, edit, operation, text, Timestamp::now())
            .map_err(|e| explained(&dir, e))?;
    let (actor, note) = match (&change, edit) {
        (Change::Done(actor), GrantEdit::Add) => {
            (actor, format!("granted {operation} `{text}` to role `{role}`"))
        }
        (Change::Done(actor), GrantEdit::Remove) => {
            (actor, format!("revoked {operation} `{text}` from role `{role}`"))
        }
        (Change::Unchanged(actor), GrantEdit::Add) => (
            actor,
            format!(
                "role `{role}` holds {operation} grant `{text}` already; nothing changed, no record written"
            ),
        ),
        (Change::Unchanged(actor), GrantEdit::Remove) => (
            actor,
            format!(
                "role `{role}`'s definition does not hold {operation} grant `{text}`; nothing changed, no record \
                 written"
            ),
        ),
    };
    eprintln!("{note}");
    Ok(shown(cli, actor))
}

/// The agents directory and the audit log of an operator's change (no `--as`).
fn operator(cli: &Cli) -> Result<(AgentsDir, crate::serve::Opened), MemoryError> {
    crate::serve::operator(
        cli,
        "agent",
        "an operator changes definitions; the record's actor is the operator",
    )?;
    let dir = AgentsDir::resolve(cli)?;
    Ok((dir, crate::serve::open(cli)?))
}

/// A definition error, with the agents directory named when the role is missing.
fn explained(dir: &AgentsDir, error: MemoryError) -> MemoryError {
    match error {
        MemoryError::AgentDefinition(e) => MemoryError::AgentDefinition(dir.explain(e)),
        other => other,
    }
}

fn definition_file(dir: &AgentsDir, actor: &Actor) -> String {
    dir.path().join(format!("{}.yaml", actor.role())).display().to_string()
}

fn agent_show(cli: &Cli, role: &str) -> Result<Printed, MemoryError> {
    let actor = AgentsDir::resolve(cli)?.load(role)?;
    Ok(shown(cli, &actor))
}

/// A definition as `alp agent show` prints it.
fn shown(cli: &Cli, actor: &Actor) -> Printed {
    let grants = |op| actor.grants(op).iter().map(|g| g.as_str().to_owned()).collect::<Vec<_>>();
    let (read, write) = (grants(Operation::Read), grants(Operation::Write));
    let warnings = actor.warnings();
    if cli.json {
        let document = json!({
            "role": actor.role().as_str(),
            "reportsTo": actor.reports_to().map(|r| r.as_str()),
            "memory": { "read": read, "write": write },
            "warnings": warnings,
        });
        return Printed::ok(to_json(&document));
    }
    let mut text = format!("role: {}\n", actor.role());
    if let Some(manager) = actor.reports_to() {
        text.push_str(&format!("reports to: {manager} (reporting grants no memory access)\n"));
    }
    let list = |v: &[String]| if v.is_empty() { "(none)".to_owned() } else { v.join(", ") };
    text.push_str(&format!("read:  {}\nwrite: {}\n", list(&read), list(&write)));
    for warning in warnings {
        text.push_str(&format!("warning: {warning}\n"));
    }
    Printed::people(&text)
}

/// Every definition in the agents directory, by role; one that does not load is listed with its error as a
/// warning (the listing itself succeeds).
fn agent_list(cli: &Cli) -> Result<Printed, MemoryError> {
    let agents = AgentsDir::resolve(cli)?;
    let roles = agents.roles()?;
    let listed: Vec<(String, Option<String>, Vec<String>)> = roles
        .iter()
        .map(|role| match agents.load(role.as_str()) {
            Ok(actor) => (
                role.as_str().to_owned(),
                actor.reports_to().map(|r| r.as_str().to_owned()),
                actor.warnings(),
            ),
            Err(e) => (role.as_str().to_owned(), None, vec![e.to_string()]),
        })
        .collect();
    if cli.json {
        let roles: Vec<Value> = listed
            .iter()
            .map(|(role, reports_to, warnings)| json!({ "role": role, "reportsTo": reports_to, "warnings": warnings }))
            .collect();
        return Ok(Printed::ok(to_json(&json!({ "roles": roles }))));
    }
    if listed.is_empty() {
        return Ok(Printed::ok(format!(
            "no agent definitions: {}; create some with `alp init --role ROLE`",
            agents.described()
        )));
    }
    let mut text = String::new();
    for (role, reports_to, warnings) in &listed {
        text.push_str(role);
        if let Some(manager) = reports_to {
            text.push_str(&format!(" (reports to {manager})"));
        }
        text.push('\n');
        for warning in warnings {
            text.push_str(&format!("  warning: {warning}\n"));
        }
    }
    Ok(Printed::people(&text))
}
