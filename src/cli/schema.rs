//! `trajkit schema`

use std::fmt::Write as _;

use clap::Args;
use trajkit::engine::output::print;
use trajkit::formats::schemas;

use super::common::CliError;

/// Print one of the JSON Schemas trajkit validates with (draft 2020-12).
///
/// Names: `adp` (the newest, 1.5.0), `adp@VERSION` (unversioned, 1.0.0 ... 1.5.0), `details`
/// (trajkit's keys in details), `pipeline` (`trajkit run` files), `converter-spec`.
///
/// Example: trajkit schema adp@1.3.0 > adp-1.3.0.schema.json
#[derive(Debug, Args)]
pub struct SchemaArgs {
    /// The schema to print.
    #[arg(default_value = "adp")]
    pub name: String,
    /// List the schemas instead.
    #[arg(long)]
    pub list: bool,
}

/// Runs `schema`.
pub fn run(args: SchemaArgs) -> Result<u8, CliError> {
    let all = schemas();
    if args.list {
        let mut text = String::new();
        for s in &all {
            let _ = writeln!(text, "{:<26} {}", s.name, s.title);
        }
        print(&text).map_err(CliError::io)?;
        return Ok(0);
    }
    let name = if args.name == "adp" {
        "adp@1.5.0"
    } else {
        args.name.as_str()
    };
    match all.iter().find(|s| s.name == name) {
        Some(s) => {
            print(s.text).map_err(CliError::io)?;
            Ok(0)
        }
        None => Err(CliError::usage(format!(
            "unknown schema {:?}; `trajkit schema --list` shows them",
            args.name
        ))),
    }
}
