//! Turns a decoded spec into its compiled form: regexes built, templates parsed, roles and step
//! kinds resolved, once per spec rather than once per record.

use std::collections::HashMap;
use std::sync::Arc;

use regex::Regex;
use serde_json::{Map, Value};

use super::args::ArgSyntax;
use super::format::{RuleSpec, SpecFile};
use super::iterate::{Iteration, Over};
use super::template::{Table, Tables, Template, Var};
use super::usage::Usage;
use super::value::ValueTemplate;
use crate::convert::DuplicateIds;
use crate::model::rules::escape_pointer;
use crate::model::Source;

/// A problem in a spec, located by JSON pointer into the spec document.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct SpecProblem {
    /// Where, as a JSON pointer into the spec (`/rule/2/match`).
    pub pointer: String,
    /// What is wrong.
    pub message: String,
}

impl SpecProblem {
    fn new(pointer: impl Into<String>, message: impl Into<String>) -> Self {
        SpecProblem {
            pointer: pointer.into(),
            message: message.into(),
        }
    }
}

/// A compiled spec, ready to convert records.
#[derive(Debug)]
pub struct CompiledSpec {
    /// `--from` name.
    pub name: String,
    /// One line about the dataset.
    pub description: String,
    /// The id template.
    pub id: Template,
    /// Record-level extractions, in order.
    pub extracts: Vec<Extract>,
    /// Named templates rendered per record after the extractions, in order.
    pub vars: Vec<(String, Template)>,
    /// Where the turns come from.
    pub turns: TurnSource,
    /// Raw role → default for unmatched turns.
    pub roles: HashMap<String, RoleDefault>,
    /// Every turn must match a rule.
    pub strict: bool,
    /// Rules in order.
    pub rules: Vec<Rule>,
    /// Final-answer wrap of the last message and the marker that means "already wrapped".
    pub finish: Option<(Template, String)>,
    /// Details keys and their templates.
    pub details: Vec<(String, Template)>,
    /// How consecutive records are grouped into one trajectory, when they are.
    pub group: Option<Grouping>,
    /// Pointer to the list whose items each make a trajectory, when there is one.
    pub split: Option<String>,
    /// What a repeated trajectory id means (`None`: written as it is).
    pub duplicate_ids: Option<DuplicateIds>,
    /// Every placeholder and `for_each` that reads the data, for the report of pointers that
    /// never resolve.
    pub tracked: Vec<Tracked>,
}

/// A placeholder or `for_each` source that reads the data, and the counts of its uses.
#[derive(Debug)]
pub struct Tracked {
    /// Where it is in the spec (`/rule/0/emit/1/content`).
    pub at: String,
    /// What it reads, as written (`{/meta/split}`, `/logs`).
    pub what: String,
    /// Whether it resolved, and how often it was missing.
    pub usage: Arc<Usage>,
}

/// The keys of a table that choose its items rather than build it.
const ITERATION_KEYS: &[&str] = &["for_each", "skip_empty", "keep_if", "skip_if"];

/// Details keys trajkit writes itself into every trajectory a spec makes.
const OWN_DETAILS: &[&str] = &["source"];

impl CompiledSpec {
    /// The pointer a group key reads, for messages: its first field, or empty.
    pub fn group_pointer(&self) -> &str {
        self.group
            .as_ref()
            .and_then(|g| {
                g.key.vars().find_map(|v| match v {
                    Var::Field(p) => Some(p.as_str()),
                    _ => None,
                })
            })
            .unwrap_or_default()
    }
}

/// Grouping of consecutive records (`[record] group`).
#[derive(Debug)]
pub struct Grouping {
    /// The key template; it reads only fields of the record.
    pub key: Template,
    /// A key that comes back after another key is a trajectory of its own rather than an
    /// error.
    pub separate: bool,
}

/// A regex applied once per record.
#[derive(Debug)]
pub struct Extract {
    /// The text to search.
    pub from: Template,
    /// The regex whose named groups become variables.
    pub regex: Regex,
    /// A record it does not match is rejected.
    pub required: bool,
    /// Use the last match rather than the first.
    pub last: bool,
    /// Where it is in the spec, for messages (`record.extract[0]`).
    pub label: String,
}

