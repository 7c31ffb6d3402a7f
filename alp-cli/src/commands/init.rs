//! `alp init`: a new root and the definitions of its first roles.

use std::io::Write;
use std::path::Path;

use alp_memory::MemoryError;
use alp_memory::memory_policy::Role;
use serde_json::Value;

use crate::Printed;
use crate::args::Cli;
use crate::output::to_json;
use crate::setup::{self, AgentsDir, Place};

/// `alp init`: a new root (0700) with `config.yaml` at its defaults, the agents directory, and a definition for
/// each `--role`. Everything is checked before anything is created: a root that exists and is not empty, a role
/// name that is not valid, or a definition that is already there is a `USAGE` error and nothing is written.
pub(crate) fn init(cli: &Cli, roles: &[String]) -> Result<Printed, MemoryError> {
    use std::os::unix::fs::{DirBuilderExt as _, PermissionsExt as _};

    let place = setup::resolve_place(cli)?;
    if let Place::Root(root) = &place {
        check_new_root(root)?;
    }
    let agents_dir = AgentsDir::resolve(cli)?;
    let parsed = check_new_roles(agents_dir.path(), roles)?;
    let cannot = |what: &Path, e: std::io::Error| MemoryError::Storage {
        id: None,
        storage_kind: None,
        message: format!("cannot create `{}`: {e}", what.display()),
    };
    let mut created: Vec<String> = Vec::new();
    let (key, shown, export) = match &place {
        Place::Root(root) => {
            if !root.exists() {
                std::fs::DirBuilder::new()
                    .recursive(true)
                    .mode(0o700)
                    .create(root)
                    .map_err(|e| cannot(root, e))?;
            }
            std::fs::set_permissions(root, std::fs::Permissions::from_mode(0o700))
                .map_err(|e| cannot(root, e))?;
            let root = root.canonicalize().map_err(|e| cannot(root, e))?;
            created.push(root.display().to_string());
            let config = root.join(alp_memory::memory_markdown::CONFIG_FILE);
            write_new(&config, &alp_memory::memory_markdown::StoreConfig::default_yaml(), 0o600)
                .map_err(|e| cannot(&config, e))?;
            created.push(config.display().to_string());
            // The new root opens as every other command will open it.
            setup::open_store(&root)?;
            (
                "root",
                root.display().to_string(),
                format!("export {}={}", setup::ROOT_VAR, shell_word(&root.display().to_string())),
            )
        }
        Place::Database(url) => {
            let done = memory_postgres::init(url).map_err(setup::postgres_open_error)?;
            created.extend(done.created.iter().cloned());
            let export = format!("export {}={}", setup::STORE_VAR, shell_word(&done.url));
            ("store", done.url, export)
        }
    };

    let named = agents_dir.path();
    if !named.exists() {
        std::fs::DirBuilder::new().recursive(true).mode(0o755).create(named).map_err(|e| cannot(named, e))?;
        created.push(named.canonicalize().map_err(|e| cannot(named, e))?.display().to_string());
    }
    let agents = named.canonicalize().map_err(|e| cannot(named, e))?;
    for role in &parsed {
        let file = agents.join(format!("{role}.yaml"));
        write_new(&file, &definition(role), 0o644).map_err(|e| cannot(&file, e))?;
        created.push(file.display().to_string());
    }

    if cli.json {
        let mut document = serde_json::Map::new();
        document.insert(key.into(), shown.into());
        if key == "root" {
            document.insert("agents".into(), agents.display().to_string().into());
        }
        document.insert("created".into(), created.into());
        return Ok(Printed::ok(to_json(&Value::Object(document))));
    }
    let mut text = String::new();
    for path in &created {
        text.push_str(&format!("created {path}\n"));
    }
    text.push_str(&format!(
        "set these (in your shell profile too) so that alp finds this {} and these agents from any directory:\n  \
         {export}\n  export {}={}\n",
        if key == "root" { "root" } else { "database" },
        setup::AGENTS_VAR,
        shell_word(&agents.display().to_string())
    ));
    match parsed.first() {
        Some(role) => text.push_str(&format!(
            "next: alp --as {role} memory create shared:notes:first --content \"Our first shared note.\""
        )),
        None => text.push_str(&format!(
            "next: define a role in {} (see `alp agent show`), then: alp --as ROLE memory list",
            agents.display()
        )),
    }
    Ok(Printed::ok(text))
}

/// A root `init` may create: missing, or an empty directory.
fn check_new_root(root: &Path) -> Result<(), MemoryError> {
    match std::fs::read_dir(root).map(|mut entries| entries.next().is_some()) {
        Ok(true) => Err(MemoryError::Usage(format!(
            "`{}` is not empty; `alp init` only creates a new root (choose an empty or missing directory)",
            root.display()
        ))),
        Ok(false) => Ok(()),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(()),
        Err(e) => Err(MemoryError::Usage(format!("cannot use `{}` as a memory root: {e}", root.display()))),
    }
}

/// The roles `init` may define: valid names, each once, without a definition yet.
fn check_new_roles(agents: &Path, roles: &[String]) -> Result<Vec<Role>, MemoryError> {
    let usage = MemoryError::Usage;
    let mut parsed = Vec::new();
    for role in roles {
        let role = Role::parse(role).map_err(|e| usage(format!("cannot define role `{role}`: {e}")))?;
        if parsed.contains(&role) {
            return Err(usage(format!("role `{role}` is given twice")));
        }
        let file = agents.join(format!("{role}.yaml"));
        if std::fs::symlink_metadata(&file).is_ok() {
            return Err(usage(format!(
                "`{}` already exists; edit it instead of defining role `{role}` again",
                file.display()
            )));
        }
        parsed.push(role);
    }
    Ok(parsed)
}

/// The definition `alp init --role ROLE` writes (and `alp agent add ROLE` without grant flags): shared memory,
/// every project and the role's own private memory, to read and to write.
fn definition(role: &Role) -> String {
    let grants = alp_memory::agents::default_grants(role);
    alp_memory::memory_policy::new_definition(role, None, &grants, &grants)
}

/// Writes a file that must not exist yet, with `mode`.
fn write_new(path: &Path, text: &str, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::OpenOptionsExt as _;
    let mut file = std::fs::OpenOptions::new().write(true).create_new(true).mode(mode).open(path)?;
    file.write_all(text.as_bytes())?;
    file.sync_all()
}

/// A path or URL as one shell word: quoted when it holds anything but plain characters.
fn shell_word(text: &str) -> String {
    if text.chars().all(|c| c.is_ascii_alphanumeric() || "/._-+:@".contains(c)) {
        text.to_owned()
    } else {
        format!("'{}'", text.replace('\'', r"'\''"))
    }
}
