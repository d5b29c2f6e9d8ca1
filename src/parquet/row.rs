//! A trajectory taken apart into the values of one Parquet row, from a borrowed trajectory (so
//! the export that owns it can be another one): strings are copied, free-form values serialized
//! to JSON text, here on the worker threads.

use serde_json::Value;

use crate::model::step::{Source, Step};
use crate::model::Trajectory;

/// One `steps` element: the class tag and the fields that class has (the others stay `None`).
#[derive(Debug, Default, Clone, PartialEq)]
pub struct StepRow {
    /// `api_action`, `code_action`, ...
    pub class: &'static str,
    /// The text content of code, message, text and image steps.
    pub content: Option<String>,
    /// A `json_observation`'s content, as JSON text.
    pub content_json: Option<String>,
    /// `code_action.language`.
    pub language: Option<String>,
    /// `api_action.function`.
    pub function: Option<String>,
    /// `api_action.kwargs`, as JSON text.
    pub kwargs: Option<String>,
    /// The actions' `description`.
    pub description: Option<String>,
    /// The actions' `reasoning_content`.
    pub reasoning_content: Option<String>,
    /// Text and JSON observations' `name`.
    pub name: Option<String>,
    /// Observations' `source`.
    pub source: Option<&'static str>,
    /// `image_observation.annotations`, as JSON text.
    pub annotations: Option<String>,
    /// `web_observation.html`.
    pub html: Option<String>,
    /// `web_observation.axtree`.
    pub axtree: Option<String>,
    /// `web_observation.url`.
    pub url: Option<String>,
    /// `web_observation.image_observation`, as JSON text (with its `class_` tag).
    pub image: Option<String>,
    /// `web_observation.viewport_size`, as JSON text.
    pub viewport_size: Option<String>,
    /// Every class's `tool_call_id`.
    pub tool_call_id: Option<String>,
    /// Every class's `reward`.
    pub reward: Option<f64>,
}

impl StepRow {
    /// The string fields after `class`, in schema order.
    pub fn strings(&self) -> [Option<&str>; 16] {
        [
            self.content.as_deref(),
            self.content_json.as_deref(),
            self.language.as_deref(),
            self.function.as_deref(),
            self.kwargs.as_deref(),
            self.description.as_deref(),
            self.reasoning_content.as_deref(),
            self.name.as_deref(),
            self.source,
            self.annotations.as_deref(),
            self.html.as_deref(),
            self.axtree.as_deref(),
            self.url.as_deref(),
            self.image.as_deref(),
            self.viewport_size.as_deref(),
            self.tool_call_id.as_deref(),
        ]
    }
}

/// One reflection from `details.reflections`.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct ReflectionRow {
    /// `source`, `key`, `text`, `timestamp`, `kind`, `root_cause`, `failure_category` (the
    /// order of [`super::schema::REFLECTION_TEXT_FIELDS`]).
    pub texts: [Option<String>; 7],
    /// `iteration`.
    pub iteration: Option<i64>,
    /// `lessons`.
    pub lessons: Option<Vec<String>>,
    /// `insights`.
    pub insights: Option<Vec<String>>,
    /// `confidence`.
    pub confidence: Option<f64>,
}

/// The values of one row.
#[derive(Debug, Default, Clone, PartialEq)]
pub struct Row {
    /// `id`.
    pub id: String,
    /// `schema_version`.
    pub schema_version: Option<String>,
    /// `details.source.format`.
    pub source_format: Option<String>,
    /// `details.outcome.status` (or `details.outcome` when it is a string).
    pub outcome: Option<String>,
    /// `details.reward`.
    pub reward: Option<f64>,
    /// The numeric members of `details.reward_components`.
    pub reward_components: Option<Vec<(String, f64)>>,
    /// The objects of `details.reflections`.
    pub reflections: Option<Vec<ReflectionRow>>,
    /// Steps, actions, observations, characters of free text.
    pub counts: [i64; 4],
    /// `available_custom_tools`.
    pub available_custom_tools: Option<Vec<String>>,
    /// `available_code_languages`.
    pub available_code_languages: Option<Vec<String>>,
    /// `content`, one element per step.
    pub steps: Vec<StepRow>,
    /// `details` as JSON text.
    pub details: String,
    /// `n_tokens`: the trajectory's token count, in the files of an export that counts tokens
    /// (`--chat-template`, `--tokenizer`).
    pub n_tokens: Option<i32>,
    /// Bytes of data in the row (string bytes, 8 per number): what row groups and shards are
    /// cut by.
    pub bytes: u64,
}

fn json(value: &impl serde::Serialize) -> Result<String, serde_json::Error> {
    serde_json::to_string(value)
}

