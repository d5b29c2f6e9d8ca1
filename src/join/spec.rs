//! How the records of a side set are read: their keys, the trajectory keys they match, their
//! places in the memory window, and what each record attaches, as its side format
//! ([`super::side::SideFormat`]) says, with the user's key expressions in place of the format's.

use serde_json::Value;

use super::generic::{self, Generic, GenericFields};
use super::key::{kind, KeyExpr};
use super::side::{Attach, Prepared, SideFormat, WindowKeys};

/// A side format chosen by name (`--reflections-from NAME`): a format's, or the built-in
/// `generic`, which reads the paths the user declares.
#[derive(Debug, Clone, Copy, Default)]
pub enum SideFrom {
    /// The side format of an input format, from the formats registry.
    Format(&'static dyn SideFormat),
    /// `generic`: `--key` and the value paths say everything. The default of `join` and of a
    /// `[[join]]` table that names no format.
    #[default]
    Generic,
}

impl SideFrom {
    /// The name used on the command line.
    pub fn name(self) -> &'static str {
        match self {
            SideFrom::Format(f) => f.name(),
            SideFrom::Generic => generic::NAME,
        }
    }

    /// What `join --help` says of it ([`SideFormat::help`]).
    pub fn help(self) -> &'static str {
        match self {
            SideFrom::Format(f) => f.help(),
            SideFrom::Generic => generic::HELP,
        }
    }
}

impl std::fmt::Display for SideFrom {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// As its name. Reading a name needs the formats registry, which sits above the join:
/// `config::join` does that.
impl serde::Serialize for SideFrom {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Where the memory window finds a record's loop and iteration, and a trajectory's.
#[derive(Debug, Clone)]
pub struct WindowSpec {
    /// The loop (group) of a side record.
    pub group: KeyExpr,
    /// The iteration of a side record (an integer, or a string of decimal digits).
    pub iteration: KeyExpr,
    /// The loop of a trajectory that no record of the set matched.
    pub trajectory_group: KeyExpr,
    /// The iteration of such a trajectory.
    pub trajectory_iteration: KeyExpr,
}

impl WindowSpec {
    /// The window of a side format's key texts.
    pub fn parse(w: WindowKeys) -> Result<WindowSpec, String> {
        Ok(WindowSpec {
            group: KeyExpr::parse(w.group)?,
            iteration: KeyExpr::parse(w.iteration)?,
            trajectory_group: KeyExpr::parse(w.trajectory_group)?,
            trajectory_iteration: KeyExpr::parse(w.trajectory_iteration)?,
        })
    }
}

/// The side format a set's records are read with: a format's (static), or `generic` with its
/// declared paths. Matched here rather than boxed, so that `generic`, whose sets can hold
/// millions of records, is called directly.
#[derive(Debug, Clone)]
enum Reader {
    Format(&'static dyn SideFormat),
    Generic(Generic),
}

impl Reader {
    fn format(&self) -> &dyn SideFormat {
        match self {
            Reader::Format(f) => *f,
            Reader::Generic(g) => g,
        }
    }

    fn prepare(&self, record: &mut Value, file: &str) -> Prepared {
        match self {
            Reader::Format(f) => f.prepare(record, file),
            Reader::Generic(g) => g.prepare(record, file),
        }
    }

    fn attach(&self, record: &Value, key: &str) -> Result<Attach, String> {
        match self {
            Reader::Format(f) => f.attach(record, key),
            Reader::Generic(g) => g.attach(record, key),
        }
    }
}

/// How one set of side files (`--reflections` or `--rewards`) is read and matched.
#[derive(Debug, Clone)]
pub struct SideSpec {
    /// The format.
    reader: Reader,
    /// Key expressions of a side record; a record has the keys of all of them (those whose
    /// fields are missing are skipped, but at least one must give a key).
    pub keys: Vec<KeyExpr>,
    /// Key expressions of a trajectory, matched against the side keys.
    pub trajectory_keys: Vec<KeyExpr>,
    /// The memory window's loop and iteration (side formats that have one).
    pub window: Option<WindowSpec>,
}

/// The key expressions of `texts`; a side format's texts are checked by its tests.
fn exprs<S: AsRef<str>>(texts: impl IntoIterator<Item = S>) -> Vec<KeyExpr> {
    texts
        .into_iter()
        .filter_map(|t| KeyExpr::parse(t.as_ref()).ok())
        .collect()
}

impl SideSpec {
    /// The spec of the side format `from`, with the side key replaced by `key` and the
    /// trajectory key by `trajectory_key` when given. `generic` needs a key and at least one
    /// value path; the other formats take no value path.
    pub fn new(
        from: SideFrom,
        key: Option<KeyExpr>,
        trajectory_key: Option<KeyExpr>,
        generic: GenericFields,
    ) -> Result<SideSpec, String> {
        let reader = match from {
            SideFrom::Format(f) if generic.is_empty() => Reader::Format(f),
            SideFrom::Format(f) => {
                return Err(format!(
                    "--value, --components, --outcome, --step-rewards and --text are for generic side files, not {}",
                    f.name()
                ))
            }
            SideFrom::Generic => Reader::Generic(Generic::new(key.is_some(), generic)?),
        };
        let format = reader.format();
        let window = format.window().map(WindowSpec::parse).transpose()?;
        Ok(SideSpec {
            keys: key.map_or_else(|| exprs(format.keys()), |k| vec![k]),
            trajectory_keys: trajectory_key
                .map_or_else(|| exprs(format.trajectory_keys()), |k| vec![k]),
            window,
            reader,
        })
    }

