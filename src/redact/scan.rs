//! Finding the rules' matches in one text: a [`RegexSet`] pass says which rules match at all
//! (most texts match none, and are read once), then only those rules' patterns are run,
//! their matches checked, and overlaps resolved by rule priority.
//!
//! The work grows linearly with the text, whatever it holds: each rule's pattern runs once
//! over the text (no built-in pattern makes the regex engine read far past a match), a
//! failed check never starts another search, a rule's end pattern ([`ActiveRule::until`]) is
//! looked for at most once per end, and overlaps, placeholders and version pins are looked
//! up in sorted tables, never by reading the text again per match. [`Work`] counts it.

use std::borrow::Cow;
use std::ops::Range;

use std::sync::OnceLock;

use aho_corasick::AhoCorasick;
use regex::RegexSet;
use regex_automata::util::primitives::NonMaxUsize;
use regex_automata::{meta, Input, Match, PatternID};

use super::checks;
use super::rules::Check;
use super::ruleset::{ActiveRule, RuleSet};

/// A match of a rule in a text: the part to replace.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Found {
    /// Index of the rule in [`Scanner::rules`].
    pub rule: usize,
    /// Byte range of the replaced part.
    pub span: Range<usize>,
}

/// What finding the matches in one text cost: how many regex searches were started and how
/// many bytes they and the checks read. On any text it stays within a small multiple of the
/// text's length (tests hold it to that on texts made to be slow).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Work {
    /// Regex searches started (a rule's pattern over the text, an end pattern).
    pub searches: u64,
    /// Matches of the rules' patterns examined (checked, or found to overlap).
    pub candidates: u64,
    /// Bytes read: by each search from where it started to the end of its match (or of the
    /// text), and by the checks.
    pub bytes: u64,
}

/// The placeholders in `text`, already redacted, never matched again: each
/// `<(?:SECRET|PII):[a-z0-9_]+(?::[0-9a-f]{8})?>`, in order. Read by hand, not by a regex
/// search per placeholder: a redacted text may hold millions.
fn placeholders(text: &str) -> Vec<Range<usize>> {
    each_placeholder(text).collect()
}

/// The placeholders of [`placeholders`], one at a time.
fn each_placeholder(text: &str) -> impl Iterator<Item = Range<usize>> + '_ {
    let b = text.as_bytes();
    let mut at = 0;
    std::iter::from_fn(move || {
        while let Some(i) = memchr::memchr(b'<', &b[at..]).map(|i| at + i) {
            match placeholder_end(b, i) {
                Some(end) => {
                    at = end;
                    return Some(i..end);
                }
                None => at = i + 1,
            }
        }
        None
    })
}

/// `text` with the inside of each of its placeholders taken out, their `<` and
/// `>` kept: `a <SECRET:x> b` is `a <> b`. A match that overlaps no placeholder is a match in
/// this text too, of the same bytes with the same byte on each side (all a pattern's
/// assertions look at), so a rule that does not match it finds nothing the scanner keeps in
/// `text`: its pattern is not run. A redacted text of many placeholders (some of which a rule
/// matches: `SECRET:url_password` is an assignment) is then not searched once per placeholder.
fn outside_placeholders(text: &str) -> String {
    let mut out = String::with_capacity(text.len());
    let mut at = 0;
    for p in each_placeholder(text) {
        out.push_str(&text[at..p.start]);
        out.push_str("<>");
        at = p.end;
    }
    out.push_str(&text[at..]);
    out
}

/// The end of the placeholder that starts at `b[i]` (a `<`), if one does.
fn placeholder_end(b: &[u8], i: usize) -> Option<usize> {
    let rest = &b[i + 1..];
    let tag = [&b"SECRET:"[..], b"PII:"]
        .into_iter()
        .find(|t| rest.starts_with(t))?;
    let name = rest[tag.len()..]
        .iter()
        .take_while(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || **c == b'_')
        .count();
    if name == 0 {
        return None;
    }
    let end = i + 1 + tag.len() + name;
    let hex = |c: &u8| c.is_ascii_digit() || (b'a'..=b'f').contains(c);
    match b.get(end..end + 10) {
        Some([b':', digits @ .., b'>']) if digits.iter().all(hex) => Some(end + 10),
        _ => (b.get(end) == Some(&b'>')).then_some(end + 1),
    }
}

/// Appends the placeholder of `rule` to `out`: `<SECRET:name>`, or `<SECRET:name:TAG>` with a
/// keyed hash's `tag`.
pub fn push_placeholder(out: &mut String, rule: &ActiveRule, tag: Option<&str>) {
    out.push('<');
    out.push_str(rule.kind.tag());
    out.push(':');
    out.push_str(&rule.name);
    if let Some(tag) = tag {
        out.push(':');
        out.push_str(tag);
    }
    out.push('>');
}

