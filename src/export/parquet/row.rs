//! A trajectory taken apart into the values of one Parquet row, on the worker threads: free-form
//! values serialized to JSON text, and the steps' texts copied into one buffer per row, so a
//! row is a handful of allocations however many steps it has (the writer thread frees them).

use serde::ser::Error as _;
use serde::Serialize;
use serde_json::Value;

use crate::model::step::Step;
use crate::model::Trajectory;

/// The texts of a step, in the order of the step columns after `class`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepText {
    /// The text content of code, message, text and image steps.
    Content,
    /// A `json_observation`'s content, as JSON text.
    ContentJson,
    /// `code_action.language`.
    Language,
    /// `api_action.function`.
    Function,
    /// `api_action.kwargs`, as JSON text.
    Kwargs,
    /// The actions' `description`.
    Description,
    /// The actions' `reasoning_content`.
    ReasoningContent,
    /// Text and JSON observations' `name`.
    Name,
    /// Observations' `source`.
    Source,
    /// `image_observation.annotations`, as JSON text.
    Annotations,
    /// `web_observation.html`.
    Html,
    /// `web_observation.axtree`.
    Axtree,
    /// `web_observation.url`.
    Url,
    /// `web_observation.image_observation`, as JSON text (with its `class_` tag).
    Image,
    /// `web_observation.viewport_size`, as JSON text.
    ViewportSize,
    /// Every class's `tool_call_id`.
    ToolCallId,
}

/// How many [`StepText`]s there are.
pub const STEP_TEXTS: usize = 16;

/// Where a text is in [`Row::text`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Span {
    start: u32,
    len: u32,
}

/// One `steps` element: the class tag, the reward, and where the texts the class has are in
/// the row's [`Row::text`] (the others are null).
#[derive(Debug, Clone, PartialEq)]
pub struct StepRow {
    /// `api_action`, `code_action`, ...
    pub class: &'static str,
    /// Every class's `reward`.
    pub reward: Option<f64>,
    texts: [Option<Span>; STEP_TEXTS],
}

impl StepRow {
    /// A step of `class` without texts.
    pub fn new(class: &'static str) -> Self {
        StepRow {
            class,
            reward: None,
            texts: [None; STEP_TEXTS],
        }
    }

    /// Makes `which` null.
    pub fn clear(&mut self, which: StepText) {
        self.texts[which as usize] = None;
    }

    /// The texts, in [`StepText`] order, read from the `text` of the row.
    pub fn texts<'t>(&self, text: &'t str) -> [Option<&'t str>; STEP_TEXTS] {
        self.texts.map(|span| {
            span.and_then(|s| text.get(s.start as usize..(s.start as usize + s.len as usize)))
        })
    }
}

/// Builds the steps of a row and their text buffer.
#[derive(Default)]
struct Steps {
    rows: Vec<StepRow>,
    text: Vec<u8>,
}

impl Steps {
    /// Starts a step of `class`.
    fn start(&mut self, class: &'static str, reward: Option<f64>) {
        self.rows.push(StepRow {
            reward,
            ..StepRow::new(class)
        });
    }

    /// Sets text `which` of the step started last, when there is one, to what `write` appends.
    fn put_with(
        &mut self,
        which: StepText,
        write: impl FnOnce(&mut Vec<u8>) -> Result<(), serde_json::Error>,
    ) -> Result<(), serde_json::Error> {
        let too_long = || serde_json::Error::custom("the texts of a row pass 4 GiB");
        let start = self.text.len();
        write(&mut self.text)?;
        let span = Span {
            start: u32::try_from(start).map_err(|_| too_long())?,
            len: u32::try_from(self.text.len() - start).map_err(|_| too_long())?,
        };
        if let Some(step) = self.rows.last_mut() {
            step.texts[which as usize] = Some(span);
        }
        Ok(())
    }

    /// Sets text `which` to `value` when it is present.
    fn put(&mut self, which: StepText, value: Option<&str>) -> Result<(), serde_json::Error> {
        match value {
            Some(v) => self.put_with(which, |out| {
                out.extend_from_slice(v.as_bytes());
                Ok(())
            }),
            None => Ok(()),
        }
    }

    /// Sets text `which` to the JSON text of `value` when it is present.
    fn put_json(
        &mut self,
        which: StepText,
        value: Option<&impl Serialize>,
    ) -> Result<(), serde_json::Error> {
        match value {
            Some(v) => self.put_with(which, |out| serde_json::to_writer(out, v)),
            None => Ok(()),
        }
    }

