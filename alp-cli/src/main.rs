//! `alp`: the command line of alp-memory (see the `alp_cli` library for the program).

fn main() -> std::process::ExitCode {
    alp_cli::main()
}
