//! A session's lines sorted into what Aider wrote them as (its `io.py`,
//! `append_chat_history`): user turns (`#### ` lines, one turn per run of them), status
//! blocks (`> ` lines: banner, confirmations, "Applied edit to …", token counts, errors,
//! command output) and the assistant's prose between them.
//!
//! Aider ends every user and status line with two spaces (a Markdown line break) and writes
//! the assistant's text after a blank line, as it came from the model. So inside the prose, a
//! `#### ` or `> ` line is the model's own Markdown (a heading, a quote) unless a blank line
//! comes before it and it ends with two spaces. A file whose trailing spaces were trimmed
//! (an editor, a commit hook) has none: there, such a line after a blank line ends the prose
//! unless it is inside a code fence or an edit block. A status message of several lines
//! (an edit error) starts with `> ` and runs, without the prefix, to the line that ends with
//! two spaces.
//!
//! The first versions (May 2023, `# Aider chat started at`) wrote status lines in italics
//! (`_Applied edit to app.py_  `), a `---` line before each turn and `#### > ` before the
//! input: those are read the same way.

use super::reader::is_session_header;

/// One thing Aider wrote into a session.
#[derive(Debug, PartialEq)]
pub enum Block<'a> {
    /// A user turn: the text typed (several lines for multi-line input); `<blank>` is
    /// Aider's mark for an empty one.
    User { line: u64, text: String },
    /// Consecutive status messages (each without `> ` and the two trailing spaces; a message
    /// of several lines is several entries, the continuation lines without a prefix).
    Status {
        line: u64,
        entries: Vec<(u64, &'a str)>,
        /// The lines of `entries` that continue a message of several lines.
        continued: Vec<u64>,
    },
    /// The assistant's text (a reply as the model wrote it).
    Prose { line: u64, lines: Vec<&'a str> },
}

/// One session: its header and blocks.
#[derive(Debug)]
pub struct Session<'a> {
    /// The line of its `# aider chat started at` header (or of its first line, for lines
    /// before the file's first header).
    pub line: u64,
    /// The time on its header, as written (`2025-05-04 17:02:36`).
    pub started_at: Option<&'a str>,
    pub blocks: Vec<Block<'a>>,
    /// Its lines that are not blank, the header included.
    pub nonblank: u64,
}

/// The sessions of `text`, whose first line is line `first` of its file.
pub fn sessions(text: &str, first: u64) -> Vec<Session<'_>> {
    let mut out: Vec<Vec<(u64, &str)>> = Vec::new();
    for (i, raw) in text.lines().enumerate() {
        let line = raw.strip_suffix('\r').unwrap_or(raw);
        if is_session_header(line) || out.is_empty() {
            out.push(Vec::new());
        }
        if let Some(last) = out.last_mut() {
            last.push((first + i as u64, line));
        }
    }
    out.into_iter()
        .filter_map(|lines| session(&lines))
        .collect()
}

fn session<'a>(lines: &[(u64, &'a str)]) -> Option<Session<'a>> {
    let &(start, head) = lines.first()?;
    let (started_at, body) = if is_session_header(head) {
        (Some(head[23..].trim()), &lines[1..])
    } else {
        (None, lines)
    };
    let nonblank = lines.iter().filter(|(_, l)| !l.trim().is_empty()).count() as u64;
    let mut sorter = Sorter::new(body);
    sorter.legacy = head.starts_with("# Aider chat started at");
    Some(Session {
        line: start,
        started_at,
        blocks: sorter.run(body),
        nonblank,
    })
}

/// The text of a first versions' status line (`_text_  ` or `*text*  `).
fn legacy_status(line: &str) -> Option<&str> {
    let t = line.strip_suffix("  ")?;
    ["_", "*"]
        .iter()
        .find_map(|m| t.strip_prefix(m)?.strip_suffix(m))
}

/// A `#### ` line (or a bare `####`).
fn is_user_mark(line: &str) -> bool {
    line.starts_with("#### ") || line == "####"
}

/// A `> ` line (or a bare `>`).
fn is_status_mark(line: &str) -> bool {
    line.starts_with("> ") || line == ">"
}

/// Ends with Aider's Markdown line break.
fn has_break(line: &str) -> bool {
    line.ends_with("  ")
}

/// The tags Aider fences a file with when it holds backticks (its coders' `all_fences`:
/// `<source>` … `</source>` and the like); the model answers in the same fence.
const TAG_FENCES: [&str; 5] = ["source", "code", "pre", "codeblock", "sourcecode"];

