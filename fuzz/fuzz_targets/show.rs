//! `show`'s rendering of one trajectory. Byte 0 picks how: bit 0 colours, bit 1 folds texts (as
//! `show` does without `--full`), bit 2 what the rest is: a trajectory's JSON (0), or a text
//! put in every string of a trajectory (id, function, language, names, contents, call ids,
//! outcome, format).
//!
//! The oracle: nothing panics; the only control characters written besides newlines and tabs
//! are the colours' own escape sequences, and only when colours are on; every step kept is one
//! blank line and its heading, whatever its texts hold.
#![no_main]

use libfuzzer_sys::fuzz_target;
use trajkit::model::{Step, Trajectory};
use trajkit::report::show::{render, without_colours, Paint, FOLD_BYTES};
use trajkit::report::view::{view, Limits};
use trajkit::terminal::is_escaped;

/// A trajectory with `text` in every string `show` prints.
fn every_string(text: &str) -> Trajectory {
    let mut kwargs = serde_json::Map::new();
    kwargs.insert(text.to_owned(), serde_json::json!(text));
    let mut details = serde_json::Map::new();
    details.insert("outcome".into(), serde_json::json!({ "status": text }));
    details.insert("source".into(), serde_json::json!({ "format": text }));
    let mut api = Step::api(text, kwargs, Some(text.to_owned())).with_tool_call_id(text);
    api.set_thought(Some(text.to_owned()), Some(text.to_owned()));
    let steps = vec![
        api,
        Step::environment_text(Some(text.to_owned()), text).with_tool_call_id(text),
        Step::code(text, text, Some(text.to_owned())),
        Step::message(text, None),
    ];
    Trajectory::new(text.to_owned(), steps, details)
}

fuzz_target!(|data: &[u8]| {
    let [how, body @ ..] = data else {
        return;
    };
    let traj = if how & 4 == 0 {
        match serde_json::from_slice::<Trajectory>(body) {
            Ok(t) => t,
            Err(_) => return,
        }
    } else {
        every_string(&String::from_utf8_lossy(body))
    };
    let limits = if how & 2 == 0 {
        Limits::FULL
    } else {
        Limits {
            text_bytes: FOLD_BYTES,
            ..Limits::FULL
        }
    };
    let paint = Paint(how & 1 == 1);
    let v = view(&traj, limits);
    let text = render(&v, "fuzz.jsonl:1", paint);
    let bare = without_colours(&text);
    if let Some(c) = bare.chars().find(|&c| is_escaped(c)) {
        panic!("{c:?} reached the terminal:\n{bare:?}");
    }
    assert!(paint.0 || bare == text, "colours without --color");
    let lines: Vec<&str> = bare.split('\n').collect();
    let blank: Vec<usize> = (0..lines.len())
        .filter(|&i| lines[i].is_empty() && i + 1 < lines.len())
        .collect();
    assert_eq!(blank.len(), v.steps.len(), "a step per blank line:\n{bare}");
    for i in blank {
        assert!(
            lines[i + 1].starts_with("── "),
            "a heading after each blank line:\n{bare}"
        );
    }
});
