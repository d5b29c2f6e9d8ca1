//! `trajkit redact`: fake secrets of every rule, planted in every kind of field, never reach
//! the output; counts, placeholders, the keyed hash, fail-closed rejection and `--scan`.
//!
//! The fake secrets are built here from pieces and a fixed pseudo-random generator, so that no
//! secret-looking literal sits in the repository.

use serde_json::{json, Value};

use crate::common::{json_lines, trajkit, validate_adp};

/// A fixed pseudo-random sequence of characters from `alphabet`.
struct Chars(u64);

impl Chars {
    fn take(&mut self, alphabet: &str, n: usize) -> String {
        let a: Vec<char> = alphabet.chars().collect();
        (0..n)
            .map(|_| {
                self.0 = self
                    .0
                    .wrapping_mul(6_364_136_223_846_793_005)
                    .wrapping_add(1_442_695_040_888_963_407);
                a[(self.0 >> 33) as usize % a.len()]
            })
            .collect()
    }
}

const UPPER: &str = "ABCDEFGHIJKLMNOPQRSTUVWXYZ";
const LOWER: &str = "abcdefghijklmnopqrstuvwxyz";
const DIGITS: &str = "0123456789";

fn alnum() -> String {
    [UPPER, LOWER, DIGITS].concat()
}

/// Appends the Luhn check digit to the digits of `body`.
fn luhn(body: &str) -> String {
    let digits: Vec<u32> = body.chars().filter_map(|c| c.to_digit(10)).collect();
    let sum: u32 = digits
        .iter()
        .rev()
        .enumerate()
        .map(|(i, &d)| {
            if i % 2 == 0 {
                (d * 2) % 9 + u32::from(d == 9) * 9
            } else {
                d
            }
        })
        .sum();
    format!("{body}{}", (10 - sum % 10) % 10)
}

/// One planted secret: the rule that must find it, the text it sits in, and the secret part
/// that must not appear in any output.
struct Plant {
    rule: &'static str,
    text: String,
    secret: String,
}