/// A line opening or closing a code fence: backticks, or one of Aider's tags.
pub fn is_fence(line: &str) -> bool {
    let t = line.trim_start();
    let tag = |r: &str| {
        let r = r.strip_prefix('/').unwrap_or(r);
        TAG_FENCES
            .iter()
            .any(|f| r.strip_prefix(f).is_some_and(|rest| rest.starts_with('>')))
    };
    t.starts_with("```") || t.strip_prefix('<').is_some_and(tag)
}

/// `<<<<<<< SEARCH` (and `<<<<<<< ORIGINAL`, the earliest versions' name).
pub fn is_search(line: &str) -> bool {
    marker(line, '<').is_some_and(|w| {
        let w = w.strip_suffix('>').unwrap_or(w);
        w == "SEARCH" || w == "ORIGINAL"
    })
}

/// `=======`.
pub fn is_divider(line: &str) -> bool {
    let t = line.trim_end();
    (5..=9).contains(&t.len()) && t.bytes().all(|b| b == b'=')
}

/// `<<<<<<< HEAD`, the opening marker of Aider 0.8 to 0.14 (summer 2023), whose blocks close
/// with `>>>>>>> updated`. Not a [`is_search`] marker: the same line opens a git conflict, so
/// it starts an edit only when the whole block is there, and is not reported unpaired.
pub fn is_legacy_head(line: &str) -> bool {
    marker(line, '<') == Some("HEAD")
}

/// `>>>>>>> REPLACE` (and `>>>>>>> UPDATED`, `>>>>>>> updated` of the first versions).
pub fn is_replace(line: &str) -> bool {
    marker(line, '>').is_some_and(|w| w == "REPLACE" || w == "UPDATED" || w == "updated")
}

/// The word after 5 to 9 `c` and a space, as Aider's edit-block parser matches them.
fn marker(line: &str, c: char) -> Option<&str> {
    let t = line.trim_end();
    let n = t.chars().take_while(|&x| x == c).count();
    if !(5..=9).contains(&n) {
        return None;
    }
    t[n..].strip_prefix(' ')
}

/// Strips Aider's prefix and two trailing spaces from a user or status line.
fn mark_text<'a>(line: &'a str, prefix: &str) -> &'a str {
    let rest = line.strip_prefix(prefix).unwrap_or("");
    rest.strip_suffix("  ").unwrap_or(rest)
}

/// The state of the walk over a session's lines.
struct Sorter<'a> {
    /// Aider's trailing spaces are there (some user or status line ends with them).
    strict: bool,
    /// A Markdown formatter (Prettier) dropped them where a paragraph ends, before a blank
    /// line, and kept them inside paragraphs: no line with them comes before a blank line.
    paragraphs_trimmed: bool,
    /// The line being read is followed by a blank line (or ends the session).
    next_blank: bool,
    /// Written by the first versions (italic status lines, `---` before turns).
    legacy: bool,
    blocks: Vec<Block<'a>>,
    prose: Option<Prose<'a>>,
    /// A status message of several lines is still open.
    open_status: bool,
    previous_blank: bool,
}

/// Prose being read.
struct Prose<'a> {
    line: u64,
    lines: Vec<&'a str>,
    fence: bool,
    edit: bool,
}