/// Where a record's turns are.
#[derive(Debug)]
pub enum TurnSource {
    /// A list at `turns`; each turn's role and text by pointer inside it.
    List {
        /// Pointer to the list.
        turns: String,
        /// Where a turn's role is.
        role: RoleSource,
        /// Pointer to a turn's text.
        text: String,
    },
    /// Fixed turns, each a field of the record: `(role, pointer to text)`.
    Fields(Vec<(String, String)>),
}

/// Where a turn's role is: a pointer inside the turn, or a template rendered per turn.
#[derive(Debug)]
pub enum RoleSource {
    /// A JSON pointer inside the turn (`/role`).
    Pointer(String),
    /// A template (`{$turn/action/name|default("page")}`), for turns whose role is not one
    /// field.
    Template(Template),
}

/// What a turn no rule matched becomes.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum RoleDefault {
    /// A text observation from the user.
    User,
    /// A text observation from the environment.
    Environment,
    /// A message action.
    Assistant,
    /// Nothing.
    Drop,
}

/// A compiled rule.
#[derive(Debug)]
pub struct Rule {
    /// Name for diagnostics (`rule N` when unnamed).
    pub name: String,
    /// Roles it applies to; all when `None`.
    pub roles: Option<Vec<String>>,
    /// Positions it applies to; all when `None`.
    pub turns: Option<Vec<i64>>,
    /// The pattern, when there is one.
    pub regex: Option<Regex>,
    /// Emit once per match.
    pub each: bool,
    /// Use the last match rather than the first.
    pub last: bool,
    /// Some template of `emit` uses a group of `regex` (else a plain match test will do).
    pub uses_groups: bool,
    /// Positions of the record in its group the rule applies to; all when `None`.
    pub members: Option<Vec<i64>>,
    /// Steps produced.
    pub emit: Vec<Emit>,
    /// The rule applies only when this [`holds`](super::iterate::holds) (`when`).
    pub when: Option<Template>,
    /// The record is rejected with this message when the rule applies (`reject`).
    pub reject: Option<Template>,
}

/// A step of a rule's `emit`, or a group of them (`steps`), once or once per item of a
/// `for_each`.
#[derive(Debug)]
pub struct Emit {
    /// The iteration, when there is one.
    pub each: Option<Iteration>,
    /// What is emitted (per item).
    pub body: Body,
}

/// What an [`Emit`] gives: one step, or several in order (each may iterate again).
#[derive(Debug)]
pub enum Body {
    /// One step.
    Step(StepTemplate),
    /// Several steps, in order (`steps = [...]`).
    Steps(Vec<Emit>),
}

/// A step to produce, with templates for its fields.
#[derive(Debug)]
pub enum StepTemplate {
    /// `text_observation`.
    Text {
        /// Who it is from.
        source: Source,
        /// The text.
        content: Template,
        /// The optional `name`.
        name: Option<Template>,
    },
    /// `image_observation`.
    Image {
        /// Path or URL of the image.
        content: Template,
        /// Who it is from.
        source: Source,
        /// The annotations (a list, or an object with `for_each`).
        annotations: Option<ValueTemplate>,
    },
    /// `web_observation`.
    Web {
        /// `html`, `axtree`, `url` (absent fields are null).
        html: Option<Template>,
        /// Accessibility tree.
        axtree: Option<Template>,
        /// Page URL.
        url: Option<Template>,
        /// Path or URL of the page's screenshot (an environment `image_observation` without
        /// annotations).
        image: Option<Template>,
        /// `[width, height]` of the viewport.
        viewport_size: Option<ValueTemplate>,
    },
    /// `code_action`.
    Code {
        /// Language (must be one of ADP's languages; checked on output).
        language: Template,
        /// The code.
        content: Template,
        /// Thought.
        description: Option<Template>,
    },
    /// `api_action`.
    Api {
        /// Function name.
        function: Template,
        /// Keyword arguments.
        kwargs: Kwargs,
        /// Thought.
        description: Option<Template>,
    },
    /// `message_action`.
    Message {
        /// The message.
        content: Template,
        /// Thought.
        description: Option<Template>,
    },
}

/// How an API action's keyword arguments are made.
#[derive(Debug)]
pub enum Kwargs {
    /// Each argument from its own value template, in the spec's order.
    Fields {
        /// Names and values.
        fields: Vec<(String, ValueTemplate)>,
        /// Names left out when their value renders nothing (null or empty text).
        optional: Vec<String>,
    },
    /// The whole object one template gives (`"{$value/params}"`, `'{/args|from_json}'`).
    Whole(ValueTemplate),
    /// Parsed from text (a template) written in some argument syntax.
    Parsed {
        /// The argument text.
        from: Template,
        /// Its syntax.
        syntax: ArgSyntax,
    },
}

