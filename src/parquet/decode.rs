//! Parquet rows back into trajectories: the inverse of [`super::row`] for `id`,
//! `schema_version`, the `available_*` lists, `steps` and `details` (the derived columns are
//! not read).

use arrow_array::cast::AsArray;
use arrow_array::{Array, Float64Array, ListArray, RecordBatch, StringArray, StructArray};
use serde::de::DeserializeOwned;

use super::schema::STEP_FIELDS;
use crate::json::strict::{self, ParseError};
use crate::model::step::{
    ApiAction, CodeAction, ImageObservation, JsonObservation, MessageAction, Source, Step,
    TextObservation, WebObservation,
};
use crate::model::Trajectory;

/// Why a row is not a trajectory: the JSON pointer of the bad value and what is wrong.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct RowError {
    /// Pointer into the trajectory the row would be.
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

fn err(pointer: impl Into<String>, message: impl Into<String>) -> RowError {
    RowError {
        pointer: pointer.into(),
        message: message.into(),
    }
}

/// The columns `convert --from parquet` needs, in this order (a projection of the file).
pub const READ_COLUMNS: &[&str] = &[
    "id",
    "schema_version",
    "available_custom_tools",
    "available_code_languages",
    "steps",
    "details",
];

/// The step fields as typed arrays.
struct StepArrays<'a> {
    class: &'a StringArray,
    strings: Vec<&'a StringArray>,
    reward: &'a Float64Array,
}

/// A record batch of trajkit's schema, ready to be read row by row.
pub struct Rows<'a> {
    ids: &'a StringArray,
    versions: &'a StringArray,
    tools: &'a ListArray,
    languages: &'a ListArray,
    steps: &'a ListArray,
    step: StepArrays<'a>,
    details: &'a StringArray,
}

fn column<'a>(batch: &'a RecordBatch, name: &str) -> Result<&'a dyn Array, String> {
    batch
        .column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| format!("not a trajkit Parquet file: no column `{name}`"))
}

fn strings<'a>(array: &'a dyn Array, name: &str) -> Result<&'a StringArray, String> {
    array
        .as_string_opt::<i32>()
        .ok_or_else(|| format!("column `{name}` is {}, not utf8", array.data_type()))
}

fn list<'a>(array: &'a dyn Array, name: &str) -> Result<&'a ListArray, String> {
    array
        .as_list_opt::<i32>()
        .ok_or_else(|| format!("column `{name}` is {}, not a list", array.data_type()))
}

fn child<'a>(s: &'a StructArray, name: &str) -> Result<&'a dyn Array, String> {
    s.column_by_name(name)
        .map(|c| c.as_ref())
        .ok_or_else(|| format!("not a trajkit Parquet file: `steps` has no field `{name}`"))
}

