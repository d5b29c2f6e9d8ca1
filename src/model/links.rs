//! ADP 1.3+ tool-call links: checking them, and backfilling them when upgrading older data.
//!
//! The rules: a tool action (api or code) directly followed by an observation carries a
//! `tool_call_id`; action ids are unique; every observation id answers an earlier action id, and
//! each action id is answered exactly once; message actions carry none.

use std::collections::HashSet;

use foldhash::{HashMap, HashMapExt};

use super::step::{Source, Step};
use super::violation::Violation;

/// Checks the link rules over `content`, returning one violation per problem: a consequence of
/// a problem already reported is not reported again (the answer to a duplicated action id is
/// that duplicate's answer; a wrong id on the observation right after a tool action is reported
/// once, as dangling, and that action counts as answered).
pub fn check_links(content: &[Step]) -> Vec<Violation> {
    let mut out = Vec::new();
    let mut actions: HashMap<&str, usize> = HashMap::new();
    let mut answered: HashMap<&str, usize> = HashMap::new();
    let mut duplicate_answers: HashMap<&str, usize> = HashMap::new();
    for (i, step) in content.iter().enumerate() {
        let id = step.tool_call_id();
        let next_is_observation = content.get(i + 1).is_some_and(|n| !n.is_action());
        if step.is_tool_action() && next_is_observation && id.is_none() {
            out.push(Violation::new(
                format!("/content/{i}"),
                "link-missing",
                format!(
                    "{} at content index {i} is followed by an observation but has no tool_call_id",
                    step.class_name()
                ),
            ));
        }
        let Some(id) = id else { continue };
        let pointer = || format!("/content/{i}/tool_call_id");
        if matches!(step, Step::MessageAction(_)) {
            out.push(Violation::new(
                pointer(),
                "link-on-message",
                format!("message_action at content index {i} has tool_call_id {id:?}, but a message is not a tool call"),
            ));
        } else if step.is_tool_action() {
            if let Some(first) = actions.get(id) {
                *duplicate_answers.entry(id).or_default() += 1;
                out.push(Violation::new(
                    pointer(),
                    "link-duplicate",
                    format!("tool_call_id {id:?} is used by the actions at content indices {first} and {i}"),
                ));
            } else {
                actions.insert(id, i);
            }
        } else if !actions.contains_key(id) {
            let previous = i.checked_sub(1).map(|p| (p, &content[p]));
            let mut message = format!(
                "observation at content index {i} answers tool_call_id {id:?}, which no earlier action has"
            );
            if let Some((p, action)) = previous.filter(|(_, a)| a.is_tool_action()) {
                if let Some(expected) = action.tool_call_id() {
                    message.push_str(&format!(
                        " (the action before it, at content index {p}, has {expected:?})"
                    ));
                    answered.entry(expected).or_insert(i);
                }
            }
            out.push(Violation::new(pointer(), "link-dangling", message));
        } else if let Some(first) = answered.get(id) {
            match duplicate_answers.get_mut(id) {
                Some(n) if *n > 0 => *n -= 1,
                _ => out.push(Violation::new(
                    pointer(),
                    "link-answered-twice",
                    format!(
                        "tool_call_id {id:?} is answered twice, at content indices {first} and {i}"
                    ),
                )),
            }
        } else {
            answered.insert(id, i);
        }
    }
    let mut unanswered: Vec<(&str, usize)> = actions
        .into_iter()
        .filter(|(id, _)| !answered.contains_key(id))
        .collect();
    unanswered.sort_by_key(|&(_, i)| i);
    for (id, i) in unanswered {
        out.push(Violation::new(
            format!("/content/{i}/tool_call_id"),
            "link-unanswered",
            format!("tool_call_id {id:?} of the action at content index {i} is never answered by an observation"),
        ));
    }
    out
}

/// Adds `tool_call_id`s to adjacent tool-action/observation pairs that lack them, the way ADP's
/// own upgrade does: ids `call_000001`, `call_000002`, ... numbered by pair and skipping ids
/// already present; an id on only one side of a pair is copied to the other. A linked text or
/// image observation whose source is `user` is re-labelled `environment` (a tool result does not
/// come from the user). Returns the number of pairs changed.
pub fn backfill_links(content: &mut [Step]) -> usize {
    // The ids already present, gathered when the first pair without ids needs one (most
    // trajectories are linked already and need none).
    let mut existing: Option<HashSet<String>> = None;
    let mut ordinal = 1u64;
    let mut changed = 0;
    for i in 0..content.len().saturating_sub(1) {
        if !content[i].is_tool_action() || content[i + 1].is_action() {
            continue;
        }
        if existing.is_none()
            && content[i].tool_call_id().is_none()
            && content[i + 1].tool_call_id().is_none()
        {
            existing = Some(
                content
                    .iter()
                    .filter_map(|s| s.tool_call_id().map(str::to_owned))
                    .collect(),
            );
        }
        let (head, tail) = content.split_at_mut(i + 1);
        let (action, observation) = (&mut head[i], &mut tail[0]);
        let mut touched = relabel_user_result(observation);
        let id = match (action.tool_call_id(), observation.tool_call_id()) {
            (Some(_), Some(_)) => None,
            (Some(a), None) => Some(a.to_owned()),
            (None, Some(o)) => Some(o.to_owned()),
            (None, None) => {
                let existing = existing.get_or_insert_with(HashSet::new);
                Some(loop {
                    let candidate = format!("call_{ordinal:06}");
                    ordinal += 1;
                    if existing.insert(candidate.clone()) {
                        break candidate;
                    }
                })
            }
        };
        if let Some(id) = id {
            *action.tool_call_id_mut() = Some(id.clone());
            *observation.tool_call_id_mut() = Some(id);
            touched = true;
        }
        changed += usize::from(touched);
    }
    changed
}