fn plants() -> Vec<Plant> {
    let mut r = Chars(24);
    let an = alnum();
    let b64 = [an.as_str(), "+/"].concat();
    let url = [an.as_str(), "_-"].concat();
    let mut p = Vec::new();
    let mut plant = |rule, before: &str, secret: String, after: &str| {
        p.push(Plant {
            rule,
            text: format!("{before}{secret}{after}"),
            secret,
        })
    };
    plant(
        "aws_access_key_id",
        "export AWS_ACCESS_KEY_ID=",
        ["AK", "IA", &r.take("ABCDEFGHJKLMNPQRSTUVWXYZ234567", 16)].concat(),
        "\n",
    );
    plant(
        "aws_secret_access_key",
        "aws_secret_access_key = ",
        r.take(&b64, 40),
        "",
    );
    plant(
        "gcp_api_key",
        "maps key ",
        ["AI", "za", &r.take(&url, 35)].concat(),
        " loaded",
    );
    plant(
        "gcp_service_account_key",
        "{\"type\": \"service_account\", \"private_key_id\": \"",
        r.take("0123456789abcdef", 40),
        "\"}",
    );
    let body: Vec<String> = (0..4).map(|_| r.take(&b64, 64)).collect();
    plant(
        "private_key",
        &["-----BEGIN ", "RSA PRIVATE KEY-----\n"].concat(),
        body.join("\n"),
        &["\n-----END ", "RSA PRIVATE KEY-----\n"].concat(),
    );
    plant(
        "azure_storage_key",
        "DefaultEndpointsProtocol=https;AccountName=acct;AccountKey=",
        [r.take(&b64, 86).as_str(), "=="].concat(),
        ";EndpointSuffix=core.windows.net",
    );
    plant(
        "github_token",
        "git push origin main with ",
        ["gh", "p_", &r.take(&an, 36)].concat(),
        "",
    );
    plant(
        "gitlab_token",
        "PRIVATE-TOKEN header: ",
        ["gl", "pat-", &r.take(&an, 20)].concat(),
        "",
    );
    plant(
        "npm_token",
        "//registry.npmjs.org/:_authToken ",
        ["np", "m_", &r.take(&an, 36)].concat(),
        "",
    );
    plant(
        "pypi_token",
        "twine upload -p ",
        ["py", "pi-AgEIcHlwaS5vcmc", &r.take(&url, 60)].concat(),
        "",
    );
    plant(
        "dockerhub_token",
        "docker login -p ",
        ["dc", "kr_pat_", &r.take(&url, 27)].concat(),
        " -u me",
    );
    plant(
        "slack_token",
        "SLACK_BOT ",
        ["xo", "xb-", &r.take(DIGITS, 12), "-", &r.take(&an, 24)].concat(),
        "",
    );
    plant(
        "slack_webhook",
        "curl -X POST ",
        [
            "https://hooks.",
            "slack.com/services/T",
            &r.take(UPPER, 8),
            "/B",
            &r.take(UPPER, 8),
            "/",
            &r.take(&an, 24),
        ]
        .concat(),
        " -d @msg.json",
    );
    plant(
        "stripe_key",
        "stripe.api_key_live ",
        ["sk", "_live_", &r.take(&an, 24)].concat(),
        "",
    );
    plant(
        "anthropic_key",
        "ANTHROPIC ",
        ["sk-", "ant-api03-", &r.take(&url, 93)].concat(),
        "",
    );
    plant(
        "openai_key",
        "OPENAI ",
        ["sk-", "proj-", &r.take(&url, 48)].concat(),
        "",
    );
    plant(
        "huggingface_token",
        "huggingface-cli login --token-file x ",
        ["h", "f_", &r.take(&[UPPER, LOWER].concat(), 34)].concat(),
        "",
    );
    plant(
        "jwt",
        "Authorization: Bearer ",
        [
            "ey",
            "J",
            &r.take(&url, 20),
            ".ey",
            "J",
            &r.take(&url, 40),
            ".",
            &r.take(&url, 43),
        ]
        .concat(),
        "",
    );
    plant(
        "database_connection_string",
        "DATABASE_URL=postgres://app:",
        r.take(&an, 16),
        "@db.internal.net:5432/main",
    );
    plant(
        "url_password",
        "git clone https://deploy:",
        r.take(&an, 14),
        "@git.corp.net/repo.git",
    );
    plant(
        "secret_assignment",
        "DB_PASSWORD=",
        [r.take(&an, 14).as_str(), "7q"].concat(),
        "\n",
    );
    plant(
        "email",
        "Author: Jane Q <",
        ["jane.q", "@", "mailhost.io"].concat(),
        ">",
    );
    plant(
        "phone",
        "call me on ",
        ["+44 ", "20 7946 ", "0958"].concat(),
        " tomorrow",
    );
    plant(
        "ip_address",
        "ssh root@",
        ["81.", "2.69.", "160"].concat(),
        " -p 22",
    );
    plant(
        "ipv6_address",
        "curl -6 http://[",
        ["2a00:", "1450:", "4009:", "81f::", "200e"].concat(),
        "]/health",
    );
    plant(
        "payment_card",
        "card ",
        luhn(&["4539 ", "1488 0343 646"].concat()),
        " exp 12/29",
    );
    plant(
        "iban",
        "pay to ",
        ["DE", "89 3704 0044 ", "0532 0130 00"].concat(),
        " by Friday",
    );
    p
}

/// The field kinds a plant is put in, one trajectory each.
const KINDS: &[&str] = &[
    "code",
    "kwargs_value",
    "kwargs_key",
    "tool_output",
    "reasoning",
    "description",
    "details",
    "message",
    "json_observation",
];