    /// Adds `step`.
    fn push(&mut self, step: &Step) -> Result<(), serde_json::Error> {
        use StepText::*;
        self.start(step.class_name(), step.reward());
        self.put(Source, step.source().map(|s| s.as_str()))?;
        self.put(ToolCallId, step.tool_call_id())?;
        self.put(ReasoningContent, step.reasoning_content())?;
        match step {
            Step::ApiAction(a) => {
                self.put(Function, Some(&a.function))?;
                self.put_json(Kwargs, Some(&a.kwargs))?;
                self.put(Description, a.description.as_deref())
            }
            Step::CodeAction(c) => {
                self.put(Language, Some(&c.language))?;
                self.put(Content, Some(&c.content))?;
                self.put(Description, c.description.as_deref())
            }
            Step::MessageAction(m) => {
                self.put(Content, Some(&m.content))?;
                self.put(Description, m.description.as_deref())
            }
            Step::TextObservation(t) => {
                self.put(Content, Some(&t.content))?;
                self.put(Name, t.name.as_deref())
            }
            Step::ImageObservation(i) => {
                self.put(Content, Some(&i.content))?;
                self.put_json(Annotations, i.annotations.as_ref())
            }
            Step::WebObservation(w) => {
                self.put(Html, w.html.as_deref())?;
                self.put(Axtree, w.axtree.as_deref())?;
                self.put(Url, w.url.as_deref())?;
                self.put_json(Image, w.image_observation.as_ref())?;
                self.put_json(ViewportSize, w.viewport_size.as_ref())
            }
            Step::JsonObservation(j) => {
                self.put_json(ContentJson, Some(&j.content))?;
                self.put(Name, j.name.as_deref())
            }
        }
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
    /// The steps' texts, one after another.
    pub text: String,
    /// `details` as JSON text.
    pub details: String,
    /// Bytes of data in the row (string bytes, 8 per number): what row groups and shards are
    /// cut by.
    pub bytes: u64,
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
    /// non-string keys cannot occur in a parsed trajectory) or the steps' texts pass 4 GiB.
    pub fn new(traj: &Trajectory) -> Result<Row, serde_json::Error> {
        let d = &traj.details;
        let actions = traj.content.iter().filter(|s| s.is_action()).count() as i64;
        let chars: usize = traj.content.iter().map(Step::text_chars).sum();
        let steps_n = traj.content.len() as i64;
        let mut steps = Steps {
            rows: Vec::with_capacity(traj.content.len()),
            text: Vec::with_capacity(chars),
        };
        for step in &traj.content {
            steps.push(step)?;
        }
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
            details: serde_json::to_string(d)?,
            id: traj.id.clone(),
            schema_version: traj.schema_version.clone(),
            available_custom_tools: traj.available_custom_tools.clone(),
            available_code_languages: traj.available_code_languages.clone(),
            steps: steps.rows,
            // Only whole strings and JSON texts were copied in.
            text: String::from_utf8(steps.text)
                .map_err(|_| serde_json::Error::custom("a step text is not UTF-8"))?,
            bytes: 0,
        };
        row.bytes = row.data_bytes();
        Ok(row)
    }

    /// Appends a step of `class` with `texts` (a way to build rows by hand, as tests do).
    pub fn push_step(&mut self, class: &'static str, texts: &[(StepText, &str)]) {
        let mut steps = Steps {
            rows: Vec::new(),
            text: std::mem::take(&mut self.text).into_bytes(),
        };
        steps.start(class, None);
        for &(which, value) in texts {
            // A test row is far below 4 GiB.
            let _ = steps.put(which, Some(value));
        }
        self.steps.append(&mut steps.rows);
        self.text = String::from_utf8(steps.text).unwrap_or_default();
        self.bytes = self.data_bytes();
    }

    fn data_bytes(&self) -> u64 {
        let len = |s: &Option<String>| s.as_ref().map_or(0, String::len);
        let list =
            |l: &Option<Vec<String>>| l.as_ref().map_or(0, |l| l.iter().map(String::len).sum());
        let mut n = self.id.len() + len(&self.schema_version) + len(&self.source_format);
        n += len(&self.outcome) + self.details.len() + 8 * (1 + self.counts.len());
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
                .texts
                .iter()
                .flatten()
                .map(|t| t.len as usize)
                .sum::<usize>();
        }
        n as u64
    }
}
