//! The layering rule of `docs/development.md`, checked on the source: no two top-level modules
//! of `src/` import each other (through any chain), and within a module no files import each
//! other in a circle. Imports are the `crate::`, `super::` and `self::` paths of `src/**/*.rs`
//! (use trees with braces included, comments left out), each resolved to the file that
//! defines the module it names. A folder's `mod.rs` is its front door (it declares and
//! re-exports its files): the edges between it and the files under it are no circle.

use std::collections::{BTreeMap, BTreeSet};
use std::path::{Path, PathBuf};

/// A module path from the crate root: `["export", "encode"]` for `src/export/encode.rs`.
type ModPath = Vec<String>;

/// Every source file of the library, by module path (`src/main.rs` is the binary: left out).
fn source_files(src: &Path) -> BTreeMap<ModPath, PathBuf> {
    let mut files = BTreeMap::new();
    let mut stack = vec![src.to_path_buf()];
    while let Some(dir) = stack.pop() {
        let entries = std::fs::read_dir(&dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display()));
        for entry in entries {
            let path = entry.expect("a directory entry").path();
            if path.is_dir() {
                stack.push(path);
                continue;
            }
            if path.extension().is_none_or(|e| e != "rs") {
                continue;
            }
            let rel = path.strip_prefix(src).expect("under src");
            let mut parts: ModPath = rel
                .iter()
                .map(|p| p.to_string_lossy().trim_end_matches(".rs").to_string())
                .collect();
            match parts.last().map(String::as_str) {
                Some("mod") | Some("lib") => {
                    parts.pop();
                }
                Some("main") if parts.len() == 1 => continue,
                _ => {}
            }
            files.insert(parts, path);
        }
    }
    files
}