fn step_row(step: &Step) -> Result<StepRow, serde_json::Error> {
    let class = step.class_name();
    let source = |s: Source| Some(s.as_str());
    Ok(match step {
        Step::ApiAction(a) => StepRow {
            class,
            function: Some(a.function.clone()),
            kwargs: Some(json(&a.kwargs)?),
            description: a.description.clone(),
            reasoning_content: a.reasoning_content.clone(),
            tool_call_id: a.tool_call_id.clone(),
            reward: a.reward,
            ..StepRow::default()
        },
        Step::CodeAction(c) => StepRow {
            class,
            language: Some(c.language.clone()),
            content: Some(c.content.clone()),
            description: c.description.clone(),
            reasoning_content: c.reasoning_content.clone(),
            tool_call_id: c.tool_call_id.clone(),
            reward: c.reward,
            ..StepRow::default()
        },
        Step::MessageAction(m) => StepRow {
            class,
            content: Some(m.content.clone()),
            description: m.description.clone(),
            reasoning_content: m.reasoning_content.clone(),
            tool_call_id: m.tool_call_id.clone(),
            reward: m.reward,
            ..StepRow::default()
        },
        Step::TextObservation(t) => StepRow {
            class,
            content: Some(t.content.clone()),
            name: t.name.clone(),
            source: source(t.source),
            tool_call_id: t.tool_call_id.clone(),
            reward: t.reward,
            ..StepRow::default()
        },
        Step::ImageObservation(i) => StepRow {
            class,
            content: Some(i.content.clone()),
            annotations: i.annotations.as_ref().map(json).transpose()?,
            source: source(i.source),
            tool_call_id: i.tool_call_id.clone(),
            reward: i.reward,
            ..StepRow::default()
        },
        Step::WebObservation(w) => StepRow {
            class,
            html: w.html.clone(),
            axtree: w.axtree.clone(),
            url: w.url.clone(),
            image: w.image_observation.as_ref().map(json).transpose()?,
            viewport_size: w.viewport_size.as_ref().map(json).transpose()?,
            tool_call_id: w.tool_call_id.clone(),
            reward: w.reward,
            ..StepRow::default()
        },
        Step::JsonObservation(j) => StepRow {
            class,
            content_json: Some(json(&j.content)?),
            name: j.name.clone(),
            source: source(j.source),
            tool_call_id: j.tool_call_id.clone(),
            reward: j.reward,
            ..StepRow::default()
        },
    })
}

fn strings(v: Option<&Value>) -> Option<Vec<String>> {
    v.and_then(Value::as_array).map(|a| {
        a.iter()
            .filter_map(Value::as_str)
            .map(str::to_owned)
            .collect()
    })
}

fn reflection_row(r: &Value) -> Option<ReflectionRow> {
    let r = r.as_object()?;
    let text = |k: &str| r.get(k).and_then(Value::as_str).map(str::to_owned);
    Some(ReflectionRow {
        texts: super::schema::REFLECTION_TEXT_FIELDS.map(text),
        iteration: r.get("iteration").and_then(Value::as_i64),
        lessons: strings(r.get("lessons")),
        insights: strings(r.get("insights")),
        confidence: r.get("confidence").and_then(Value::as_f64),
    })
}

impl Row {
    /// Takes `traj` apart. Fails only if a JSON value does not serialize (a map with
    /// non-string keys cannot occur in a parsed trajectory).
    pub fn new(traj: &Trajectory) -> Result<Row, serde_json::Error> {
        let d = &traj.details;
        let actions = traj.content.iter().filter(|s| s.is_action()).count() as i64;
        let chars: usize = traj.content.iter().map(Step::text_chars).sum();
        let steps_n = traj.content.len() as i64;
        let mut row = Row {
            source_format: d
                .get("source")
                .and_then(|s| s.get("format"))
                .and_then(Value::as_str)
                .map(str::to_owned),
            outcome: d
                .get("outcome")
                .and_then(|o| o.as_str().or_else(|| o.get("status")?.as_str()))
                .map(str::to_owned),
            reward: d.get("reward").and_then(Value::as_f64),
            reward_components: d
                .get("reward_components")
                .and_then(Value::as_object)
                .map(|c| {
                    c.iter()
                        .filter_map(|(k, v)| Some((k.clone(), v.as_f64()?)))
                        .collect()
                }),
            reflections: d
                .get("reflections")
                .and_then(Value::as_array)
                .map(|a| a.iter().filter_map(reflection_row).collect()),
            counts: [
                steps_n,
                actions,
                steps_n - actions,
                i64::try_from(chars).unwrap_or(i64::MAX),
            ],
            details: json(d)?,
            id: traj.id.clone(),
            schema_version: traj.schema_version.clone(),
            available_custom_tools: traj.available_custom_tools.clone(),
            available_code_languages: traj.available_code_languages.clone(),
            steps: Vec::with_capacity(traj.content.len()),
            n_tokens: None,
            bytes: 0,
        };
        for step in &traj.content {
            row.steps.push(step_row(step)?);
        }
        row.bytes = row.data_bytes();
        Ok(row)
    }

    /// The row with its token count in `n_tokens` (counted in [`Row::bytes`]).
    pub fn with_n_tokens(mut self, n: i32) -> Row {
        if self.n_tokens.replace(n).is_none() {
            self.bytes += 4;
        }
        self
    }

    fn data_bytes(&self) -> u64 {
        let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let list =
            |l: &Option<Vec<String>>| l.as_ref().map_or(0, |l| l.iter().map(String::len).sum());
        let mut n = self.id.len() + len(&self.schema_version) + len(&self.source_format);
        n += len(&self.outcome) + self.details.len() + 8 * (1 + self.counts.len());
        n += 4 * usize::from(self.n_tokens.is_some());
        n += list(&self.available_custom_tools) + list(&self.available_code_languages);
        for (name, _) in self.reward_components.iter().flatten() {
            n += name.len() + 8;
        }
        for r in self.reflections.iter().flatten() {
            n += r.texts.iter().map(len).sum::<usize>() + 16;
            n += list(&r.lessons) + list(&r.insights);
        }
        for s in &self.steps {
            n += s.class.len() + 8;
            n += s
                .strings()
                .iter()
                .map(|v| v.map_or(0, str::len))
                .sum::<usize>();
        }
        n as u64
    }
}