/// The compiled rules.
#[derive(Debug, Clone)]
pub struct Scanner {
    rules: RuleSet,
    /// The patterns of the rules without keywords, in one set: which of them match at all.
    set: RegexSet,
    /// The rule of each pattern of `set`.
    set_rules: Vec<usize>,
    /// The keywords of the rules that have some, and the rule of each keyword.
    keywords: Option<(AhoCorasick, Vec<usize>)>,
    patterns: Vec<meta::Regex>,
    /// The end pattern of each rule that has one ([`ActiveRule::until`]).
    until: Vec<Option<meta::Regex>>,
    /// Texts shorter than this hold no match of any rule.
    shortest: usize,
}

/// Texts shorter than this hold no match of any built-in rule.
const SHORTEST_BUILTIN: usize = 7;

impl Scanner {
    /// Compiles the built-in rules; `private_ips` makes private IP addresses count.
    pub fn builtin(private_ips: bool) -> Scanner {
        // The built-in patterns are constants, compiled by a test: this cannot fail.
        Scanner::new(RuleSet::builtin(private_ips))
            .unwrap_or_else(|e| unreachable!("built-in patterns: {e}"))
    }

    /// Compiles `rules` (a rule file's patterns were compiled when it was read).
    pub fn new(rules: RuleSet) -> Result<Scanner, regex::Error> {
        let compile =
            |p: &str| meta::Regex::new(p).map_err(|e| regex::Error::Syntax(e.to_string()));
        let patterns = (rules.rules.iter())
            .map(|r| compile(&r.pattern))
            .collect::<Result<Vec<_>, _>>()?;
        let until = (rules.rules.iter())
            .map(|r| r.until.as_deref().map(compile).transpose())
            .collect::<Result<Vec<_>, _>>()?;
        let set_rules: Vec<usize> = (0..rules.rules.len())
            .filter(|&i| rules.rules[i].keywords.is_empty())
            .collect();
        let set = RegexSet::new(set_rules.iter().map(|&i| &rules.rules[i].pattern))?;
        let mut words = Vec::new();
        let mut word_rules = Vec::new();
        for (i, r) in rules.rules.iter().enumerate() {
            for k in &r.keywords {
                words.push(k.as_str());
                word_rules.push(i);
            }
        }
        let keywords = if words.is_empty() {
            None
        } else {
            let automaton = AhoCorasick::builder()
                .ascii_case_insensitive(true)
                .build(&words)
                .map_err(|e| regex::Error::Syntax(format!("keywords: {e}")))?;
            Some((automaton, word_rules))
        };
        let shortest = if rules.rules.iter().all(|r| r.builtin) {
            SHORTEST_BUILTIN
        } else {
            1
        };
        Ok(Scanner {
            set,
            set_rules,
            keywords,
            patterns,
            until,
            shortest,
            rules,
        })
    }

    /// The rules, in priority order; [`Found::rule`] indexes them.
    pub fn rules(&self) -> &[ActiveRule] {
        &self.rules.rules
    }

    /// The rule set compiled.
    pub fn rule_set(&self) -> &RuleSet {
        &self.rules
    }

    /// The string at JSON pointer `pointer` is allowed (never redacted nor scanned).
    pub fn allowed_path(&self, pointer: &str) -> bool {
        self.rules.allow.path(pointer)
    }

    /// The rules that may match `text`, in priority order: the rules without keywords that
    /// match `outside` (the text, or the text with its placeholders' insides taken out: see
    /// [`outside_placeholders`]), and the rules with keywords of which `text` holds one.
    fn candidates(&self, text: &str, outside: &str) -> Vec<usize> {
        let mut rules: Vec<usize> = if self.set_rules.is_empty() {
            Vec::new()
        } else {
            (self.set.matches(outside).iter())
                .map(|i| self.set_rules[i])
                .collect()
        };
        if let Some((words, word_rules)) = &self.keywords {
            // A keyword may occur at every other byte: note each rule once.
            let mut hit = vec![false; self.rules.rules.len()];
            for m in words.find_overlapping_iter(text) {
                hit[word_rules[m.pattern().as_usize()]] = true;
            }
            if hit.iter().any(|&h| h) {
                rules.extend((0..hit.len()).filter(|&i| hit[i]));
                rules.sort_unstable();
                rules.dedup();
            }
        }
        rules
    }

    /// The rules' matches in `text`, without overlaps, in text order.
    pub fn find(&self, text: &str) -> Vec<Found> {
        self.find_counted(text).0
    }

