//! The Arrow schema of trajkit's Parquet files. Every field is listed in docs/export.md
//! ("Parquet layout"); [`columns`](super::columns) builds arrays of exactly these types, and
//! [`decode`](super::decode) reads them.

use std::sync::{Arc, LazyLock};

use arrow_schema::{DataType, Field, Fields, Schema, SchemaRef};

/// The fields of a `steps` element, in order: the class tag, then every class's fields.
pub const STEP_FIELDS: &[(&str, DataType)] = &[
    ("class", DataType::Utf8),
    ("content", DataType::Utf8),
    ("content_json", DataType::Utf8),
    ("language", DataType::Utf8),
    ("function", DataType::Utf8),
    ("kwargs", DataType::Utf8),
    ("description", DataType::Utf8),
    ("reasoning_content", DataType::Utf8),
    ("name", DataType::Utf8),
    ("source", DataType::Utf8),
    ("annotations", DataType::Utf8),
    ("html", DataType::Utf8),
    ("axtree", DataType::Utf8),
    ("url", DataType::Utf8),
    ("image", DataType::Utf8),
    ("viewport_size", DataType::Utf8),
    ("tool_call_id", DataType::Utf8),
    ("reward", DataType::Float64),
];

/// The string fields of a reflection, in order, before `iteration`, `lessons`, `insights` and
/// `confidence`.
pub const REFLECTION_TEXT_FIELDS: [&str; 7] = [
    "source",
    "key",
    "text",
    "timestamp",
    "kind",
    "root_cause",
    "failure_category",
];

fn list_of(item: DataType, nullable_items: bool) -> DataType {
    DataType::List(Arc::new(Field::new("item", item, nullable_items)))
}

/// The struct of one step.
pub fn step_fields() -> Fields {
    STEP_FIELDS
        .iter()
        .map(|(name, ty)| Field::new(*name, ty.clone(), *name != "class"))
        .collect()
}

/// The struct of one reward component.
pub fn component_fields() -> Fields {
    Fields::from(vec![
        Field::new("name", DataType::Utf8, false),
        Field::new("value", DataType::Float64, false),
    ])
}

/// The struct of one reflection.
pub fn reflection_fields() -> Fields {
    let mut fields: Vec<Field> = REFLECTION_TEXT_FIELDS
        .iter()
        .map(|name| Field::new(*name, DataType::Utf8, true))
        .collect();
    fields.push(Field::new("iteration", DataType::Int64, true));
    fields.push(Field::new("lessons", list_of(DataType::Utf8, false), true));
    fields.push(Field::new("insights", list_of(DataType::Utf8, false), true));
    fields.push(Field::new("confidence", DataType::Float64, true));
    Fields::from(fields)
}

/// The `item` field of a list of `fields` structs.
pub fn struct_item(fields: Fields) -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Struct(fields), false))
}

/// The item field of a list of strings.
pub fn string_item() -> Arc<Field> {
    Arc::new(Field::new("item", DataType::Utf8, false))
}

/// The fields of every file trajkit writes, without `n_tokens`.
fn fields() -> Vec<Field> {
    let strings = DataType::List(string_item());
    vec![
        Field::new("id", DataType::Utf8, false),
        Field::new("schema_version", DataType::Utf8, true),
        Field::new("source_format", DataType::Utf8, true),
        Field::new("outcome", DataType::Utf8, true),
        Field::new("reward", DataType::Float64, true),
        Field::new(
            "reward_components",
            DataType::List(struct_item(component_fields())),
            true,
        ),
        Field::new(
            "reflections",
            DataType::List(struct_item(reflection_fields())),
            true,
        ),
        Field::new("num_steps", DataType::Int64, false),
        Field::new("num_actions", DataType::Int64, false),
        Field::new("num_observations", DataType::Int64, false),
        Field::new("num_chars", DataType::Int64, false),
        Field::new("available_custom_tools", strings.clone(), true),
        Field::new("available_code_languages", strings, true),
        Field::new("steps", DataType::List(struct_item(step_fields())), false),
        Field::new("details", DataType::Utf8, false),
    ]
}

static SCHEMA: LazyLock<SchemaRef> = LazyLock::new(|| Arc::new(Schema::new(fields())));

static WITH_TOKENS: LazyLock<SchemaRef> = LazyLock::new(|| {
    let mut fields = fields();
    fields.push(Field::new(N_TOKENS, DataType::Int32, false));
    Arc::new(Schema::new(fields))
});

/// The column of a trajectory's token count, last, in the files of an export that counts
/// tokens.
pub const N_TOKENS: &str = "n_tokens";

/// The schema of every file trajkit writes; with `n_tokens` last when `token_counts`.
pub fn schema(token_counts: bool) -> SchemaRef {
    if token_counts {
        WITH_TOKENS.clone()
    } else {
        SCHEMA.clone()
    }
}

/// The columns whose values are long free text or JSON: written without dictionary encoding
/// (it would only cost time), as dotted Parquet column paths.
pub const PLAIN_COLUMNS: &[&str] = &[
    "id",
    "details",
    "steps.list.item.content",
    "steps.list.item.content_json",
    "steps.list.item.kwargs",
    "steps.list.item.description",
    "steps.list.item.reasoning_content",
    "steps.list.item.html",
    "steps.list.item.axtree",
    "steps.list.item.image",
    "steps.list.item.tool_call_id",
    "reflections.list.item.text",
];
