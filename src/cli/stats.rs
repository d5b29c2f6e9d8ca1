//! `trajkit stats`

use clap::Args;
use trajkit::commands::inputs::expand_adp;
use trajkit::commands::stats::{stats_inputs, table};
use trajkit::config::export::ExportConfig;
use trajkit::engine::output::print;
use trajkit::export::ExportOptions;

use super::common::{CliError, GlobalArgs};

/// Count what ADP trajectories contain: steps by class, actions and observations, languages,
/// functions, text sizes. Invalid records are counted, not described (see `validate`).
///
/// Example: trajkit stats std.jsonl --json
#[derive(Debug, Args)]
pub struct StatsArgs {
    /// Input files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// Print one JSON object instead of a table.
    #[arg(long)]
    pub json: bool,
    /// How many functions and languages to list in the table (all are in --json).
    #[arg(long, default_value_t = 10, value_name = "N")]
    pub top: usize,
    #[command(flatten)]
    pub tokens: TokenArgs,
}

/// Token counting, for `stats` and `report`.
#[derive(Debug, Args)]
pub struct TokenArgs {
    /// Count tokens with this chat template (a Jinja file or a tokenizer_config.json), as
    /// `export --to tokens` renders (needs --tokenizer).
    #[arg(long, value_name = "FILE", requires = "tokenizer")]
    pub chat_template: Option<String>,
    /// Which template of a tokenizer_config.json that holds several.
    #[arg(long, value_name = "NAME", requires = "chat_template")]
    pub chat_template_name: Option<String>,
    /// Count tokens with this tokenizer.json (needs --chat-template).
    #[arg(long, value_name = "FILE", requires = "chat_template")]
    pub tokenizer: Option<String>,
}

/// The options of a `--to tokens` export that counts tokens as `args` ask, if they do;
/// `max_tokens` is the model's context (`report --context`).
pub fn token_options(
    args: &TokenArgs,
    max_tokens: Option<usize>,
    inputs: &[String],
    global: &GlobalArgs,
) -> Result<Option<ExportOptions>, CliError> {
    let (Some(template), Some(tokenizer)) = (&args.chat_template, &args.tokenizer) else {
        return Ok(None);
    };
    let config: ExportConfig = serde_json::from_value(serde_json::json!({
        "to": "tokens",
        "output": "",
        "chat_template": template,
        "chat_template_name": args.chat_template_name,
        "tokenizer": tokenizer,
        "max_tokens": max_tokens,
        "infer_tools": "trajectory",
    }))
    .map_err(|e| CliError::usage(e.to_string()))?;
    Ok(Some(config.options(inputs, global.run_options())?))
}

/// Runs `stats`.
pub fn run(args: StatsArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let inputs = expand_adp(&args.inputs, &|m| global.notice(m))?;
    let tokens = token_options(&args.tokens, None, &inputs, global)?;
    let bar = global.progress(&inputs, "stats");
    let stats = stats_inputs(&inputs, &global.run_options(), &bar, tokens.as_ref())?;
    bar.finish();
    if args.json {
        let text = serde_json::to_string_pretty(&stats).map_err(CliError::io)?;
        print(&format!("{text}\n")).map_err(CliError::io)?;
    } else {
        print(&table(&stats, args.top)).map_err(CliError::io)?;
    }
    Ok(u8::from(stats.invalid > 0))
}
