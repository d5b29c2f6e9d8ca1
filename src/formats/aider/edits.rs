//! A reply's text cut into prose and the edits Aider applies from it, as its coders parse
//! them (`aider/coders/`): SEARCH/REPLACE blocks (the `diff`, `diff-fenced` and `editor-diff`
//! formats: the file name on the line before the opening fence or inside it), whole files (the
//! `whole` formats: every fenced block, named by the line before it), unified diffs (`udiff`:
//! a fenced block with `+++ ` or `@@` lines) and `*** Begin Patch` blocks (`patch`). A marker
//! that starts no complete block (a SEARCH with no `=======` and REPLACE after it, a divider or
//! REPLACE inside a fence with no SEARCH before it) is reported as unpaired and stays in the
//! prose.

use serde_json::Value;

use super::blocks::{is_divider, is_fence, is_legacy_head, is_replace, is_search};
use crate::model::JsonObject;

/// A piece of a reply.
#[derive(Debug, PartialEq)]
pub enum Piece {
    /// Prose, lines joined.
    Text(String),
    /// An edit.
    Edit(Edit),
}

/// One edit: the function it is written as, its arguments, the file it names.
#[derive(Debug, PartialEq)]
pub struct Edit {
    /// Its first line in the file.
    pub line: u64,
    /// `replace_in_file`, `write_file`, `apply_diff` or `apply_patch`.
    pub function: &'static str,
    pub path: Option<String>,
    pub kwargs: JsonObject,
}

/// The edits a format writes besides SEARCH/REPLACE blocks and patches.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Fenced {
    /// Fenced blocks are code shown, not edits (`diff` formats, `ask`, unknown).
    Shown,
    /// Every fenced block is a whole file (`whole`, `editor-whole`).
    WholeFiles,
    /// A fenced block with `+++ ` or `@@` lines is a unified diff (`udiff`, `udiff-simple`).
    Diffs,
}

impl Fenced {
    /// What fenced blocks are under the edit format `format`.
    pub fn of(format: Option<&str>) -> Fenced {
        match format {
            Some("whole" | "editor-whole") => Fenced::WholeFiles,
            Some(f) if f.starts_with("udiff") => Fenced::Diffs,
            _ => Fenced::Shown,
        }
    }
}

/// The pieces of `lines` (a reply whose first line is line `first`), and the unpaired markers
/// (line, marker). `named` are the files the status lines after the reply name ("Applied edit
/// to F"): under a whole-file format, a fenced block is a file when the line before it is a
/// file name (one word) or one of these (Aider takes any line there for a name).
pub fn split(
    lines: &[&str],
    first: u64,
    fenced: Fenced,
    named: &[&str],
) -> (Vec<Piece>, Vec<(u64, &'static str)>) {
    let mut cut = Cutter {
        lines,
        first,
        named,
        pieces: Vec::new(),
        unpaired: Vec::new(),
        text_from: 0,
        fence: false,
        last_path: None,
    };
    let mut i = 0;
    while i < lines.len() {
        i = cut.at(i, fenced);
    }
    cut.text(lines.len());
    (cut.pieces, cut.unpaired)
}

/// A file name as Aider's coders clean it: `**name**`, `` `name` ``, `name:`, `# name`.
fn clean_name(line: &str) -> String {
    let t = line.trim().trim_matches('*').trim_end_matches(':');
    t.trim_matches('`')
        .trim_start_matches('#')
        .trim()
        .to_owned()
}

/// A line that names a file before a SEARCH block: one word once cleaned.
fn path_line(line: &str) -> Option<String> {
    let name = clean_name(line);
    (!name.is_empty()
        && name.len() <= 250
        && !name.contains(char::is_whitespace)
        && !is_fence(line))
    .then_some(name)
}

/// Lines as text, each ending with a line break.
fn text_of(lines: &[&str]) -> String {
    let mut s = String::with_capacity(lines.iter().map(|l| l.len() + 1).sum());
    for l in lines {
        s.push_str(l);
        s.push('\n');
    }
    s
}

struct Cutter<'a, 'b> {
    lines: &'b [&'a str],
    first: u64,
    named: &'b [&'b str],
    pieces: Vec<Piece>,
    unpaired: Vec<(u64, &'static str)>,
    /// Where the prose not yet cut starts.
    text_from: usize,
    /// Inside a code fence that no edit took.
    fence: bool,
    /// The file the last edit named (a SEARCH block with no name is for it, as in Aider).
    last_path: Option<String>,
}

