//! A pipeline file (TOML; `trajkit schema pipeline`, docs/pipeline.md): read, checked against
//! the schema and every stage's own rules, its paths resolved against its directory.
//!
//! Every problem is reported with the file, the line and the key (`p.toml:7:
//! export.0.shard_rowz: ...`), all of them at once.

use std::path::{Component, Path, PathBuf};

use serde::Deserialize;
use serde_json::{json, Map, Value};

use super::convert::{self, ConvertConfig};
use super::export::ExportConfig;
use super::join::JoinConfig;
use super::partition::PartitionConfig;
use super::redact::RedactConfig;
use super::report::ReportConfig;
use super::validate::ValidateConfig;
use super::ConfigError;
use crate::export::{InferTools, Target};
use crate::filter::FilterConfig;
use crate::ingest::inputs::is_glob;
use crate::located::{LocatedDoc, LocatedError};
use crate::validate::schemas::pipeline_validator;

/// `trajkit join` options that are not pipeline keys, and where the pipeline says the same
/// thing.
pub const JOIN_ELSEWHERE: &[(&str, &str)] = &[
    ("inputs", "[[input]] (the converted trajectories flow in)"),
    ("output", "an [[export]] with to = \"adp\""),
    ("rejects", "[validate] rejects"),
    ("summary_json", "run.json in each export directory"),
    (
        "adp_version",
        "joins write 1.5.0 (exports read 1.5.0); [convert] adp_version checks the conversion",
    ),
];

/// `trajkit export` options that are not pipeline keys.
pub const EXPORT_ELSEWHERE: &[(&str, &str)] = &[
    ("inputs", "[[input]]"),
    ("rejects", "[validate] rejects"),
    ("redact", "a [redact] table (redaction before every export)"),
    ("hash_key", "[redact] hash_key_env"),
    ("private_ips", "[redact] private_ips"),
    ("rules", "[redact] rules"),
];

/// Keys holding paths, resolved against the pipeline file's directory.
const PATH_KEYS: &[&str] = &[
    "path",
    "spec",
    "rejects",
    "reflections",
    "rewards",
    "output",
    "tools",
    "system_prompt",
    "chat_template",
    "tokenizer",
    "rules",
];

/// An `[[input]]`: a path (or glob) and how to read it.
#[derive(Debug, Clone, Deserialize, schemars::JsonSchema)]
#[serde(deny_unknown_fields)]
#[schemars(inline, extend("not" = {"required": ["format", "spec"]}))]
pub struct Input {
    /// A file, a directory or a glob pattern (`logs/**/*.jsonl`, `runs/*/trajectory.json`:
    /// `*`, `?`, `[...]`, `**` for any directories; matches sorted, hidden files not matched,
    /// no match is an error), resolved against the pipeline file's directory. Stdin is not read
    /// by pipelines.
    #[schemars(length(min = 1))]
    pub path: String,
    /// A format of `trajkit formats`, or auto (detected per input file).
    #[serde(default = "auto")]
    #[schemars(length(min = 1))]
    pub format: String,
    /// A declarative converter spec (TOML) instead of format.
    #[schemars(length(min = 1))]
    pub spec: Option<String>,
    /// `path` is a glob pattern.
    #[serde(skip)]
    pub glob: bool,
}

fn auto() -> String {
    "auto".to_owned()
}

/// A pipeline file, checked, with its paths resolved.
#[derive(Debug, Clone)]
pub struct Pipeline {
    /// The file, as given.
    pub file: String,
    /// The file's directory, lexically normalized (`.` for the current one).
    pub dir: String,
    /// `[[input]]`, in order.
    pub inputs: Vec<Input>,
    /// `[partition]`.
    pub partition: PartitionConfig,
    /// `[convert]`.
    pub convert: ConvertConfig,
    /// `[validate]`.
    pub validate: ValidateConfig,
    /// `[[join]]`, in order.
    pub joins: Vec<JoinConfig>,
    /// `[filter]`: which trajectories go on to the exports, after the joins, when present.
    pub filter: Option<FilterConfig>,
    /// `[redact]`: redaction before every export, when present.
    pub redact: Option<RedactConfig>,
    /// `[[export]]`, in order.
    pub exports: Vec<ExportConfig>,
    /// `[report]`: the page `trajkit report` writes of the run's first `adp` or `parquet`
    /// export (and its rejects), after a run that is not a partition.
    pub report: Option<ReportConfig>,
}