/// Compiles `spec`, collecting every problem rather than stopping at the first.
pub fn compile(spec: SpecFile) -> Result<CompiledSpec, Vec<SpecProblem>> {
    let mut c = Compiler {
        split: spec.record.split.is_some(),
        ..Compiler::default()
    };
    for (name, value) in &spec.tables {
        match Table::from_spec(value) {
            Some(table) => {
                c.tables.insert(name.clone(), Arc::new(table));
            }
            None => c.problem(
                &format!("/tables/{}", escape_pointer(name)),
                "a table is a TOML table (key = value) or a list (looked up by position)",
            ),
        }
    }
    let group = spec.record.group.as_ref().map(|key| {
        let key = c.template("/record/group", key, &[]);
        if key.vars().any(|v| !matches!(v, Var::Field(_))) {
            c.problem(
                "/record/group",
                "a group key reads only fields of the record (\"{/episode_id}\"): it is \
                 computed before the record is converted",
            );
        }
        Grouping {
            key,
            separate: spec.record.regroup.as_deref() == Some("separate"),
        }
    });
    if spec.record.regroup.is_some() && group.is_none() {
        c.problem("/record/regroup", "`regroup` needs a `group` key");
    }
    if group.is_some() && c.split {
        c.problem(
            "/record/split",
            "`split` and `group` exclude each other: a record makes several trajectories, or \
             several records make one",
        );
    }
    let mut record_groups: Vec<String> = Vec::new();
    let mut extracts = Vec::new();
    for (i, e) in spec.record.extract.iter().enumerate() {
        let at = format!("/record/extract/{i}");
        let from = c.template(&format!("{at}/from"), &e.from, &record_groups);
        if let Some(regex) = c.regex(&format!("{at}/match"), &e.pattern) {
            record_groups.extend(regex.capture_names().flatten().map(str::to_owned));
            extracts.push(Extract {
                from,
                regex,
                required: e.required,
                last: e.last,
                label: format!("record.extract[{i}]"),
            });
        }
    }
    let mut vars = Vec::new();
    for (name, text) in &spec.vars {
        let at = format!("/vars/{}", escape_pointer(name));
        let template = c.template(&at, text.as_str().unwrap_or_default(), &record_groups);
        record_groups.push(name.clone());
        vars.push((name.clone(), template));
    }
    let id = c.template("/record/id", &spec.record.id, &record_groups);
    for key in spec.details.keys() {
        if OWN_DETAILS.contains(&key.as_str()) {
            c.problem(
                &format!("/details/{}", escape_pointer(key)),
                format!(
                    "{key:?} is a details key trajkit writes itself (details.source: the input \
                     and the format), which would replace yours: name it differently"
                ),
            );
        }
    }
    let details = spec
        .details
        .iter()
        .map(|(k, v)| {
            let at = format!("/details/{}", escape_pointer(k));
            let text = v.as_str().unwrap_or_default();
            (k.clone(), c.template(&at, text, &record_groups))
        })
        .collect();
    let finish = spec.finish.as_ref().map(|f| {
        let wrap = c.template("/finish/wrap", &f.wrap, &["content".to_owned()]);
        (wrap, f.unless.clone())
    });

    let turns = match (&spec.record.turns, spec.record.fixed_turns.as_slice()) {
        (Some(list), []) => TurnSource::List {
            turns: list.clone(),
            role: match spec.record.role.as_deref() {
                None => RoleSource::Pointer("/role".into()),
                Some(role) if role.contains('{') => {
                    c.in_turn = true;
                    let template = c.template("/record/role", role, &record_groups);
                    c.in_turn = false;
                    RoleSource::Template(template)
                }
                Some(pointer) if pointer.is_empty() || pointer.starts_with('/') => {
                    RoleSource::Pointer(pointer.to_owned())
                }
                Some(other) => {
                    c.problem(
                        "/record/role",
                        format!(
                            "a turn's role is a JSON pointer inside the turn (\"/role\") or a \
                             template (\"{{$turn/role}}\"), not {other:?}"
                        ),
                    );
                    RoleSource::Pointer(String::new())
                }
            },
            text: spec
                .record
                .text
                .clone()
                .unwrap_or_else(|| "/content".into()),
        },
        (None, fixed) if !fixed.is_empty() => TurnSource::Fields(
            fixed
                .iter()
                .map(|t| (t.role.clone(), t.text.clone()))
                .collect(),
        ),
        _ => {
            c.problem(
                "/record",
                "give either `turns` (a pointer to the list of turns) or `[[record.turn]]` \
                 entries (turns taken from fields), not both and not neither",
            );
            TurnSource::Fields(Vec::new())
        }
    };

    let mut roles = HashMap::new();
    for (role, kind) in &spec.roles {
        let default = match kind.as_str() {
            Some("user") => RoleDefault::User,
            Some("environment") => RoleDefault::Environment,
            Some("assistant") => RoleDefault::Assistant,
            Some("drop") => RoleDefault::Drop,
            _ => {
                c.problem(
                    &format!("/roles/{}", escape_pointer(role)),
                    "a role maps to user, environment, assistant or drop",
                );
                RoleDefault::Drop
            }
        };
        roles.insert(role.clone(), default);
    }

    let rules = spec
        .rules
        .iter()
        .enumerate()
        .map(|(i, r)| c.rule(i, r, &record_groups))
        .collect();

    if c.problems.is_empty() {
        Ok(CompiledSpec {
            name: spec.name,
            description: spec.description,
            id,
            extracts,
            vars,
            turns,
            roles,
            strict: spec.strict,
            rules,
            finish,
            details,
            group,
            split: spec.record.split,
            duplicate_ids: match spec.record.duplicate_ids.as_deref() {
                Some("keep") => None,
                Some("suffix") => Some(DuplicateIds::Suffix),
                _ => Some(DuplicateIds::Error),
            },
            tracked: c.tracked,
        })
    } else {
        Err(c.problems)
    }
}

