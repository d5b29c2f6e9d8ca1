//! The hand-written matchers against the regex splitter, the reference: the same pieces on
//! texts made of every kind of character the patterns tell apart (each combination of the
//! classes, the characters they name, the edges of DeepSeek's CJK ranges), on generated
//! strings of them, and on the real agent logs of the shared corpus.

use std::path::{Path, PathBuf};

use super::super::classes::{self, TABLE};
use super::super::split::{Chain, Splitter, Step};
use super::BYTE_LEVEL;
use super::*;

/// Each matcher, and the patterns (run one after another) it stands for.
fn matchers() -> Vec<(Known, Vec<&'static str>)> {
    vec![
        (Known::Cl100k { digits: 3 }, vec![CL100K]),
        (Known::Cl100k { digits: 1 }, vec![QWEN]),
        (Known::O200k, vec![O200K]),
        (Known::Digits, vec![DEEPSEEK_DIGITS]),
        (Known::Cjk, vec![DEEPSEEK_CJK]),
        (Known::DeepSeek, vec![DEEPSEEK]),
        (
            Known::DeepSeekSequence,
            vec![DEEPSEEK_DIGITS, DEEPSEEK_CJK, DEEPSEEK],
        ),
        (Known::Gpt2, vec![BYTE_LEVEL]),
    ]
}

/// The pieces of `text` by the regex engine, the patterns run in turn.
fn by_regex(patterns: &[&str], text: &str) -> Vec<(usize, usize)> {
    let steps = patterns
        .iter()
        .map(|p| Step::Regex(Splitter::new(p).expect("compiles")))
        .collect();
    let chain = Chain::new(steps);
    let mut out = Vec::new();
    assert!(chain.split(text, &mut chain.caches(), |a, b| out.push((a, b))));
    out
}

/// The pieces of `text` by the hand-written matcher.
fn by_hand(known: Known, text: &str) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    known.split(text, 0, &mut |a, b| out.push((a, b)));
    out
}

/// Panics with the first text on which a matcher and its regex disagree.
fn same_pieces(texts: &[String]) {
    let regexes: Vec<(Known, Chain)> = matchers()
        .into_iter()
        .map(|(k, patterns)| {
            let steps = patterns
                .iter()
                .map(|p| Step::Regex(Splitter::new(p).expect("compiles")))
                .collect();
            (k, Chain::new(steps))
        })
        .collect();
    for (known, chain) in &regexes {
        let mut caches = chain.caches();
        for text in texts {
            let mut want = Vec::new();
            assert!(chain.split(text, &mut caches, |a, b| want.push((a, b))));
            let got = by_hand(*known, text);
            if got != want {
                let show = |p: &[(usize, usize)]| -> Vec<String> {
                    p.iter().map(|&(a, b)| text[a..b].to_owned()).collect()
                };
                panic!(
                    "{known:?} on {text:?}:\n by hand {:?}\n regex   {:?}",
                    show(&got),
                    show(&want)
                );
            }
        }
    }
}

/// Characters that stand for every kind the patterns tell apart: for each combination of the
/// classes' flags, its first few code points; the characters the patterns name; the edges of
/// DeepSeek's CJK ranges.
fn alphabet() -> Vec<char> {
    let mut seen = std::collections::HashMap::<u8, usize>::new();
    let mut out: Vec<char> = Vec::new();
    for c in (0..0x11_0000u32).filter_map(char::from_u32) {
        let n = seen.entry(TABLE.of(c as u32)).or_default();
        if *n < 3 {
            *n += 1;
            out.push(c);
        }
    }
    out.extend("\r\n \t'sStTrReEvVmMlLdDſK/!\"#@[\\]`{|}~-._aZ09xQ".chars());
    out.extend([
        '\u{303f}',
        '\u{3040}',
        '\u{3041}',
        '\u{3099}',
        '\u{309b}',
        '\u{309f}',
        '\u{30a0}',
        '\u{30fb}',
        '\u{30fc}',
        '\u{30ff}',
        '\u{3100}',
        '\u{4dff}',
        '\u{4e00}',
        '\u{9fa5}',
        '\u{9fa6}',
        '\u{a0}',
        '\u{85}',
        '\u{2028}',
        '\u{3000}',
        '\u{200d}',
        '\u{feff}',
        '\u{301}',
        '\u{1c5}',
        '\u{2b0}',
        '\u{2160}',
        '\u{b2}',
        '\u{663}',
        '\u{ff14}',
        '\u{1f389}',
        '\u{10ffff}',
    ]);
    out
}

/// Strings of `alphabet()`, pseudo-random, some leaning on one kind of character so that long
/// runs occur.
fn generated(count: usize, seed: u64) -> Vec<String> {
    let chars = alphabet();
    let mut x = seed;
    let mut next = move || {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        x
    };
    (0..count)
        .map(|_| {
            let len = (next() % 24) as usize;
            // A small alphabet for this string: runs and repeats of few kinds.
            let pool: Vec<char> = (0..1 + next() % 6)
                .map(|_| chars[(next() % chars.len() as u64) as usize])
                .collect();
            (0..len)
                .map(|_| {
                    if next() % 4 == 0 {
                        chars[(next() % chars.len() as u64) as usize]
                    } else {
                        pool[(next() % pool.len() as u64) as usize]
                    }
                })
                .collect()
        })
        .collect()
}

