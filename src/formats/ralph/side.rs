//! Lines of a Ralph task's `reflections.jsonl` as side files for `join`
//! (`--reflections-from ralph`): key `{task_id}/attempt-{attempt_id:03}`, the id
//! [`super::trajectory_id`] gives, the task read from the file's directory when the line has
//! none; the reflection as the converter writes it.

use std::path::Path;

use serde_json::Value;

use super::reflection;
use crate::join::side::{Attach, Prepared, SideFormat, WindowKeys};

/// The Ralph side format.
#[derive(Debug)]
pub struct RalphSide;

/// The field a line's task is read from.
const TASK_ID: &str = "task_id";

impl SideFormat for RalphSide {
    fn name(&self) -> &'static str {
        "ralph"
    }

    fn help(&self) -> &'static str {
        "`reflections.jsonl` lines, key `{task_id}/attempt-{attempt_id:03}`, the task from the file's directory"
    }

    fn keys(&self) -> Vec<String> {
        vec!["{task_id}/attempt-{attempt_id:03}".to_owned()]
    }

    fn window(&self) -> Option<WindowKeys> {
        Some(WindowKeys {
            group: TASK_ID,
            iteration: "attempt_id",
            trajectory_group: "/details/source/native_ids/task_id",
            trajectory_iteration: "/details/source/native_ids/attempt",
        })
    }

    /// `reflections.jsonl` sits in `tasks/task-NNN/`: the directory names the task of a line
    /// that does not.
    fn prepare(&self, record: &mut Value, file: &str) -> Prepared {
        if record.get(TASK_ID).is_none() {
            if let Some(task) = Path::new(file)
                .parent()
                .and_then(Path::file_name)
                .and_then(|n| n.to_str())
            {
                record[TASK_ID] = Value::String(task.to_owned());
                return Prepared::Added(TASK_ID);
            }
        }
        Prepared::Read
    }

    fn attach(&self, record: &Value, key: &str) -> Result<Attach, String> {
        Ok(Attach {
            reflection: Some(reflection(record, key)),
            ..Attach::default()
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;
    use crate::join::SideSpec;

    fn spec() -> SideSpec {
        SideSpec::of(&RalphSide).expect("spec")
    }

    #[test]
    fn ralph_reads_the_task_from_the_directory_and_pads_the_attempt() {
        let r = json!({"attempt_id": 2, "observation": "o", "learning": "l"});
        let x = spec()
            .extract(r, "mem/tasks/task-001/reflections.jsonl")
            .expect("reads")
            .expect("attaches");
        assert_eq!(x.keys, vec!["task-001/attempt-002"]);
        assert_eq!(x.window, Some(("task-001".to_owned(), 2)));
        let reflection = x.attach.reflection.expect("reflection");
        assert_eq!(reflection["key"], "task-001/attempt-002");
        assert_eq!(reflection["lessons"], json!(["l"]));
        assert!(
            reflection.get(TASK_ID).is_none(),
            "the task read is not kept"
        );
    }

    #[test]
    fn a_task_on_the_line_wins_over_the_directory() {
        let r = json!({"task_id": "task-009", "attempt_id": 1, "learning": "l"});
        let x = spec()
            .extract(r, "mem/tasks/task-001/reflections.jsonl")
            .expect("reads")
            .expect("attaches");
        assert_eq!(x.keys, vec!["task-009/attempt-001"]);
        let reflection = x.attach.reflection.expect("reflection");
        assert_eq!(
            reflection[TASK_ID], "task-009",
            "kept, as the converter keeps it"
        );
    }
}