impl Pipeline {
    /// The output directory of the export the `[report]` reads: the first `adp` export, else
    /// the first `parquet` one.
    pub fn report_export(&self) -> Option<&str> {
        [Target::Adp, Target::Parquet].iter().find_map(|t| {
            self.exports
                .iter()
                .find(|e| e.to == *t)
                .map(|e| e.output.as_str())
        })
    }
}

/// Problems of a pipeline file, each located.
struct Problems {
    file: String,
    doc: LocatedDoc,
    list: Vec<LocatedError>,
}

impl Problems {
    fn add(&mut self, pointer: String, message: impl Into<String>) {
        self.list.push(LocatedError {
            file: self.file.clone(),
            line: self.doc.line(&pointer),
            pointer,
            message: message.into(),
        });
    }

    fn into_error(self) -> ConfigError {
        let lines: Vec<String> = self.list.iter().map(|e| e.to_string()).collect();
        ConfigError::Invalid(format!(
            "the pipeline file is invalid:\n{}",
            lines.join("\n")
        ))
    }

    /// A section or table deserialized, its problems added (located at the key that has
    /// them).
    fn parse<T: for<'de> Deserialize<'de>>(&mut self, pointer: &str, value: &Value) -> Option<T> {
        match serde_path_to_error::deserialize(value) {
            Ok(t) => Some(t),
            Err(e) => {
                let key = e.path().iter().find_map(|s| match s {
                    serde_path_to_error::Segment::Map { key } => Some(key.clone()),
                    _ => None,
                });
                let at = match key {
                    Some(k) => format!("{pointer}/{k}"),
                    None => pointer.to_owned(),
                };
                self.add(at, e.inner().to_string());
                None
            }
        }
    }
}

/// `base/path` with `.` and `..` resolved lexically (so `sample_data/../out` is `out`, and the
/// paths recorded in the outputs are those a user would type from the same directory).
pub fn resolve(base: &Path, path: &str) -> String {
    let p = Path::new(path);
    if p.is_absolute() || path == "-" {
        return path.to_owned();
    }
    let mut out = PathBuf::new();
    for c in base.join(p).components() {
        match c {
            Component::CurDir => {}
            Component::ParentDir
                if matches!(out.components().next_back(), Some(Component::Normal(_))) =>
            {
                out.pop();
            }
            other => out.push(other),
        }
    }
    if out.as_os_str().is_empty() {
        ".".to_owned()
    } else {
        out.to_string_lossy().into_owned()
    }
}

fn resolve_paths(value: &mut Value, base: &Path) {
    match value {
        Value::Object(map) => {
            for (k, v) in map.iter_mut() {
                if PATH_KEYS.contains(&k.as_str()) {
                    match v {
                        Value::String(s) => *s = resolve(base, s),
                        Value::Array(items) => {
                            for i in items.iter_mut() {
                                if let Value::String(s) = i {
                                    *s = resolve(base, s);
                                }
                            }
                        }
                        _ => {}
                    }
                } else {
                    resolve_paths(v, base);
                }
            }
        }
        Value::Array(items) => items.iter_mut().for_each(|i| resolve_paths(i, base)),
        _ => {}
    }
}

/// Reads and checks the pipeline file at `path`.
pub fn load(path: &str) -> Result<Pipeline, ConfigError> {
    let text = std::fs::read_to_string(path)
        .map_err(|e| ConfigError::Io(format!("cannot read {path}: {e}")))?;
    parse(path, &text)
}

