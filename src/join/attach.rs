//! Applying the join to one trajectory: find its side records, attach what they hold, resolve
//! conflicts, add the memory window.

use serde_json::{Map, Number, Value};

use super::index::SideIndex;
use super::policy::{Conflicts, Unmatched};
use super::spec::iteration;
use crate::ingest::Provenance;
use crate::model::Trajectory;
use crate::validate::Diagnostic;

/// The join's options that apply per trajectory.
#[derive(Debug, Clone, Copy)]
pub struct JoinPolicies {
    /// What happens to a trajectory no side record matches.
    pub unmatched: Unmatched,
    /// What happens when two values for one slot differ.
    pub conflicts: Conflicts,
    /// Attach the reflections of the previous N iterations of the loop as
    /// `details.prior_reflections` (0: none).
    pub memory_window: usize,
}

impl Default for JoinPolicies {
    fn default() -> Self {
        JoinPolicies {
            unmatched: Unmatched::Keep,
            conflicts: Conflicts::Error,
            memory_window: 0,
        }
    }
}

/// The join as a stage: the side index and the policies. [`Join::apply`] works on one
/// trajectory at a time and may be called from many threads.
#[derive(Debug)]
pub struct Join {
    /// The side records.
    pub index: SideIndex,
    /// The per-trajectory policies.
    pub policies: JoinPolicies,
}

/// What the join did to one trajectory.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Applied {
    /// At least one side record matched it.
    pub matched: bool,
    /// False when it is to be dropped (unmatched, `--unmatched drop`).
    pub keep: bool,
    /// The side records attached (matched, or in its memory window), as record numbers.
    pub used: Vec<u32>,
}

/// Where a value came from, for conflict messages.
#[derive(Clone, Copy)]
enum Origin {
    Trajectory,
    Side(u32),
}

impl Join {
    /// Attaches the side records matching `traj` to it. `prov` locates the trajectory in its
    /// input, for diagnostics. An error is a `join-conflict` (under `--conflicts error`), a
    /// `join-unmatched` (under `--unmatched reject`) or a `join-details` (a `details` slot the
    /// join writes holds something else).
    pub fn apply(
        &self,
        traj: &mut Trajectory,
        prov: &Provenance,
    ) -> Result<Applied, Vec<Diagnostic>> {
        let idx = &self.index;
        let mut matched: Vec<u32> = Vec::new();
        // The keys tried, for the diagnostic of an unmatched trajectory that is rejected.
        let explain = self.policies.unmatched == Unmatched::Reject;
        let mut tried: Vec<String> = Vec::new();
        for si in &idx.sets {
            for e in &si.spec.trajectory_keys {
                match e.eval(traj) {
                    Ok(keys) => {
                        for k in keys {
                            matched.extend_from_slice(si.get(&k));
                            if explain && tried.len() < 8 {
                                tried.push(format!("{e} = {k:?}"));
                            }
                        }
                    }
                    Err(err) if explain => tried.push(format!("{e}: {err}")),
                    Err(_) => {}
                }
            }
        }
        matched.sort_unstable();
        matched.dedup();
        let prior = self.prior(traj, &matched);
        let direct = !matched.is_empty();
        if !direct {
            match self.policies.unmatched {
                Unmatched::Keep if prior.is_empty() => {
                    return Ok(Applied {
                        keep: true,
                        ..Applied::default()
                    })
                }
                Unmatched::Keep => {}
                Unmatched::Drop => return Ok(Applied::default()),
                Unmatched::Reject => {
                    return Err(vec![Diagnostic::error(
                        prov,
                        Some(&traj.id),
                        "",
                        "join-unmatched",
                        format!(
                            "no side record matches this trajectory (tried {})",
                            if tried.is_empty() {
                                "no key".to_owned()
                            } else {
                                tried.join("; ")
                            }
                        ),
                    )])
                }
            }
        }
        let mut merge = Merge {
            idx,
            policy: self.policies.conflicts,
            prov,
            id: &traj.id,
            problems: Vec::new(),
        };
        let d = &mut traj.details;
        let mut reward = d.get("reward").map(|v| (v.clone(), Origin::Trajectory));
        let mut components: Map<String, Value> = Map::new();
        let mut component_origin: Vec<(String, Origin)> = Vec::new();
        if let Some(existing) = d.get("reward_components") {
            match existing {
                Value::Object(c) => {
                    for (k, v) in c {
                        components.insert(k.clone(), v.clone());
                        component_origin.push((k.clone(), Origin::Trajectory));
                    }
                }
                _ => merge.details_problem("reward_components", "an object"),
            }
        }
        let mut outcome = d.get("outcome").map(|v| (v.clone(), Origin::Trajectory));
        let mut reflections: Vec<Value> = match d.get("reflections") {
            None => Vec::new(),
            Some(Value::Array(r)) => r.clone(),
            Some(_) => {
                merge.details_problem("reflections", "a list");
                Vec::new()
            }
        };
        let mut step_rewards: Vec<(usize, f64, Origin)> = Vec::new();
        let steps = traj.content.len();
        for &r in &matched {
            let rec = &idx.records[r as usize];
            if let Some(n) = rec.reward() {
                merge.slot(
                    "/details/reward",
                    "reward",
                    &mut reward,
                    Value::Number(n),
                    r,
                );
            }
            if let Some(c) = idx.components(r) {
                merge.components(&mut components, &mut component_origin, &c, r);
            }
            if let Some(o) = rec.outcome() {
                merge.slot("/details/outcome", "outcome", &mut outcome, o, r);
            }
            if let Some(x) = rec.reflection() {
                if !reflections.contains(x) {
                    reflections.push(x.clone());
                }
            }
            for &(step, value) in rec.step_rewards() {
                if step >= steps {
                    merge.problems.push(merge.diagnostic(
                        &format!("/content/{step}"),
                        "join-step-reward",
                        format!(
                            "{} gives a reward for step {step}, but the trajectory has {steps} steps",
                            idx.place(r)
                        ),
                    ));
                    continue;
                }
                step_rewards.push((step, value, Origin::Side(r)));
            }
        }
        let step_values = merge.step_rewards(traj, step_rewards);
        if !merge.problems.is_empty() {
            return Err(merge.problems);
        }
        for (step, value) in step_values {
            if let Some(s) = traj.content.get_mut(step) {
                *s.reward_mut() = Some(value);
            }
        }
        let d = &mut traj.details;
        if let Some((v, _)) = reward {
            d.insert("reward".into(), v);
        }
        if !components.is_empty() {
            d.insert("reward_components".into(), Value::Object(components));
        }
        if let Some((v, _)) = outcome {
            d.insert("outcome".into(), v);
        }
        if !reflections.is_empty() {
            sort_reflections(&mut reflections);
            d.insert("reflections".into(), Value::Array(reflections));
        }
        let mut used = matched;
        if !prior.is_empty() {
            let priors: Vec<Value> = prior
                .iter()
                .filter_map(|&r| idx.records[r as usize].reflection().cloned())
                .collect();
            d.insert("prior_reflections".into(), Value::Array(priors));
            used.extend(prior);
            used.sort_unstable();
            used.dedup();
        }
        Ok(Applied {
            matched: direct,
            keep: true,
            used,
        })
    }