    /// [`Scanner::find`], and what it cost.
    pub fn find_counted(&self, text: &str) -> (Vec<Found>, Work) {
        if text.len() < self.shortest {
            return (Vec::new(), Work::default());
        }
        let mut work = Work {
            bytes: text.len() as u64,
            ..Work::default()
        };
        let marked = text.contains("<SECRET:") || text.contains("<PII:");
        let candidates = if marked {
            let outside = outside_placeholders(text);
            work.searches += 1;
            work.bytes += (text.len() + outside.len()) as u64;
            self.candidates(text, &outside)
        } else {
            self.candidates(text, text)
        };
        if candidates.is_empty() {
            return (Vec::new(), work);
        }
        // (Gathered only now: a redacted text may hold millions, and mostly no rule runs.)
        let placeholders = if marked {
            work.bytes += text.len() as u64;
            placeholders(text)
        } else {
            Vec::new()
        };
        let mut search = Search::new(self, text, placeholders, work);
        for rule in candidates {
            search.rule(rule);
        }
        work = search.work;
        (search.into_found(), work)
    }

    /// `text` with every match replaced by its key-less placeholder (`<SECRET:rule>`): for
    /// what is shown of a finding (its record id, the member names in its pointer).
    pub fn mask<'t>(&self, text: &'t str) -> Cow<'t, str> {
        let found = self.find(text);
        if found.is_empty() {
            return Cow::Borrowed(text);
        }
        let mut out = String::with_capacity(text.len());
        let mut at = 0;
        for f in found {
            out.push_str(&text[at..f.span.start]);
            push_placeholder(&mut out, &self.rules.rules[f.rule], None);
            at = f.span.end;
        }
        out.push_str(&text[at..]);
        Cow::Owned(out)
    }
}

/// One [`Scanner::find_counted`]: the matches kept so far, and what the checks look up once
/// for the whole text.
///
/// Each candidate rule runs over the text in a [`Pass`]; its matches are merged in when it is
/// done.
struct Search<'s, 't> {
    scanner: &'s Scanner,
    text: &'t str,
    /// The placeholders already in the text, in order.
    placeholders: Vec<Range<usize>>,
    /// The matches kept by earlier rules, in order (they never overlap).
    found: Vec<Found>,
    /// The start of each dotted number the text pins as a version (`==1.2.3.4`, `-1.2.3.4`),
    /// sorted by the number: made when an IPv4 check first needs it.
    pins: OnceLock<Vec<usize>>,
    work: Work,
}

/// Bytes of the longest IPv4 address written as text (`255.255.255.255`).
const IPV4_TEXT_MAX: usize = 15;

/// Where a pass goes on when its rule has no match after the last: past every position.
const NO_MORE: usize = usize::MAX;

/// A pass over a text of at least this many bytes searches with caches of its own rather than
/// from the pattern's shared pool.
const OWN_CACHE_MIN: usize = 256 << 10;

impl<'s, 't> Search<'s, 't> {
    fn new(
        scanner: &'s Scanner,
        text: &'t str,
        placeholders: Vec<Range<usize>>,
        work: Work,
    ) -> Search<'s, 't> {
        Search {
            scanner,
            text,
            placeholders,
            found: Vec::new(),
            pins: OnceLock::new(),
            work,
        }
    }

    /// The matches kept, in text order.
    fn into_found(self) -> Vec<Found> {
        self.found
    }

    /// Every match of `rule` in the text, each checked and kept unless it overlaps one kept.
    fn rule(&mut self, rule: usize) {
        let (kept, work) = self.rule_matches(rule);
        self.work.searches += work.searches;
        self.work.candidates += work.candidates;
        self.work.bytes += work.bytes;
        self.merge(kept);
    }

    /// The matches `rule` keeps, in text order, and what finding them cost.
    fn rule_matches(&self, rule: usize) -> (Vec<Found>, Work) {
        let mut pass = Pass::new(self, rule);
        pass.run();
        (pass.kept, pass.work)
    }

    /// Merges `kept`, the matches of the rule just run, into those kept, in text order.
    fn merge(&mut self, kept: Vec<Found>) {
        if self.found.is_empty() {
            self.found = kept;
        } else if !kept.is_empty() {
            let earlier = std::mem::take(&mut self.found);
            let mut merged = Vec::with_capacity(earlier.len() + kept.len());
            let mut mine = kept.into_iter().peekable();
            for f in earlier {
                while let Some(k) = mine.next_if(|k| k.span.start < f.span.start) {
                    merged.push(k);
                }
                merged.push(f);
            }
            merged.extend(mine);
            self.found = merged;
        }
    }
}

/// The matches of one rule in the text, searched one after the other, each from where the last
/// ended: each checked and kept unless it overlaps a placeholder or an earlier rule's match.
/// The placeholders and earlier matches are walked with cursors, never searched per match.
struct Pass<'a, 's, 't> {
    search: &'a Search<'s, 't>,
    rule: usize,
    /// The pattern's and the end pattern's caches, on a long text.
    cache: Option<meta::Cache>,
    until_cache: Option<meta::Cache>,
    slots: Vec<Option<NonMaxUsize>>,
    /// The end pattern's match last found for a rule with one: (searched from, the first end
    /// at or after it). Later starts before it share it, and once none is found none is
    /// looked for again.
    until_found: Option<(usize, Option<Range<usize>>)>,
    /// The matches kept.
    kept: Vec<Found>,
    /// The first placeholder and earlier match that may overlap the next match.
    next_placeholder: usize,
    next_found: usize,
    /// Where the next search may start at the earliest: past the rest of a dotted number,
    /// which holds no address.
    resume: usize,
    work: Work,
}

