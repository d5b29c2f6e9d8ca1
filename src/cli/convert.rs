//! `trajkit convert`

use std::time::Instant;

use clap::{Arg, ArgAction, ArgMatches, Args, Command, FromArgMatches};
use trajkit::commands::convert::convert_inputs;
use trajkit::commands::inputs::plan;
use trajkit::config::convert::{named_converter, output_format, upgrade_options};
use trajkit::convert::{ConvertOptions, FormatOption, FormatOptions, OptionValue};
use trajkit::engine::output::warn;
use trajkit::formats;
use trajkit::model::AdpVersion;

use super::common::{open_stage_files, throughput, warn_empty, Capped, CliError, GlobalArgs};

/// Convert records of any supported format into ADP trajectories, one compact JSON object per
/// line. Every trajectory is validated before it is written.
///
/// `--from adp` reads ADP of any version (validating it in that version) and writes the version
/// chosen by --adp-version, upgrading on the way: tool-call links are backfilled for 1.3+,
/// available_code_languages is filled for 1.4+, available_apis becomes available_custom_tools
/// for 1.5. Writing an older version fails, per record, where the data does not fit it.
/// Rejected records go to --rejects with their diagnostics; exit code 1 when any was rejected.
#[derive(Debug, Args)]
#[command(after_help = EXAMPLES)]
pub struct ConvertArgs {
    /// Input files or directories; none or `-` reads stdin.
    pub inputs: Vec<String>,
    /// Input format (see `trajkit formats`), or `auto`: each input's format is detected from
    /// its first record and reported; an input no format claims, or more than one does, is
    /// refused. Standard input needs a named format.
    #[arg(long, default_value = "auto")]
    pub from: String,
    /// Convert with the declarative converter spec in this TOML file (see
    /// docs/specs.md); the spec is checked before any data is read.
    #[arg(long, value_name = "FILE", conflicts_with = "from")]
    pub spec: Option<String>,
    /// Output format: adp, or atif (ATIF v1.7, or v1.8 with --atif-version 1.8, built from
    /// ADP 1.5.0; what ATIF has no field for is kept in `extra.adp`, so `--from atif` gives the
    /// same ADP back).
    #[arg(long, default_value = "adp")]
    pub to: String,
    /// ADP version to write: 1.5.0 (default), 1.4.0 ... 1.0.0, or unversioned.
    #[arg(long, default_value = "1.5.0", value_name = "VERSION")]
    pub adp_version: AdpVersion,
    /// Output file (`-` for stdout). Written under a temporary name and renamed when complete.
    #[arg(short, long, default_value = "-", value_name = "FILE")]
    pub output: String,
    /// Write each rejected record, with its diagnostics, to this JSON-lines file.
    #[arg(long, value_name = "FILE")]
    pub rejects: Option<String>,
    /// Decode JSON-encoded strings in `details` into JSON values: a comma-separated list of
    /// keys, or `*` for every value that holds a JSON object or array (1.1.0+ only).
    #[arg(long, value_name = "KEYS")]
    pub decode_details: Option<String>,
    /// Reject a record whose reader could not map a value or met a line of the wrong type,
    /// rather than keep the value in `details` and count it (docs/inputs.md, "What a reader
    /// leaves out").
    #[arg(long)]
    pub strict: bool,
    #[command(flatten)]
    pub formats: FormatArgs,
}

/// Shown after the options, one example a line (kept out of the doc comment, which clap
/// re-wraps).
const EXAMPLES: &str = "Examples:
  trajkit convert logs/ -o std.jsonl --rejects rejects.jsonl      (formats detected)
  trajkit convert --from adp old.json.gz --adp-version 1.3.0 -o v13.jsonl
  trajkit convert std.jsonl --to atif -o trajectories.atif.jsonl";

