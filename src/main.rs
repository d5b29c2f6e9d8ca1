//! The `trajkit` binary: parse the command line, run, map errors to exit codes.

mod cli;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match cli.run() {
        Ok(code) => ExitCode::from(code),
        Err(e) => {
            eprintln!("trajkit: error: {}", e.message);
            ExitCode::from(e.code)
        }
    }
}