/// A valid ADP 1.5.0 trajectory with every plant in a field of `kind`.
fn trajectory(kind: &str, plants: &[Plant]) -> Value {
    let mut content = vec![
        json!({"class_": "text_observation", "content": "fix the build", "name": null, "source": "user"}),
    ];
    let mut details = json!({"source": {"format": "test"}});
    let call = |n: usize, kwargs: Value, description: Value| {
        [
            json!({"class_": "api_action", "function": "run", "kwargs": kwargs, "description": description, "tool_call_id": format!("c{n}")}),
            json!({"class_": "text_observation", "content": "ok", "name": null, "source": "environment", "tool_call_id": format!("c{n}")}),
        ]
    };
    match kind {
        "kwargs_key" => {
            let kwargs: serde_json::Map<String, Value> =
                plants.iter().map(|p| (p.text.clone(), json!(1))).collect();
            content.extend(call(0, Value::Object(kwargs), Value::Null));
        }
        "details" => {
            let notes: Vec<&str> = plants.iter().map(|p| p.text.as_str()).collect();
            details["notes"] = json!({"deep": [{"list": notes}]});
        }
        "json_observation" => {
            let values: serde_json::Map<String, Value> = plants
                .iter()
                .enumerate()
                .map(|(i, p)| (format!("v{i}"), json!([p.text])))
                .collect();
            content.push(json!({"class_": "json_observation", "content": values, "name": "env", "source": "environment"}));
        }
        _ => {
            for (n, p) in plants.iter().enumerate() {
                let t = &p.text;
                match kind {
                    "code" => content.extend([
                        json!({"class_": "code_action", "language": "bash", "content": t, "description": null, "tool_call_id": format!("c{n}")}),
                        json!({"class_": "text_observation", "content": "", "name": null, "source": "environment", "tool_call_id": format!("c{n}")}),
                    ]),
                    "kwargs_value" => content.extend(call(n, json!({"env": {"cmd": [t]}}), Value::Null)),
                    "description" => content.extend(call(n, json!({}), json!(t))),
                    "tool_output" => content.extend([
                        json!({"class_": "code_action", "language": "bash", "content": "cat .env", "description": null, "tool_call_id": format!("c{n}")}),
                        json!({"class_": "text_observation", "content": t, "name": "bash", "source": "environment", "tool_call_id": format!("c{n}")}),
                    ]),
                    "reasoning" => content.push(json!({"class_": "message_action", "content": "thinking", "description": null, "reasoning_content": t})),
                    "message" => content.push(json!({"class_": "message_action", "content": t, "description": null})),
                    other => panic!("unknown kind {other}"),
                }
            }
        }
    }
    content.push(json!({"class_": "message_action", "content": "done", "description": null}));
    let mut t = json!({"schema_version": "1.5.0", "id": format!("t-{kind}"), "content": content, "details": details});
    if matches!(kind, "code" | "tool_output") {
        t["available_code_languages"] = json!(["bash"]);
    }
    t
}

fn input(trajectories: &[Value]) -> String {
    trajectories.iter().map(|t| format!("{t}\n")).collect()
}

#[test]
fn every_planted_secret_in_every_field_kind_is_replaced_and_counted() {
    let plants = plants();
    let trajectories: Vec<Value> = KINDS.iter().map(|k| trajectory(k, &plants)).collect();
    assert_eq!(
        validate_adp(&trajectories),
        0,
        "the planted input is valid ADP"
    );
    let dir = tempfile::tempdir().expect("temp dir");
    let summary = dir.path().join("summary.json");
    let out = trajkit()
        .args(["redact", "-", "--summary-json"])
        .arg(&summary)
        .write_stdin(input(&trajectories))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    let text = String::from_utf8_lossy(&out.stdout);
    for p in &plants {
        assert!(!text.contains(&p.secret), "{} leaked:\n{text}", p.rule);
        assert!(!stderr.contains(&p.secret), "{} leaked on stderr", p.rule);
        assert!(
            text.contains(&format!(":{}>", p.rule)),
            "no placeholder of {}",
            p.rule
        );
    }
    let written = json_lines(&out.stdout);
    assert_eq!(written.len(), KINDS.len());
    assert_eq!(
        validate_adp(&written),
        0,
        "the redacted output is valid ADP"
    );
    let s: Value =
        serde_json::from_slice(&std::fs::read(&summary).expect("summary")).expect("json");
    assert_eq!(s["records"], KINDS.len());
    assert_eq!(s["written"], KINDS.len());
    assert_eq!(s["rejected"], 0);
    let counts = rule_counts(&s["rules"]);
    for p in &plants {
        assert!(
            counts.contains(&(p.rule.to_owned(), KINDS.len() as u64)),
            "{} counted once per field kind: {counts:?}",
            p.rule
        );
    }
    assert_eq!(
        counts.len(),
        plants.len(),
        "no other rule fired: {counts:?}"
    );
    assert!(stderr.contains("by rule: private_key 9"), "{stderr}");
}

