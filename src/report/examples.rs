//! The report's example trajectories, chosen in one pass and kept clipped: the shortest and
//! the longest (fewest and most steps, the first in input order on ties), a typical one (the
//! trajectory with the smallest split hash of its id among those whose step count falls in
//! the histogram bucket of the median) and a failure (the first whose outcome is `failure` or
//! `timeout`). One candidate per step-count bucket is kept for the typical one, so memory does
//! not grow with the input.

use super::histogram::Log2Histogram;
use super::view::{outcome, view, Limits, View};
use crate::export::split::hash_fraction;
use crate::model::Trajectory;

/// What an example shows: the first 20 and last 10 steps, 2,000 bytes of each text.
pub const EXAMPLE_LIMITS: Limits = Limits {
    head_steps: 20,
    tail_steps: 10,
    text_bytes: 2000,
};

/// A kept trajectory: its position in the input, its step count, its view.
#[derive(Debug, Clone)]
struct Kept {
    seq: u64,
    steps: usize,
    key: f64,
    view: View,
}

impl Kept {
    fn new(seq: u64, traj: &Trajectory, key: f64) -> Kept {
        Kept {
            seq,
            steps: traj.content.len(),
            key,
            view: view(traj, EXAMPLE_LIMITS),
        }
    }
}

/// The candidates seen so far.
#[derive(Debug, Clone, Default)]
pub struct Examples {
    seen: u64,
    shortest: Option<Kept>,
    longest: Option<Kept>,
    failure: Option<Kept>,
    /// Per step-count bucket, the trajectory with the smallest id hash.
    typical: Vec<Option<Kept>>,
}

impl Examples {
    /// Considers the next trajectory (in input order).
    pub fn offer(&mut self, traj: Trajectory) {
        let seq = self.seen;
        self.seen += 1;
        let n = traj.content.len();
        if self.shortest.as_ref().is_none_or(|k| n < k.steps) {
            self.shortest = Some(Kept::new(seq, &traj, 0.0));
        }
        if self.longest.as_ref().is_none_or(|k| n > k.steps) {
            self.longest = Some(Kept::new(seq, &traj, 0.0));
        }
        if self.failure.is_none() && matches!(outcome(&traj), Some("failure" | "timeout")) {
            self.failure = Some(Kept::new(seq, &traj, 0.0));
        }
        let b = Log2Histogram::bucket(n as u64);
        if self.typical.len() <= b {
            self.typical.resize(b + 1, None);
        }
        let key = hash_fraction(&traj.id);
        if self.typical[b].as_ref().is_none_or(|k| key < k.key) {
            self.typical[b] = Some(Kept::new(seq, &traj, key));
        }
    }

    /// The examples with their labels, in input order; a trajectory chosen twice is shown
    /// once with both labels. `steps` is the step-count histogram (for the median bucket).
    pub fn chosen(&self, steps: &Log2Histogram) -> Vec<(Vec<&'static str>, &View)> {
        let typical = steps
            .median_bucket()
            .and_then(|b| self.typical.get(b))
            .and_then(Option::as_ref);
        let picks = [
            ("shortest", self.shortest.as_ref()),
            ("typical", typical),
            ("longest", self.longest.as_ref()),
            ("failure", self.failure.as_ref()),
        ];
        let mut out: Vec<(u64, Vec<&'static str>, &View)> = Vec::new();
        for (label, kept) in picks {
            let Some(k) = kept else { continue };
            match out.iter_mut().find(|(seq, _, _)| *seq == k.seq) {
                Some((_, labels, _)) => labels.push(label),
                None => out.push((k.seq, vec![label], &k.view)),
            }
        }
        out.sort_by_key(|(seq, _, _)| *seq);
        out.into_iter().map(|(_, l, v)| (l, v)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::model::Step;

    fn traj(id: &str, steps: usize) -> Trajectory {
        let content = (0..steps)
            .map(|i| Step::message(i.to_string(), None))
            .collect();
        Trajectory::new(id.into(), content, Default::default())
    }

    #[test]
    fn shortest_longest_and_typical_are_chosen_once_each() {
        let mut e = Examples::default();
        let mut h = Log2Histogram::default();
        for (id, n) in [("a", 3), ("b", 1), ("c", 40), ("d", 3), ("e", 40)] {
            h.add(n as u64);
            e.offer(traj(id, n));
        }
        let chosen = e.chosen(&h);
        let ids: Vec<(&str, Vec<&str>)> = chosen
            .iter()
            .map(|(l, v)| (v.id.as_str(), l.clone()))
            .collect();
        let typical = if hash_fraction("a") < hash_fraction("d") {
            "a"
        } else {
            "d"
        };
        assert!(ids.contains(&("b", vec!["shortest"])));
        assert!(ids.contains(&("c", vec!["longest"])));
        assert!(ids.contains(&(typical, vec!["typical"])));
        assert_eq!(ids.len(), 3);
    }
}