    /// The records in the memory window of `traj`: per set with a window, the reflections of
    /// the last N iterations before the trajectory's, in the same loop.
    fn prior(&self, traj: &Trajectory, matched: &[u32]) -> Vec<u32> {
        let n = self.policies.memory_window;
        let mut out = Vec::new();
        if n == 0 {
            return out;
        }
        let idx = &self.index;
        for (s, si) in idx.sets.iter().enumerate() {
            let Some(w) = &si.spec.window else { continue };
            let from_record = matched.iter().find_map(|&r| {
                let rec = &idx.records[r as usize];
                rec.window().filter(|_| idx.set_of(r) == s)
            });
            let place = match from_record {
                Some(p) => Some(p),
                None => {
                    let group = w.trajectory_group.eval_one(traj).ok();
                    let it = iteration(&w.trajectory_iteration, traj).ok();
                    match (group.and_then(|g| si.groups.get(&g).copied()), it) {
                        (Some(g), Some(it)) => Some((g, it)),
                        _ => None,
                    }
                }
            };
            let Some((g, k)) = place else { continue };
            let Some(list) = si.window.get(g as usize) else {
                continue;
            };
            let before = &list[..list.partition_point(|&(it, _)| it < k)];
            let mut iterations = 0;
            let mut start = before.len();
            while start > 0 && iterations < n {
                let it = before[start - 1].0;
                iterations += 1;
                while start > 0 && before[start - 1].0 == it {
                    start -= 1;
                }
            }
            out.extend(before[start..].iter().map(|&(_, r)| r));
        }
        out
    }
}

struct Merge<'a> {
    idx: &'a SideIndex,
    policy: Conflicts,
    prov: &'a Provenance,
    id: &'a str,
    problems: Vec<Diagnostic>,
}