#[test]
fn a_hash_key_gives_one_secret_one_placeholder() {
    let plants = plants();
    let token = &plants
        .iter()
        .find(|p| p.rule == "github_token")
        .expect("planted")
        .text;
    let t = trajectory("message", &plants[6..7]);
    let mut twice = t.clone();
    twice["id"] = json!("again");
    let run = |key: &str| {
        let out = trajkit()
            .args(["redact", "-", "--hash-key", key])
            .write_stdin(input(&[t.clone(), twice.clone()]))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(0));
        json_lines(&out.stdout)
            .iter()
            .map(|t| t["content"][1]["content"].as_str().unwrap_or("").to_owned())
            .collect::<Vec<String>>()
    };
    let a = run("k1");
    assert!(!a[0].contains(token.as_str()));
    assert_eq!(a[0], a[1], "same secret, same placeholder");
    let tag = a[0].split("<SECRET:github_token:").nth(1).unwrap_or("");
    assert!(
        tag.len() > 8 && tag[..8].bytes().all(|b| b.is_ascii_hexdigit()) && &tag[8..9] == ">",
        "{}",
        a[0]
    );
    assert_ne!(run("k2")[0], a[0], "another key, another tag");
}

#[test]
fn what_cannot_be_rewritten_is_rejected_as_residual_never_written() {
    let plants = plants();
    let mut t = trajectory("message", &plants[..1]);
    let email = &plants
        .iter()
        .find(|p| p.rule == "email")
        .expect("planted")
        .secret;
    t["id"] = json!(format!("run-{email}"));
    let clean = trajectory("code", &plants[1..2]);
    let dir = tempfile::tempdir().expect("temp dir");
    let rejects = dir.path().join("rejects.jsonl");
    let out = trajkit()
        .args(["redact", "-", "--rejects"])
        .arg(&rejects)
        .write_stdin(input(&[t, clean]))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    let written = json_lines(&out.stdout);
    assert_eq!(written.len(), 1);
    assert_eq!(written[0]["id"], "t-code");
    assert!(
        stderr.contains("redaction-residual") && stderr.contains("/id"),
        "{stderr}"
    );
    assert!(
        !stderr.contains(email.as_str()),
        "the diagnostic names no secret"
    );
    assert!(
        stderr.contains("2 trajectories in, 1 written") && stderr.contains("1 rejected"),
        "{stderr}"
    );
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects"));
    assert_eq!(rejected[0]["stage"], "redact");
    assert_eq!(rejected[0]["diagnostics"][0]["rule"], "redaction-residual");
}

