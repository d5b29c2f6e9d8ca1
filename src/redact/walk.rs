//! Every string of a trajectory, with its JSON pointer: step texts, kwargs (keys and values),
//! tool outputs, reasoning, descriptions, annotations, `details` (recursively).

use serde_json::Value;

use crate::model::{JsonObject, Step, Trajectory};

/// What a string is to the trajectory.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Free text or a JSON value: may be rewritten.
    Text,
    /// The name of a member of a JSON object: may be rewritten.
    Key,
    /// An id, a link, a name or a tag the trajectory's rules depend on: read, never rewritten.
    Fixed,
}

/// Receives each string; returns its replacement, if any.
pub trait Visit {
    /// The string `text` at `pointer` (for a [`Role::Key`], the pointer of its member).
    fn text(&mut self, text: &str, pointer: &str, role: Role) -> Option<String>;
    /// Two members of the object at `pointer` were given the same name.
    fn collision(&mut self, pointer: &str);
}

/// Visits every string of `traj`, applying the replacements `v` returns.
pub fn walk(traj: &mut Trajectory, v: &mut impl Visit) {
    let mut p = Pointer(String::with_capacity(64));
    p.field("id", |p| fixed(v, p, &traj.id));
    if let Some(version) = &traj.schema_version {
        p.field("schema_version", |p| fixed(v, p, version));
    }
    for (name, list) in [
        ("available_apis", &traj.available_apis),
        ("available_custom_tools", &traj.available_custom_tools),
        ("available_code_languages", &traj.available_code_languages),
    ] {
        for (i, item) in list.iter().flatten().enumerate() {
            p.field(name, |p| p.index(i, |p| fixed(v, p, item)));
        }
    }
    for (i, step) in traj.content.iter_mut().enumerate() {
        p.field("content", |p| p.index(i, |p| walk_step(step, p, v)));
    }
    p.field("details", |p| walk_object(&mut traj.details, p, v));
}

fn walk_step(step: &mut Step, p: &mut Pointer, v: &mut impl Visit) {
    match step {
        Step::ApiAction(a) => {
            p.field("function", |p| fixed(v, p, &a.function));
            p.field("kwargs", |p| walk_object(&mut a.kwargs, p, v));
            p.field("description", |p| opt_text(v, p, &mut a.description));
            p.field("reasoning_content", |p| {
                opt_text(v, p, &mut a.reasoning_content)
            });
            p.field("tool_call_id", |p| opt_fixed(v, p, &a.tool_call_id));
        }
        Step::CodeAction(c) => {
            p.field("language", |p| fixed(v, p, &c.language));
            p.field("content", |p| text(v, p, &mut c.content));
            p.field("description", |p| opt_text(v, p, &mut c.description));
            p.field("reasoning_content", |p| {
                opt_text(v, p, &mut c.reasoning_content)
            });
            p.field("tool_call_id", |p| opt_fixed(v, p, &c.tool_call_id));
        }
        Step::MessageAction(m) => {
            p.field("content", |p| text(v, p, &mut m.content));
            p.field("description", |p| opt_text(v, p, &mut m.description));
            p.field("reasoning_content", |p| {
                opt_text(v, p, &mut m.reasoning_content)
            });
            p.field("tool_call_id", |p| opt_fixed(v, p, &m.tool_call_id));
        }
        Step::TextObservation(t) => {
            p.field("content", |p| text(v, p, &mut t.content));
            p.field("name", |p| opt_text(v, p, &mut t.name));
            p.field("tool_call_id", |p| opt_fixed(v, p, &t.tool_call_id));
        }
        Step::ImageObservation(i) => walk_image(i, p, v),
        Step::WebObservation(w) => {
            p.field("html", |p| opt_text(v, p, &mut w.html));
            p.field("axtree", |p| opt_text(v, p, &mut w.axtree));
            p.field("url", |p| opt_text(v, p, &mut w.url));
            if let Some(crate::model::TaggedImage::Image(i)) = &mut w.image_observation {
                p.field("image_observation", |p| walk_image(i, p, v));
            }
            p.field("tool_call_id", |p| opt_fixed(v, p, &w.tool_call_id));
        }
        Step::JsonObservation(j) => {
            p.field("content", |p| walk_object(&mut j.content, p, v));
            p.field("name", |p| opt_text(v, p, &mut j.name));
            p.field("tool_call_id", |p| opt_fixed(v, p, &j.tool_call_id));
        }
    }
}

fn walk_image(i: &mut crate::model::ImageObservation, p: &mut Pointer, v: &mut impl Visit) {
    p.field("content", |p| text(v, p, &mut i.content));
    if let Some(annotations) = &mut i.annotations {
        for (n, a) in annotations.iter_mut().enumerate() {
            p.field("annotations", |p| p.index(n, |p| walk_value(a, p, v)));
        }
    }
    p.field("tool_call_id", |p| opt_fixed(v, p, &i.tool_call_id));
}