/// Checks the pipeline file `path` whose text is `text`: TOML syntax, the schema, every
/// stage's options. Paths in it are resolved against `path`'s directory.
pub fn parse(path: &str, text: &str) -> Result<Pipeline, ConfigError> {
    let mut doc = LocatedDoc::parse(text).map_err(|e| {
        ConfigError::Invalid(format!(
            "the pipeline file is invalid:\n{path}:{}: {}",
            e.line, e.message
        ))
    })?;
    let mut value = std::mem::take(&mut doc.value);
    let mut problems = Problems {
        file: path.to_owned(),
        doc,
        list: Vec::new(),
    };
    not_pipeline_keys(&value, &mut problems);
    if !problems.list.is_empty() {
        return Err(problems.into_error());
    }
    let schema = pipeline_validator();
    if !schema.is_valid(&value) {
        for e in schema.iter_errors(&value) {
            let mut pointer = e.instance_path().as_str().to_owned();
            // An unknown key is reported at the key itself.
            if let jsonschema::error::ValidationErrorKind::AdditionalProperties { unexpected } =
                e.kind()
            {
                if let Some(k) = unexpected.first() {
                    pointer = format!("{pointer}/{k}");
                }
            }
            problems.add(pointer, e.to_string());
        }
        return Err(problems.into_error());
    }
    let base = Path::new(path).parent().unwrap_or(Path::new(""));
    let raw_inputs: Vec<String> = match value.get("input") {
        Some(Value::Array(items)) => items
            .iter()
            .map(|i| i["path"].as_str().unwrap_or_default().to_owned())
            .collect(),
        _ => Vec::new(),
    };
    resolve_paths(&mut value, base);
    let section = |key: &str| value.get(key).cloned().unwrap_or(Value::Null);
    let mut inputs: Vec<Input> = problems
        .parse("/input", &section("input"))
        .unwrap_or_default();
    for (i, (input, raw)) in inputs.iter_mut().zip(&raw_inputs).enumerate() {
        if !is_glob(raw) || Path::new(raw).is_absolute() {
            input.glob = is_glob(raw);
        } else {
            // The directory is a literal prefix of the pattern, whatever characters it holds.
            let escaped = glob::Pattern::escape(&base.to_string_lossy());
            input.path = resolve(Path::new(&escaped), raw);
            input.glob = true;
        }
        if let (true, Err(e)) = (input.glob, glob::Pattern::new(&input.path)) {
            problems.add(
                format!("/input/{i}/path"),
                format!("not a valid glob pattern: {e}"),
            );
        }
        if input.path == "-" {
            problems.add(
                format!("/input/{i}/path"),
                "stdin cannot be a pipeline input (a pipeline may read its inputs twice)",
            );
        }
    }
    let or_default = |v: Value| if v.is_null() { json!({}) } else { v };
    // The formats' options are checked apart, each problem at its key.
    let mut convert_table = or_default(section("convert"));
    let mut format_keys = Map::new();
    if let Value::Object(table) = &mut convert_table {
        let keys: Vec<String> = table
            .keys()
            .filter(|k| !convert::FIXED_KEYS.contains(&k.as_str()))
            .cloned()
            .collect();
        for k in keys {
            if let Some(v) = table.remove(&k) {
                format_keys.insert(k, v);
            }
        }
    }
    let formats = convert::format_options(&format_keys).unwrap_or_else(|list| {
        for (key, message) in list {
            problems.add(format!("/convert/{key}"), message);
        }
        Default::default()
    });
    let mut convert: ConvertConfig = problems
        .parse("/convert", &convert_table)
        .unwrap_or_default();
    convert.formats = formats;
    let partition: PartitionConfig = problems
        .parse("/partition", &or_default(section("partition")))
        .unwrap_or_default();
    let validate: ValidateConfig = problems
        .parse("/validate", &or_default(section("validate")))
        .unwrap_or_default();
    let filter: Option<FilterConfig> = match section("filter") {
        Value::Null => None,
        v => problems.parse("/filter", &v),
    };
    let redact: Option<RedactConfig> = match section("redact") {
        Value::Null => None,
        v => problems.parse("/redact", &v),
    };
    let tables = |key: &str| match value.get(key) {
        Some(Value::Array(items)) => items.clone(),
        _ => Vec::new(),
    };
    let joins: Vec<JoinConfig> = tables("join")
        .iter()
        .enumerate()
        .filter_map(|(i, t)| problems.parse(&format!("/join/{i}"), t))
        .collect();
    let mut exports: Vec<ExportConfig> = tables("export")
        .iter()
        .enumerate()
        .filter_map(|(i, t)| problems.parse(&format!("/export/{i}"), t))
        .collect();
    let report: Option<ReportConfig> = match section("report") {
        Value::Null => None,
        v => problems.parse("/report", &v),
    };
    let reads_trajectories = exports.iter().any(|e| e.to.holds_trajectories());
    if report.is_some() && !reads_trajectories {
        problems.add(
            "/report".into(),
            "[report] reads an adp or parquet export of the run: add one (the SFT targets hold \
             conversations, not trajectories)",
        );
    }
    if !problems.list.is_empty() {
        return Err(problems.into_error());
    }
    // `run` is one streaming pass that reads each record once, so its SFT exports (and those
    // that count tokens) infer tool specs per trajectory unless a pipeline asks for
    // `infer_tools = "dataset"`, which costs a first pass over every input (`export`, which
    // reads ADP files, defaults to "dataset").
    for e in exports
        .iter_mut()
        .filter(|e| e.to.is_sft() || e.counts_tokens())
    {
        e.infer_tools.get_or_insert(InferTools::Trajectory);
    }
    Ok(Pipeline {
        file: path.to_owned(),
        dir: resolve(base, "."),
        inputs,
        partition,
        convert,
        validate,
        joins,
        filter,
        redact,
        exports,
        report,
    })
}