/// The text without comments and string literals (their contents could name paths).
fn code_only(text: &str) -> String {
    let b = text.as_bytes();
    let mut out = String::with_capacity(text.len());
    let mut i = 0;
    while i < b.len() {
        if b[i..].starts_with(b"//") {
            while i < b.len() && b[i] != b'\n' {
                i += 1;
            }
        } else if b[i..].starts_with(b"/*") {
            let mut depth = 0;
            while i < b.len() {
                if b[i..].starts_with(b"/*") {
                    depth += 1;
                    i += 2;
                } else if b[i..].starts_with(b"*/") {
                    depth -= 1;
                    i += 2;
                    if depth == 0 {
                        break;
                    }
                } else {
                    i += 1;
                }
            }
        } else if b[i] == b'"' {
            // A raw string `r#"..."#` is cut at its first quote; its `#`s stay as code, harmless.
            let raw = i > 0 && (b[i - 1] == b'r' || b[i - 1] == b'#');
            i += 1;
            while i < b.len() && b[i] != b'"' {
                if b[i] == b'\\' && !raw {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("\"\"");
        } else if b[i] == b'\'' && i + 2 < b.len() && (b[i + 2] == b'\'' || b[i + 1] == b'\\') {
            // A char literal ('"', '\'', '\n'); a lifetime ('a) is left alone.
            i += 1;
            while i < b.len() && b[i] != b'\'' {
                if b[i] == b'\\' {
                    i += 1;
                }
                i += 1;
            }
            i += 1;
            out.push_str("' '");
        } else {
            let c = text[i..].chars().next().expect("in bounds");
            out.push(c);
            i += c.len_utf8();
        }
    }
    out
}

fn is_ident(c: char) -> bool {
    c.is_ascii_alphanumeric() || c == '_'
}

/// Tokens: identifiers, `::`, and single punctuation characters.
fn tokens(code: &str) -> Vec<String> {
    let mut out = Vec::new();
    let chars: Vec<char> = code.chars().collect();
    let mut i = 0;
    while i < chars.len() {
        let c = chars[i];
        if c.is_whitespace() {
            i += 1;
        } else if is_ident(c) {
            let start = i;
            while i < chars.len() && is_ident(chars[i]) {
                i += 1;
            }
            out.push(chars[start..i].iter().collect());
        } else if c == ':' && chars.get(i + 1) == Some(&':') {
            out.push("::".into());
            i += 2;
        } else {
            out.push(c.to_string());
            i += 1;
        }
    }
    out
}

/// Reads a path (or use tree) starting at `toks[*at]`, just after a `::`, appending each full
/// path to `out`; `prefix` is what came before.
fn read_tree(toks: &[String], at: &mut usize, prefix: &ModPath, out: &mut Vec<ModPath>) {
    let mut path = prefix.clone();
    loop {
        match toks.get(*at).map(String::as_str) {
            Some("{") => {
                *at += 1;
                loop {
                    match toks.get(*at).map(String::as_str) {
                        Some("}") | None => {
                            *at += 1;
                            return;
                        }
                        Some(",") => *at += 1,
                        _ => read_tree(toks, at, &path, out),
                    }
                }
            }
            Some(t) if t.chars().next().is_some_and(is_ident) => {
                if t != "self" {
                    path.push(t.to_string());
                }
                *at += 1;
                if toks.get(*at).map(String::as_str) == Some("::") {
                    *at += 1;
                    continue;
                }
                if toks.get(*at).map(String::as_str) == Some("as") {
                    *at += 2;
                }
                out.push(path);
                return;
            }
            _ => {
                // `*` or the end of a path.
                if toks.get(*at).map(String::as_str) == Some("*") {
                    *at += 1;
                }
                out.push(path);
                return;
            }
        }
    }
}

/// The module paths a file names, resolved from the crate root.
fn imports(file_mod: &ModPath, text: &str) -> Vec<ModPath> {
    let toks = tokens(&code_only(text));
    // Inline modules (`mod tests { ... }`) change what `super` and `self` mean.
    let mut inline: Vec<(String, usize)> = Vec::new();
    let mut depth = 0usize;
    let mut out = Vec::new();
    let mut i = 0;
    while i < toks.len() {
        let t = toks[i].as_str();
        match t {
            "{" => depth += 1,
            "}" => {
                depth = depth.saturating_sub(1);
                if inline.last().is_some_and(|(_, d)| *d == depth) {
                    inline.pop();
                }
            }
            "mod" if toks.get(i + 2).map(String::as_str) == Some("{") => {
                inline.push((toks[i + 1].clone(), depth));
            }
            "crate" | "super" | "self" if toks.get(i + 1).map(String::as_str) == Some("::") => {
                let preceded_by_path = i > 0 && toks[i - 1] == "::";
                if !preceded_by_path {
                    // The module this code is in: the file's, then its inline modules.
                    let mut here = file_mod.clone();
                    here.extend(inline.iter().map(|(m, _)| m.clone()));
                    let mut base: ModPath = match t {
                        "crate" => Vec::new(),
                        _ => here.clone(),
                    };
                    let mut at = i;
                    // `super::super::...`: one level up each; a `foo.rs` file's own module
                    // is `foo`, so its `super` is its folder.
                    while toks.get(at).map(String::as_str) == Some("super") {
                        base.pop();
                        at += 2;
                    }
                    if t != "super" {
                        at += 2;
                    }
                    read_tree(&toks, &mut at, &base, &mut out);
                    i = at;
                    continue;
                }
            }
            _ => {}
        }
        i += 1;
    }
    out
}

/// The file a module path lands in: its longest prefix that is a file.
fn resolve<'a>(files: &'a BTreeMap<ModPath, PathBuf>, path: &ModPath) -> Option<&'a ModPath> {
    (1..=path.len())
        .rev()
        .find_map(|n| files.get_key_value(&path[..n]).map(|(k, _)| k))
}

/// The strongly connected components with more than one node (Tarjan).
fn circles<N: Ord + Clone>(edges: &BTreeMap<N, BTreeSet<N>>) -> Vec<Vec<N>> {
    struct State<N> {
        index: BTreeMap<N, usize>,
        low: BTreeMap<N, usize>,
        stack: Vec<N>,
        on_stack: BTreeSet<N>,
        out: Vec<Vec<N>>,
    }
    fn visit<N: Ord + Clone>(n: &N, edges: &BTreeMap<N, BTreeSet<N>>, s: &mut State<N>) {
        let i = s.index.len();
        s.index.insert(n.clone(), i);
        s.low.insert(n.clone(), i);
        s.stack.push(n.clone());
        s.on_stack.insert(n.clone());
        for m in edges.get(n).into_iter().flatten() {
            if !s.index.contains_key(m) {
                visit(m, edges, s);
                let low = s.low[n].min(s.low[m]);
                s.low.insert(n.clone(), low);
            } else if s.on_stack.contains(m) {
                let low = s.low[n].min(s.index[m]);
                s.low.insert(n.clone(), low);
            }
        }
        if s.low[n] == s.index[n] {
            let mut component = Vec::new();
            loop {
                let m = s.stack.pop().expect("on the stack");
                s.on_stack.remove(&m);
                let done = &m == n;
                component.push(m);
                if done {
                    break;
                }
            }
            if component.len() > 1 {
                component.sort();
                s.out.push(component);
            }
        }
    }
    let mut s = State {
        index: BTreeMap::new(),
        low: BTreeMap::new(),
        stack: Vec::new(),
        on_stack: BTreeSet::new(),
        out: Vec::new(),
    };
    for n in edges.keys() {
        if !s.index.contains_key(n) {
            visit(n, edges, &mut s);
        }
    }
    s.out
}

