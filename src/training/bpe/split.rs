//! The pre-tokenizer's pattern: the pieces a text splits into before BPE, as the `tokenizers`
//! library's `Split` (behavior `Isolated`) and byte-level pre-tokenizers cut them.
//!
//! Those patterns are written for a backtracking engine; the common ones use look-ahead only in
//! a trailing `\s+(?!\S)|\s+` (a run of white space leaves its last character to the next
//! piece, so that `"  word"` splits as `" "`, `" word"`). [`Splitter`] runs the rest of the
//! pattern, plus `\s+`, on the `regex` crate's engine (linear time) and gives that look-ahead's
//! result back: a white-space run that the rest of the pattern does not match, followed by a
//! non-space character, loses its last character. A pattern with look-around elsewhere is
//! not supported (the tokenizer then runs on the `tokenizers` library).
//!
//! The patterns real tokenizers ship skip the engine: [`Step`] takes `pattern.rs`'s hand-written
//! matcher of a pattern when it has one, and [`Chain`] runs DeepSeek's three as one pass.

use regex_automata::meta::{Cache, Regex};
use regex_automata::{Anchored, Input};

use super::pattern::Known;
#[cfg(test)]
use super::pattern::BYTE_LEVEL;

/// The tail of a pattern whose look-ahead [`Splitter`] emulates.
const SPACE_TAIL: &str = r"|\s+(?!\S)|\s+";

/// A compiled pre-tokenizer pattern.
#[derive(Debug)]
pub struct Splitter {
    /// The pattern, its look-ahead tail replaced by `\s+`.
    all: Regex,
    /// The pattern without its tail, searched anchored; `None` when it had no such tail.
    head: Option<Regex>,
}

impl Splitter {
    /// Compiles `pattern`; `None` when its engine cannot run it (look-around other than the
    /// tail, back-references) or it matches the empty text.
    pub fn new(pattern: &str) -> Option<Self> {
        let (all, head) = match pattern.strip_suffix(SPACE_TAIL) {
            Some(head) => (
                Regex::new(&format!(r"(?:{head})|\s+")).ok()?,
                Some(Regex::new(head).ok()?),
            ),
            None => (Regex::new(pattern).ok()?, None),
        };
        if all.is_match("") {
            return None;
        }
        Some(Splitter { all, head })
    }

    /// A thread's search state for this splitter.
    pub fn caches(&self) -> Caches {
        Caches {
            all: self.all.create_cache(),
            head: self.head.as_ref().map(Regex::create_cache),
        }
    }

    /// Calls `piece` with the byte range of each piece of `text`, in order: the matches and
    /// the text between them. `false` when the pattern matched an empty piece, which the
    /// caller leaves to the `tokenizers` library.
    pub fn split(
        &self,
        text: &str,
        caches: &mut Caches,
        mut piece: impl FnMut(usize, usize),
    ) -> bool {
        let mut at = 0;
        while at < text.len() {
            // Pieces usually follow each other: an anchored search finds the next one without
            // the reverse scan an unanchored match needs for its start.
            let next = Input::new(text).range(at..);
            let found = match self
                .all
                .search_with(&mut caches.all, &next.clone().anchored(Anchored::Yes))
            {
                Some(m) => Some(m),
                None => self.all.search_with(&mut caches.all, &next),
            };
            let Some(m) = found else {
                piece(at, text.len());
                break;
            };
            if m.is_empty() {
                return false;
            }
            if m.start() > at {
                piece(at, m.start());
            }
            let end = self.space_end(text, m.start(), m.end(), caches);
            piece(m.start(), end);
            at = end;
        }
        true
    }

    /// The end of the match `start..end` under the original pattern: a white-space run
    /// matched by the tail's `\s+(?!\S)` gives its last character back when a non-space
    /// character follows.
    fn space_end(&self, text: &str, start: usize, end: usize, caches: &mut Caches) -> usize {
        let (Some(head), Some(cache)) = (&self.head, &mut caches.head) else {
            return end;
        };
        let run = &text[start..end];
        let mut chars = run.chars();
        let (Some(first), Some(last)) = (chars.next(), chars.next_back()) else {
            return end; // one character: `(?!\S)` fails, `\s+` keeps it
        };
        let followed_by_text = text[end..]
            .chars()
            .next()
            .is_some_and(|c| !c.is_whitespace());
        if !first.is_whitespace() || !followed_by_text {
            return end;
        }
        // The head's alternatives come first: when one matches here, the match is its.
        let anchored = Input::new(text).range(start..).anchored(Anchored::Yes);
        if head.search_with(cache, &anchored).is_some() {
            return end;
        }
        end - last.len_utf8()
    }
}

/// One pre-tokenizer pattern: matched by hand when it is one real tokenizers ship
/// (`pattern.rs`), else on the regex engine.
#[derive(Debug)]
pub enum Step {
    /// A pattern matched by hand.
    Known(Known),
    /// Any other pattern.
    Regex(Splitter),
}

impl Step {
    /// The step of `pattern`; `None` when the regex engine cannot run it (see
    /// [`Splitter::new`]).
    pub fn new(pattern: &str) -> Option<Self> {
        match Known::of(pattern) {
            Some(known) => Some(Step::Known(known)),
            None => Splitter::new(pattern).map(Step::Regex),
        }
    }
}

/// Patterns run in turn, as a `Sequence` of pre-tokenizers runs: each cuts the pieces of
/// the one before it (DeepSeek's numbers, then CJK runs, then its main pattern).
#[derive(Debug)]
pub struct Chain(Vec<Step>);