impl Cutter<'_, '_> {
    /// Reads from line `i`; returns where to go on.
    fn at(&mut self, i: usize, fenced: Fenced) -> usize {
        let line = self.lines[i];
        if is_search(line) {
            return match self.search_block(i) {
                Some(next) => next,
                None => {
                    self.unpaired.push((self.first + i as u64, "SEARCH"));
                    i + 1
                }
            };
        }
        if is_legacy_head(line) {
            if let Some(next) = self.search_block(i) {
                return next;
            }
        }
        if line.trim() == "*** Begin Patch" {
            if let Some(end) =
                (i + 1..self.lines.len()).find(|&j| self.lines[j].trim() == "*** End Patch")
            {
                let mut kwargs = JsonObject::new();
                kwargs.insert("patch".into(), Value::String(text_of(&self.lines[i..=end])));
                return self.edit(i, end, "apply_patch", None, kwargs);
            }
        }
        if self.fence && (is_divider(line) || is_replace(line)) {
            let marker = if is_divider(line) {
                "======="
            } else {
                "REPLACE"
            };
            self.unpaired.push((self.first + i as u64, marker));
            return i + 1;
        }
        if is_fence(line) {
            if !self.fence && fenced != Fenced::Shown {
                if let Some(next) = self.fenced_edit(i, fenced) {
                    return next;
                }
            }
            self.fence = !self.fence;
        }
        i + 1
    }

    /// A SEARCH/REPLACE block starting at `head`, if it is complete.
    fn search_block(&mut self, head: usize) -> Option<usize> {
        let lines = self.lines;
        let stop = |l: &str| is_search(l) || is_divider(l) || is_replace(l);
        let divider = (head + 1..lines.len()).find(|&j| stop(lines[j]))?;
        if !is_divider(lines[divider]) {
            return None;
        }
        let end = (divider + 1..lines.len()).find(|&k| stop(lines[k]))?;
        if !is_replace(lines[end]) {
            return None;
        }
        // The name and fence before it: `name`, fence (diff) or fence, `name` (diff-fenced).
        // The fence was read already: it is the one that opened when `self.fence` is set.
        let mut start = head;
        let mut path = None;
        let before = |at: usize| (at > self.text_from).then(|| lines[at - 1]);
        let opens = |at: usize| self.fence && before(at).is_some_and(is_fence);
        if opens(start) {
            start -= 1;
            if let Some(name) = before(start).and_then(path_line) {
                path = Some(name);
                start -= 1;
            } else if let Some(name) = before(start)
                .filter(|l| l.trim().is_empty())
                .and_then(|_| before(start - 1))
                .and_then(path_line)
                .filter(|n| n.contains(['.', '/']))
            {
                // A Markdown formatter put a blank line between the file's name and the fence.
                path = Some(name);
                start -= 2;
            }
        } else if let Some(name) = before(start).and_then(path_line) {
            path = Some(name);
            start -= 1;
            if opens(start) {
                start -= 1;
            }
        }
        let path = path.or_else(|| self.last_path.clone());
        let mut last = end;
        if self.fence && lines.get(end + 1).is_some_and(|l| is_fence(l)) {
            last += 1;
            self.fence = false;
        }
        let mut kwargs = JsonObject::new();
        if let Some(p) = &path {
            kwargs.insert("path".into(), Value::String(p.clone()));
        }
        kwargs.insert(
            "search".into(),
            Value::String(text_of(&lines[head + 1..divider])),
        );
        kwargs.insert(
            "replace".into(),
            Value::String(text_of(&lines[divider + 1..end])),
        );
        Some(self.edit(start, last, "replace_in_file", path, kwargs))
    }