/// Each file's imports as edges between the files they land in.
fn file_edges(src: &Path) -> BTreeMap<ModPath, BTreeMap<ModPath, String>> {
    let files = source_files(src);
    let mut edges: BTreeMap<ModPath, BTreeMap<ModPath, String>> = BTreeMap::new();
    for (module, path) in &files {
        let text =
            std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        for import in imports(module, &text) {
            if let Some(target) = resolve(&files, &import) {
                if target != module {
                    edges
                        .entry(module.clone())
                        .or_default()
                        .entry(target.clone())
                        .or_insert_with(|| import.join("::"));
                }
            }
        }
    }
    edges
}

fn src_dir() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("src")
}

/// Whether `door` is the `mod.rs` of a folder holding `module`: a folder's front door declares
/// and re-exports its files, and they reach each other through it, which is no circle.
fn is_front_door_of(files: &BTreeMap<ModPath, PathBuf>, door: &ModPath, module: &ModPath) -> bool {
    module.starts_with(door)
        && files.get(door).is_some_and(|p| {
            p.file_name()
                .is_some_and(|n| n == "mod.rs" || n == "lib.rs")
        })
}

#[test]
fn no_two_top_level_modules_import_each_other() {
    let edges = file_edges(&src_dir());
    let mut top: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    let mut why: BTreeMap<(String, String), String> = BTreeMap::new();
    for (from, targets) in &edges {
        let Some(a) = from.first() else { continue };
        for (to, import) in targets {
            let Some(b) = to.first() else { continue };
            if a != b {
                top.entry(a.clone()).or_default().insert(b.clone());
                why.entry((a.clone(), b.clone()))
                    .or_insert_with(|| format!("src/{}: crate::{import}", from.join("/")));
            }
        }
    }
    let found = circles(&top);
    let mut report = String::new();
    for circle in &found {
        report.push_str(&format!(
            "modules importing each other: {}\n",
            circle.join(", ")
        ));
        for a in circle {
            for b in circle {
                if let Some(w) = why.get(&(a.clone(), b.clone())) {
                    report.push_str(&format!("  {a} -> {b}: e.g. {w}\n"));
                }
            }
        }
    }
    assert!(found.is_empty(), "{report}");
}

#[test]
fn no_file_circle_within_a_module() {
    let src = src_dir();
    let files = source_files(&src);
    let edges = file_edges(&src);
    let mut within: BTreeMap<ModPath, BTreeSet<ModPath>> = BTreeMap::new();
    for (from, targets) in &edges {
        for to in targets.keys() {
            let through_door =
                is_front_door_of(&files, to, from) || is_front_door_of(&files, from, to);
            if to.first() == from.first() && !through_door {
                within.entry(from.clone()).or_default().insert(to.clone());
            }
        }
    }
    let found = circles(&within);
    let mut report = String::new();
    for circle in &found {
        let names: Vec<String> = circle.iter().map(|m| m.join("/")).collect();
        report.push_str(&format!(
            "files importing each other: {}\n",
            names.join(", ")
        ));
        for a in circle {
            for b in circle {
                if let Some(w) = edges.get(a).and_then(|t| t.get(b)) {
                    report.push_str(&format!("  {} -> {}: {w}\n", a.join("/"), b.join("/")));
                }
            }
        }
    }
    assert!(found.is_empty(), "{report}");
}

#[test]
fn imports_are_read_from_use_trees_and_paths() {
    let text = "use crate::a::{b::C, d::{self, E}};\n// crate::x::y\nfn f() { super::g::h(); let s = \"crate::z\"; }\nmod tests { use super::*; use super::super::k; }";
    let found = imports(&vec!["m".into(), "n".into()], text);
    let found: Vec<String> = found.iter().map(|p| p.join("::")).collect();
    assert_eq!(
        found,
        ["a::b::C", "a::d", "a::d::E", "m::g::h", "m::n", "m::k"]
    );
}