/// Compiles the parts of a spec, collecting problems.
#[derive(Default)]
struct Compiler {
    problems: Vec<SpecProblem>,
    /// Every capture name the templates compiled so far use, in order.
    used: Vec<String>,
    /// The spec splits records (`$parent` and `$index` exist).
    split: bool,
    /// Templates being compiled are inside a `for_each` (`$value`, `$key`, `$index` exist).
    iterating: bool,
    /// Templates being compiled are rendered per turn (`$turn/...` exists).
    in_turn: bool,
    /// The spec's `[tables]`.
    tables: Tables,
    /// The placeholders and `for_each` sources that read the data.
    tracked: Vec<Tracked>,
}

impl Compiler {
    fn problem(&mut self, pointer: &str, message: impl Into<String>) {
        self.problems.push(SpecProblem::new(pointer, message));
    }

    fn regex(&mut self, pointer: &str, pattern: &str) -> Option<Regex> {
        Regex::new(pattern)
            .map_err(|e| self.problem(pointer, e.to_string()))
            .ok()
    }

    /// Parses a template whose capture placeholders must be among `groups`.
    fn template(&mut self, pointer: &str, text: &str, groups: &[String]) -> Template {
        let mut template = match Template::parse_with(text, &self.tables) {
            Ok(t) => t,
            Err(e) => {
                self.problem(pointer, e.0);
                return Template::default();
            }
        };
        for name in template.captures() {
            self.used.push(name.to_owned());
            if !groups.iter().any(|g| g == name) {
                self.problem(
                    pointer,
                    format!("uses {{{name}}}, but no pattern in scope has a group named {name:?} (groups: {groups:?})"),
                );
            }
        }
        let mut out_of_scope = Vec::new();
        for var in template.vars() {
            let why = match var {
                Var::Value(_) | Var::Key if !self.iterating => {
                    "$value and $key exist only inside a for_each"
                }
                Var::Index if !self.iterating && !self.split => {
                    "$index exists only inside a for_each or with [record] split"
                }
                Var::Parent(_) if !self.split => "$parent exists only with [record] split",
                Var::TurnField(_) if !self.in_turn => {
                    "$turn/... exists only in the templates of rules and [record] role"
                }
                _ => continue,
            };
            out_of_scope.push(why);
        }
        out_of_scope.dedup();
        for why in out_of_scope {
            self.problem(pointer, why);
        }
        for (what, usage) in template.track() {
            self.tracked.push(Tracked {
                at: pointer.to_owned(),
                what: format!("{{{what}}}"),
                usage,
            });
        }
        template
    }

