//! The join's policies: what happens to unmatched trajectories, side records no trajectory
//! matched, duplicate keys and conflicting values.

use crate::choice::choice as policy;

policy!(
    /// A trajectory that no side record matches.
    Unmatched, "unmatched policy", default = Keep {
        /// Written unchanged (the default).
        Keep = "keep",
        /// Not written; counted as filtered.
        Drop = "drop",
        /// Rejected, with a `join-unmatched` diagnostic naming its keys.
        Reject = "reject",
    }
);

policy!(
    /// A side record that no trajectory matched (an orphan).
    Orphans, "orphan policy", default = Report {
        /// Counted in the summary, the first ones shown as warnings (the default).
        Report = "report",
        /// Written to the rejects file, and the exit code is 1.
        Reject = "reject",
    }
);

policy!(
    /// Several records of one side set with the same key.
    Duplicates, "duplicate policy", default = All {
        /// Keep the first (in file order); the others are superseded.
        First = "first",
        /// Keep the last.
        Last = "last",
        /// Keep them all (the default): several reflections per attempt are normal; rewards
        /// that disagree are then a conflict.
        All = "all",
        /// Refuse the side files, naming each duplicate's file and line.
        Error = "error",
    }
);

policy!(
    /// Two different values for one slot (a reward, a reward component, the outcome, a step's
    /// reward): from two side records, or from a side record and the trajectory itself.
    Conflicts, "conflict policy", default = Error {
        /// Reject the trajectory with a `join-conflict` diagnostic naming both origins (the
        /// default).
        Error = "error",
        /// Keep the value already there (the trajectory's, else the first side record's).
        Keep = "keep",
        /// Take the later value (side records win over the trajectory, later lines over
        /// earlier ones).
        Replace = "replace",
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_round_trip_and_unknown_ones_list_the_known() {
        for p in [
            Duplicates::First,
            Duplicates::Last,
            Duplicates::All,
            Duplicates::Error,
        ] {
            assert_eq!(p.name().parse::<Duplicates>(), Ok(p));
        }
        let e = "sometimes".parse::<Conflicts>().unwrap_err();
        assert!(e.contains("error, keep, replace"), "{e}");
        assert_eq!("drop".parse::<Unmatched>(), Ok(Unmatched::Drop));
        assert_eq!("reject".parse::<Orphans>(), Ok(Orphans::Reject));
    }
}