    /// The spec of `format`'s side files with the format's own keys.
    pub fn of(format: &'static dyn SideFormat) -> Result<SideSpec, String> {
        SideSpec::new(
            SideFrom::Format(format),
            None,
            None,
            GenericFields::default(),
        )
    }

    /// The side format's name.
    pub fn format_name(&self) -> &'static str {
        self.reader.format().name()
    }

    /// Reads one side record of `file`. `Ok(None)` for a record the side format does not
    /// attach ([`Prepared::Skip`]).
    pub fn extract(&self, mut record: Value, file: &str) -> Result<Option<Extracted>, String> {
        if !record.is_object() {
            return Err(format!(
                "a side record must be a JSON object, found {}",
                kind(&record)
            ));
        }
        let added = match self.reader.prepare(&mut record, file) {
            Prepared::Skip => return Ok(None),
            Prepared::Read => None,
            Prepared::Added(field) => Some(field),
        };
        let keys = self.record_keys(&record)?;
        let window = match &self.window {
            Some(w) => Some((
                w.group.eval_one(&record).map_err(|e| e.to_string())?,
                iteration(&w.iteration, &record)?,
            )),
            None => None,
        };
        if let (Some(field), Some(o)) = (added, record.as_object_mut()) {
            o.remove(field);
        }
        let key = keys.first().cloned().unwrap_or_default();
        let attach = self.reader.attach(&record, &key)?;
        Ok(Some(Extracted {
            keys,
            attach,
            window,
        }))
    }

    fn record_keys(&self, record: &Value) -> Result<Vec<String>, String> {
        let mut keys = Vec::new();
        let mut first_error = None;
        for e in &self.keys {
            match e.eval(record) {
                Ok(k) => {
                    for k in k {
                        if !keys.contains(&k) {
                            keys.push(k);
                        }
                    }
                }
                Err(err) => {
                    first_error.get_or_insert(format!("{err} (key {e})"));
                }
            }
        }
        match (keys.is_empty(), first_error) {
            (false, _) => Ok(keys),
            (true, Some(e)) if self.keys.len() == 1 => Err(e),
            (true, _) => Err(format!(
                "no key: none of {} gives one",
                self.keys
                    .iter()
                    .map(|k| k.as_str())
                    .collect::<Vec<_>>()
                    .join(", ")
            )),
        }
    }
}

/// The iteration of a record: an integer, or a string of decimal digits (a directory name like
/// `002`).
pub fn iteration(e: &KeyExpr, record: &dyn super::key::Fields) -> Result<i64, String> {
    let text = e.eval_one(record).map_err(|err| err.to_string())?;
    text.parse::<i64>()
        .map_err(|_| format!("iteration {e}: {text:?} is not an integer"))
}

/// A side record, read.
#[derive(Debug, Clone)]
pub struct Extracted {
    /// Its keys (at least one).
    pub keys: Vec<String>,
    /// What it attaches.
    pub attach: Attach,
    /// Its loop and iteration, for the memory window.
    pub window: Option<(String, i64)>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::{json, Number};

    /// A side format of records `{"loop", "n", "text"?, "skip"?}` in files `LOOP/f`: the loop is
    /// added from the directory when missing, `skip` records are not attached.
    #[derive(Debug)]
    struct Looped;

