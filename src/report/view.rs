//! A trajectory made ready to read: each step with its class, a heading (function, language,
//! source), its texts clipped, and the links between tool calls and their results by step
//! index. The report's examples and `trajkit show` draw the same view.

use foldhash::{HashMap, HashMapExt};
use serde_json::Value;

use crate::model::{Step, Trajectory};

/// How much of a trajectory a view keeps.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Limits {
    /// Steps kept from the start.
    pub head_steps: usize,
    /// Steps kept from the end (the steps between are left out, with a note).
    pub tail_steps: usize,
    /// Bytes kept of each text (cut at a character boundary, with the bytes left out).
    pub text_bytes: usize,
}

impl Limits {
    /// Everything: every step and every byte.
    pub const FULL: Limits = Limits {
        head_steps: usize::MAX,
        tail_steps: 0,
        text_bytes: usize::MAX,
    };
}

/// A text, perhaps cut.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Clipped {
    /// The text kept.
    pub text: String,
    /// Bytes left out after it.
    pub more_bytes: usize,
}

impl Clipped {
    /// The first `limit` bytes of `text` (at a character boundary).
    pub fn new(text: &str, limit: usize) -> Clipped {
        if text.len() <= limit {
            return Clipped {
                text: text.to_owned(),
                more_bytes: 0,
            };
        }
        let mut end = limit;
        while !text.is_char_boundary(end) {
            end -= 1;
        }
        Clipped {
            text: text[..end].to_owned(),
            more_bytes: text.len() - end,
        }
    }
}

/// One step of a view.
#[derive(Debug, Clone, PartialEq)]
pub struct StepView {
    /// Its index in the trajectory (0-based).
    pub index: usize,
    /// Its `class_`.
    pub class: &'static str,
    /// True for actions.
    pub action: bool,
    /// What it is: the function, `bash code`, `environment: grep`, ...
    pub heading: String,
    /// Its main text: contents, code, arguments as JSON, a page.
    pub body: Clipped,
    /// The stated thought (`description`).
    pub description: Option<Clipped>,
    /// The extended reasoning.
    pub reasoning: Option<Clipped>,
    /// Its `tool_call_id`.
    pub call_id: Option<String>,
    /// For a result: the index of the call it answers.
    pub answers: Option<usize>,
    /// For a call: the index of the result that answers it.
    pub answered_by: Option<usize>,
    /// Its reward.
    pub reward: Option<f64>,
}

/// A trajectory made ready to read.
#[derive(Debug, Clone, PartialEq)]
pub struct View {
    /// The trajectory's id.
    pub id: String,
    /// Its steps in all.
    pub steps_total: usize,
    /// The steps kept, in order.
    pub steps: Vec<StepView>,
    /// Steps left out (between the head and the tail).
    pub omitted: usize,
    /// `details.outcome.status`.
    pub outcome: Option<String>,
    /// `details.reward`.
    pub reward: Option<f64>,
    /// `details.source.format`.
    pub format: Option<String>,
}

/// `details.outcome.status` of a trajectory.
pub fn outcome(traj: &Trajectory) -> Option<&str> {
    traj.details.get("outcome")?.get("status")?.as_str()
}

/// `details.reward` of a trajectory.
pub fn reward(traj: &Trajectory) -> Option<f64> {
    traj.details.get("reward")?.as_f64()
}

/// `details.source.format` of a trajectory.
pub fn source_format(traj: &Trajectory) -> Option<&str> {
    traj.details.get("source")?.get("format")?.as_str()
}

/// For each step, the index of the step it is linked with: a result's call and a call's
/// result, by `tool_call_id`, or, for a call without an id, the observation right after it.
pub fn links(steps: &[Step]) -> Vec<Option<usize>> {
    let mut linked = vec![None; steps.len()];
    let mut open: HashMap<&str, usize> = HashMap::new();
    for (i, step) in steps.iter().enumerate() {
        match (step.is_tool_action(), step.tool_call_id()) {
            (true, Some(id)) => {
                open.insert(id, i);
            }
            (true, None) => {
                if steps.get(i + 1).is_some_and(|s| !s.is_action()) {
                    linked[i] = Some(i + 1);
                    linked[i + 1] = Some(i);
                }
            }
            (false, Some(id)) => {
                if let Some(call) = open.remove(id) {
                    linked[i] = Some(call);
                    linked[call] = Some(i);
                }
            }
            (false, None) => {}
        }
    }
    linked
}