impl<'a, 's, 't> Pass<'a, 's, 't> {
    /// A pass of `rule` over the text, yet to run.
    fn new(search: &'a Search<'s, 't>, rule: usize) -> Self {
        let scanner = search.scanner;
        let own = search.text.len() >= OWN_CACHE_MIN;
        let pattern = &scanner.patterns[rule];
        Pass {
            search,
            rule,
            cache: own.then(|| pattern.create_cache()),
            until_cache: (scanner.until[rule].as_ref())
                .filter(|_| own)
                .map(meta::Regex::create_cache),
            slots: vec![None; pattern.group_info().slot_len()],
            until_found: None,
            kept: Vec::new(),
            next_placeholder: 0,
            next_found: 0,
            resume: 0,
            work: Work::default(),
        }
    }

    /// Searches from the start of the text to its end.
    fn run(&mut self) {
        let mut at = 0;
        while at <= self.search.text.len() {
            at = self.step(at);
        }
    }

    /// One search from `at`, its match offered: where the next starts.
    fn step(&mut self, at: usize) -> usize {
        let scanner = self.search.scanner;
        let pattern = &scanner.patterns[self.rule];
        self.work.searches += 1;
        if scanner.until[self.rule].is_some() {
            self.extended(at)
        } else if pattern.group_info().group_len(PatternID::ZERO) == 1 {
            self.whole(at)
        } else {
            self.groups(at)
        }
    }

    /// The match of `pattern` from `at`, searched with `cache` when there is one.
    fn find(
        pattern: &meta::Regex,
        cache: &mut Option<meta::Cache>,
        text: &str,
        at: usize,
    ) -> Option<Match> {
        let input = Input::new(text).span(at..text.len());
        match cache {
            Some(cache) => pattern.search_with(cache, &input),
            None => pattern.search(&input),
        }
    }

    /// A pattern without groups. A check may say where the next match can start at the
    /// earliest ([`Pass::resume`]).
    fn whole(&mut self, at: usize) -> usize {
        let text = self.search.text;
        let pattern = &self.search.scanner.patterns[self.rule];
        let Some(m) = Self::find(pattern, &mut self.cache, text, at) else {
            self.work.bytes += (text.len() - at) as u64;
            return NO_MORE;
        };
        self.work.bytes += (m.end() - at) as u64;
        self.offer(m.range());
        next_start(text, m.range()).max(self.resume)
    }

    /// A pattern with groups: the group replaced is the rule's, or the first that took part in
    /// the match, or the whole match. In a text with placeholders a match is found first and
    /// its groups only when it does not lie in a placeholder (then every part of it overlaps
    /// one): a redacted text holds many, some of which a pattern matches.
    fn groups(&mut self, at: usize) -> usize {
        let search = self.search;
        let text = search.text;
        let pattern = &search.scanner.patterns[self.rule];
        let mut from = at;
        if !search.placeholders.is_empty() {
            let Some(m) = Self::find(pattern, &mut self.cache, text, at) else {
                self.work.bytes += (text.len() - at) as u64;
                return NO_MORE;
            };
            if self.inside_placeholder(&m.range()) {
                self.work.bytes += (m.end() - at) as u64;
                self.work.candidates += 1;
                return next_start(text, m.range());
            }
            // The same match (the one at its start), with its groups.
            self.work.searches += 1;
            self.work.bytes += m.len() as u64;
            from = m.start();
        }
        let input = Input::new(text).span(from..text.len());
        let matched = match &mut self.cache {
            Some(cache) => pattern.search_slots_with(cache, &input, &mut self.slots),
            None => pattern.search_slots(&input, &mut self.slots),
        };
        let group = |g: usize| match (self.slots.get(2 * g), self.slots.get(2 * g + 1)) {
            (Some(Some(s)), Some(Some(e))) => Some(s.get()..e.get()),
            _ => None,
        };
        let whole = matched.and_then(|_| group(0));
        let Some(whole) = whole else {
            self.work.bytes += (text.len() - at) as u64;
            return NO_MORE;
        };
        self.work.bytes += (whole.end - at) as u64;
        let span = match search.scanner.rules.rules[self.rule].group {
            Some(g) => group(g),
            None => (1..self.slots.len() / 2)
                .find_map(group)
                .or_else(|| group(0)),
        };
        if let Some(span) = span {
            self.offer(span);
        }
        next_start(text, whole)
    }