#[test]
fn scan_reports_where_and_which_rule_never_the_secret() {
    let plants = plants();
    let trajectories: Vec<Value> = ["tool_output", "kwargs_key"]
        .iter()
        .map(|k| trajectory(k, &plants))
        .collect();
    for report in ["human", "json", "github", "sarif"] {
        let out = trajkit()
            .args(["redact", "--scan", "-", "--report", report])
            .write_stdin(input(&trajectories))
            .output()
            .expect("runs");
        assert_eq!(out.status.code(), Some(1), "findings fail the scan");
        let all = [out.stdout.as_slice(), out.stderr.as_slice()].concat();
        let text = String::from_utf8_lossy(&all);
        for p in &plants {
            assert!(!text.contains(&p.secret), "{report}: {} leaked", p.rule);
            assert!(text.contains(p.rule), "{report}: {} not reported", p.rule);
        }
        if report == "json" {
            let findings = json_lines(&out.stdout);
            assert_eq!(findings.len(), 2 * plants.len());
            assert_eq!(findings[0]["record_id"], "t-tool_output");
            assert_eq!(findings[0]["pointer"], "/content/2/content");
            assert_eq!(findings[0]["rule"], "secret:aws_access_key_id");
        }
    }
    let clean = trajkit()
        .args(["redact", "--scan", "-"])
        .write_stdin(input(&[trajectory("message", &[])]))
        .output()
        .expect("runs");
    assert_eq!(clean.status.code(), Some(0));
}

/// Every string and member name of `v`, at any depth.
fn strings(v: &Value, out: &mut Vec<String>) {
    match v {
        Value::String(s) => out.push(s.clone()),
        Value::Array(items) => items.iter().for_each(|i| strings(i, out)),
        Value::Object(map) => {
            for (k, v) in map {
                out.push(k.clone());
                strings(v, out);
            }
        }
        _ => {}
    }
}

/// The inputs of the pipeline test, by format: every plant in every field a format has, one
/// plant per string.
fn planted_inputs(dir: &std::path::Path, plants: &[Plant]) -> Vec<(&'static str, String)> {
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).expect("write input");
        name.to_owned()
    };
    let mut adp: Vec<Value> = KINDS.iter().map(|k| trajectory(k, plants)).collect();
    // Rejected by redaction (a secret in the id, which is never rewritten) and at convert (not
    // ADP): the rejects file must not show their secrets either.
    let mut in_id = trajectory("message", &plants[6..7]);
    in_id["id"] = json!(format!("run {}", plants[6].secret));
    adp.push(in_id);
    adp.push(json!({"id": "not-adp", "details": {"note": plants[0].text}}));
    let openai: String = plants
        .iter()
        .enumerate()
        .map(|(n, p)| {
            let t = &p.text;
            let args = json!({"cmd": t, t.as_str(): 1}).to_string();
            let chat = json!({
                "id": format!("chat-{n}"),
                "messages": [
                    {"role": "system", "content": t},
                    {"role": "user", "content": t},
                    {"role": "assistant", "content": t, "reasoning_content": t, "tool_calls": [
                        {"id": "call_1", "type": "function", "function": {"name": "run", "arguments": args}}
                    ]},
                    {"role": "tool", "tool_call_id": "call_1", "content": t},
                    {"role": "assistant", "content": t}
                ],
                "tools": [{"type": "function", "function": {"name": "run", "description": t,
                    "parameters": {"type": "object", "properties": {"cmd": {"type": "string"}}}}}]
            });
            format!("{chat}\n")
        })
        .collect();
    let sharegpt: Vec<Value> = plants
        .iter()
        .enumerate()
        .map(|(n, p)| {
            let t = &p.text;
            let call = json!({"name": "run", "arguments": {"cmd": t}}).to_string();
            json!({"id": format!("sg-{n}"), "system": t, "conversations": [
                {"from": "human", "value": t},
                {"from": "function_call", "value": call},
                {"from": "observation", "value": t},
                {"from": "gpt", "value": t}
            ]})
        })
        .collect();
    let session = "5a1d0c2e-0000-4000-8000-00000000000a";
    let line = |n: usize, kind: &str, message: Value| {
        let parent = if n == 0 {
            Value::Null
        } else {
            json!(format!("u{}", n - 1))
        };
        format!(
            "{}\n",
            json!({"sessionId": session, "cwd": "/home/dev/app", "version": "2.0.61",
                "uuid": format!("u{n}"), "parentUuid": parent, "isSidechain": false,
                "type": kind, "timestamp": format!("2026-03-06T09:{:02}:00Z", n % 60),
                "message": message})
        )
    };
    let mut claude = String::new();
    let mut n = 0;
    for (i, p) in plants.iter().enumerate() {
        let t = &p.text;
        let id = format!("toolu_{i}");
        for (kind, message) in [
            ("user", json!({"role": "user", "content": t})),
            (
                "assistant",
                json!({"id": format!("m{i}"), "role": "assistant", "content": [
                {"type": "thinking", "thinking": t, "signature": "s"}]}),
            ),
            (
                "assistant",
                json!({"id": format!("m{i}"), "role": "assistant", "content": [
                {"type": "tool_use", "id": id, "name": "Bash", "input": {"command": t, "description": "run it"}}]}),
            ),
            (
                "user",
                json!({"role": "user", "content": [
                {"type": "tool_result", "tool_use_id": id, "content": t}]}),
            ),
            (
                "assistant",
                json!({"id": format!("n{i}"), "role": "assistant", "content": [
                {"type": "text", "text": t}]}),
            ),
        ] {
            claude.push_str(&line(n, kind, message));
            n += 1;
        }
    }
    vec![
        ("adp", write("planted.jsonl", input(&adp))),
        ("openai", write("chats.jsonl", openai)),
        (
            "sharegpt",
            write("conversations.json", Value::Array(sharegpt).to_string()),
        ),
        ("claude-code", write(&format!("{session}.jsonl"), claude)),
    ]
}