/// Keys that are options of a command but not of a pipeline, each reported with where the
/// pipeline says the same thing.
fn not_pipeline_keys(value: &Value, problems: &mut Problems) {
    if value.get("resume").is_some() {
        problems.add(
            "/resume".to_owned(),
            "not a pipeline key: resuming an interrupted run is chosen on the command line \
             (--resume)",
        );
    }
    if value.get("progress").is_some() {
        problems.add(
            "/progress".to_owned(),
            "not a pipeline key: how a run reports is chosen on the command line \
             (--progress json)",
        );
    }
    for (kind, elsewhere) in [("join", JOIN_ELSEWHERE), ("export", EXPORT_ELSEWHERE)] {
        let Some(Value::Array(tables)) = value.get(kind) else {
            continue;
        };
        for (i, t) in tables.iter().enumerate() {
            for (key, instead) in elsewhere {
                if t.get(*key).is_some() {
                    problems.add(
                        format!("/{kind}/{i}/{key}"),
                        format!(
                            "not a pipeline key (`{kind} --{}`): use {instead}",
                            key.replace('_', "-")
                        ),
                    );
                }
            }
        }
    }
}

impl Pipeline {
    /// The effective configuration as JSON: every key with its value or default, paths
    /// resolved (what `run --print-config --json` prints, and what a run's journal is
    /// keyed by).
    pub fn effective(&self) -> Value {
        let inputs: Vec<Value> = self
            .inputs
            .iter()
            .map(|i| match &i.spec {
                Some(s) => json!({"path": i.path, "spec": s}),
                None => json!({"path": i.path, "format": i.format}),
            })
            .collect();
        let c = &self.convert;
        let mut convert = json!({"adp_version": c.adp_version.to_string()});
        for o in crate::formats::options() {
            convert[o.key] = c.formats.get(o).to_json();
        }
        if let Some(d) = &c.decode_details {
            convert["decode_details"] = json!(d);
        }
        if c.strict {
            convert["strict"] = json!(true);
        }
        let mut validate = json!({"max_reject_rate": self.validate.max_reject_rate});
        if let Some(r) = &self.validate.rejects {
            validate["rejects"] = json!(r);
        }
        let mut out = json!({
            "input": inputs,
            "convert": convert,
            "validate": validate,
            "partition": {"by": self.partition.by.name()},
        });
        if !self.joins.is_empty() {
            out["join"] = json!(self.joins);
        }
        if let Some(f) = &self.filter {
            out["filter"] = json!(f);
        }
        if let Some(r) = &self.report {
            out["report"] = json!({"output": r.output});
        }
        if let Some(r) = &self.redact {
            out["redact"] = json!(r);
        }
        out["export"] = json!(self.exports);
        out
    }

    /// The effective configuration as TOML (what `run --print-config` prints).
    pub fn effective_toml(&self) -> String {
        to_toml(&self.effective())
    }

