//! The standardized trajectory: an id, a list of steps and free-form details.

use serde::ser::{SerializeMap, SerializeStruct};
use serde::{Deserialize, Serialize, Serializer};
use serde_json::Value;

use super::step::{JsonObject, Step};

/// One ADP trajectory, in any supported version.
///
/// `schema_version` is `None` for the unversioned late-2025 form. Keys are written in the order
/// of the fields below; `schema_version` and the `available_*` lists only when set.
#[derive(Debug, Clone, PartialEq, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct Trajectory {
    /// ADP schema version (`"1.5.0"`), absent in unversioned data.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub schema_version: Option<String>,
    /// Unique id of the trajectory.
    pub id: String,
    /// The steps, in order.
    pub content: Vec<Step>,
    /// API names available to this trajectory (ADP 1.1 to 1.4; renamed
    /// `available_custom_tools` in 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_apis: Option<Vec<String>>,
    /// Custom tool names available to this trajectory (ADP 1.5).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_custom_tools: Option<Vec<String>>,
    /// The code languages used by the trajectory's code actions (ADP 1.4+).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub available_code_languages: Option<Vec<String>>,
    /// Dataset-specific metadata and trajkit's attachments (`source`, `outcome`, `reward`, ...).
    #[serde(default)]
    pub details: JsonObject,
}

impl Trajectory {
    /// A trajectory as converters build it: no version yet (the upgrade sets it), no
    /// `available_*` lists (the upgrade infers `available_code_languages`).
    pub fn new(id: String, content: Vec<Step>, details: JsonObject) -> Trajectory {
        Trajectory {
            schema_version: None,
            id,
            content,
            available_apis: None,
            available_custom_tools: None,
            available_code_languages: None,
            details,
        }
    }

    /// Sorted, de-duplicated languages of the code actions, or `None` when there are none.
    pub fn used_code_languages(&self) -> Option<Vec<String>> {
        let mut langs: Vec<String> = self
            .content
            .iter()
            .filter_map(|s| match s {
                Step::CodeAction(c) => Some(c.language.clone()),
                _ => None,
            })
            .collect();
        langs.sort();
        langs.dedup();
        (!langs.is_empty()).then_some(langs)
    }
}

impl Serialize for Trajectory {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        self.with_details_tail::<Value>(&[]).serialize(s)
    }
}

impl Trajectory {
    /// The trajectory, serialized with `tail` written after the entries of `details` (their
    /// keys must not be in `details`). Converters keep the bulk of a record's native data in such
    /// a tail, as nodes borrowed from the record, rather than building `details` values for it.
    pub fn with_details_tail<'t, T: Serialize>(
        &'t self,
        tail: &'t [(&'static str, T)],
    ) -> WithDetailsTail<'t, T> {
        WithDetailsTail { traj: self, tail }
    }
}

/// A trajectory with more `details` entries, see [`Trajectory::with_details_tail`].
pub struct WithDetailsTail<'t, T> {
    traj: &'t Trajectory,
    tail: &'t [(&'static str, T)],
}

impl<T: Serialize> Serialize for WithDetailsTail<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let t = self.traj;
        let lists = [
            ("available_apis", &t.available_apis),
            ("available_custom_tools", &t.available_custom_tools),
            ("available_code_languages", &t.available_code_languages),
        ];
        let len = 3
            + usize::from(t.schema_version.is_some())
            + lists.iter().filter(|(_, l)| l.is_some()).count();
        let mut out = s.serialize_struct("Trajectory", len)?;
        match &t.schema_version {
            Some(v) => out.serialize_field("schema_version", v)?,
            None => out.skip_field("schema_version")?,
        }
        out.serialize_field("id", &t.id)?;
        out.serialize_field("content", &t.content)?;
        for (name, list) in lists {
            match list {
                Some(l) => out.serialize_field(name, l)?,
                None => out.skip_field(name)?,
            }
        }
        out.serialize_field(
            "details",
            &Details {
                map: &t.details,
                tail: self.tail,
            },
        )?;
        out.end()
    }
}

struct Details<'t, T> {
    map: &'t JsonObject,
    tail: &'t [(&'static str, T)],
}

impl<T: Serialize> Serialize for Details<'_, T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut out = s.serialize_map(Some(self.map.len() + self.tail.len()))?;
        for (k, v) in self.map {
            out.serialize_entry(k, v)?;
        }
        for (k, v) in self.tail {
            out.serialize_entry(k, v)?;
        }
        out.end()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn serializes_fields_in_order_skipping_unset_ones_and_appends_a_details_tail() {
        let full = json!({
            "schema_version": "1.4.0", "id": "t", "content": [],
            "available_apis": ["a"], "available_code_languages": ["bash"],
            "details": {"k": 1}
        });
        let t: Trajectory = serde_json::from_value(full.clone()).expect("trajectory");
        assert_eq!(serde_json::to_string(&t).ok(), Some(full.to_string()));
        let bare = Trajectory::new("u".into(), Vec::new(), JsonObject::new());
        assert_eq!(
            serde_json::to_string(&bare).ok(),
            Some(r#"{"id":"u","content":[],"details":{}}"#.to_owned())
        );
        let tail = [("x", json!([1])), ("y", json!(null))];
        assert_eq!(
            serde_json::to_string(&t.with_details_tail(&tail)).ok(),
            Some(
                full.to_string()
                    .replace(r#"{"k":1}"#, r#"{"k":1,"x":[1],"y":null}"#)
            )
        );
    }
}