/// Every file under `dir` as text: Parquet files also decoded row by row (their pages are
/// compressed), so that what they hold can be searched.
fn output_texts(dir: &std::path::Path) -> Vec<(String, String)> {
    use parquet::file::reader::{FileReader, SerializedFileReader};
    let mut out = Vec::new();
    for (rel, bytes) in crate::common::tree(dir) {
        let path = dir.join(&rel);
        let mut text = String::from_utf8_lossy(&bytes).into_owned();
        if path.extension().is_some_and(|e| e == "parquet") {
            let file = std::fs::File::open(&path).expect("open");
            let reader = SerializedFileReader::new(file).expect("a Parquet file");
            let rows = reader.get_row_iter(None).expect("rows");
            let mut n = 0;
            for row in rows {
                text.push_str(&row.expect("row").to_string());
                n += 1;
            }
            assert!(n > 0, "{} has rows", path.display());
        }
        out.push((path.display().to_string(), text));
    }
    out
}

#[test]
fn a_pipeline_with_redact_leaks_no_planted_secret_into_any_output() {
    let plants = plants();
    let tmp = tempfile::tempdir().expect("temp dir");
    let inputs = planted_inputs(tmp.path(), &plants);
    let templates =
        std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/templates");
    let mut pipeline = String::new();
    for (format, path) in &inputs {
        pipeline.push_str(&format!(
            "[[input]]\npath = \"{path}\"\nformat = \"{format}\"\n\n"
        ));
    }
    pipeline
        .push_str("[validate]\nrejects = \"rejects.jsonl\"\nmax_reject_rate = 1.0\n\n[redact]\n\n");
    for to in ["adp", "parquet", "openai", "hf", "sharegpt"] {
        pipeline.push_str(&format!(
            "[[export]]\nto = \"{to}\"\noutput = \"out/{to}\"\n\n"
        ));
    }
    pipeline.push_str(&format!(
        "[[export]]\nto = \"tokens\"\noutput = \"out/tokens\"\nchat_template = \"{}\"\ntokenizer = \"{}\"\n",
        templates.join("chatml_tools.jinja").display(),
        templates.join("words.tokenizer.json").display()
    ));
    let file = tmp.path().join("pipeline.toml");
    std::fs::write(&file, &pipeline).expect("write pipeline");
    let out = trajkit().arg("run").arg(&file).output().expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(0), "{stderr}");
    for p in &plants {
        assert!(!stderr.contains(&p.secret), "{} leaked on stderr", p.rule);
    }
    // What each rule must have replaced: every occurrence in the converted trajectories.
    let mut planted: Vec<(&str, u64)> = plants.iter().map(|p| (p.rule, 0)).collect();
    for (format, path) in &inputs {
        let converted = trajkit()
            .args(["convert", "-q", "--from", format])
            .arg(tmp.path().join(path))
            .output()
            .expect("converts");
        let mut all = Vec::new();
        for t in json_lines(&converted.stdout) {
            if t["id"] != json!(format!("run {}", plants[6].secret)) {
                strings(&t, &mut all);
            }
        }
        for (p, (_, n)) in plants.iter().zip(&mut planted) {
            let found: usize = all.iter().map(|s| s.matches(&p.secret).count()).sum();
            assert!(
                found > 0 || *format == "adp",
                "{format}: {} not converted",
                p.rule
            );
            *n += found as u64;
        }
    }
    // No planted secret in any byte of any output: shards, manifests, cards, run.json, rejects.
    let mut texts = output_texts(&tmp.path().join("out"));
    let rejects = tmp.path().join("rejects.jsonl");
    texts.push((
        "rejects.jsonl".into(),
        std::fs::read_to_string(&rejects).expect("rejects written"),
    ));
    assert!(texts.len() > 12, "{texts:?}");
    for (path, text) in &texts {
        for p in &plants {
            assert!(!text.contains(&p.secret), "{}: {} leaked", path, p.rule);
        }
    }
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects"));
    let stages: Vec<&str> = rejected
        .iter()
        .filter_map(|r| r["stage"].as_str())
        .collect();
    assert!(
        stages.contains(&"redact") && stages.contains(&"convert"),
        "{stages:?}"
    );
    // The counts: in run.json, in every manifest and card, and the accounting of every stage.
    let run: Value = serde_json::from_str(
        &std::fs::read_to_string(tmp.path().join("out/adp/run.json")).expect("run.json"),
    )
    .expect("json");
    let redaction = &run["summary"]["redaction"];
    let counted = rule_counts(&redaction["rules"]);
    let expected: Vec<(String, u64)> = planted.iter().map(|(r, n)| ((*r).to_owned(), *n)).collect();
    let mut sorted = counted.clone();
    sorted.sort();
    let mut want = expected.clone();
    want.sort();
    assert_eq!(sorted, want, "replacements per rule");
    assert_eq!(redaction["rejected"], 1, "{redaction}");
    for stage in run["summary"]["stages"].as_array().expect("stages") {
        let n = |k: &str| stage[k].as_u64().unwrap_or(u64::MAX);
        assert_eq!(
            n("in"),
            n("written") + n("filtered") + n("rejected"),
            "{stage}"
        );
    }
    for to in ["adp", "parquet", "openai", "hf", "sharegpt", "tokens"] {
        let dir = tmp.path().join("out").join(to);
        let m: Value =
            serde_json::from_slice(&std::fs::read(dir.join("manifest.json")).expect("manifest"))
                .expect("json");
        assert_eq!(&m["counts"]["redaction"], redaction, "{to}");
        let card = std::fs::read_to_string(dir.join("README.md")).expect("card");
        assert!(card.contains("## Redaction"), "{to}: {card}");
    }
    let written = json_lines(
        &std::fs::read(tmp.path().join("out/adp/data/train-00000-of-00001.jsonl"))
            .expect("adp shard"),
    );
    assert_eq!(
        validate_adp(&written),
        0,
        "redacted trajectories are valid ADP"
    );
    if let Some(python) = crate::interop::python() {
        let dirs: Vec<std::path::PathBuf> = ["adp", "parquet", "openai", "hf", "sharegpt"]
            .iter()
            .map(|to| tmp.path().join("out").join(to))
            .collect();
        crate::interop::check(&python, &dirs, tmp.path());
    }
}