    /// The `for_each` of a table (a step of `emit`, or a value), with its `skip_empty`,
    /// `keep_if` and `skip_if`; one of those without a `for_each` is a problem.
    fn for_each_of(
        &mut self,
        at: &str,
        table: &Map<String, Value>,
        groups: &[String],
    ) -> Option<Iteration> {
        let skip_empty = table.get("skip_empty").and_then(Value::as_bool);
        let mut each = table
            .get("for_each")
            .map(|e| self.iteration(at, e, skip_empty.unwrap_or(false)));
        let was = self.iterating;
        self.iterating = true;
        let condition = |c: &mut Self, key: &str| {
            let text = table.get(key)?.as_str().unwrap_or_default();
            Some(c.template(&format!("{at}/{key}"), text, groups))
        };
        let keep_if = condition(self, "keep_if");
        let skip_if = condition(self, "skip_if");
        self.iterating = was;
        if each.is_none() {
            for key in ["skip_empty", "keep_if", "skip_if"] {
                if table.contains_key(key) {
                    self.problem(
                        &format!("{at}/{key}"),
                        format!("`{key}` chooses items of a `for_each`, and there is none here"),
                    );
                }
            }
        }
        if let Some(each) = &mut each {
            each.keep_if = keep_if;
            each.skip_if = skip_if;
        }
        each
    }

    /// Compiles a `for_each` (a pointer or variable, or a table of them to zip) and
    /// `skip_empty`.
    fn iteration(&mut self, at: &str, each: &Value, skip_empty: bool) -> Iteration {
        let var = |c: &mut Self, pointer: &str, text: &str| {
            let var = Var::parse(text).filter(Var::is_data);
            match var {
                Some(Var::Value(_)) if !c.iterating => {
                    c.problem(pointer, "$value exists only inside a for_each");
                }
                Some(Var::Parent(_)) if !c.split => {
                    c.problem(pointer, "$parent exists only with [record] split");
                }
                Some(Var::TurnField(_)) if !c.in_turn => {
                    c.problem(pointer, "$turn/... exists only in the templates of rules");
                }
                Some(_) => {}
                None => c.problem(
                    pointer,
                    format!("for_each names a JSON pointer (\"/steps\"), $value/..., $parent/... or $turn/..., not {text:?}"),
                ),
            }
            var.unwrap_or(Var::Field(String::new()))
        };
        let over = match each {
            Value::Object(lists) => Over::Zip(
                lists
                    .iter()
                    .map(|(name, v)| {
                        let at = format!("{at}/for_each/{}", escape_pointer(name));
                        (name.clone(), var(self, &at, v.as_str().unwrap_or_default()))
                    })
                    .collect(),
            ),
            other => Over::One(var(
                self,
                &format!("{at}/for_each"),
                other.as_str().unwrap_or_default(),
            )),
        };
        let usage = match &over {
            Over::One(var) => {
                let usage = Arc::new(Usage::default());
                self.tracked.push(Tracked {
                    at: format!("{at}/for_each"),
                    what: var.written(),
                    usage: Arc::clone(&usage),
                });
                Some(usage)
            }
            Over::Zip(_) => None,
        };
        Iteration {
            over,
            skip_empty,
            keep_if: None,
            skip_if: None,
            usage,
        }
    }

    /// Compiles a JSON value built from templates.
    fn value(&mut self, at: &str, value: &Value, groups: &[String]) -> ValueTemplate {
        match value {
            Value::String(text) => ValueTemplate::Text(self.template(at, text, groups)),
            Value::Array(items) => ValueTemplate::List(
                items
                    .iter()
                    .enumerate()
                    .map(|(i, v)| self.value(&format!("{at}/{i}"), v, groups))
                    .collect(),
            ),
            Value::Object(members) => {
                let each = self.for_each_of(at, members, groups);
                let was = self.iterating;
                self.iterating |= each.is_some();
                let body = ValueTemplate::Object(
                    members
                        .iter()
                        .filter(|(k, _)| each.is_none() || !ITERATION_KEYS.contains(&k.as_str()))
                        .map(|(k, v)| {
                            let at = format!("{at}/{}", escape_pointer(k));
                            (k.clone(), self.value(&at, v, groups))
                        })
                        .collect(),
                );
                self.iterating = was;
                match each {
                    Some(each) => ValueTemplate::Each(Box::new(each), Box::new(body)),
                    None => body,
                }
            }
            constant => ValueTemplate::Constant(constant.clone()),
        }
    }

