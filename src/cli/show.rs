//! `trajkit show`: one trajectory in the terminal.

use std::io::{IsTerminal, Write};
use std::process::{Command, Stdio};

use clap::{Args, ValueEnum};
use trajkit::commands::show::{find, ShowError, Wanted};
use trajkit::engine::output::print;
use trajkit::report::show::{render, Paint, FOLD_BYTES};
use trajkit::report::view::{view, Limits};

use super::common::{CliError, GlobalArgs};

/// Show one trajectory as a conversation: each step as a turn with its class, tool calls and
/// their results linked by step number, long texts folded (--full shows them). Colours on a
/// terminal (not with NO_COLOR), plain text when piped; on a terminal the text goes through
/// $PAGER (default `less`, with LESS=FRX when LESS is unset), as git does. Control characters
/// of the data (escape sequences, carriage returns, backspaces) are shown escaped, as `\u{1b}`.
///
/// The file is read only up to the trajectory wanted (the first one by default).
///
/// Example: trajkit show out/trajectories.jsonl --id task-002/attempt-001
#[derive(Debug, Args)]
pub struct ShowArgs {
    /// A file of trajectories (ADP JSON lines or array, trajkit Parquet), or a directory.
    pub file: String,
    /// The trajectory with this id.
    #[arg(long, conflicts_with = "index")]
    pub id: Option<String>,
    /// The record at this 0-based position (default 0).
    #[arg(long, value_name = "N")]
    pub index: Option<u64>,
    /// Show every text whole (by default texts are folded after 1,000 bytes).
    #[arg(long)]
    pub full: bool,
    /// When to colour the output.
    #[arg(long, value_enum, default_value_t = When::Auto)]
    pub color: When,
    /// Never start a pager.
    #[arg(long)]
    pub no_pager: bool,
}

/// When to colour or page.
#[derive(Debug, Clone, Copy, PartialEq, Eq, ValueEnum)]
pub enum When {
    /// On a terminal, unless NO_COLOR is set.
    Auto,
    /// Always.
    Always,
    /// Never.
    Never,
}

/// Runs `show`.
pub fn run(args: ShowArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let wanted = match (&args.id, args.index) {
        (Some(id), _) => Wanted::Id(id.clone()),
        (None, n) => Wanted::Index(n.unwrap_or(0)),
    };
    let (traj, provenance) = find(
        std::slice::from_ref(&args.file),
        wanted,
        &global.run_options(),
        &trajkit::engine::pipeline::NoProgress,
        &|m| global.notice(m),
    )
    .map_err(|e| match e {
        ShowError::Config(c) => CliError::from(c),
        ShowError::Pipeline(p) => CliError::from(p),
        not_found => CliError {
            code: 1,
            message: not_found.to_string(),
        },
    })?;
    let terminal = std::io::stdout().is_terminal();
    let no_color = std::env::var_os("NO_COLOR").is_some_and(|v| !v.is_empty());
    let colour = match args.color {
        When::Always => true,
        When::Never => false,
        When::Auto => terminal && !no_color,
    };
    let limits = if args.full {
        Limits::FULL
    } else {
        Limits {
            text_bytes: FOLD_BYTES,
            ..Limits::FULL
        }
    };
    let text = render(
        &view(&traj, limits),
        &format!("{}:{}", provenance.file, provenance.line),
        Paint(colour),
    );
    if terminal && !args.no_pager && page(&text) {
        return Ok(0);
    }
    print(&text).map_err(CliError::io)?;
    Ok(0)
}

/// Pipes `text` through `$PAGER` (default `less`, with `LESS=FRX` unless `LESS` is set);
/// false when there is no pager to run (`PAGER` empty or `cat`, or it cannot start or is not
/// found).
fn page(text: &str) -> bool {
    let pager = std::env::var("PAGER").unwrap_or_else(|_| "less".to_owned());
    if pager.trim().is_empty() || pager.trim() == "cat" {
        return false;
    }
    let mut cmd = Command::new("sh");
    cmd.arg("-c").arg(&pager).stdin(Stdio::piped());
    if std::env::var_os("LESS").is_none() {
        cmd.env("LESS", "FRX");
    }
    let Ok(mut child) = cmd.spawn() else {
        return false;
    };
    if let Some(mut stdin) = child.stdin.take() {
        // The reader quitting early (q in less) closes the pipe: not an error.
        let _ = stdin.write_all(text.as_bytes());
    }
    // 127: the shell found no such command (no `less` installed): print instead.
    !matches!(child.wait().map(|s| s.code()), Ok(Some(127)))
}