impl<'a> Rows<'a> {
    /// Checks that `batch` has the columns of [`READ_COLUMNS`] with trajkit's types.
    pub fn new(batch: &'a RecordBatch) -> Result<Rows<'a>, String> {
        let steps = list(column(batch, "steps")?, "steps")?;
        let items = steps
            .values()
            .as_struct_opt()
            .ok_or("column `steps` is not a list of structs")?;
        let mut strings_of = Vec::with_capacity(STEP_FIELDS.len());
        for (name, _) in &STEP_FIELDS[1..STEP_FIELDS.len() - 1] {
            strings_of.push(strings(child(items, name)?, name)?);
        }
        let reward = child(items, "reward")?;
        Ok(Rows {
            ids: strings(column(batch, "id")?, "id")?,
            versions: strings(column(batch, "schema_version")?, "schema_version")?,
            tools: list(
                column(batch, "available_custom_tools")?,
                "available_custom_tools",
            )?,
            languages: list(
                column(batch, "available_code_languages")?,
                "available_code_languages",
            )?,
            step: StepArrays {
                class: strings(child(items, "class")?, "class")?,
                strings: strings_of,
                reward: reward
                    .as_primitive_opt()
                    .ok_or_else(|| format!("field `reward` is {}", reward.data_type()))?,
            },
            steps,
            details: strings(column(batch, "details")?, "details")?,
        })
    }

    /// Number of rows.
    pub fn len(&self) -> usize {
        self.ids.len()
    }

    /// True when there are no rows.
    pub fn is_empty(&self) -> bool {
        self.ids.is_empty()
    }

    /// Row `i` as a trajectory.
    pub fn trajectory(&self, i: usize) -> Result<Trajectory, RowError> {
        if self.ids.is_null(i) {
            return Err(err("/id", "the id is null"));
        }
        let details = parse(self.details.value(i), "/details")?;
        let offsets = self.steps.value_offsets();
        let (start, end) = (offsets[i] as usize, offsets[i + 1] as usize);
        let content = (start..end)
            .enumerate()
            .map(|(n, j)| self.step(j, &format!("/content/{n}")))
            .collect::<Result<_, _>>()?;
        Ok(Trajectory {
            schema_version: text(self.versions, i),
            id: self.ids.value(i).to_owned(),
            content,
            available_apis: None,
            available_custom_tools: string_list(self.tools, i),
            available_code_languages: string_list(self.languages, i),
            details,
        })
    }

    /// Row `i`'s values as they are in the file (non-null step fields, `details` as text): what
    /// the rejects file keeps of a row that is not a trajectory.
    pub fn raw(&self, i: usize) -> serde_json::Value {
        let offsets = self.steps.value_offsets();
        let steps: Vec<serde_json::Value> = (offsets[i] as usize..offsets[i + 1] as usize)
            .map(|j| {
                let mut step = serde_json::Map::new();
                step.insert("class".into(), text(self.step.class, j).into());
                for ((name, _), array) in STEP_FIELDS[1..].iter().zip(&self.step.strings) {
                    if let Some(v) = text(array, j) {
                        step.insert((*name).into(), v.into());
                    }
                }
                if !self.step.reward.is_null(j) {
                    step.insert("reward".into(), self.step.reward.value(j).into());
                }
                step.into()
            })
            .collect();
        serde_json::json!({
            "id": text(self.ids, i),
            "schema_version": text(self.versions, i),
            "steps": steps,
            "details": text(self.details, i),
        })
    }

    /// The string field `name` of step `j`.
    fn field(&self, j: usize, name: &str) -> Option<String> {
        let k = STEP_FIELDS[1..].iter().position(|(n, _)| *n == name)?;
        text(self.step.strings.get(k)?, j)
    }

    /// The JSON text field `name` of step `j`, parsed.
    fn parsed<T: DeserializeOwned>(
        &self,
        j: usize,
        at: &str,
        name: &str,
    ) -> Result<Option<T>, RowError> {
        self.field(j, name)
            .map(|t| parse(&t, &format!("{at}/{name}")))
            .transpose()
    }

    fn step(&self, j: usize, at: &str) -> Result<Step, RowError> {
        let f = |name: &str| self.field(j, name);
        let need = |name: &str| {
            f(name).ok_or_else(|| {
                err(
                    format!("{at}/{name}"),
                    format!("`{name}` is null in a {}", self.step.class.value(j)),
                )
            })
        };
        let source = || -> Result<Source, RowError> {
            let s = need("source")?;
            serde_json::from_value(serde_json::Value::String(s.clone()))
                .map_err(|_| err(format!("{at}/source"), format!("unknown source {s:?}")))
        };
        let reward = (!self.step.reward.is_null(j)).then(|| self.step.reward.value(j));
        let tool_call_id = f("tool_call_id");
        if self.step.class.is_null(j) {
            return Err(err(format!("{at}/class_"), "the step class is null"));
        }
        Ok(match self.step.class.value(j) {
            "api_action" => Step::ApiAction(ApiAction {
                function: need("function")?,
                kwargs: parse(&need("kwargs")?, &format!("{at}/kwargs"))?,
                description: f("description"),
                reasoning_content: f("reasoning_content"),
                tool_call_id,
                reward,
            }),
            "code_action" => Step::CodeAction(CodeAction {
                language: need("language")?,
                content: need("content")?,
                description: f("description"),
                reasoning_content: f("reasoning_content"),
                tool_call_id,
                reward,
            }),
            "message_action" => Step::MessageAction(MessageAction {
                content: need("content")?,
                description: f("description"),
                reasoning_content: f("reasoning_content"),
                tool_call_id,
                reward,
            }),
            "text_observation" => Step::TextObservation(TextObservation {
                content: need("content")?,
                name: f("name"),
                source: source()?,
                tool_call_id,
                reward,
            }),
            "image_observation" => Step::ImageObservation(ImageObservation {
                content: need("content")?,
                annotations: self.parsed(j, at, "annotations")?,
                source: source()?,
                tool_call_id,
                reward,
            }),
            "web_observation" => Step::WebObservation(WebObservation {
                html: f("html"),
                axtree: f("axtree"),
                url: f("url"),
                image_observation: self.parsed(j, at, "image")?,
                viewport_size: self.parsed(j, at, "viewport_size")?,
                tool_call_id,
                reward,
            }),
            "json_observation" => Step::JsonObservation(JsonObservation {
                content: parse(&need("content_json")?, &format!("{at}/content"))?,
                name: f("name"),
                source: source()?,
                tool_call_id,
                reward,
            }),
            other => {
                return Err(err(
                    format!("{at}/class_"),
                    format!("unknown step class {other:?}"),
                ))
            }
        })
    }
}

fn text(a: &StringArray, i: usize) -> Option<String> {
    (!a.is_null(i)).then(|| a.value(i).to_owned())
}

fn string_list(a: &ListArray, i: usize) -> Option<Vec<String>> {
    if a.is_null(i) {
        return None;
    }
    let values = a.value(i);
    let s = values.as_string_opt::<i32>()?;
    Some((0..s.len()).filter_map(|k| text(s, k)).collect())
}

/// Reads a column's JSON text as `T`; the text must keep trajkit's rules on JSON (no duplicate
/// key, no integer past 64 bits: [`crate::json::strict`]) as records read from JSON do.
fn parse<T: DeserializeOwned>(json: &str, pointer: &str) -> Result<T, RowError> {
    let value = strict::parse_value(json.as_bytes()).map_err(|e| match e {
        ParseError::Syntax(e) => err(pointer, format!("not the JSON expected: {e}")),
        ParseError::Rule(p) => err(format!("{pointer}{}", p.pointer), p.message),
    })?;
    T::deserialize(value).map_err(|e| err(pointer, format!("not the JSON expected: {e}")))
}
