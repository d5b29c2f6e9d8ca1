//! Subagent branches: a trajectory its reader converted from a subagent's own log (a Claude
//! Code `agent-*.jsonl`, an OpenCode or Crush sub-session, a Codex thread spawned by another,
//! ...) linked to the trajectory and the call that spawned it (see docs/segments.md).
//!
//! Readers say so in different words; [`link`] reads each:
//! - `details.<format>.agent`: `parent_trajectory_id` and `spawned_by` (a call id, or an object
//!   naming it as `tool_use_id` or `tool_call_id`): Claude Code, Copilot CLI, Cursor, Droid,
//!   Kimi CLI;
//! - `details.<format>.parent`: `session_id` and `call_id` or `tool_call_id` (OpenCode, Crush; a
//!   Crush session that only generated a title, `purpose: "title"`, is no subagent), or
//!   `trajectory_id` for an ATIF subagent, whose id is `<parent id>/<its own>`;
//! - Codex: `details.codex.session_meta.payload.source.subagent.thread_spawn.parent_thread_id`;
//! - Hermes: `details.hermes.parent_session_id`, unless the parent ended in a compression (its
//!   continuation) and the session is not marked `_delegate_from`;
//! - else `details.source.native_ids.parent_session_id` (Goose).

use serde_json::{json, Value};

use super::leading_len;
use crate::model::{JsonObject, Source, Step, Trajectory};

/// Where a subagent branch comes from: its parent trajectory's id and, where its reader found
/// it, the id of the parent's call that spawned it.
#[derive(Debug, Clone, PartialEq)]
struct Link {
    parent: String,
    call: Option<String>,
}

/// `traj` as a subagent branch: when its reader linked it to a parent, `details.subagent` is
/// `{parent, call, prompt}`, `prompt` being `"recorded"` when the branch opens (after its
/// system steps) with the user message it was given (the prompt of the parent's call, as the
/// subagent's log records it) and `null` when its log records none. Any other trajectory, or
/// one linked already, is returned unchanged.
pub fn branch(mut traj: Trajectory) -> Trajectory {
    if traj.details.contains_key("subagent") {
        return traj;
    }
    let Some(link) = link(&traj.details, &traj.id) else {
        return traj;
    };
    let prompt = opens_with_prompt(&traj.content).then_some("recorded");
    traj.details.insert(
        "subagent".into(),
        json!({"parent": link.parent, "call": link.call, "prompt": prompt}),
    );
    traj
}

/// The parent a reader linked a trajectory to, if any (see the module's documentation).
fn link(details: &JsonObject, id: &str) -> Option<Link> {
    let format = details
        .get("source")
        .and_then(|s| s.get("format"))
        .and_then(Value::as_str)?;
    let own = details.get(&format.replace('-', "_"));
    let own = own.unwrap_or(&Value::Null);
    let text = |v: &Value| v.as_str().filter(|s| !s.is_empty()).map(str::to_owned);
    let call_in = |v: &Value, keys: &[&str]| {
        text(v).or_else(|| keys.iter().find_map(|k| v.get(*k).and_then(text)))
    };
    if let Some(parent) = own.pointer("/agent/parent_trajectory_id").and_then(text) {
        let call = call_in(
            &own["agent"]["spawned_by"],
            &["tool_use_id", "tool_call_id"],
        );
        return Some(Link { parent, call });
    }
    let p = &own["parent"];
    if p.is_object() {
        if p["purpose"].as_str() == Some("title") {
            return None;
        }
        if let Some(parent) = text(&p["session_id"]) {
            let call = ["call_id", "tool_call_id"]
                .iter()
                .find_map(|k| text(&p[*k]));
            return Some(Link { parent, call });
        }
        if p.get("trajectory_id").is_some() {
            let (parent, _) = id.rsplit_once('/')?;
            return Some(Link {
                parent: parent.to_owned(),
                call: None,
            });
        }
    }
    let source = own
        .pointer("/session_meta/payload/source")
        .unwrap_or(&Value::Null);
    let spawn = ["subagent", "sub_agent"]
        .iter()
        .find_map(|k| source.get(*k))
        .and_then(|s| s.get("thread_spawn"));
    if let Some(parent) = spawn.and_then(|s| s.get("parent_thread_id")).and_then(text) {
        return Some(Link { parent, call: None });
    }
    if let Some(parent) = own.get("parent_session_id").and_then(text) {
        let continuation = own["parent_end_reason"].as_str() == Some("compression")
            && own
                .pointer("/session/model_config/_delegate_from")
                .is_none_or(Value::is_null);
        return (!continuation).then_some(Link { parent, call: None });
    }
    details
        .get("source")
        .and_then(|s| s.pointer("/native_ids/parent_session_id"))
        .and_then(text)
        .map(|parent| Link { parent, call: None })
}