    impl SideFormat for Looped {
        fn name(&self) -> &'static str {
            "looped"
        }
        fn help(&self) -> &'static str {
            "loops"
        }
        fn keys(&self) -> Vec<String> {
            vec!["{loop}#{n}".to_owned(), "bad {".to_owned()]
        }
        fn window(&self) -> Option<WindowKeys> {
            Some(WindowKeys {
                group: "loop",
                iteration: "n",
                trajectory_group: "/details/loop",
                trajectory_iteration: "/details/n",
            })
        }
        fn prepare(&self, record: &mut Value, file: &str) -> Prepared {
            if record.get("skip").is_some() {
                return Prepared::Skip;
            }
            match (record.get("loop"), file.split_once('/')) {
                (None, Some((dir, _))) => {
                    record["loop"] = Value::String(dir.to_owned());
                    Prepared::Added("loop")
                }
                _ => Prepared::Read,
            }
        }
        fn attach(&self, record: &Value, key: &str) -> Result<Attach, String> {
            Ok(Attach {
                reflection: Some(json!({"key": key, "record": record})),
                ..Attach::default()
            })
        }
    }

    fn looped() -> SideSpec {
        SideSpec::of(&Looped).expect("spec")
    }

    #[test]
    fn a_format_gives_keys_trajectory_keys_and_window() {
        let s = looped();
        assert_eq!(s.format_name(), "looped");
        let texts: Vec<&str> = s.keys.iter().map(KeyExpr::as_str).collect();
        assert_eq!(
            texts,
            ["{loop}#{n}"],
            "texts that do not parse are left out"
        );
        assert_eq!(s.trajectory_keys, exprs(["id"]), "the default");
        assert!(s.window.is_some());
        let own = KeyExpr::parse("/k").expect("key");
        let s = SideSpec::new(
            SideFrom::Format(&Looped),
            Some(own.clone()),
            Some(own.clone()),
            GenericFields::default(),
        )
        .expect("spec");
        assert_eq!((s.keys, s.trajectory_keys), (vec![own.clone()], vec![own]));
    }

    #[test]
    fn an_added_field_is_read_for_keys_and_window_then_removed() {
        let s = looped();
        let x = s
            .extract(json!({"n": "007", "text": "t"}), "L1/f")
            .expect("reads")
            .expect("attaches");
        assert_eq!(x.keys, ["L1#007"]);
        assert_eq!(x.window, Some(("L1".to_owned(), 7)));
        let reflection = x.attach.reflection.expect("reflection");
        assert_eq!(reflection["key"], "L1#007");
        assert_eq!(reflection["record"], json!({"n": "007", "text": "t"}));
        let x = s
            .extract(json!({"loop": "L2", "n": 1}), "L1/f")
            .expect("reads")
            .expect("attaches");
        assert_eq!(
            x.attach.reflection.expect("reflection")["record"]["loop"],
            "L2"
        );
    }

    #[test]
    fn skipped_records_and_errors() {
        let s = looped();
        assert!(s.extract(json!({"skip": 1}), "f").expect("reads").is_none());
        let e = s.extract(json!([1]), "f").unwrap_err();
        assert!(e.starts_with("a side record must be a JSON object"), "{e}");
        let e = s.extract(json!({"loop": "L", "n": 1.5}), "f").unwrap_err();
        assert!(e.contains("n"), "{e}");
    }

    #[test]
    fn formats_refuse_value_paths() {
        let g = GenericFields {
            reward: Some("/r".into()),
            ..GenericFields::default()
        };
        let e = SideSpec::new(SideFrom::Format(&Looped), None, None, g).unwrap_err();
        assert!(e.ends_with("are for generic side files, not looped"), "{e}");
    }

    #[test]
    fn generic_values_are_read_from_declared_paths_only() {
        let fields = GenericFields {
            reward: Some("/resolved".into()),
            outcome: Some("resolved".into()),
            ..GenericFields::default()
        };
        let s = SideSpec::new(
            SideFrom::Generic,
            Some(KeyExpr::parse("/instance_id").expect("key")),
            None,
            fields,
        )
        .expect("spec");
        let x = s
            .extract(json!({"instance_id": "a", "resolved": true}), "f")
            .expect("reads")
            .expect("attaches");
        assert_eq!(x.attach.reward, Number::from_f64(1.0));
        assert_eq!(
            x.attach.outcome.expect("outcome").to_value()["status"],
            "success"
        );
        let e = s
            .extract(json!({"instance_id": "a", "resolved": "yes"}), "f")
            .unwrap_err();
        assert!(e.contains("value /resolved"), "{e}");
        let e = s.extract(json!({"resolved": true}), "f").unwrap_err();
        assert!(e.contains("instance_id") && e.contains("missing"), "{e}");
    }

    #[test]
    fn generic_needs_a_key_and_a_value() {
        let g = GenericFields {
            reward: Some("/r".into()),
            ..GenericFields::default()
        };
        assert!(SideSpec::new(SideFrom::Generic, None, None, g).is_err());
        let key = KeyExpr::parse("/id").ok();
        assert!(SideSpec::new(SideFrom::Generic, key, None, GenericFields::default()).is_err());
    }
}
