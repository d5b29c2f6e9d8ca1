//! Options a format declares for its own reading and mapping (docs/inputs.md, "Mapping
//! options"): choices its raw records do not force, each with a default. A format declares
//! each option once, as a [`FormatOption`] beside its converter: the pipeline key in
//! `[convert]`, the `convert` flag and the help text all come from that declaration, so a new
//! option is one constant in the format's folder. What a choice leaves out of the steps stays in
//! `details`, so nothing is lost either way.

use std::fmt;

/// The type and default of a [`FormatOption`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum OptionValue {
    /// A boolean (`--flag true|false`, `key = true` in a pipeline file).
    Bool(bool),
    /// An integer (`--flag N`, `key = N`).
    Int(i64),
    /// One of a fixed set of names (`--flag NAME`, `key = "NAME"`): the value, and the names
    /// allowed (the same list in the default and in every value set).
    Choice(&'static str, &'static [&'static str]),
}

impl fmt::Display for OptionValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            OptionValue::Bool(b) => write!(f, "{b}"),
            OptionValue::Int(i) => write!(f, "{i}"),
            OptionValue::Choice(c, _) => f.write_str(c),
        }
    }
}

impl OptionValue {
    /// The value as JSON (for the effective configuration a run records).
    pub fn to_json(self) -> serde_json::Value {
        match self {
            OptionValue::Bool(b) => b.into(),
            OptionValue::Int(i) => i.into(),
            OptionValue::Choice(c, _) => c.into(),
        }
    }

    /// The JSON Schema type name of values of this kind.
    pub fn type_name(self) -> &'static str {
        match self {
            OptionValue::Bool(_) => "boolean",
            OptionValue::Int(_) => "integer",
            OptionValue::Choice(..) => "string",
        }
    }

    /// The names a choice allows (empty for other kinds).
    pub fn choices(self) -> &'static [&'static str] {
        match self {
            OptionValue::Choice(_, names) => names,
            _ => &[],
        }
    }

    /// The value of `option` named `name`, when it is one of the option's choices: the name as
    /// the option declares it (so values stay `'static`).
    pub fn choice(option: &FormatOption, name: &str) -> Result<OptionValue, String> {
        let names = option.default.choices();
        match names.iter().find(|n| **n == name) {
            Some(n) => Ok(OptionValue::Choice(n, names)),
            None => Err(format!(
                "{} takes one of {}, not {name:?}",
                option.key,
                names.join(", ")
            )),
        }
    }
}

/// One option of a format: its key in a pipeline file's `[convert]` table, its `trajkit
/// convert` flag, its default and its help. Declared as a constant in the format's folder and
/// listed by its converter's [`super::Converter::options`].
#[derive(Debug)]
pub struct FormatOption {
    /// The pipeline key, snake_case (`memabra_decisions`).
    pub key: &'static str,
    /// The flag without dashes: the key with `-` for `_` (`memabra-decisions`).
    pub flag: &'static str,
    /// The default, which also gives the type.
    pub default: OptionValue,
    /// The value's name in `--help` (`BOOL`, `MINUTES`).
    pub value_name: &'static str,
    /// One or two sentences for `--help` and the pipeline schema, starting with the format's
    /// name (`memabra: ...`).
    pub help: &'static str,
}

/// The values of the format options a run was given; an option not given has its default.
/// Reading a value is a scan of the few given ones, cheap enough per record.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FormatOptions {
    given: Vec<(&'static str, OptionValue)>,
}

impl FormatOptions {
    /// Sets `option` to `value`, which must be of the option's type.
    pub fn set(&mut self, option: &'static FormatOption, value: OptionValue) -> Result<(), String> {
        if let OptionValue::Choice(name, _) = value {
            if !option.default.choices().contains(&name) {
                return Err(format!(
                    "{} takes one of {}, not {name:?}",
                    option.key,
                    option.default.choices().join(", ")
                ));
            }
        }
        if std::mem::discriminant(&value) != std::mem::discriminant(&option.default) {
            return Err(format!(
                "{} takes a value of type {}, not {value}",
                option.key,
                option.default.type_name()
            ));
        }
        self.given.retain(|(k, _)| *k != option.key);
        self.given.push((option.key, value));
        Ok(())
    }

    /// The value of `option`: the one given, or its default.
    pub fn get(&self, option: &FormatOption) -> OptionValue {
        self.given
            .iter()
            .find(|(k, _)| *k == option.key)
            .map_or(option.default, |&(_, v)| v)
    }

    /// The value of a boolean `option` (`false` for an option of another type: a format asks
    /// for its own options by their declared type, and [`FormatOptions::set`] keeps the type).
    pub fn bool(&self, option: &FormatOption) -> bool {
        matches!(self.get(option), OptionValue::Bool(true))
    }

    /// The value of an integer `option` (0 for an option of another type, as for
    /// [`FormatOptions::bool`]).
    pub fn int(&self, option: &FormatOption) -> i64 {
        match self.get(option) {
            OptionValue::Int(i) => i,
            _ => 0,
        }
    }

    /// The value of a choice `option` (`""` for an option of another type, as for
    /// [`FormatOptions::bool`]).
    pub fn choice(&self, option: &FormatOption) -> &'static str {
        match self.get(option) {
            OptionValue::Choice(c, _) => c,
            _ => "",
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    static FLAG: FormatOption = FormatOption {
        key: "demo_flag",
        flag: "demo-flag",
        default: OptionValue::Bool(true),
        value_name: "BOOL",
        help: "demo: a flag.",
    };
    static GAP: FormatOption = FormatOption {
        key: "demo_gap",
        flag: "demo-gap",
        default: OptionValue::Int(30),
        value_name: "MINUTES",
        help: "demo: a number.",
    };

    #[test]
    fn unset_options_have_their_defaults_and_set_ones_their_values() {
        let mut opts = FormatOptions::default();
        assert!(opts.bool(&FLAG));
        assert_eq!(opts.int(&GAP), 30);
        opts.set(&FLAG, OptionValue::Bool(false)).ok();
        opts.set(&GAP, OptionValue::Int(5)).ok();
        opts.set(&GAP, OptionValue::Int(7)).ok();
        assert!(!opts.bool(&FLAG));
        assert_eq!(opts.int(&GAP), 7);
        assert!(opts
            .set(&GAP, OptionValue::Bool(true))
            .is_err_and(|e| e.contains("integer")));
    }

    static PICK: FormatOption = FormatOption {
        key: "demo_pick",
        flag: "demo-pick",
        default: OptionValue::Choice("a", &["a", "b"]),
        value_name: "NAME",
        help: "demo: a choice.",
    };

    #[test]
    fn a_choice_takes_only_its_names() {
        let mut opts = FormatOptions::default();
        assert_eq!(opts.choice(&PICK), "a");
        let b = OptionValue::choice(&PICK, "b").expect("a name of the option");
        opts.set(&PICK, b).expect("set");
        assert_eq!(opts.choice(&PICK), "b");
        assert_eq!(PICK.default.to_json(), serde_json::json!("a"));
        assert!(OptionValue::choice(&PICK, "c").is_err_and(|e| e.contains("a, b")));
        assert!(opts
            .set(&PICK, OptionValue::Choice("c", &["c"]))
            .is_err_and(|e| e.contains("one of a, b")));
    }
}