/// Whether `content` opens, after its leading system steps, with a user's text.
fn opens_with_prompt(content: &[Step]) -> bool {
    matches!(content.get(leading_len(content)),
        Some(Step::TextObservation(o)) if o.source == Source::User)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn details(v: Value) -> JsonObject {
        match v {
            Value::Object(m) => m,
            _ => unreachable!(),
        }
    }

    fn linked(v: Value, id: &str) -> Option<(String, Option<String>)> {
        link(&details(v), id).map(|l| (l.parent, l.call))
    }

    fn some(parent: &str, call: Option<&str>) -> Option<(String, Option<String>)> {
        Some((parent.into(), call.map(Into::into)))
    }

    #[test]
    fn each_readers_link_is_read() {
        let cc = json!({"source": {"format": "claude-code"}, "claude_code": {"agent": {
            "agent_id": "a1", "parent_trajectory_id": "s", "spawned_by": {"tool_use_id": "toolu_5"}}}});
        assert_eq!(linked(cc, "s/agent-a1"), some("s", Some("toolu_5")));
        let copilot = json!({"source": {"format": "copilot-cli"}, "copilot_cli": {"agent": {
            "parent_trajectory_id": "s", "spawned_by": "toolu_03"}}});
        assert_eq!(linked(copilot, "x"), some("s", Some("toolu_03")));
        let kimi = json!({"source": {"format": "kimi-cli"}, "kimi_cli": {"agent": {
            "parent_trajectory_id": "s", "spawned_by": null}}});
        assert_eq!(linked(kimi, "x"), some("s", None));
        let opencode = json!({"source": {"format": "opencode"}, "opencode": {"parent": {
            "session_id": "ses_main", "call_id": "call_1"}}});
        assert_eq!(linked(opencode, "x"), some("ses_main", Some("call_1")));
        let crush = json!({"source": {"format": "crush"}, "crush": {"parent": {
            "session_id": "m", "purpose": "agent_tool", "tool_call_id": "c"}}});
        assert_eq!(linked(crush, "x"), some("m", Some("c")));
        let title = json!({"source": {"format": "crush"}, "crush": {"parent": {
            "session_id": "m", "purpose": "title"}}});
        assert_eq!(linked(title, "x"), None);
        let atif =
            json!({"source": {"format": "atif"}, "atif": {"parent": {"trajectory_id": "r"}}});
        assert_eq!(linked(atif, "run-1/sub-1"), some("run-1", None));
        let codex = json!({"source": {"format": "codex"}, "codex": {"session_meta": {"payload": {
            "source": {"subagent": {"thread_spawn": {"parent_thread_id": "t0", "depth": 1}}}}}}});
        assert_eq!(linked(codex, "t1"), some("t0", None));
        let review = json!({"source": {"format": "codex"}, "codex": {"session_meta": {"payload": {
            "source": {"subagent": "review"}}}}});
        assert_eq!(linked(review, "t1"), None);
        let goose =
            json!({"source": {"format": "goose", "native_ids": {"parent_session_id": "g0"}}});
        assert_eq!(linked(goose, "g1"), some("g0", None));
        let none = json!({"source": {"format": "claude-code"}, "claude_code": {}});
        assert_eq!(linked(none, "s"), None);
    }

    #[test]
    fn a_hermes_continuation_is_no_subagent_but_a_delegated_session_is() {
        let child = |end: Value, delegate: Value| {
            json!({"source": {"format": "hermes"}, "hermes": {"parent_session_id": "h0",
                "parent_end_reason": end, "session": {"model_config": {"_delegate_from": delegate}}}})
        };
        assert_eq!(
            linked(child(json!(null), json!(null)), "h1"),
            some("h0", None)
        );
        assert_eq!(linked(child(json!("compression"), json!(null)), "h1"), None);
        assert_eq!(
            linked(child(json!("compression"), json!("h0")), "h1"),
            some("h0", None)
        );
    }

    #[test]
    fn a_branch_says_whether_it_opens_with_its_prompt() {
        let d = details(json!({"source": {"format": "droid"}, "droid": {"agent": {
            "parent_trajectory_id": "p", "spawned_by": "call_9"}}}));
        let system = Step::environment_text(Some("system".into()), "You are a worker.");
        let prompted = Trajectory::new(
            "c".into(),
            vec![
                system.clone(),
                Step::user_text("Find it."),
                Step::message("Found.", None),
            ],
            d.clone(),
        );
        assert_eq!(
            branch(prompted).details["subagent"],
            json!({"parent": "p", "call": "call_9", "prompt": "recorded"})
        );
        let bare = Trajectory::new("c".into(), vec![Step::message("Found.", None)], d);
        let once = branch(bare);
        assert_eq!(once.details["subagent"]["prompt"], Value::Null);
        assert_eq!(branch(once.clone()), once);
        let main = Trajectory::new("m".into(), vec![Step::user_text("a")], JsonObject::new());
        assert_eq!(branch(main.clone()), main);
    }
}