    /// A stage's problem, located at its table: `FILE: export[2]: message`.
    pub fn stage_error(&self, kind: &str, i: usize, e: ConfigError) -> ConfigError {
        let located = |m: String| format!("{}: {kind}[{}]: {m}", self.file, i + 1);
        match e {
            ConfigError::Invalid(m) => ConfigError::Invalid(located(m)),
            ConfigError::Io(m) => ConfigError::Io(located(m)),
        }
    }

    /// Refuses exports that would write the same files: two with one `output`, or one inside
    /// another's, or the rejects file inside an export's directory (paths compared as
    /// resolved from the pipeline file, component by component).
    pub fn check_outputs(&self) -> Result<(), ConfigError> {
        let outputs: Vec<&Path> = self.exports.iter().map(|e| Path::new(&e.output)).collect();
        for (i, out) in outputs.iter().enumerate() {
            for (j, other) in outputs.iter().enumerate().take(i) {
                let problem = if out == other {
                    format!("its output {} is export[{}]'s too", out.display(), j + 1)
                } else if out.starts_with(other) || other.starts_with(out) {
                    let (inner, outer) = if out.starts_with(other) {
                        (out, other)
                    } else {
                        (other, out)
                    };
                    format!(
                        "its output and export[{}]'s nest ({} is inside {})",
                        j + 1,
                        inner.display(),
                        outer.display()
                    )
                } else {
                    continue;
                };
                return Err(self.stage_error(
                    "export",
                    i,
                    ConfigError::Invalid(format!(
                        "{problem}; each export needs a directory of its own"
                    )),
                ));
            }
        }
        if let Some(rejects) = self.validate.rejects.as_deref().filter(|r| *r != "-") {
            let inside = outputs
                .iter()
                .enumerate()
                .find(|(_, o)| Path::new(rejects).starts_with(o));
            if let Some((i, dir)) = inside {
                return Err(ConfigError::Invalid(format!(
                    "{}: [validate] rejects: {rejects} is inside the directory of export[{}] \
                     ({}); write it elsewhere",
                    self.file,
                    i + 1,
                    dir.display()
                )));
            }
        }
        Ok(())
    }

    /// The key an input is partitioned by: its path relative to the pipeline file's
    /// directory (so machines that mount the data in different places agree), or as given
    /// when it is outside that directory.
    pub fn partition_key(&self, path: &str) -> String {
        partition_key(&self.dir, path)
    }
}

fn partition_key(dir: &str, path: &str) -> String {
    if dir == "." {
        return path.to_owned();
    }
    match Path::new(path).strip_prefix(dir) {
        Ok(rel) => rel.to_string_lossy().into_owned(),
        Err(_) => path.to_owned(),
    }
}

