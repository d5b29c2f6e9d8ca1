//! The `trajkit` binary: parse the command line, run, map errors to exit codes.

mod cli;

/// jemalloc: parsing builds many small maps and strings, and the Parquet writer grows and frees
/// page buffers of about a megabyte; see Cargo.toml for what it was measured against. Counted,
/// so that a chat template's rendering holds at most its memory budget (`training::memory`).
#[cfg(not(target_env = "msvc"))]
#[global_allocator]
static GLOBAL: Budgeted<tikv_jemallocator::Jemalloc> = Budgeted::new(tikv_jemallocator::Jemalloc);
#[cfg(target_env = "msvc")]
#[global_allocator]
static GLOBAL: Budgeted<std::alloc::System> = Budgeted::new(std::alloc::System);

use trajkit::training::memory::Budgeted;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.run() {
        Ok(code) => ExitCode::from(code),
        // Nothing reads the output any more (`trajkit ... | head`): stop quietly, as ripgrep
        // does (what was written was read; the outputs not yet committed are removed).
        Err(_) if trajkit::engine::output::stdout_closed() => ExitCode::SUCCESS,
        Err(e) => {
            trajkit::engine::output::warn(format_args!("trajkit: error: {}", e.message));
            ExitCode::from(e.code)
        }
    }
}