/// The options the formats declare ([`FormatOption`]), as flags: one per option, named and
/// described by its declaration, so a format adds a flag by declaring an option in its folder
/// (docs/inputs.md, "Mapping options"). What a choice leaves out of the steps stays in
/// `details`.
#[derive(Debug, Clone, Default)]
pub struct FormatArgs {
    /// The values given on the command line.
    pub options: FormatOptions,
}

impl Args for FormatArgs {
    fn augment_args(cmd: Command) -> Command {
        let cmd = cmd.next_help_heading("Format options");
        formats::options().fold(cmd, |cmd, o| cmd.arg(format_flag(o)))
    }

    fn augment_args_for_update(cmd: Command) -> Command {
        Self::augment_args(cmd)
    }
}

/// The flag of option `o`.
fn format_flag(o: &'static FormatOption) -> Arg {
    let parser: clap::builder::ValueParser = match o.default {
        OptionValue::Bool(_) => clap::value_parser!(bool),
        OptionValue::Int(_) => clap::value_parser!(i64).into(),
        OptionValue::Choice(_, names) => clap::builder::PossibleValuesParser::new(names).into(),
    };
    Arg::new(o.key)
        .long(o.flag)
        .value_name(o.value_name)
        .help(format!("{} [default: {}]", o.help, o.default))
        .action(ArgAction::Set)
        .value_parser(parser)
}

impl FromArgMatches for FormatArgs {
    fn from_arg_matches(matches: &ArgMatches) -> Result<Self, clap::Error> {
        let mut args = FormatArgs::default();
        args.update_from_arg_matches(matches)?;
        Ok(args)
    }

    fn update_from_arg_matches(&mut self, matches: &ArgMatches) -> Result<(), clap::Error> {
        for o in formats::options() {
            let value = match o.default {
                OptionValue::Bool(_) => matches
                    .get_one::<bool>(o.key)
                    .copied()
                    .map(OptionValue::Bool),
                OptionValue::Int(_) => matches.get_one::<i64>(o.key).copied().map(OptionValue::Int),
                OptionValue::Choice(..) => match matches.get_one::<String>(o.key) {
                    Some(name) => Some(OptionValue::choice(o, name).map_err(|e| {
                        clap::Error::raw(clap::error::ErrorKind::ValueValidation, e)
                    })?),
                    None => None,
                },
            };
            if let Some(v) = value {
                self.options
                    .set(o, v)
                    .map_err(|e| clap::Error::raw(clap::error::ErrorKind::ValueValidation, e))?;
            }
        }
        Ok(())
    }
}

/// Runs `convert`.
pub fn run(args: ConvertArgs, global: &GlobalArgs) -> Result<u8, CliError> {
    let named = named_converter(&args.from, args.spec.as_deref())?;
    let to = output_format(&args.to, args.adp_version)?;
    let upgrade = upgrade_options(args.adp_version, args.decode_details.as_deref())?;
    let plan = plan(&args.inputs, named, &|m| global.notice(m))?;
    let inputs: Vec<String> = plan.iter().map(|(p, _)| p.clone()).collect();
    let files = open_stage_files(&args.output, args.rejects.as_deref(), None)?;
    let opts = ConvertOptions {
        to,
        upgrade,
        run: global.run_options(),
        mapping: args.formats.options,
        strict: args.strict,
        inputs: std::sync::Arc::new(inputs.clone()),
    };
    let shown = Capped::stderr(global);
    let started = Instant::now();
    let bar = global.progress(&inputs, "convert");
    let summary = convert_inputs(
        &plan,
        &opts,
        &bar,
        files.output,
        files.rejects,
        Box::new(shown),
    )?;
    bar.finish();
    warn_empty(global, summary.empty_inputs.iter().map(String::as_str));
    if !global.quiet {
        for w in &summary.warnings {
            warn(format_args!("trajkit: warning: {w}"));
        }
    }
    let speed = throughput(bar.bytes_read(), started);
    for line in summary.lines(&args.adp_version, &speed) {
        global.summary(format_args!("{line}"));
    }
    Ok(u8::from(summary.rejected > 0))
}