    /// A rule with an end pattern: the match of its pattern, extended to the end of the first
    /// match of the end pattern after it when there is one.
    fn extended(&mut self, at: usize) -> usize {
        let text = self.search.text;
        let scanner = self.search.scanner;
        let pattern = &scanner.patterns[self.rule];
        let Some(m) = Self::find(pattern, &mut self.cache, text, at) else {
            self.work.bytes += (text.len() - at) as u64;
            return NO_MORE;
        };
        self.work.bytes += (m.end() - at) as u64;
        let mut span = m.range();
        let known = match &self.until_found {
            Some((from, None)) => *from <= span.end,
            Some((from, Some(e))) => *from <= span.end && span.end <= e.start,
            None => false,
        };
        if !known {
            if let Some(until) = &scanner.until[self.rule] {
                self.work.searches += 1;
                let next =
                    Self::find(until, &mut self.until_cache, text, span.end).map(|e| e.range());
                self.work.bytes += (next.as_ref().map_or(text.len(), |e| e.end) - span.end) as u64;
                self.until_found = Some((span.end, next));
            }
        }
        if let Some((_, Some(e))) = &self.until_found {
            span.end = e.end;
        }
        let next = next_start(text, span.clone());
        self.offer(span);
        next
    }

    /// A match of the pass's rule: kept unless it is empty, overlaps a placeholder or a match
    /// kept, fails the rule's check or is allowed. The spans offered come in text order.
    fn offer(&mut self, span: Range<usize>) {
        self.work.candidates += 1;
        if span.is_empty() || self.in_placeholder(&span) || self.overlaps_found(&span) {
            return;
        }
        let scanner = self.search.scanner;
        let r = &scanner.rules.rules[self.rule];
        if !self.passes(r, &span) || scanner.rules.allow.value(&self.search.text[span.clone()]) {
            return;
        }
        if self.kept.len() == self.kept.capacity() {
            reserve_at_rate(&mut self.kept, span.end, self.search.text.len());
        }
        self.kept.push(Found {
            rule: self.rule,
            span,
        });
    }

    /// `span` overlaps a placeholder; [`Pass::next_placeholder`] is then the first that may.
    fn in_placeholder(&mut self, span: &Range<usize>) -> bool {
        let p = &self.search.placeholders;
        while p
            .get(self.next_placeholder)
            .is_some_and(|p| p.end <= span.start)
        {
            self.next_placeholder += 1;
        }
        p.get(self.next_placeholder)
            .is_some_and(|p| p.start < span.end)
    }

    /// `span` (not empty) lies in a placeholder.
    fn inside_placeholder(&mut self, span: &Range<usize>) -> bool {
        !span.is_empty()
            && self.in_placeholder(span)
            && (self.search.placeholders[self.next_placeholder]).end >= span.end
            && (self.search.placeholders[self.next_placeholder]).start <= span.start
    }

    /// `span` overlaps a match an earlier rule kept.
    fn overlaps_found(&mut self, span: &Range<usize>) -> bool {
        let f = &self.search.found;
        while f
            .get(self.next_found)
            .is_some_and(|f| f.span.end <= span.start)
        {
            self.next_found += 1;
        }
        f.get(self.next_found)
            .is_some_and(|f| f.span.start < span.end)
    }
    fn passes(&mut self, rule: &ActiveRule, span: &Range<usize>) -> bool {
        let text = self.search.text;
        let s = &text[span.clone()];
        self.work.bytes += s.len() as u64;
        let private_ips = self.search.scanner.rules.private_ips;
        match rule.check {
            Check::None => true,
            Check::MinEntropy(bits) => checks::entropy(s) >= bits,
            Check::SecretValue => checks::secret_value(s),
            Check::UrlPassword => {
                !(s.starts_with('$') || s.starts_with('%') || s.bytes().all(|b| b == b'*'))
            }
            Check::PaymentCard => checks::payment_card(s),
            Check::Iban => checks::iban(s),
            Check::Phone => checks::phone(s),
            Check::Email => checks::email(s),
            Check::Ipv6 => {
                let bytes = text.as_bytes();
                let part_of_word = |b: &u8| b.is_ascii_alphanumeric() || b"_:.-".contains(b);
                let before = span.start.checked_sub(1).map(|i| &bytes[i]);
                !before.is_some_and(part_of_word)
                    && !bytes.get(span.end).is_some_and(part_of_word)
                    && checks::ipv6(s, private_ips)
            }
            Check::Ipv4 => {
                let bytes = text.as_bytes();
                let before = span.start.checked_sub(1).map(|i| bytes[i]);
                let after = bytes.get(span.end..span.end + 2);
                let dotted_before = before.is_some_and(|b| b".=v_~^<>-".contains(&b));
                let dotted_after = matches!(after, Some([b'.', d]) if d.is_ascii_digit());
                if before == Some(b'.') || dotted_after {
                    // Part of a longer dotted number: a match of the pattern further in it
                    // would start after a dot (after a digit there is no word boundary), and
                    // fail as this one does. Go on after the number.
                    let rest = bytes[span.end..]
                        .iter()
                        .position(|b| !(b.is_ascii_digit() || *b == b'.'))
                        .unwrap_or(bytes.len() - span.end);
                    self.work.bytes += rest as u64;
                    self.resume = span.end + rest;
                }
                // pip's "Requirement already satisfied: … (from …) (1.11.1.1)" version column.
                let pip_column =
                    text[..span.start].ends_with(") (") && text[span.end..].starts_with(')');
                !dotted_before
                    && !dotted_after
                    && !pip_column
                    && checks::ipv4(s, private_ips)
                    && !self.pinned(s)
            }
        }
    }