impl Merge<'_> {
    fn diagnostic(&self, pointer: &str, rule: &str, message: String) -> Diagnostic {
        Diagnostic::error(self.prov, Some(self.id), pointer, rule, message)
    }

    fn origin(&self, o: Origin) -> String {
        match o {
            Origin::Trajectory => "the input trajectory".to_owned(),
            Origin::Side(r) => self.idx.place(r),
        }
    }

    fn details_problem(&mut self, key: &str, expected: &str) {
        let d = self.diagnostic(
            &format!("/details/{key}"),
            "join-details",
            format!("details.{key} must be {expected} to join onto it"),
        );
        self.problems.push(d);
    }

    /// Puts `new` (from record `r`) into `slot` under the conflict policy.
    fn slot(
        &mut self,
        pointer: &str,
        what: &str,
        slot: &mut Option<(Value, Origin)>,
        new: Value,
        r: u32,
    ) {
        match slot {
            None => *slot = Some((new, Origin::Side(r))),
            Some((old, _)) if same(old, &new) => {}
            Some((old, origin)) => match self.policy {
                Conflicts::Keep => {}
                Conflicts::Replace => *slot = Some((new, Origin::Side(r))),
                Conflicts::Error => {
                    let d = self.diagnostic(
                        pointer,
                        "join-conflict",
                        format!(
                            "{what} {} from {} conflicts with {} from {} (--conflicts keep|replace chooses one)",
                            compact(&new),
                            self.idx.place(r),
                            compact(old),
                            self.origin(*origin)
                        ),
                    );
                    self.problems.push(d);
                }
            },
        }
    }

    fn components(
        &mut self,
        components: &mut Map<String, Value>,
        origins: &mut Vec<(String, Origin)>,
        c: &Map<String, Value>,
        r: u32,
    ) {
        for (name, v) in c {
            let mut slot = components.get(name).map(|old| {
                let o = origins
                    .iter()
                    .find(|(n, _)| n == name)
                    .map_or(Origin::Trajectory, |(_, o)| *o);
                (old.clone(), o)
            });
            let pointer = format!(
                "/details/reward_components/{}",
                crate::model::rules::escape_pointer(name)
            );
            self.slot(
                &pointer,
                &format!("reward component {name:?}"),
                &mut slot,
                v.clone(),
                r,
            );
            if let Some((value, origin)) = slot {
                components.insert(name.clone(), value);
                match origins.iter_mut().find(|(n, _)| n == name) {
                    Some(entry) => entry.1 = origin,
                    None => origins.push((name.clone(), origin)),
                }
            }
        }
    }

    /// The per-step rewards to set, after conflicts with the steps' own and each other.
    fn step_rewards(
        &mut self,
        traj: &Trajectory,
        new: Vec<(usize, f64, Origin)>,
    ) -> Vec<(usize, f64)> {
        let mut out: Vec<(usize, f64)> = Vec::new();
        for (step, value, origin) in new {
            let Origin::Side(r) = origin else { continue };
            let current = out
                .iter()
                .rev()
                .find(|(s, _)| *s == step)
                .map(|&(_, v)| (v, "an earlier side record".to_owned()))
                .or_else(|| {
                    traj.content[step]
                        .reward()
                        .map(|v| (v, "the input trajectory".to_owned()))
                });
            match current {
                Some((old, _)) if old == value => {}
                Some(_) if self.policy == Conflicts::Keep => {}
                Some((old, from)) if self.policy == Conflicts::Error => {
                    let d = self.diagnostic(
                        &format!("/content/{step}/reward"),
                        "join-conflict",
                        format!(
                            "step {step} reward {value} from {} conflicts with {old} from {from} (--conflicts keep|replace chooses one)",
                            self.idx.place(r)
                        ),
                    );
                    self.problems.push(d);
                }
                _ => out.push((step, value)),
            }
        }
        out
    }
}

/// Equal values; numbers compare by value (`1` and `1.0` are the same reward).
fn same(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => num(x) == num(y),
        _ => a == b,
    }
}

fn num(n: &Number) -> f64 {
    n.as_f64().unwrap_or(f64::NAN)
}

/// A value for a message, cut to 120 characters.
fn compact(v: &Value) -> String {
    crate::validate::check::preview(v)
}

/// Orders reflections by iteration (those without one last), then timestamp; ties keep their
/// order.
fn sort_reflections(r: &mut [Value]) {
    r.sort_by(|a, b| {
        let it = |v: &Value| v["iteration"].as_f64();
        let ts = |v: &Value| v["timestamp"].as_str().map(str::to_owned);
        let ka = (
            it(a).is_none(),
            it(a).unwrap_or(0.0),
            ts(a).is_none(),
            ts(a),
        );
        let kb = (
            it(b).is_none(),
            it(b).unwrap_or(0.0),
            ts(b).is_none(),
            ts(b),
        );
        ka.partial_cmp(&kb).unwrap_or(std::cmp::Ordering::Equal)
    });
}