impl<'a> Sorter<'a> {
    fn new(body: &[(u64, &str)]) -> Sorter<'a> {
        let strict = body
            .iter()
            .any(|(_, l)| (is_user_mark(l) || is_status_mark(l)) && has_break(l));
        let paragraph_end = |i: usize| body.get(i + 1).is_none_or(|(_, l)| l.trim().is_empty());
        let paragraphs_trimmed =
            strict && !(0..body.len()).any(|i| has_break(body[i].1) && paragraph_end(i));
        Sorter {
            strict,
            paragraphs_trimmed,
            next_blank: false,
            legacy: false,
            blocks: Vec::new(),
            prose: None,
            open_status: false,
            previous_blank: true,
        }
    }

    fn run(mut self, body: &[(u64, &'a str)]) -> Vec<Block<'a>> {
        for (i, &(no, line)) in body.iter().enumerate() {
            self.next_blank = body.get(i + 1).is_none_or(|(_, l)| l.trim().is_empty());
            self.line(no, line);
        }
        self.end_prose();
        self.blocks
    }

    /// Ends with Aider's line break, or ends a paragraph of a file a formatter trimmed.
    fn breaks(&self, line: &str) -> bool {
        has_break(line) || (self.paragraphs_trimmed && self.next_blank)
    }

    /// True when a user or status line at this point ends the prose being read.
    fn ends_prose(&self, line: &str, p: &Prose<'_>) -> bool {
        self.previous_blank
            && if self.strict {
                self.breaks(line)
            } else {
                !p.fence && !p.edit
            }
    }

    fn line(&mut self, no: u64, line: &'a str) {
        if self.open_status {
            self.open_status = !(self.strict && self.breaks(line));
            if let Some(Block::Status {
                entries, continued, ..
            }) = self.blocks.last_mut()
            {
                entries.push((no, line.strip_suffix("  ").unwrap_or(line)));
                continued.push(no);
            }
            return;
        }
        if self.legacy && self.prose.is_none() {
            if let Some(text) = legacy_status(line) {
                self.status_entry(no, text, false);
                self.previous_blank = false;
                return;
            }
            if line == "---" {
                return;
            }
        }
        let blank = line.trim().is_empty();
        let legacy_mark = self.legacy && self.previous_blank && legacy_status(line).is_some();
        let mark = is_user_mark(line) || is_status_mark(line) || legacy_mark;
        let ends = match &self.prose {
            Some(p) => mark && self.ends_prose(line, p),
            None => mark,
        };
        if ends {
            self.end_prose();
            if is_user_mark(line) {
                self.user(no, line);
            } else if let Some(text) = legacy_status(line).filter(|_| self.legacy) {
                self.status_entry(no, text, false);
            } else {
                self.status(no, line);
            }
        } else if let Some(p) = &mut self.prose {
            if is_search(line) || is_legacy_head(line) {
                p.edit = true;
            } else if is_replace(line) {
                p.edit = false;
            } else if is_fence(line) && !p.edit {
                p.fence = !p.fence;
            }
            p.lines.push(line);
        } else if !blank {
            self.prose = Some(Prose {
                line: no,
                lines: Vec::new(),
                fence: false,
                edit: false,
            });
            self.previous_blank = false;
            return self.line(no, line);
        }
        self.previous_blank = blank;
    }

    fn user(&mut self, no: u64, line: &str) {
        let text = mark_text(line, "#### ");
        let text = if line == "####" { "" } else { text };
        let text = match text.strip_prefix('>') {
            Some(rest) if self.legacy => rest.trim_start(),
            _ => text,
        };
        // A formatter puts a blank line between the lines of one input (each a heading to it).
        let command = |s: &str| s.starts_with('/') || s.starts_with('!');
        let joined = |t: &str| {
            !self.previous_blank || (self.paragraphs_trimmed && !command(t) && !command(text))
        };
        match self.blocks.last_mut() {
            Some(Block::User { text: t, .. }) if joined(t) => {
                t.push('\n');
                t.push_str(text);
            }
            _ => self.blocks.push(Block::User {
                line: no,
                text: text.to_owned(),
            }),
        }
    }

    fn status(&mut self, no: u64, line: &'a str) {
        let text = if line == ">" {
            ""
        } else {
            mark_text(line, "> ")
        };
        self.status_entry(no, text, self.strict && !self.breaks(line));
    }

    /// Adds a status entry; `open` when the message goes on over the next lines.
    fn status_entry(&mut self, no: u64, text: &'a str, open: bool) {
        self.open_status = open;
        match self.blocks.last_mut() {
            Some(Block::Status { entries, .. }) => entries.push((no, text)),
            _ => self.blocks.push(Block::Status {
                line: no,
                entries: vec![(no, text)],
                continued: Vec::new(),
            }),
        }
    }

    fn end_prose(&mut self) {
        if let Some(mut p) = self.prose.take() {
            while p.lines.last().is_some_and(|l| l.trim().is_empty()) {
                p.lines.pop();
            }
            self.blocks.push(Block::Prose {
                line: p.line,
                lines: p.lines,
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn turns_status_and_prose_are_told_apart() {
        let text = "\n# aider chat started at 2025-01-01 10:00:00\n\n\
                    > Aider v0.82.2  \n> Main model: m with diff edit format  \n\n\
                    #### first line  \n#### second line  \n\n\
                    Sure.\n\n#### A heading of the model's\n> a quote\n\nDone.\n\n\
                    > Tokens: 1k sent, 2 received.  \n\n#### <blank>  \n";
        let s = sessions(text, 1);
        assert_eq!(
            s.len(),
            2,
            "the blank line before the header is a session of its own"
        );
        assert!(s[0].blocks.is_empty());
        let s = &s[1];
        assert_eq!(s.started_at, Some("2025-01-01 10:00:00"));
        assert_eq!(s.line, 2);
        assert_eq!(s.blocks.len(), 5, "{:?}", s.blocks);
        assert!(
            matches!(&s.blocks[1], Block::User { line: 7, text } if text == "first line\nsecond line")
        );
        match &s.blocks[2] {
            Block::Prose { line: 10, lines } => {
                assert_eq!(lines.len(), 6, "{lines:?}");
                assert_eq!(lines[5], "Done.");
            }
            other => panic!("{other:?}"),
        }
        assert!(matches!(&s.blocks[4], Block::User { text, .. } if text == "<blank>"));
    }

    #[test]
    fn a_file_a_formatter_trimmed_at_paragraph_ends_keeps_its_turns() {
        // Prettier drops the two spaces before a blank line and keeps them inside a paragraph.
        let text = "# aider chat started at t\n\n> Aider v0.50.1  \n> Git repo: .git\n\n\
                    #### /add a.md\n\n> Added a.md to the chat\n\n#### do it\n\nDone.\n\n\
                    > Applied edit to a.md  \n> Commit 1a2b3c4 aider: x\n\n#### thanks\n\n#### and more\n";
        let s = sessions(text, 1);
        let users: Vec<&str> = s[0]
            .blocks
            .iter()
            .filter_map(|b| match b {
                Block::User { text, .. } => Some(text.as_str()),
                _ => None,
            })
            .collect();
        assert_eq!(
            users,
            ["/add a.md", "do it", "thanks\nand more"],
            "{:?}",
            s[0].blocks
        );
        assert!(s[0]
            .blocks
            .iter()
            .any(|b| matches!(b, Block::Prose { lines, .. } if lines == &["Done."])));
    }

    #[test]
    fn a_status_message_of_several_lines_runs_to_its_line_break() {
        let text = "# aider chat started at t\n\n#### go  \n\nok\n\n> Tokens: 1k sent.  \n\
                    > # 1 SEARCH/REPLACE block failed to match!\n\n## Why\n<<<<<<< SEARCH\n\
                    x\n=======\ny\n>>>>>>> REPLACE\n\nFix it.  \n\n#### next  \n";
        let s = sessions(text, 1);
        let Block::Status { entries, .. } = &s[0].blocks[2] else {
            panic!("{:?}", s[0].blocks)
        };
        assert_eq!(entries.len(), 11);
        assert_eq!(entries[10], (17, "Fix it."));
        assert!(matches!(&s[0].blocks[3], Block::User { text, .. } if text == "next"));
    }

    #[test]
    fn without_trailing_spaces_fences_and_edit_blocks_keep_their_lines() {
        let text = "# aider chat started at t\n\n#### go\n\nHere:\n\n```\n> not a status\n\n#### not a turn\n```\n\n> Applied edit to a.py\n";
        let s = sessions(text, 1);
        assert_eq!(s[0].blocks.len(), 3, "{:?}", s[0].blocks);
        assert!(
            matches!(&s[0].blocks[2], Block::Status { entries, .. } if entries[0].1 == "Applied edit to a.py")
        );
    }

    #[test]
    fn the_first_versions_italic_status_lines_are_status() {
        let text = "\n# Aider chat started at 2023-05-12 15:23:26\n\n_Loading app.py_  \n\n---\n\
                    #### >  make it  \n\nOk:\n\n```python\napp.py\n<<<<<<< ORIGINAL\n=======\nx\n>>>>>>> UPDATED\n```\n\n\
                    _Applied edit to app.py_  \n_d8dab4e aider: Added it._  \n";
        let s = sessions(text, 1);
        let b = &s[1].blocks;
        assert_eq!(b.len(), 4, "{b:?}");
        assert!(matches!(&b[1], Block::User { text, .. } if text == "make it"));
        assert!(
            matches!(&b[3], Block::Status { entries, .. } if entries[0].1 == "Applied edit to app.py" && entries.len() == 2)
        );
    }

    #[test]
    fn edit_markers_are_read_as_aider_matches_them() {
        assert!(is_search("<<<<<<< SEARCH") && is_search("<<<<<<< SEARCH>"));
        assert!(is_search("<<<<<<< ORIGINAL") && !is_search("<<<< SEARCH"));
        assert!(is_divider("=======") && !is_divider("===") && !is_divider("== =="));
        assert!(is_replace(">>>>>>> REPLACE") && is_replace(">>>>>>> UPDATED"));
        assert!(is_legacy_head("<<<<<<< HEAD") && !is_search("<<<<<<< HEAD"));
        assert!(is_fence("<source>markdown") && is_fence("</source>") && is_fence("```py"));
        assert!(!is_fence("<sources>") && !is_fence("source"));
        assert!(is_replace(">>>>>>> updated") && !is_replace(">>>>>>> main"));
        assert!(!is_replace("> REPLACE"));
    }
}
