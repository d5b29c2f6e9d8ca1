//! Compaction segments in the report: how many segments each session makes
//! (`trajkit::segment`), and with a tokenizer the tokens of each segment of the compacted
//! sessions, against the model's context when it is given.

use serde::Serialize;

use super::histogram::Log2Histogram;
use super::stats::MAX_KEYS;

/// One session's segments, as measured on a worker.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct SessionSegments {
    /// The trajectory's id.
    pub id: String,
    /// Its compaction segments (1: not compacted).
    pub segments: usize,
    /// Each segment's tokens, when counted (`None` for a segment the template does not render:
    /// one with no assistant turn).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens: Option<Vec<Option<u64>>>,
    /// The whole trajectory's tokens, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub whole: Option<u64>,
}

/// Segments per session and tokens per segment.
#[derive(Debug, Clone, Default, Serialize)]
pub struct SegmentProfile {
    /// Sessions cut at one compaction or more.
    pub compacted: u64,
    /// The segments of those sessions.
    pub segments: u64,
    /// Segments per session, of every valid trajectory (1: not compacted).
    pub segments_per_session: Log2Histogram,
    /// Tokens per segment of the compacted sessions, when counted.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tokens_per_segment: Option<Log2Histogram>,
    /// The context the segments are measured against (`--context`), in tokens.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub context: Option<u64>,
    /// With a context and tokens: the segments over it.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub segments_over_context: Option<u64>,
    /// With a context and tokens: the compacted sessions over it as one row (what an export
    /// without `--segments` would write).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sessions_over_context: Option<u64>,
    /// The compacted sessions, the first [`MAX_KEYS`] in input order.
    pub sessions: Vec<SessionSegments>,
}

impl SegmentProfile {
    /// An empty profile measuring against `context`.
    pub fn new(context: Option<u64>) -> Self {
        SegmentProfile {
            context,
            ..Self::default()
        }
    }

    /// Whether no session was compacted (the report then has no segments section).
    pub fn is_empty(&self) -> bool {
        self.compacted == 0
    }

    /// Counts one session.
    pub fn add(&mut self, s: SessionSegments) {
        self.segments_per_session.add(s.segments as u64);
        if s.segments < 2 {
            return;
        }
        self.compacted += 1;
        self.segments += s.segments as u64;
        if let Some(tokens) = &s.tokens {
            let hist = self.tokens_per_segment.get_or_insert_with(Default::default);
            for n in tokens.iter().flatten() {
                hist.add(*n);
            }
            if let Some(c) = self.context {
                let over = tokens.iter().flatten().filter(|&&n| n > c).count() as u64;
                *self.segments_over_context.get_or_insert(0) += over;
                let whole_over = s.whole.is_some_and(|n| n > c);
                *self.sessions_over_context.get_or_insert(0) += u64::from(whole_over);
            }
        }
        if self.sessions.len() < MAX_KEYS {
            self.sessions.push(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn session(id: &str, segments: usize, tokens: Option<Vec<Option<u64>>>) -> SessionSegments {
        let whole = tokens.as_ref().map(|t| t.iter().flatten().sum::<u64>());
        SessionSegments {
            id: id.into(),
            segments,
            tokens,
            whole,
        }
    }

    #[test]
    fn compacted_sessions_are_listed_and_their_segments_measured_against_the_context() {
        let mut p = SegmentProfile::new(Some(100));
        p.add(session("plain", 1, Some(vec![Some(500)])));
        p.add(session("a", 2, Some(vec![Some(90), Some(80)])));
        p.add(session("b", 3, Some(vec![Some(120), None, Some(10)])));
        assert_eq!(p.compacted, 2);
        assert_eq!(p.segments, 5);
        assert_eq!(p.segments_per_session.counts, vec![0, 1, 1, 1]);
        assert_eq!(p.segments_over_context, Some(1));
        assert_eq!(p.sessions_over_context, Some(2));
        assert_eq!(p.sessions.len(), 2);
        assert_eq!(
            p.tokens_per_segment.map(|h| h.counts.iter().sum::<u64>()),
            Some(4)
        );
    }

    #[test]
    fn without_tokens_only_segments_are_counted() {
        let mut p = SegmentProfile::new(Some(100));
        p.add(session("a", 2, None));
        assert_eq!(p.tokens_per_segment, None);
        assert_eq!(p.segments_over_context, None);
        assert!(!p.is_empty());
        assert!(SegmentProfile::default().is_empty());
    }
}
