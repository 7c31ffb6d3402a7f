//! `alp agent …`: the agent definitions as the policy reads them.

use alp_memory::MemoryError;
use alp_memory::memory_policy::Operation;
use serde_json::{Value, json};

use crate::Printed;
use crate::args::{AgentCommand, Cli};
use crate::output::to_json;
use crate::setup::AgentsDir;

/// `alp agent …`: reads definitions only, needs no root.
pub(crate) fn agent(cli: &Cli, command: &AgentCommand) -> Result<Printed, MemoryError> {
    match command {
        AgentCommand::Show { role } => agent_show(cli, role),
        AgentCommand::List => agent_list(cli),
    }
}

fn agent_show(cli: &Cli, role: &str) -> Result<Printed, MemoryError> {
    let actor = AgentsDir::resolve(cli)?.load(role)?;
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
        return Ok(Printed::ok(to_json(&document)));
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
    Ok(Printed::people(&text))
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