#[test]
fn export_redact_leaks_nothing_and_counts_in_its_manifest() {
    let plants = plants();
    let mut trajectories: Vec<Value> = KINDS.iter().map(|k| trajectory(k, &plants)).collect();
    let mut in_id = trajectory("message", &plants[6..7]);
    in_id["id"] = json!(format!("run {}", plants[6].secret));
    trajectories.push(in_id);
    let tmp = tempfile::tempdir().expect("temp dir");
    let rejects = tmp.path().join("rejects.jsonl");
    let out = trajkit()
        .args(["export", "-", "--to", "hf", "--redact", "-o"])
        .arg(tmp.path().join("hf"))
        .arg("--rejects")
        .arg(&rejects)
        .write_stdin(input(&trajectories))
        .output()
        .expect("runs");
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "one rejected: {stderr}");
    assert!(stderr.contains("export: redaction: "), "{stderr}");
    let mut texts = output_texts(&tmp.path().join("hf"));
    texts.push(("stderr".into(), stderr.into_owned()));
    texts.push((
        "rejects".into(),
        std::fs::read_to_string(&rejects).expect("rejects"),
    ));
    for (path, text) in &texts {
        for p in &plants {
            assert!(!text.contains(&p.secret), "{path}: {} leaked", p.rule);
        }
    }
    let m: Value = serde_json::from_slice(
        &std::fs::read(tmp.path().join("hf/manifest.json")).expect("manifest"),
    )
    .expect("json");
    let c = &m["counts"];
    assert_eq!(c["in"], KINDS.len() + 1);
    assert_eq!(c["redaction"]["rejected"], 1);
    assert_eq!(c["redaction"]["written"], KINDS.len());
    for p in &plants {
        let count = c["redaction"]["rules"]
            .as_array()
            .into_iter()
            .flatten()
            .find(|r| r["rule"] == p.rule)
            .map(|r| r["count"].clone());
        assert_eq!(count, Some(json!(KINDS.len())), "{}", p.rule);
    }
    let rejected = json_lines(&std::fs::read(&rejects).expect("rejects"));
    assert_eq!(rejected[0]["stage"], "redact");
    let help = trajkit()
        .args(["export", "-", "--to", "hf", "--private-ips", "-o"])
        .arg(tmp.path().join("x"))
        .output()
        .expect("runs");
    assert_eq!(help.status.code(), Some(2), "--private-ips needs --redact");
}