/// TOML for the effective configuration: tables of scalars and arrays of scalars, and arrays of
/// such tables. JSON strings and numbers are valid TOML.
fn to_toml(config: &Value) -> String {
    let mut out = String::from(
        "# trajkit run --print-config: paths are relative to the directory trajkit ran in\n",
    );
    let scalars = |out: &mut String, table: &Map<String, Value>| {
        for (k, v) in table {
            out.push_str(&format!("{k} = {v}\n"));
        }
    };
    let Some(top) = config.as_object() else {
        return out;
    };
    for (name, v) in top {
        match v {
            Value::Object(t) => {
                out.push_str(&format!("\n[{name}]\n"));
                scalars(&mut out, t);
            }
            Value::Array(items) => {
                for t in items.iter().filter_map(Value::as_object) {
                    out.push_str(&format!("\n[[{name}]]\n"));
                    scalars(&mut out, t);
                }
            }
            _ => {}
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partition_keys_are_relative_to_the_pipeline_directory() {
        assert_eq!(
            partition_key("/mnt/a/p", "/mnt/a/p/logs/x.jsonl"),
            "logs/x.jsonl"
        );
        assert_eq!(partition_key("data", "data/logs/x.jsonl"), "logs/x.jsonl");
        assert_eq!(partition_key(".", "logs/x.jsonl"), "logs/x.jsonl");
        assert_eq!(
            partition_key("data", "/elsewhere/x.jsonl"),
            "/elsewhere/x.jsonl"
        );
    }

    #[test]
    fn paths_resolve_lexically() {
        assert_eq!(resolve(Path::new("sample_data"), "../out/pq"), "out/pq");
        assert_eq!(resolve(Path::new("sample_data"), "."), "sample_data");
        assert_eq!(resolve(Path::new(""), "a/b"), "a/b");
        assert_eq!(resolve(Path::new("x"), "/abs"), "/abs");
        assert_eq!(resolve(Path::new(""), ".."), "..");
    }

    /// Problems the schema lets through are each reported at their key, all of them: a
    /// format option's value and the ADP version.
    #[test]
    fn convert_problems_are_located_at_their_keys() {
        let text = "[[input]]\npath = \"x\"\n[convert]\nadp_version = \"9.9\"\nidle_gap = 1.0\n\
                    [[export]]\nto = \"hf\"\noutput = \"o\"\n";
        let Err(ConfigError::Invalid(message)) = parse("p.toml", text) else {
            panic!("the pipeline is refused");
        };
        assert!(
            message.contains("p.toml:5: convert.idle_gap: not a integer")
                && message.contains("p.toml:4: convert.adp_version: unsupported"),
            "{message}"
        );
        let ok = parse("p.toml", &text.replace("9.9", "1.3").replace("1.0", "5"));
        let convert = ok.expect("valid").convert;
        assert_eq!(convert.adp_version, crate::model::AdpVersion::V1_3);
        assert_eq!(
            convert.formats.get(&crate::formats::ledgermind::IDLE_GAP),
            crate::convert::OptionValue::Int(5)
        );
    }

    /// Every key of a `[[join]]`, `[[export]]` and `[filter]` table in the pipeline schema is a field of
    /// the stage's config, and every field is a key.
    #[test]
    fn stage_configs_and_the_schema_have_the_same_keys() {
        let schema: Value =
            serde_json::from_str(crate::validate::schemas::PIPELINE_SCHEMA).expect("schema");
        let full_join = JoinConfig {
            reflections: vec!["r".into()],
            rewards: vec!["w".into()],
            key: "/k".parse().ok(),
            reflections_key: "/k".parse().ok(),
            rewards_key: "/k".parse().ok(),
            trajectory_key: "id".parse().ok(),
            value: Some("/v".into()),
            components: Some("/c".into()),
            outcome: Some("/o".into()),
            step_rewards: Some("/s".into()),
            text: Some("/t".into()),
            ..JoinConfig::default()
        };
        let export: ExportConfig =
            serde_json::from_value(json!({"to": "openai", "output": "o"})).expect("export");
        let full_export = ExportConfig {
            thoughts: Some(crate::export::Thoughts::Drop),
            code_tool: vec!["x=y".into()],
            tools: Some("t".into()),
            infer_tools: Some(InferTools::Dataset),
            system_prompt: Some("s".into()),
            split: Some("train=1".into()),
            shard_rows: Some(1),
            shard_bytes: Some(1),
            compress: Some("zstd".into()),
            min_reward: Some(0.5),
            outcome: vec!["success".into()],
            max_steps: Some(1),
            max_chars: Some(1),
            chat_template: Some("t".into()),
            chat_template_name: Some("n".into()),
            tokenizer: Some("t".into()),
            max_tokens: Some(1),
            max_message_bytes: Some(1),
            segments: crate::segment::Mode::Compaction,
            ..export
        };
        let full_filter = FilterConfig {
            min_reward: Some(0.5),
            outcome: vec!["success".into()],
            min_steps: Some(1),
            max_steps: Some(1),
            max_chars: Some(1),
        };
        for (kind, config) in [
            ("join", json!(full_join)),
            ("export", json!(full_export)),
            ("filter", json!(full_filter)),
        ] {
            let mut fields: Vec<&String> = config.as_object().expect("object").keys().collect();
            let table = match kind {
                "filter" => &schema["properties"][kind],
                _ => &schema["$defs"][kind],
            };
            let mut keys: Vec<&String> = table["properties"]
                .as_object()
                .expect("properties")
                .keys()
                .collect();
            fields.sort();
            keys.sort();
            assert_eq!(fields, keys, "{kind}");
        }
    }
}