    /// `number` is pinned or named as a version elsewhere in the text: `==NUMBER` or
    /// `-NUMBER` (pip and easy_install print `pkg==8.5.0.96` then `Best match: pkg
    /// 8.5.0.96`). The pins are gathered in one pass over the text, the first time.
    fn pinned(&mut self, number: &str) -> bool {
        let text = self.search.text.as_bytes();
        let mut made = false;
        let pins = self.search.pins.get_or_init(|| {
            made = true;
            pins(text)
        });
        if made {
            self.work.bytes += text.len() as u64;
        }
        let at = pins.partition_point(|&i| run(text, i) < number.as_bytes());
        pins.get(at)
            .is_some_and(|&i| run(text, i).starts_with(number.as_bytes()))
    }
}

/// Matches kept before [`reserve_at_rate`] reads a rate from them.
const RATE_AFTER: usize = 1024;

/// Makes room in a full `kept` for the matches still to come in the text of `len` bytes, at
/// the rate seen up to `at`: a text of a match every few bytes (a URL password every 8) is
/// not copied each time its list doubles, and its pages are touched once. Until
/// [`RATE_AFTER`] matches the list doubles as usual, and it never reserves more than a match
/// per 4 bytes of text.
fn reserve_at_rate(kept: &mut Vec<Found>, at: usize, len: usize) {
    let n = kept.len();
    if n < RATE_AFTER || at == 0 {
        return;
    }
    let expected = (n as u128 * len as u128 / at as u128) as usize;
    let want = expected.saturating_add(expected / 16).min(len / 4);
    kept.reserve(want.saturating_sub(n));
}

/// Where a regex iteration searches next after the match at `span`: at its end, or after the
/// next character when it is empty.
fn next_start(text: &str, span: Range<usize>) -> usize {
    if span.is_empty() {
        span.end + text[span.end..].chars().next().map_or(1, char::len_utf8)
    } else {
        span.end
    }
}

/// The start of each run of digits and dots after `==` or `-` in `text` that may begin with an
/// IPv4 address (3 dots and 7 bytes at least among its first 15), sorted by the run (cut at 15
/// bytes) and without repeats: `text` holds `==N` or `-N` for a dotted number `N` exactly when
/// `N` begins one of these runs.
fn pins(text: &[u8]) -> Vec<usize> {
    let mut starts = Vec::new();
    for i in memchr::memchr2_iter(b'=', b'-', text) {
        let start = match text[i] {
            b'-' => i + 1,
            _ if text.get(i + 1) == Some(&b'=') => i + 2,
            _ => continue,
        };
        let r = run(text, start);
        if r.len() >= 7 && r.iter().filter(|&&b| b == b'.').count() >= 3 {
            starts.push(start);
        }
    }
    starts.sort_unstable_by(|&a, &b| run(text, a).cmp(run(text, b)));
    starts.dedup_by(|a, b| run(text, *a) == run(text, *b));
    starts
}