#[test]
fn every_character_alone_and_between_others() {
    let chars = alphabet();
    let mut texts = Vec::new();
    for &c in &chars {
        for shape in [
            "{}",
            "{}{}",
            "'{}",
            "'{}{}",
            "a{}",
            "A{}",
            " {}",
            " {}a",
            "{} ",
            "{}  x",
            "\n{}",
            "{}\n",
            "!{}",
            "1{}",
            "{}1",
            "日{}",
            "{}日",
            "\u{301}{}",
            "{}'s",
            "{}'LL",
        ] {
            texts.push(shape.replace("{}", &c.to_string()));
        }
    }
    same_pieces(&texts);
}

#[test]
fn generated_strings() {
    same_pieces(&generated(20_000, 0x9e37_79b9_7f4a_7c15));
}

#[test]
fn edge_cases() {
    let texts: Vec<String> = [
        "",
        "it's I'M we'LL they'Re you'ſ 'ſ 'x '' 'l 'll' 'r're",
        "  word \t\tword   \n\n  x  \r\n\r\n y   ",
        "1234567 ١٢٣٤٥ Ⅻ½² 12a34 x1 ４５６",
        "HTTPServer iPhone ÉCOLE ǅemal CamelCase camelCase ʰa aʰ Aʰb",
        "e\u{301}te\u{301} \u{301}a a\u{301}\u{301}B \u{301}",
        "日本語のテキスト、中文文本。カタカナ・ひらがな゛゠ー 〇 한국어",
        "path/to/file.rs //comment\n/// doc\r\n/x",
        "!!!\n\n ...\r\n @user #tag a.b-c_d",
        "\u{a0}\u{a0}x\u{3000}y\u{2028}\u{85}z \u{200d}\u{feff}q",
        "emoji 🎉🚀 👍🏽text",
        "trailing   ",
        "   ",
        "\n",
        "x",
    ]
    .iter()
    .map(|s| s.to_string())
    .collect();
    same_pieces(&texts);
}

/// The ASCII table the matchers use agrees with the Unicode one.
#[test]
fn the_ascii_flags_are_the_tables() {
    for c in 0..128u32 {
        assert_eq!(ASCII[c as usize], TABLE.of(c), "{c:#x}");
    }
}

/// `(?i:...)` folds the contractions' letters as `contraction` does: only `ſ` besides ASCII.
#[test]
fn the_contractions_fold_as_the_regex_does() {
    for letter in "strevmld".chars() {
        let folded: Vec<(u32, u32)> = classes::ranges(&format!("(?i:{letter})"));
        let mut want: Vec<(u32, u32)> = [letter, letter.to_ascii_uppercase()]
            .iter()
            .map(|&c| (c as u32, c as u32))
            .collect();
        if letter == 's' {
            want.push(('ſ' as u32, 'ſ' as u32));
        }
        want.sort();
        assert_eq!(folded, want, "{letter}");
    }
}

/// The shared corpus's agent logs beside the checkout (or under `$TRAJKIT_SHARED`): `None`
/// without it, a panic in CI.
fn agent_logs() -> Option<PathBuf> {
    let shared = std::env::var_os("TRAJKIT_SHARED")
        .map(PathBuf::from)
        .unwrap_or_else(|| Path::new(env!("CARGO_MANIFEST_DIR")).join("../shared"));
    let dir = shared.join("corpus/agent-logs");
    if dir.is_dir() {
        return Some(dir);
    }
    assert!(
        std::env::var_os("CI").is_none(),
        "the shared corpus is missing at {} but CI is set",
        dir.display()
    );
    None
}

/// Every file under `dir`, as text.
fn texts_under(dir: &Path, out: &mut Vec<String>) {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return;
    };
    let mut paths: Vec<PathBuf> = entries.flatten().map(|e| e.path()).collect();
    paths.sort();
    for p in paths {
        if p.is_dir() {
            texts_under(&p, out);
        } else if let Ok(bytes) = std::fs::read(&p) {
            // Lines, so that a disagreement shows a short text.
            let text = String::from_utf8_lossy(&bytes);
            out.extend(text.split_inclusive('\n').map(str::to_owned));
        }
    }
}

#[test]
fn real_agent_logs() {
    let Some(dir) = agent_logs() else {
        return;
    };
    let mut texts = Vec::new();
    texts_under(&dir, &mut texts);
    assert!(texts.len() > 1000, "{} lines", texts.len());
    // The JSON of the logs escapes their text: decoded strings too, where a line reads.
    let decoded: Vec<String> = texts
        .iter()
        .filter_map(|l| serde_json::from_str::<serde_json::Value>(l).ok())
        .flat_map(|v| strings(&v))
        .collect();
    same_pieces(&texts);
    same_pieces(&decoded);
}

/// The strings in `v`.
fn strings(v: &serde_json::Value) -> Vec<String> {
    match v {
        serde_json::Value::String(s) => vec![s.clone()],
        serde_json::Value::Array(a) => a.iter().flat_map(strings).collect(),
        serde_json::Value::Object(o) => o.values().flat_map(strings).collect(),
        _ => Vec::new(),
    }
}

#[test]
fn deepseek_sequence_is_fused_and_others_are_left_to_the_regex() {
    let chain = Chain::new(
        [DEEPSEEK_DIGITS, DEEPSEEK_CJK, DEEPSEEK]
            .iter()
            .map(|p| Step::new(p).expect("compiles"))
            .collect(),
    );
    assert_eq!(format!("{chain:?}"), "Chain([Known(DeepSeekSequence)])");
    let with_characters = DEEPSEEK.replace(r"\r", "\r").replace(r"\n", "\n");
    assert_eq!(Known::of(&with_characters), Some(Known::DeepSeek));
    assert!(matches!(Step::new(r"\p{N}{1,2}"), Some(Step::Regex(_))));
    assert_eq!(
        by_regex(&[CL100K], "a  b"),
        by_hand(Known::Cl100k { digits: 3 }, "a  b")
    );
}