impl Chain {
    /// The chain of `steps`, first to last; DeepSeek's three patterns become one pass.
    pub fn new(mut steps: Vec<Step>) -> Self {
        let deepseek = [Known::Digits, Known::Cjk, Known::DeepSeek];
        if let Some(at) = (0..steps.len().saturating_sub(2)).find(|&i| {
            steps[i..i + 3]
                .iter()
                .zip(deepseek)
                .all(|(s, k)| matches!(s, Step::Known(known) if *known == k))
        }) {
            steps.splice(at..at + 3, [Step::Known(Known::DeepSeekSequence)]);
        }
        Chain(steps)
    }

    /// A thread's search state for each step (none for a pattern matched by hand).
    pub fn caches(&self) -> Vec<Option<Caches>> {
        self.0
            .iter()
            .map(|s| match s {
                Step::Known(_) => None,
                Step::Regex(r) => Some(r.caches()),
            })
            .collect()
    }

    /// Calls `piece` with the byte range of each final piece of `text`, in order; `false`
    /// when a pattern matched an empty piece (see [`Splitter::split`]).
    pub fn split(
        &self,
        text: &str,
        caches: &mut [Option<Caches>],
        mut piece: impl FnMut(usize, usize),
    ) -> bool {
        split_with(&self.0, caches, text, 0, &mut piece)
    }
}

/// `text` (at `base` in the whole) cut by `steps[0]`, each piece cut by the rest.
fn split_with(
    steps: &[Step],
    caches: &mut [Option<Caches>],
    text: &str,
    base: usize,
    piece: &mut dyn FnMut(usize, usize),
) -> bool {
    let (Some((first, rest)), [cache, rest_caches @ ..]) = (steps.split_first(), caches) else {
        piece(base, base + text.len());
        return true;
    };
    if rest.is_empty() {
        return match (first, cache) {
            (Step::Known(k), _) => {
                k.split(text, base, piece);
                true
            }
            (Step::Regex(r), Some(cache)) => r.split(text, cache, |a, b| piece(base + a, base + b)),
            (Step::Regex(_), None) => false,
        };
    }
    let mut ok = true;
    let mut each = |a: usize, b: usize| {
        ok = ok && split_with(rest, rest_caches, &text[a..b], base + a, piece);
    };
    let split = match (first, cache) {
        (Step::Known(k), _) => {
            k.split(text, 0, &mut each);
            true
        }
        (Step::Regex(r), Some(cache)) => r.split(text, cache, each),
        (Step::Regex(_), None) => false,
    };
    ok && split
}

/// `pattern` when the `regex` crate reads it as the `tokenizers` library's engine
/// (Oniguruma) does, else why not: anchors (`^` and `$` match at line ends there) and the
/// shorthand classes whose Unicode extent differs (`\d`, `\w`, `\b`) are refused.
pub fn portable(pattern: &str) -> Result<&str, String> {
    let mut chars = pattern.chars().peekable();
    let mut depth = 0usize;
    let mut previous = None;
    while let Some(c) = chars.next() {
        match c {
            '\\' => {
                let next = chars.next();
                if let Some(
                    n @ ('d' | 'D' | 'w' | 'W' | 'b' | 'B' | 'h' | 'H' | 'A' | 'z' | 'Z' | 'G'),
                ) = next
                {
                    return Err(format!(
                        "a Split pattern has \\{n}, read differently by the library"
                    ));
                }
                previous = None;
                continue;
            }
            '[' => depth += 1,
            ']' if depth > 0 && previous != Some('[') => depth -= 1,
            '^' if depth == 0 => return Err("a Split pattern has an anchor (^)".into()),
            '$' if depth == 0 => return Err("a Split pattern has an anchor ($)".into()),
            _ => {}
        }
        previous = Some(c);
    }
    Ok(pattern)
}

/// A thread's search state for a [`Splitter`].
#[derive(Debug, Clone)]
pub struct Caches {
    all: Cache,
    head: Option<Cache>,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pieces(pattern: &str, text: &str) -> Vec<String> {
        let s = Splitter::new(pattern).expect("compiles");
        let mut out = Vec::new();
        assert!(s.split(text, &mut s.caches(), |a, b| out
            .push(text[a..b].to_string())));
        out
    }

    #[test]
    fn white_space_runs_leave_their_last_character() {
        let p = pieces(BYTE_LEVEL, "a  b\t\tc   \n\nd  ");
        assert_eq!(
            p,
            ["a", " ", " b", "\t", "\t", "c", "   \n", "\n", "d", "  "]
        );
        assert_eq!(
            pieces(BYTE_LEVEL, "it's 12 ok!!"),
            ["it", "'s", " 12", " ok", "!!"]
        );
    }

    #[test]
    fn a_head_match_on_white_space_is_kept_whole() {
        // `\s*[\r\n]+` before the tail matches a run ending in newlines.
        let p = r"[^\r\n\p{L}]?\p{L}+|\p{N}+| ?[^\s\p{L}\p{N}]+|\s*[\r\n]+|\s+(?!\S)|\s+";
        assert_eq!(pieces(p, "a \n\nb  c"), ["a", " \n\n", "b", " ", " c"]);
    }

    #[test]
    fn unsupported_patterns_are_refused() {
        assert!(Splitter::new(r"(?=a)b").is_none());
        assert!(Splitter::new(r"a*").is_none());
        assert!(Splitter::new(r"(a)\1").is_none());
    }
}
