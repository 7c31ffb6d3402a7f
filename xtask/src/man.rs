//! `cargo xtask man`: writes the `alp(1)` man page, and one page per subcommand, from the command-line definition
//! itself (clap_mangen), so the pages never drift from the parser.

use std::path::Path;

/// Writes `target/man/alp.1` and `target/man/alp-<command>[-<sub>].1`; returns the directory.
pub(crate) fn run() -> Result<(), String> {
    let dir = crate::root().join("target/man");
    std::fs::create_dir_all(&dir).map_err(|e| format!("cannot create {}: {e}", dir.display()))?;
    let command = alp_cli::command();
    let written = write_pages(&command, "alp", &dir)?;
    eprintln!("wrote {written} man pages to {} (read one with `man {}/alp.1`)", dir.display(), dir.display());
    Ok(())
}

/// Writes the page of `command` as `<name>.1`, then those of its subcommands; returns how many pages it wrote.
fn write_pages(command: &clap::Command, name: &str, dir: &Path) -> Result<usize, String> {
    let mut page = Vec::new();
    clap_mangen::Man::new(command.clone().name(name.to_owned()))
        .render(&mut page)
        .map_err(|e| format!("cannot render the man page of {name}: {e}"))?;
    let path = dir.join(format!("{name}.1"));
    std::fs::write(&path, page).map_err(|e| format!("cannot write {}: {e}", path.display()))?;
    let mut written = 1;
    for sub in command.get_subcommands().filter(|s| !s.is_hide_set() && s.get_name() != "help") {
        written += write_pages(sub, &format!("{name}-{}", sub.get_name()), dir)?;
    }
    Ok(written)
}