    fn optional(
        &mut self,
        step: &Map<String, Value>,
        at: &str,
        key: &str,
        groups: &[String],
    ) -> Option<Template> {
        let text = step.get(key)?.as_str()?;
        Some(self.template(&format!("{at}/{key}"), text, groups))
    }

    fn required(
        &mut self,
        step: &Map<String, Value>,
        at: &str,
        key: &str,
        groups: &[String],
    ) -> Template {
        self.optional(step, at, key, groups).unwrap_or_default()
    }

    fn rule(&mut self, index: usize, rule: &RuleSpec, record_groups: &[String]) -> Rule {
        let at = format!("/rule/{index}");
        let regex = rule
            .pattern
            .as_deref()
            .and_then(|p| self.regex(&format!("{at}/match"), p));
        if rule.each && rule.last {
            self.problem(
                &format!("{at}/last"),
                "`each` and `last` exclude each other: every match, or the last one",
            );
        }
        if rule.each && rule.pattern.is_none() {
            self.problem(
                &format!("{at}/each"),
                "`each` repeats the rule per match, so the rule needs a `match` pattern",
            );
        }
        let mut groups: Vec<String> = regex
            .as_ref()
            .map(|r| r.capture_names().flatten().map(str::to_owned).collect())
            .unwrap_or_default();
        groups.extend(record_groups.iter().cloned());
        let strings = |v: &Option<Value>| -> Option<Vec<String>> {
            v.as_ref().map(|v| match v {
                Value::Array(items) => items
                    .iter()
                    .filter_map(|s| s.as_str().map(str::to_owned))
                    .collect(),
                other => other.as_str().map(str::to_owned).into_iter().collect(),
            })
        };
        let positions = |v: &Option<Value>| -> Option<Vec<i64>> {
            v.as_ref().map(|v| match v {
                Value::Array(items) => items.iter().filter_map(Value::as_i64).collect(),
                other => other.as_i64().into_iter().collect(),
            })
        };
        let turns = positions(&rule.turn);
        let regex_groups = groups.len() - record_groups.len();
        let used_before = self.used.len();
        self.in_turn = true;
        let emit = rule
            .emit
            .iter()
            .flatten()
            .enumerate()
            .filter_map(|(j, step)| self.emit(&format!("{at}/emit/{j}"), step, &groups))
            .collect();
        let when = rule
            .when
            .as_ref()
            .map(|w| self.template(&format!("{at}/when"), w, &groups));
        let reject = rule
            .reject
            .as_ref()
            .map(|r| self.template(&format!("{at}/reject"), r, &groups));
        self.in_turn = false;
        match (rule.emit.is_some(), reject.is_some()) {
            (true, true) => self.problem(
                &format!("{at}/reject"),
                "a rule gives `emit` (its steps) or `reject` (why its record is rejected), not both",
            ),
            (false, false) => self.problem(
                &at,
                "a rule needs `emit` (its steps; `[]` drops the turn) or `reject` (why a record \
                 with such a turn is rejected)",
            ),
            _ => {}
        }
        let uses_groups = self.used[used_before..]
            .iter()
            .any(|name| groups[..regex_groups].contains(name));
        Rule {
            uses_groups,
            name: rule.name.clone().unwrap_or_else(|| format!("rule {index}")),
            roles: strings(&rule.role),
            turns,
            members: positions(&rule.member),
            regex,
            each: rule.each,
            last: rule.last,
            emit,
            when,
            reject,
        }
    }

    /// A step of `emit`, or a group of `steps`, with its `for_each` if it has one.
    fn emit(&mut self, at: &str, step: &Map<String, Value>, groups: &[String]) -> Option<Emit> {
        let each = self.for_each_of(at, step, groups);
        let was = self.iterating;
        self.iterating |= each.is_some();
        let body = match step.get("steps") {
            Some(Value::Array(steps)) => Some(Body::Steps(
                steps
                    .iter()
                    .enumerate()
                    .filter_map(|(j, s)| {
                        self.emit(&format!("{at}/steps/{j}"), s.as_object()?, groups)
                    })
                    .collect(),
            )),
            _ => self.step(at, step, groups).map(Body::Step),
        };
        self.iterating = was;
        Some(Emit { each, body: body? })
    }