    /// A whole file or a unified diff in the fenced block opening at `open`, when the format
    /// writes them.
    fn fenced_edit(&mut self, open: usize, fenced: Fenced) -> Option<usize> {
        let lines = self.lines;
        let close = (open + 1..lines.len()).find(|&j| is_fence(lines[j]))?;
        let body = &lines[open + 1..close];
        if body.iter().any(|l| is_search(l)) {
            return None;
        }
        let mut kwargs = JsonObject::new();
        match fenced {
            Fenced::WholeFiles => {
                let before = (open > self.text_from).then(|| lines[open - 1])?;
                let path = path_line(before).or_else(|| {
                    let name = clean_name(before);
                    self.named.contains(&name.as_str()).then_some(name)
                })?;
                kwargs.insert("path".into(), Value::String(path.clone()));
                kwargs.insert("content".into(), Value::String(text_of(body)));
                Some(self.edit(open - 1, close, "write_file", Some(path), kwargs))
            }
            Fenced::Diffs => {
                if !body
                    .iter()
                    .any(|l| l.starts_with("+++ ") || l.starts_with("@@"))
                {
                    return None;
                }
                let path = body
                    .iter()
                    .find_map(|l| l.strip_prefix("+++ "))
                    .map(|p| p.trim().to_owned());
                if let Some(p) = &path {
                    kwargs.insert("path".into(), Value::String(p.clone()));
                }
                kwargs.insert("diff".into(), Value::String(text_of(body)));
                Some(self.edit(open, close, "apply_diff", path, kwargs))
            }
            Fenced::Shown => None,
        }
    }

    /// Cuts the prose before `start`, then the edit of lines `start..=last`; returns the line
    /// after it.
    fn edit(
        &mut self,
        start: usize,
        last: usize,
        function: &'static str,
        path: Option<String>,
        kwargs: JsonObject,
    ) -> usize {
        self.text(start);
        if path.is_some() {
            self.last_path.clone_from(&path);
        }
        self.pieces.push(Piece::Edit(Edit {
            line: self.first + start as u64,
            function,
            path,
            kwargs,
        }));
        self.text_from = last + 1;
        last + 1
    }

    /// Cuts the prose from `text_from` to `end` (exclusive), if it holds anything.
    fn text(&mut self, end: usize) {
        let chunk = &self.lines[self.text_from.min(end)..end];
        let text = chunk.join("\n");
        let text = text.trim();
        if !text.is_empty() {
            self.pieces.push(Piece::Text(text.to_owned()));
        }
        self.text_from = end;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn edits(pieces: &[Piece]) -> Vec<(&'static str, Option<&str>)> {
        pieces
            .iter()
            .filter_map(|p| match p {
                Piece::Edit(e) => Some((e.function, e.path.as_deref())),
                Piece::Text(_) => None,
            })
            .collect()
    }

    #[test]
    fn search_replace_blocks_in_both_fence_orders() {
        let reply = "Two changes.\n\napp.py\n```python\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```\n\n```python\nlib/x.py\n<<<<<<< SEARCH\n=======\nnew\n>>>>>>> REPLACE\n```\n\nThat is all.";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, unpaired) = split(&lines, 10, Fenced::Shown, &[]);
        assert!(unpaired.is_empty());
        assert_eq!(
            edits(&pieces),
            [
                ("replace_in_file", Some("app.py")),
                ("replace_in_file", Some("lib/x.py"))
            ]
        );
        assert_eq!(pieces[0], Piece::Text("Two changes.".into()));
        assert_eq!(pieces[3], Piece::Text("That is all.".into()));
        let Piece::Edit(e) = &pieces[1] else { panic!() };
        assert_eq!(e.line, 12);
        assert_eq!(e.kwargs["search"], "a\n");
        assert_eq!(e.kwargs["replace"], "b\n");
        let Piece::Edit(e) = &pieces[2] else { panic!() };
        assert_eq!(e.kwargs["search"], "");
    }

