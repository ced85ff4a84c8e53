//! `vecring`: the operator's tool for vecring links. The tool is the
//! crate's library (`src/lib.rs`), which the benchmark harness
//! `vecring-bench` shares; `vecring --help` is the reference.

fn main() -> std::process::ExitCode {
    vecring_cli::main()
}