/// The digits and dots of `text` from `start`, at most [`IPV4_TEXT_MAX`] bytes of them.
fn run(text: &[u8], start: usize) -> &[u8] {
    let tail = text.get(start..).unwrap_or_default();
    let tail = &tail[..tail.len().min(IPV4_TEXT_MAX)];
    let len = tail
        .iter()
        .position(|b| !(b.is_ascii_digit() || *b == b'.'))
        .unwrap_or(tail.len());
    &tail[..len]
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::redact::rules::RULES;

    fn names(scanner: &Scanner, text: &str) -> Vec<String> {
        scanner
            .find(text)
            .iter()
            .map(|f| scanner.rules()[f.rule].name.clone())
            .collect()
    }

    #[test]
    fn every_pattern_compiles_and_names_are_unique() {
        let scanner = Scanner::builtin(false);
        assert_eq!(scanner.patterns.len(), RULES.len());
        let mut names: Vec<&str> = RULES.iter().map(|r| r.name).collect();
        names.sort_unstable();
        names.dedup();
        assert_eq!(names.len(), RULES.len());
    }

    #[test]
    fn overlaps_go_to_the_earlier_rule_and_placeholders_are_skipped() {
        let s = Scanner::builtin(false);
        let url = ["postgres://app:", "Zq8", "rT2vLw@db.internal.net/main"].concat();
        assert_eq!(names(&s, &url), ["database_connection_string"]);
        assert!(s
            .find("password=<SECRET:secret_assignment:0a1b2c3d>")
            .is_empty());
        assert!(s
            .find("github_token:<SECRET:github_token:7f3a91c2> done")
            .is_empty());
    }

    #[test]
    fn ordinary_code_and_ids_do_not_match() {
        let s = Scanner::builtin(true);
        for text in [
            "550e8400-e29b-41d4-a716-446655440000",
            "commit 3f786850e387550fdab836ed7e6dc881de23001b",
            "sha256:9f86d081884c7d659a2feaa0c55ad015a3bf4f1b2b0b822cd15d6c15b0f00a08",
            "version 1.2.3.4.5 of numpy 1.26.4, nvidia-cudnn-cu11==8.5.0.96, tag v8.8.4.4",
            "\\n+@dataclasses.dataclass(slots=True)",
            "token = tokenizer(text)",
            "password = os.environ[\"DB_PASSWORD\"]",
            "max_new_tokens: 4096, timestamp 1714000000123",
            "def login(user, password: str) -> Token:",
            "Requirement already satisfied: nvidia-cublas-cu12 (from torch) (12.1.3.1)",
            "Searching for nvidia-cufft-cu12==11.0.2.54\nBest match: nvidia-cufft-cu12 11.0.2.54",
            "at 2024-01-15 12:30:45.123456 in 0.25 s",
            "link/ether 00:1a:2b:3c:4d:5e brd ff:ff:ff:ff:ff:ff",
            "lo inet6 ::1/128 scope host; mcast ff02::1:2",
            "ping 2001:db8::8a2e:370:7334; std::vector<int>::iterator; a::b::c",
            "sha 2a00:1450 dead:beef:cafe 10:20:30:40 at 12:34:56",
        ] {
            assert_eq!(names(&s, text), Vec::<String>::new(), "{text}");
        }
    }

    /// Units that, repeated, make texts of near matches: a match that fails its check, a start
    /// without an end, a match found at every few bytes. The first four took quadratic time
    /// before (issue 46).
    pub const NEAR_MATCHES: &[&str] = &[
        "-----BEGIN OPENSSH PRIVATE KEY-----",
        "1.",
        "10.0.0.",
        "a://b:c@",
        "-----BEGIN RSA PRIVATE KEY-----\\nMIIB\\n",
        "-----END PRIVATE KEY----------BEGIN PRIVATE KEY-----",
        "host=a;",
        "Server=db;Password=",
        "==1.2.3.4 8.8.8.8 ",
        "-9.9.9.9 (from x) (",
        "<PII:email> ann@mailhost.io ",
        "password=aaaaaaa1 ",
        "4111 1111 1111 ",
        "+1 (555) ",
        "2a00:1450:",
        "eyJhbGciOi.eyJ",
        "x@a.bb.",
        "postgres://u:",
        "AKIA",
        "a://b:$c@",
        "ghp_abc sk-ant-api03-x xoxb-1 glpat-x hf_ab AIzaB eyJa. ",
        "aB3+/x9Z",
        "a://b:<SECRET:url_password>@",
    ];

    fn repeated(unit: &str, len: usize) -> String {
        unit.repeat(len / unit.len() + 1)
    }

    /// The work of redacting `text` as a redaction does: the matches found and replaced, then
    /// the result scanned again.
    fn redaction_work(s: &Scanner, text: &str) -> Work {
        let (_, first) = s.find_counted(text);
        let redactor = crate::redact::Redactor::new(None, s.clone());
        let mut counts = vec![0; s.rules().len()];
        let redacted = redactor.redact_text(text, &mut counts);
        let (_, again) = s.find_counted(redacted.as_deref().unwrap_or(text));
        Work {
            searches: first.searches + again.searches,
            candidates: first.candidates + again.candidates,
            bytes: first.bytes + again.bytes,
        }
    }

    /// A redacted text holds a placeholder every few bytes, and `secret_assignment` matches
    /// inside each (`SECRET:url_password`): no rule's pattern is run on it, only the
    /// candidate pass on the text without the placeholders' insides.
    #[test]
    fn matches_inside_placeholders_start_no_search() {
        let s = Scanner::builtin(false);
        let text = "a://b:<SECRET:url_password>@".repeat(10_000);
        let (found, work) = s.find_counted(&text);
        assert!(found.is_empty());
        assert_eq!((work.searches, work.candidates), (1, 0), "{work:?}");
        // Outside the placeholders, the same rule still finds an assignment.
        let with = format!("{text} secret=Q8zr2LmX0pTv");
        assert_eq!(names(&s, &with), ["secret_assignment"]);
        assert_eq!(
            outside_placeholders("x<SECRET:a>y <PII:b:0a1b2c3d> <SECRET:"),
            "x<>y <> <SECRET:"
        );
    }

    #[test]
    fn near_match_texts_take_work_linear_in_their_length() {
        let s = Scanner::builtin(false);
        for unit in NEAR_MATCHES {
            let (small, big) = (repeated(unit, 1 << 19), repeated(unit, 1 << 21));
            let (w1, w4) = (redaction_work(&s, &small), redaction_work(&s, &big));
            let per_byte = w4.bytes as f64 / big.len() as f64;
            assert!(
                per_byte < 16.0,
                "{unit:?}: {per_byte:.1} bytes read per byte, {w4:?}"
            );
            let growth = w4.bytes as f64 / w1.bytes as f64;
            let size = big.len() as f64 / small.len() as f64;
            assert!(
                growth < size * 1.1,
                "{unit:?}: 4 times the text, {growth:.2} times the work ({w1:?}, {w4:?})"
            );
            assert!(w4.searches <= 2 * w4.candidates + 64, "{unit:?}: {w4:?}");
        }
    }

    /// What the regex engine reads: each candidate rule's pattern run over the text as the
    /// scanner runs it, by the lazy DFA the regex crate searches with (forward to a match's
    /// end, then back to its start), in bytes. A pattern that makes the engine read far past
    /// its matches (a lazy `.*?` before an alternative, as the private key's had) reads the
    /// rest of the text once per match.
    #[test]
    fn the_patterns_read_near_match_texts_in_linear_time() {
        use regex_automata::hybrid::{dfa, regex::Builder};
        let s = Scanner::builtin(true);
        for unit in NEAR_MATCHES {
            let text = repeated(unit, 1 << 20);
            for rule in s.candidates(&text, &text) {
                let re = Builder::new()
                    .dfa(dfa::Config::new().cache_capacity(64 << 20))
                    .build(&s.rules()[rule].pattern)
                    .unwrap_or_else(|e| panic!("{e}"));
                let mut cache = re.create_cache();
                let matches = re.find_iter(&mut cache, text.as_str()).count();
                let (forward, reverse) = cache.as_parts();
                assert_eq!(forward.clear_count() + reverse.clear_count(), 0);
                let read = forward.search_total_len() + reverse.search_total_len();
                let name = &s.rules()[rule].name;
                assert!(
                    read <= 4 * text.len(),
                    "{unit:?}, {name}: {read} bytes read for {} ({matches} matches)",
                    text.len()
                );
            }
        }
    }

    #[test]
    fn a_key_cut_short_ends_at_its_base64_and_a_whole_one_at_its_end_line() {
        let s = Scanner::builtin(false);
        // The pattern as it was, a lazy `.*?` before the alternative: the outputs are the same.
        let old = regex::Regex::new(
            r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----(?:(?s:.*?)-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----|[A-Za-z0-9+/=\s\\]*)",
        )
        .unwrap_or_else(|e| panic!("{e}"));
        let key = "-----BEGIN RSA PRIVATE KEY-----\nMIIBOgIBAAJB\n-----END RSA PRIVATE KEY-----";
        for text in [
            format!("a {key} b"),
            format!("a -----BEGIN EC PRIVATE KEY-----\nMHcCAQEE b {key} c"),
            "x -----BEGIN PRIVATE KEY-----\\nMIIEvQIB\\n... cut".to_owned(),
            format!("{key}{key} -----BEGIN PRIVATE KEY-----abc"),
        ] {
            let want: Vec<Range<usize>> = old.find_iter(&text).map(|m| m.range()).collect();
            let got: Vec<Range<usize>> = s.find(&text).into_iter().map(|f| f.span).collect();
            assert_eq!(got, want, "{text:?}");
        }
    }

    #[test]
    fn version_pins_anywhere_in_the_text_keep_a_number_from_being_an_address() {
        let s = Scanner::builtin(false);
        let ip = ["8.8", ".4.4"].concat();
        assert_eq!(names(&s, &format!("host {ip} up")), ["ip_address"]);
        for text in [
            format!("pkg=={ip}1 then host {ip}"),
            format!("x -{ip} and {ip}"),
            format!("{ip} first, pkg==={ip}"),
        ] {
            assert_eq!(names(&s, &text), Vec::<String>::new(), "{text}");
        }
        assert_eq!(names(&s, &format!("pkg==1.{ip} then {ip}")), ["ip_address"]);
    }

    #[test]
    fn placeholders_are_read_as_their_pattern_says() {
        let pattern = regex::Regex::new(r"<(?:SECRET|PII):[a-z0-9_]+(?::[0-9a-f]{8})?>")
            .unwrap_or_else(|e| panic!("{e}"));
        for text in [
            "a <SECRET:github_token> b <PII:email:0a1b2c3d>c",
            "<<SECRET:x><PII:> <SECRET:X> <SECRET:a:0a1b2c3> <SECRET:a:0a1b2c3d9> <PII:e:0a1b2c3g>",
            "<SECRET:a:0a1b2c3d<PII:b> <SECRET:a_1",
            "<",
            "",
        ] {
            let want: Vec<Range<usize>> = pattern.find_iter(text).map(|m| m.range()).collect();
            assert_eq!(placeholders(text), want, "{text}");
        }
    }
}