    #[test]
    fn unpaired_markers_are_reported_and_kept_as_prose() {
        let reply = "```css\nx.css\n.a {}\n=======\n.b {}\n>>>>>>> REPLACE\n```\n<<<<<<< SEARCH\nnothing after";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, unpaired) = split(&lines, 1, Fenced::Shown, &[]);
        assert_eq!(unpaired, [(4, "======="), (6, "REPLACE"), (8, "SEARCH")]);
        assert_eq!(pieces.len(), 1);
        assert!(matches!(&pieces[0], Piece::Text(t) if t.ends_with("nothing after")));
    }

    #[test]
    fn the_2023_head_and_updated_markers_make_an_edit_and_a_git_conflict_does_not() {
        let reply = "Here is the *edit block*:\n\n```java\nsrc\\\\A.java\n<<<<<<< HEAD\nold\n=======\nnew\n>>>>>>> updated\n```\nA conflict:\n```\n<<<<<<< HEAD\na\n>>>>>>> main\n```";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, unpaired) = split(&lines, 1, Fenced::Shown, &[]);
        assert!(unpaired.is_empty(), "{unpaired:?}");
        assert_eq!(edits(&pieces), [("replace_in_file", Some("src\\\\A.java"))]);
        let Piece::Edit(e) = &pieces[1] else { panic!() };
        assert_eq!(
            (e.kwargs["search"].as_str(), e.kwargs["replace"].as_str()),
            (Some("old\n"), Some("new\n"))
        );
        assert!(matches!(&pieces[2], Piece::Text(t) if t.contains("<<<<<<< HEAD")));
    }

    #[test]
    fn a_file_name_a_blank_line_from_the_fence_names_the_edit() {
        let reply = "Changes:\n\napp/styles/app.css\n\n```css\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, _) = split(&lines, 1, Fenced::Shown, &[]);
        assert_eq!(
            edits(&pieces),
            [("replace_in_file", Some("app/styles/app.css"))]
        );
        assert_eq!(pieces[0], Piece::Text("Changes:".into()));
        // A word that is no file name is not taken.
        let reply = "Changes\n\n```css\n<<<<<<< SEARCH\na\n=======\nb\n>>>>>>> REPLACE\n```";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, _) = split(&lines, 1, Fenced::Shown, &[]);
        assert_eq!(edits(&pieces), [("replace_in_file", None)]);
    }

    #[test]
    fn an_edit_in_aiders_source_tag_fence_names_its_file() {
        let reply = "Updated:\n\nREADME.md\n<source>markdown\n<<<<<<< SEARCH\nold\n=======\nnew\n>>>>>>> REPLACE\n</source>\n\nDone.";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, unpaired) = split(&lines, 1, Fenced::Shown, &[]);
        assert!(unpaired.is_empty(), "{unpaired:?}");
        assert_eq!(edits(&pieces), [("replace_in_file", Some("README.md"))]);
        assert_eq!(pieces.last(), Some(&Piece::Text("Done.".into())));
    }

    #[test]
    fn whole_files_and_diffs_only_under_their_formats() {
        let reply = "Here:\n\n**src/a.js**\n```js\nlet a = 1;\n```\n";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, _) = split(&lines, 1, Fenced::WholeFiles, &[]);
        assert_eq!(edits(&pieces), [("write_file", Some("src/a.js"))]);
        let Piece::Edit(e) = &pieces[1] else { panic!() };
        assert_eq!(e.kwargs["content"], "let a = 1;\n");
        assert!(edits(&split(&lines, 1, Fenced::Shown, &[]).0).is_empty());
        // A line that is no file name makes no file, unless Aider's lines after name it.
        let reply = "If you use npm:\n```\nnpm i\n```\n";
        let lines: Vec<&str> = reply.lines().collect();
        assert!(edits(&split(&lines, 1, Fenced::WholeFiles, &[]).0).is_empty());
        let got = split(&lines, 1, Fenced::WholeFiles, &["If you use npm"]).0;
        assert_eq!(edits(&got), [("write_file", Some("If you use npm"))]);
        let diff = "```diff\n--- a.py\n+++ a.py\n@@ ... @@\n-x\n+y\n```";
        let lines: Vec<&str> = diff.lines().collect();
        assert_eq!(
            edits(&split(&lines, 1, Fenced::Diffs, &[]).0),
            [("apply_diff", Some("a.py"))]
        );
    }

    #[test]
    fn patches_are_one_edit() {
        let reply = "*** Begin Patch\n*** Update File: a.py\n@@\n-x\n+y\n*** End Patch";
        let lines: Vec<&str> = reply.lines().collect();
        let (pieces, _) = split(&lines, 1, Fenced::Shown, &[]);
        assert_eq!(edits(&pieces), [("apply_patch", None)]);
    }
}
