//! The oldest OpenHands event streams, read as the current ones.
//!
//! OpenHands' resolver (and OpenDevin before it) wrote its history with
//! `dataclasses.asdict(event)`: the dataclass fields of each action or observation flat on the
//! event (`{"action": "run", "command": "ls", "thought": "...", "blocking": false}`,
//! `{"observation": "run", "content": "...", "command": "ls", "exit_code": 0}`), without the
//! `id`, `timestamp`, `source` and `cause` OpenHands keeps outside the dataclass fields, and
//! without `args` or `extras`. OpenDevin's evaluation outputs kept `history` as a list of
//! `[action, observation]` pairs. An event of the flat shape gets its fields under `args` (an
//! action) or `extras` (an observation), so the rest of the reader sees one shape; what then
//! links an observation to its action is their order (see `Run::observation`).

use std::borrow::Cow;

use serde_json::{Map, Value};

/// Keys of an event that stay on it: what `event_to_dict` writes beside `args` / `extras`.
const EVENT_KEYS: &[&str] = &[
    "id",
    "timestamp",
    "source",
    "message",
    "cause",
    "action",
    "observation",
    "content",
    "tool_call_metadata",
    "llm_metrics",
];

/// `v` as an event of the current shape: as it is when it has `args` (an action) or `extras`
/// (an observation) or is no event; else its fields other than [`EVENT_KEYS`] moved under
/// `args` or `extras` (an action's `content`, a message's text, goes under `args` too).
pub fn normalized(v: &Value) -> Cow<'_, Value> {
    let Some(event) = v.as_object() else {
        return Cow::Borrowed(v);
    };
    let (key, stays): (&str, &dyn Fn(&str) -> bool) = match (
        event.get("action").and_then(Value::as_str),
        event.get("observation").and_then(Value::as_str),
    ) {
        (Some(_), _) if !event.contains_key("args") => {
            ("args", &|k| EVENT_KEYS.contains(&k) && k != "content")
        }
        (None, Some(_)) if !event.contains_key("extras") => {
            ("extras", &|k| EVENT_KEYS.contains(&k))
        }
        _ => return Cow::Borrowed(v),
    };
    let mut out = Map::new();
    let mut moved = Map::new();
    for (k, value) in event {
        if stays(k) {
            out.insert(k.clone(), value.clone());
        } else {
            moved.insert(k.clone(), value.clone());
        }
    }
    out.insert(key.to_owned(), Value::Object(moved));
    Cow::Owned(Value::Object(out))
}

/// The events of a `history` with each `[action, observation]` pair opened, with their pointer
/// under the history (`3`, or `3/1` inside a pair).
pub fn flatten_pairs(history: &[Value]) -> impl Iterator<Item = (String, &Value)> {
    history.iter().enumerate().flat_map(|(i, v)| {
        let items: Vec<(String, &Value)> = match v.as_array() {
            Some(pair) => pair
                .iter()
                .enumerate()
                .map(|(j, e)| (format!("{i}/{j}"), e))
                .collect(),
            None => vec![(i.to_string(), v)],
        };
        items
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn flat_fields_move_under_args_or_extras() {
        let run = json!({"action": "run", "command": "ls", "thought": "look", "blocking": false});
        assert_eq!(
            normalized(&run).into_owned(),
            json!({"action": "run", "args": {"command": "ls", "thought": "look", "blocking": false}})
        );
        let message = json!({"action": "message", "content": "fix it", "wait_for_response": false});
        assert_eq!(
            normalized(&message)["args"],
            json!({"content": "fix it", "wait_for_response": false})
        );
        let out = json!({"observation": "run", "content": "a\n", "command_id": -1, "command": "ls", "exit_code": 0});
        assert_eq!(
            normalized(&out).into_owned(),
            json!({"observation": "run", "content": "a\n", "extras": {"command_id": -1, "command": "ls", "exit_code": 0}})
        );
        // Current events are left as they are.
        let current = json!({"id": 1, "action": "run", "args": {"command": "ls"}});
        assert!(matches!(normalized(&current), Cow::Borrowed(_)));
    }

    #[test]
    fn pairs_are_opened_in_order() {
        let history = json!([{"action": "a"}, [{"action": "b"}, {"observation": "c"}]]);
        let got: Vec<String> = flatten_pairs(history.as_array().expect("array"))
            .map(|(at, _)| at)
            .collect();
        assert_eq!(got, ["0", "1/0", "1/1"]);
    }
}
