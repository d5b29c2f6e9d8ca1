//! Rows accumulated into the Arrow arrays of [`super::schema`], one record batch at a
//! time.

use std::sync::Arc;

use arrow_array::builder::{
    Float64Builder, Int32Builder, Int64Builder, ListBuilder, StringBuilder,
};
use arrow_array::{ArrayRef, ListArray, RecordBatch, StructArray};
use arrow_buffer::{NullBufferBuilder, OffsetBuffer, ScalarBuffer};
use arrow_schema::{ArrowError, Fields};

use super::row::{ReflectionRow, Row, StepRow};
use super::schema::{self, struct_item};

/// The children of a list of structs.
trait Items {
    /// The struct's fields.
    fn fields() -> Fields;
    /// The child arrays so far, in field order; the builders start over.
    fn finish(&mut self) -> Vec<ArrayRef>;
}

/// A nullable `list<struct>` column being built.
struct ListOf<T> {
    offsets: Vec<i32>,
    validity: NullBufferBuilder,
    items: T,
    len: i32,
}

impl<T: Items + Default> ListOf<T> {
    fn new() -> Self {
        ListOf {
            offsets: vec![0],
            validity: NullBufferBuilder::new(0),
            items: T::default(),
            len: 0,
        }
    }

    /// Appends a list of `n` items already pushed to `items`, or a null list.
    fn close(&mut self, n: Option<usize>) {
        // A batch holds far fewer than 2^31 items: the writer cuts batches at a few MB.
        self.len += n.unwrap_or(0) as i32;
        self.offsets.push(self.len);
        self.validity.append(n.is_some());
    }

    fn finish(&mut self) -> Result<ArrayRef, ArrowError> {
        let fields = T::fields();
        let values = StructArray::try_new(fields.clone(), self.items.finish(), None)?;
        let offsets = std::mem::replace(&mut self.offsets, vec![0]);
        self.len = 0;
        Ok(Arc::new(ListArray::try_new(
            struct_item(fields),
            OffsetBuffer::new(ScalarBuffer::from(offsets)),
            Arc::new(values),
            self.validity.finish(),
        )?))
    }
}

fn strings_list() -> ListBuilder<StringBuilder> {
    ListBuilder::new(StringBuilder::new()).with_field(schema::string_item())
}

fn append_strings(b: &mut ListBuilder<StringBuilder>, list: Option<&[String]>) {
    if let Some(list) = list {
        for s in list {
            b.values().append_value(s);
        }
    }
    b.append(list.is_some());
}

#[derive(Default)]
struct StepColumns {
    class: StringBuilder,
    strings: [StringBuilder; 16],
    reward: Float64Builder,
}

impl StepColumns {
    fn push(&mut self, s: &StepRow) {
        self.class.append_value(s.class);
        for (b, v) in self.strings.iter_mut().zip(s.strings()) {
            b.append_option(v);
        }
        self.reward.append_option(s.reward);
    }
}

impl Items for StepColumns {
    fn fields() -> Fields {
        schema::step_fields()
    }
    fn finish(&mut self) -> Vec<ArrayRef> {
        let mut out: Vec<ArrayRef> = vec![Arc::new(self.class.finish())];
        out.extend(
            self.strings
                .iter_mut()
                .map(|b| Arc::new(b.finish()) as ArrayRef),
        );
        out.push(Arc::new(self.reward.finish()));
        out
    }
}

#[derive(Default)]
struct ComponentColumns {
    name: StringBuilder,
    value: Float64Builder,
}

impl Items for ComponentColumns {
    fn fields() -> Fields {
        schema::component_fields()
    }
    fn finish(&mut self) -> Vec<ArrayRef> {
        vec![Arc::new(self.name.finish()), Arc::new(self.value.finish())]
    }
}

struct ReflectionColumns {
    texts: [StringBuilder; 7],
    iteration: Int64Builder,
    lessons: ListBuilder<StringBuilder>,
    insights: ListBuilder<StringBuilder>,
    confidence: Float64Builder,
}

impl Default for ReflectionColumns {
    fn default() -> Self {
        ReflectionColumns {
            texts: Default::default(),
            iteration: Int64Builder::new(),
            lessons: strings_list(),
            insights: strings_list(),
            confidence: Float64Builder::new(),
        }
    }
}

impl ReflectionColumns {
    fn push(&mut self, r: &ReflectionRow) {
        for (b, v) in self.texts.iter_mut().zip(&r.texts) {
            b.append_option(v.as_deref());
        }
        self.iteration.append_option(r.iteration);
        append_strings(&mut self.lessons, r.lessons.as_deref());
        append_strings(&mut self.insights, r.insights.as_deref());
        self.confidence.append_option(r.confidence);
    }
}