/// Clears the link id of every tool action no observation answers: logs may record a call
/// without its result, and the link rules forbid unanswered ids.
pub fn unlink_unanswered(content: &mut [Step]) {
    let answered: HashSet<String> = content
        .iter()
        .filter(|s| !s.is_action())
        .filter_map(|s| s.tool_call_id().map(str::to_owned))
        .collect();
    for step in content.iter_mut().filter(|s| s.is_tool_action()) {
        let slot = step.tool_call_id_mut();
        if slot.as_ref().is_some_and(|id| !answered.contains(id)) {
            *slot = None;
        }
    }
}

fn relabel_user_result(observation: &mut Step) -> bool {
    let source = match observation {
        Step::TextObservation(o) => &mut o.source,
        Step::ImageObservation(o) => &mut o.source,
        _ => return false,
    };
    if *source == Source::User {
        *source = Source::Environment;
        true
    } else {
        false
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::step::{ApiAction, MessageAction, TextObservation};

    fn api(id: Option<&str>) -> Step {
        Step::ApiAction(ApiAction {
            function: "f".into(),
            kwargs: Default::default(),
            description: None,
            reasoning_content: None,
            tool_call_id: id.map(Into::into),
            reward: None,
        })
    }

    fn obs(id: Option<&str>, source: Source) -> Step {
        Step::TextObservation(TextObservation {
            content: "out".into(),
            name: None,
            source,
            tool_call_id: id.map(Into::into),
            reward: None,
        })
    }

    fn msg(id: Option<&str>) -> Step {
        Step::MessageAction(MessageAction {
            content: "done".into(),
            description: None,
            reasoning_content: None,
            tool_call_id: id.map(Into::into),
            reward: None,
        })
    }

    fn rules(content: &[Step]) -> Vec<(String, &'static str)> {
        check_links(content)
            .into_iter()
            .map(|v| (v.pointer, v.rule))
            .collect()
    }

    #[test]
    fn well_linked_content_passes() {
        let c = vec![
            obs(None, Source::User),
            api(Some("a")),
            obs(Some("a"), Source::Environment),
            msg(None),
        ];
        assert!(rules(&c).is_empty());
    }

    #[test]
    fn each_problem_is_reported_once_at_its_pointer() {
        let c = vec![api(None), obs(None, Source::Environment)];
        assert_eq!(rules(&c), vec![("/content/0".into(), "link-missing")]);

        let c = vec![
            api(Some("a")),
            obs(Some("a"), Source::Environment),
            api(Some("a")),
            obs(Some("a"), Source::Environment),
        ];
        assert_eq!(
            rules(&c),
            vec![("/content/2/tool_call_id".into(), "link-duplicate")]
        );

        let c = vec![api(Some("a")), obs(Some("b"), Source::Environment)];
        assert_eq!(
            rules(&c),
            vec![("/content/1/tool_call_id".into(), "link-dangling")]
        );

        let c = vec![obs(Some("b"), Source::Environment), api(Some("a"))];
        assert_eq!(
            rules(&c),
            vec![
                ("/content/0/tool_call_id".into(), "link-dangling"),
                ("/content/1/tool_call_id".into(), "link-unanswered"),
            ]
        );

        let c = vec![
            api(Some("a")),
            obs(Some("a"), Source::Environment),
            obs(Some("a"), Source::Environment),
            msg(Some("m")),
            api(Some("z")),
        ];
        assert_eq!(
            rules(&c),
            vec![
                ("/content/2/tool_call_id".into(), "link-answered-twice"),
                ("/content/3/tool_call_id".into(), "link-on-message"),
                ("/content/4/tool_call_id".into(), "link-unanswered"),
            ]
        );
    }

    #[test]
    fn backfill_numbers_pairs_skips_taken_ids_and_relabels_user_results() {
        let mut c = vec![
            obs(None, Source::User),
            api(None),
            obs(None, Source::User),
            api(Some("call_000002")),
            obs(None, Source::Environment),
            api(None),
            obs(None, Source::Environment),
            msg(None),
        ];
        assert_eq!(backfill_links(&mut c), 3);
        let ids: Vec<Option<&str>> = c.iter().map(Step::tool_call_id).collect();
        assert_eq!(
            ids,
            vec![
                None,
                Some("call_000001"),
                Some("call_000001"),
                Some("call_000002"),
                Some("call_000002"),
                Some("call_000003"),
                Some("call_000003"),
                None
            ]
        );
        assert_eq!(c[0].source(), Some(Source::User));
        assert_eq!(c[2].source(), Some(Source::Environment));
        assert!(check_links(&c).is_empty());
    }
}