#[test]
fn a_redact_table_is_checked_like_every_table() {
    let tmp = tempfile::tempdir().expect("temp dir");
    let file = tmp.path().join("p.toml");
    let check = |redact: &str| {
        std::fs::write(
            &file,
            format!(
                "[[input]]\npath = \"in.jsonl\"\n\n[redact]\n{redact}\n\n[[export]]\nto = \"adp\"\noutput = \"out\"\n"
            ),
        )
        .expect("write");
        let out = trajkit()
            .args(["run", "--check"])
            .arg(&file)
            .env_remove("TRAJKIT_REDACT_KEY")
            .env_remove("NO_SUCH_KEY_VAR")
            .output()
            .expect("runs");
        (
            out.status.code(),
            String::from_utf8_lossy(&out.stderr).into_owned(),
        )
    };
    assert_eq!(check("private_ips = true").0, Some(0));
    let (code, err) = check("private_ip = true");
    assert_eq!(code, Some(2), "{err}");
    assert!(
        err.contains("p.toml:5") && err.contains("private_ip"),
        "{err}"
    );
    let (code, err) = check("hash_key_env = \"NO_SUCH_KEY_VAR\"");
    assert_eq!(code, Some(2), "{err}");
    assert!(err.contains("NO_SUCH_KEY_VAR is not set"), "{err}");
}

/// The `(rule, count)` pairs of a summary's or manifest's `rules` list.
fn rule_counts(rules: &Value) -> Vec<(String, u64)> {
    rules
        .as_array()
        .expect("rules")
        .iter()
        .map(|r| {
            (
                r["rule"].as_str().unwrap_or("").to_owned(),
                r["count"].as_u64().unwrap_or(0),
            )
        })
        .collect()
}