fn walk_value(value: &mut Value, p: &mut Pointer, v: &mut impl Visit) {
    match value {
        Value::String(s) => text(v, p, s),
        Value::Array(items) => {
            for (i, item) in items.iter_mut().enumerate() {
                p.index(i, |p| walk_value(item, p, v));
            }
        }
        Value::Object(map) => walk_object(map, p, v),
        Value::Null | Value::Bool(_) | Value::Number(_) => {}
    }
}

/// The members' values, then their names; an object with a renamed member is rebuilt in order.
fn walk_object(map: &mut JsonObject, p: &mut Pointer, v: &mut impl Visit) {
    let mut renamed = Vec::new();
    for (i, (key, value)) in map.iter_mut().enumerate() {
        p.field(key, |p| {
            walk_value(value, p, v);
            if let Some(new) = v.text(key, p.as_str(), Role::Key) {
                renamed.push((i, new));
            }
        });
    }
    if renamed.is_empty() {
        return;
    }
    let old = std::mem::take(map);
    let mut renamed = renamed.into_iter().peekable();
    for (i, (key, value)) in old.into_iter().enumerate() {
        let key = match renamed.next_if(|(j, _)| *j == i) {
            Some((_, new)) => new,
            None => key,
        };
        if map.contains_key(&key) {
            v.collision(p.as_str());
        }
        map.insert(key, value);
    }
}

fn text(v: &mut impl Visit, p: &Pointer, s: &mut String) {
    if let Some(new) = v.text(s, p.as_str(), Role::Text) {
        *s = new;
    }
}

fn opt_text(v: &mut impl Visit, p: &Pointer, s: &mut Option<String>) {
    if let Some(s) = s {
        text(v, p, s);
    }
}

fn fixed(v: &mut impl Visit, p: &Pointer, s: &str) {
    // A fixed string is never rewritten: what the visitor would replace it with is dropped.
    let _ = v.text(s, p.as_str(), Role::Fixed);
}

fn opt_fixed(v: &mut impl Visit, p: &Pointer, s: &Option<String>) {
    if let Some(s) = s {
        fixed(v, p, s);
    }
}

/// A JSON pointer (RFC 6901) built as the walk goes down, and cut back as it comes up.
struct Pointer(String);

impl Pointer {
    fn as_str(&self) -> &str {
        &self.0
    }

    fn field(&mut self, name: &str, f: impl FnOnce(&mut Pointer)) {
        let len = self.0.len();
        self.0.push('/');
        for c in name.chars() {
            match c {
                '~' => self.0.push_str("~0"),
                '/' => self.0.push_str("~1"),
                c => self.0.push(c),
            }
        }
        f(self);
        self.0.truncate(len);
    }

    fn index(&mut self, i: usize, f: impl FnOnce(&mut Pointer)) {
        let len = self.0.len();
        self.0.push('/');
        self.0.push_str(&i.to_string());
        f(self);
        self.0.truncate(len);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Upper-cases every `Text` and `Key` string, and records every pointer and role seen.
    #[derive(Default)]
    struct Upper(Vec<(String, Role)>, u32);

    impl Visit for Upper {
        fn text(&mut self, text: &str, pointer: &str, role: Role) -> Option<String> {
            self.0.push((pointer.to_owned(), role));
            (role != Role::Fixed).then(|| text.to_uppercase())
        }
        fn collision(&mut self, _: &str) {
            self.1 += 1;
        }
    }

    #[test]
    fn visits_every_string_with_its_pointer_and_rewrites_only_free_ones() {
        let mut traj: Trajectory = serde_json::from_value(serde_json::json!({
            "schema_version": "1.5.0", "id": "t/1",
            "content": [
                {"class_": "api_action", "function": "f", "kwargs": {"a/b": ["x", {"k": "y"}]},
                 "description": "d", "tool_call_id": "c1"},
                {"class_": "text_observation", "content": "out", "source": "environment",
                 "tool_call_id": "c1"}
            ],
            "details": {"n": 1, "s": "z", "K": "w", "k": "v"}
        }))
        .unwrap_or_else(|e| panic!("{e}"));
        let mut v = Upper::default();
        walk(&mut traj, &mut v);
        let seen: Vec<&str> = v.0.iter().map(|(p, _)| p.as_str()).collect();
        assert!(seen.contains(&"/content/0/kwargs/a~1b/1/k"), "{seen:?}");
        assert!(seen.contains(&"/details/s"));
        assert!(v.0.contains(&("/id".to_owned(), Role::Fixed)));
        assert!(v
            .0
            .contains(&("/content/0/kwargs/a~1b".to_owned(), Role::Key)));
        assert_eq!(traj.id, "t/1");
        let json = serde_json::to_value(&traj).unwrap_or_default();
        assert_eq!(json["content"][0]["kwargs"]["A/B"][1]["K"], "Y");
        assert_eq!(json["content"][1]["content"], "OUT");
        assert_eq!(json["content"][1]["tool_call_id"], "c1");
        assert_eq!(v.1, 1, "`k` became `K`, which was taken");
    }
}