impl Items for ReflectionColumns {
    fn fields() -> Fields {
        schema::reflection_fields()
    }
    fn finish(&mut self) -> Vec<ArrayRef> {
        let mut out: Vec<ArrayRef> = self
            .texts
            .iter_mut()
            .map(|b| Arc::new(b.finish()) as ArrayRef)
            .collect();
        out.push(Arc::new(self.iteration.finish()));
        out.push(Arc::new(self.lessons.finish()));
        out.push(Arc::new(self.insights.finish()));
        out.push(Arc::new(self.confidence.finish()));
        out
    }
}

/// Rows being gathered into one record batch.
pub struct Columns {
    rows: usize,
    bytes: u64,
    id: StringBuilder,
    schema_version: StringBuilder,
    source_format: StringBuilder,
    outcome: StringBuilder,
    reward: Float64Builder,
    components: ListOf<ComponentColumns>,
    reflections: ListOf<ReflectionColumns>,
    counts: [Int64Builder; 4],
    tools: ListBuilder<StringBuilder>,
    languages: ListBuilder<StringBuilder>,
    steps: ListOf<StepColumns>,
    details: StringBuilder,
    /// `n_tokens`, in the files of an export that counts tokens.
    n_tokens: Option<Int32Builder>,
}

impl Default for Columns {
    fn default() -> Self {
        Columns {
            rows: 0,
            bytes: 0,
            id: StringBuilder::new(),
            schema_version: StringBuilder::new(),
            source_format: StringBuilder::new(),
            outcome: StringBuilder::new(),
            reward: Float64Builder::new(),
            components: ListOf::new(),
            reflections: ListOf::new(),
            counts: Default::default(),
            tools: strings_list(),
            languages: strings_list(),
            steps: ListOf::new(),
            details: StringBuilder::new(),
            n_tokens: None,
        }
    }
}

impl Columns {
    /// Columns with `n_tokens` last (an export that counts tokens): every row pushed carries
    /// its [`Row::n_tokens`].
    pub fn with_token_counts() -> Self {
        Columns {
            n_tokens: Some(Int32Builder::new()),
            ..Columns::default()
        }
    }

    /// Rows gathered since the last [`Columns::finish`].
    pub fn rows(&self) -> usize {
        self.rows
    }

    /// Their [`Row::bytes`].
    pub fn bytes(&self) -> u64 {
        self.bytes
    }

    /// Appends a row.
    pub fn push(&mut self, row: &Row) {
        self.rows += 1;
        self.bytes += row.bytes;
        self.id.append_value(&row.id);
        self.schema_version
            .append_option(row.schema_version.as_deref());
        self.source_format
            .append_option(row.source_format.as_deref());
        self.outcome.append_option(row.outcome.as_deref());
        self.reward.append_option(row.reward);
        if let Some(c) = &row.reward_components {
            for (name, value) in c {
                self.components.items.name.append_value(name);
                self.components.items.value.append_value(*value);
            }
        }
        self.components
            .close(row.reward_components.as_ref().map(Vec::len));
        if let Some(r) = &row.reflections {
            r.iter().for_each(|r| self.reflections.items.push(r));
        }
        self.reflections
            .close(row.reflections.as_ref().map(Vec::len));
        for (b, n) in self.counts.iter_mut().zip(row.counts) {
            b.append_value(n);
        }
        append_strings(&mut self.tools, row.available_custom_tools.as_deref());
        append_strings(&mut self.languages, row.available_code_languages.as_deref());
        row.steps.iter().for_each(|s| self.steps.items.push(s));
        self.steps.close(Some(row.steps.len()));
        self.details.append_value(&row.details);
        if let Some(b) = &mut self.n_tokens {
            // A row without its count leaves the column short, and the batch fails.
            if let Some(n) = row.n_tokens {
                b.append_value(n);
            }
        }
    }

    /// The gathered rows as a record batch of [`schema::schema`] (with `n_tokens` when made by
    /// [`Columns::with_token_counts`]); the columns start over.
    pub fn finish(&mut self) -> Result<RecordBatch, ArrowError> {
        self.rows = 0;
        self.bytes = 0;
        let mut columns: Vec<ArrayRef> = vec![
            Arc::new(self.id.finish()),
            Arc::new(self.schema_version.finish()),
            Arc::new(self.source_format.finish()),
            Arc::new(self.outcome.finish()),
            Arc::new(self.reward.finish()),
            self.components.finish()?,
            self.reflections.finish()?,
        ];
        columns.extend(
            self.counts
                .iter_mut()
                .map(|b| Arc::new(b.finish()) as ArrayRef),
        );
        columns.push(Arc::new(self.tools.finish()));
        columns.push(Arc::new(self.languages.finish()));
        columns.push(self.steps.finish()?);
        columns.push(Arc::new(self.details.finish()));
        if let Some(b) = &mut self.n_tokens {
            columns.push(Arc::new(b.finish()));
        }
        RecordBatch::try_new(schema::schema(self.n_tokens.is_some()), columns)
    }
}