    fn step(
        &mut self,
        at: &str,
        step: &Map<String, Value>,
        groups: &[String],
    ) -> Option<StepTemplate> {
        let class = step
            .get("class")
            .and_then(Value::as_str)
            .unwrap_or_default();
        Some(match class {
            "text_observation" => StepTemplate::Text {
                source: source(step),
                content: self.required(step, at, "content", groups),
                name: self.optional(step, at, "name", groups),
            },
            "image_observation" => StepTemplate::Image {
                content: self.required(step, at, "content", groups),
                source: source(step),
                annotations: step
                    .get("annotations")
                    .map(|a| self.value(&format!("{at}/annotations"), a, groups)),
            },
            "web_observation" => StepTemplate::Web {
                html: self.optional(step, at, "html", groups),
                axtree: self.optional(step, at, "axtree", groups),
                url: self.optional(step, at, "url", groups),
                image: self.optional(step, at, "image", groups),
                viewport_size: step
                    .get("viewport_size")
                    .map(|v| self.value(&format!("{at}/viewport_size"), v, groups)),
            },
            "code_action" => StepTemplate::Code {
                language: self.required(step, at, "language", groups),
                content: self.required(step, at, "content", groups),
                description: self.optional(step, at, "description", groups),
            },
            "api_action" => StepTemplate::Api {
                function: self.required(step, at, "function", groups),
                kwargs: self.kwargs(step, at, groups),
                description: self.optional(step, at, "description", groups),
            },
            "message_action" => StepTemplate::Message {
                content: self.required(step, at, "content", groups),
                description: self.optional(step, at, "description", groups),
            },
            other => {
                self.problem(
                    &format!("{at}/class"),
                    format!(
                        "unknown step class {other:?} (text_observation, image_observation, \
                         web_observation, code_action, api_action, message_action)"
                    ),
                );
                return None;
            }
        })
    }

    fn kwargs(&mut self, step: &Map<String, Value>, at: &str, groups: &[String]) -> Kwargs {
        if step.contains_key("args") {
            let syntax = match step.get("args_syntax").and_then(Value::as_str) {
                None => ArgSyntax::default(),
                Some(text) => ArgSyntax::parse(text).unwrap_or_else(|e| {
                    self.problem(&format!("{at}/args_syntax"), e);
                    ArgSyntax::default()
                }),
            };
            return Kwargs::Parsed {
                from: self.required(step, at, "args", groups),
                syntax,
            };
        }
        let optional: Vec<String> = match step.get("optional") {
            Some(Value::Array(names)) => names
                .iter()
                .filter_map(|n| n.as_str().map(str::to_owned))
                .collect(),
            _ => Vec::new(),
        };
        if let Some(Value::String(text)) = step.get("kwargs") {
            if !optional.is_empty() {
                self.problem(
                    &format!("{at}/optional"),
                    "`optional` names arguments of a `kwargs` table, not of one template",
                );
            }
            let whole = self.template(&format!("{at}/kwargs"), text, groups);
            return Kwargs::Whole(ValueTemplate::Text(whole));
        }
        let Some(Value::Object(fields)) = step.get("kwargs") else {
            if !optional.is_empty() {
                self.problem(
                    &format!("{at}/optional"),
                    "`optional` names arguments of `kwargs`",
                );
            }
            return Kwargs::Fields {
                fields: Vec::new(),
                optional,
            };
        };
        for (i, name) in optional.iter().enumerate() {
            if !fields.contains_key(name) {
                self.problem(
                    &format!("{at}/optional/{i}"),
                    format!("{name:?} is not an argument of this step's `kwargs`"),
                );
            }
        }
        let fields = fields
            .iter()
            .map(|(k, v)| {
                let at = format!("{at}/kwargs/{}", escape_pointer(k));
                (k.clone(), self.value(&at, v, groups))
            })
            .collect();
        Kwargs::Fields { fields, optional }
    }
}

/// An observation's `source` (user when not given).
fn source(step: &Map<String, Value>) -> Source {
    match step.get("source").and_then(Value::as_str) {
        Some("environment") => Source::Environment,
        Some("agent") => Source::Agent,
        _ => Source::User,
    }
}