/// The view of `traj` within `limits`.
pub fn view(traj: &Trajectory, limits: Limits) -> View {
    let n = traj.content.len();
    let links = links(&traj.content);
    let keep = |i: usize| i < limits.head_steps || i >= n.saturating_sub(limits.tail_steps);
    let clip = |s: &str| Clipped::new(s, limits.text_bytes);
    let opt = |s: &Option<String>| s.as_deref().filter(|s| !s.is_empty()).map(clip);
    let mut steps = Vec::new();
    for (i, step) in traj.content.iter().enumerate().filter(|(i, _)| keep(*i)) {
        let (heading, body, description) = match step {
            Step::ApiAction(a) => (
                a.function.clone(),
                clip(&Value::Object(a.kwargs.clone()).to_string()),
                opt(&a.description),
            ),
            Step::CodeAction(c) => (
                format!("{} code", c.language),
                clip(&c.content),
                opt(&c.description),
            ),
            Step::MessageAction(m) => ("message".to_owned(), clip(&m.content), opt(&m.description)),
            Step::TextObservation(o) => {
                (heading(o.source.as_str(), &o.name), clip(&o.content), None)
            }
            Step::ImageObservation(o) => (
                heading(o.source.as_str(), &None),
                clip(&format!("image: {}", o.content)),
                None,
            ),
            Step::WebObservation(w) => (
                format!("page {}", w.url.as_deref().unwrap_or(""))
                    .trim_end()
                    .to_owned(),
                clip(w.axtree.as_deref().or(w.html.as_deref()).unwrap_or("")),
                None,
            ),
            Step::JsonObservation(o) => (
                heading(o.source.as_str(), &o.name),
                clip(&Value::Object(o.content.clone()).to_string()),
                None,
            ),
        };
        let action = step.is_action();
        steps.push(StepView {
            index: i,
            class: step.class_name(),
            action,
            heading,
            body,
            description,
            reasoning: step.reasoning_content().filter(|s| !s.is_empty()).map(clip),
            call_id: step.tool_call_id().map(str::to_owned),
            answers: if action { None } else { links[i] },
            answered_by: if action { links[i] } else { None },
            reward: step.reward(),
        });
    }
    View {
        id: traj.id.clone(),
        steps_total: n,
        omitted: n - steps.len(),
        steps,
        outcome: outcome(traj).map(str::to_owned),
        reward: reward(traj),
        format: source_format(traj).map(str::to_owned),
    }
}

fn heading(source: &str, name: &Option<String>) -> String {
    match name.as_deref() {
        Some(n) if !n.is_empty() => format!("{source}: {n}"),
        _ => source.to_owned(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn clipping_cuts_at_a_character_boundary() {
        let c = Clipped::new("aé€z", 3);
        assert_eq!(c.text, "aé");
        assert_eq!(c.more_bytes, 4);
        assert_eq!(Clipped::new("abc", 3).more_bytes, 0);
    }

    #[test]
    fn long_trajectories_keep_head_and_tail() {
        let steps = (0..100)
            .map(|i| Step::message(format!("m{i}"), None))
            .collect();
        let t = Trajectory::new("t".into(), steps, Default::default());
        let limits = Limits {
            head_steps: 3,
            tail_steps: 2,
            text_bytes: 10,
        };
        let v = view(&t, limits);
        let kept: Vec<usize> = v.steps.iter().map(|s| s.index).collect();
        assert_eq!(kept, [0, 1, 2, 98, 99]);
        assert_eq!(v.omitted, 95);
    }

    #[test]
    fn calls_and_results_are_linked_by_id_or_position() {
        let steps = vec![
            Step::api("f", Default::default(), None).with_tool_call_id("a"),
            Step::code("bash", "ls", None),
            Step::environment_text(None, "out"),
            Step::environment_text(None, "f's result").with_tool_call_id("a"),
        ];
        assert_eq!(links(&steps), [Some(3), Some(2), Some(1), Some(0)]);
    }
}
