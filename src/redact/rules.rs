//! The built-in rules: a name, what it finds (a secret or personal data), a pattern, the part
//! of a match that is replaced, and the check a match must also pass.
//!
//! The patterns are trajkit's own, written from the published formats of each credential.
//! Order is priority: where two matches overlap, the earlier rule's is kept.

/// What a rule finds.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Kind {
    /// A credential: replaced by `<SECRET:rule>`.
    Secret,
    /// Personal data: replaced by `<PII:rule>`.
    Personal,
}

impl Kind {
    /// The placeholder's tag (`SECRET`, `PII`).
    pub fn tag(self) -> &'static str {
        match self {
            Kind::Secret => "SECRET",
            Kind::Personal => "PII",
        }
    }

    /// The prefix of a scan diagnostic's rule (`secret`, `pii`).
    pub fn prefix(self) -> &'static str {
        match self {
            Kind::Secret => "secret",
            Kind::Personal => "pii",
        }
    }
}

/// What a match must also pass (see [`super::checks`]).
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Check {
    /// Nothing more.
    None,
    /// At least this many bits of entropy per character (a user rule's `entropy`).
    MinEntropy(f64),
    /// An assigned value: entropy, not a placeholder or code.
    SecretValue,
    /// A password in a URL: not a variable or a mask.
    UrlPassword,
    /// Luhn and a card network's prefix.
    PaymentCard,
    /// Country, length and mod-97 checksum.
    Iban,
    /// A routable IPv4 address, not part of a longer dotted number.
    Ipv4,
    /// A global unicast IPv6 address, not part of a longer token.
    Ipv6,
    /// 10 to 15 digits.
    Phone,
    /// Not an example, reserved or machine address.
    Email,
}

/// One built-in rule.
#[derive(Debug, Clone, Copy)]
pub struct Rule {
    /// The rule's name, in placeholders, summaries and diagnostics.
    pub name: &'static str,
    /// A secret or personal data.
    pub kind: Kind,
    /// The pattern (the `regex` crate's syntax). Where it has capture groups, the first one
    /// that took part in the match is what is replaced; otherwise the whole match.
    pub pattern: &'static str,
    /// What a match must also pass.
    pub check: Check,
    /// What the rule finds, for `redact --list-rules` and the docs.
    pub help: &'static str,
    /// A pattern that ends a match: when the text has a match of it after a match of
    /// `pattern`, the whole match is replaced up to its end (a PEM key's `-----END ...-----`
    /// line). The scanner looks for it once per text and position, so that a text of many
    /// starts and no end is still read in linear time (a lazy `.*?END` in `pattern` would make
    /// the regex engine read to the end of the text for every start).
    pub until: Option<&'static str>,
}

const fn secret(
    name: &'static str,
    pattern: &'static str,
    check: Check,
    help: &'static str,
) -> Rule {
    Rule {
        name,
        kind: Kind::Secret,
        pattern,
        check,
        help,
        until: None,
    }
}

const fn personal(
    name: &'static str,
    pattern: &'static str,
    check: Check,
    help: &'static str,
) -> Rule {
    Rule {
        name,
        kind: Kind::Personal,
        pattern,
        check,
        help,
        until: None,
    }
}

impl Rule {
    /// This rule, its matches extended to the end of `pattern`'s next match (see
    /// [`Rule::until`]).
    const fn until(self, pattern: &'static str) -> Rule {
        Rule {
            until: Some(pattern),
            ..self
        }
    }
}

/// Every built-in rule, in priority order.
pub const RULES: &[Rule] = &[
    secret(
        "private_key",
        r"-----BEGIN[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----[A-Za-z0-9+/=\s\\]*",
        Check::None,
        "PEM private keys (RSA, EC, OpenSSH, PKCS#8, PGP), over several lines or with \\n escapes; a key cut short is replaced to the end of its base64",
    )
    .until(r"-----END[ A-Z0-9]*PRIVATE KEY(?: BLOCK)?-----"),
    secret(
        "gcp_service_account_key",
        r#"private_key_id\\?"\s*:\s*\\?"([0-9a-f]{40})"#,
        Check::None,
        "the key id of a Google Cloud service-account JSON key (its private_key is a private_key match)",
    ),
    secret(
        "aws_access_key_id",
        r"(?-u:\b)((?:AKIA|ASIA|ABIA|ACCA)[A-Z2-7]{16})(?-u:\b)",
        Check::None,
        "AWS access key ids (AKIA…, ASIA…)",
    ),
    secret(
        "aws_secret_access_key",
        r#"(?i:aws_?secret_?(?:access_?)?key|secretaccesskey)[\\"']*\s*[:=]\s*[\\"']*([A-Za-z0-9/+]{40})(?-u:\b)"#,
        Check::None,
        "AWS secret access keys, where a key name (aws_secret_access_key, SecretAccessKey) assigns them",
    ),
    secret(
        "gcp_api_key",
        r"(?-u:\b)AIza[0-9A-Za-z_-]{35}",
        Check::None,
        "Google Cloud API keys (AIza…)",
    ),
    secret(
        "azure_storage_key",
        r"AccountKey=([A-Za-z0-9+/]{86}==)",
        Check::None,
        "the account key of an Azure storage connection string",
    ),
    secret(
        "github_token",
        r"(?-u:\b)(?:gh[pousr]_[A-Za-z0-9]{36}|github_pat_[A-Za-z0-9_]{82})(?-u:\b)",
        Check::None,
        "GitHub personal access, OAuth, app and refresh tokens (ghp_…, github_pat_…)",
    ),
    secret(
        "gitlab_token",
        r"(?-u:\b)glpat-[A-Za-z0-9_-]{20,}",
        Check::None,
        "GitLab personal access tokens (glpat-…)",
    ),
    secret(
        "npm_token",
        r"(?-u:\b)npm_[A-Za-z0-9]{36}(?-u:\b)",
        Check::None,
        "npm access tokens (npm_…)",
    ),
    secret(
        "pypi_token",
        r"(?-u:\b)pypi-AgEIcHlwaS5vcmc[A-Za-z0-9_-]{50,}",
        Check::None,
        "PyPI API tokens (pypi-AgEIcHlwaS5vcmc…)",
    ),
    secret(
        "dockerhub_token",
        r"(?-u:\b)dckr_pat_[A-Za-z0-9_-]{27,}",
        Check::None,
        "Docker Hub personal access tokens (dckr_pat_…)",
    ),
    secret(
        "slack_webhook",
        r"https://hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9_/]{20,}",
        Check::None,
        "Slack incoming-webhook URLs",
    ),
    secret(
        "slack_token",
        r"(?-u:\b)xox[abposr]-[0-9A-Za-z-]{10,}",
        Check::None,
        "Slack bot, user, app and refresh tokens (xoxb-…, xoxp-…)",
    ),
    secret(
        "stripe_key",
        r"(?-u:\b)(?:sk|rk)_(?:live|test)_[0-9A-Za-z]{24,}(?-u:\b)",
        Check::None,
        "Stripe secret and restricted keys (sk_live_…, rk_test_…)",
    ),
    secret(
        "anthropic_key",
        r"(?-u:\b)sk-ant-[a-z]{3,6}[0-9]{2}-[A-Za-z0-9_-]{80,}",
        Check::None,
        "Anthropic API keys (sk-ant-api03-…)",
    ),
    secret(
        "openai_key",
        r"(?-u:\b)sk-(?:(?:proj|svcacct|admin)-[A-Za-z0-9_-]{40,}|[A-Za-z0-9]{20}T3BlbkFJ[A-Za-z0-9]{20}|[A-Za-z0-9]{48}(?-u:\b))",
        Check::None,
        "OpenAI API keys (sk-proj-…, sk-svcacct-…, legacy sk-…)",
    ),
    secret(
        "huggingface_token",
        r"(?-u:\b)hf_[A-Za-z]{34}(?-u:\b)",
        Check::None,
        "Hugging Face access tokens (hf_…)",
    ),
    secret(
        "jwt",
        r"(?-u:\b)eyJ[A-Za-z0-9_-]{10,}\.eyJ[A-Za-z0-9_-]{10,}\.[A-Za-z0-9_-]{16,}",
        Check::None,
        "JSON Web Tokens (three base64url parts, header and payload JSON objects)",
    ),
    secret(
        "database_connection_string",
        r#"(?i)(?:(?-u:\b)(?:postgres(?:ql)?|mysql|mariadb|mongodb(?:\+srv)?|rediss?|amqps?|mssql|sqlserver|oracle|cockroachdb)://[^\s:/@"'<>]*:([^\s@/"'<>]+)@|(?:server|data source|host)\s*=[^;"'\n]+;[^"'\n]*?(?-u:\b)(?:password|pwd)\s*=\s*([^;"'\s<>]+))"#,
        Check::UrlPassword,
        "the password of a database URL (postgres://, mysql://, mongodb+srv://, redis://, …) or of a Server=…;Password=… connection string",
    ),
    secret(
        "url_password",
        r#"(?-u:\b)[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@"'<>]*:([^\s@/"'<>]+)@"#,
        Check::UrlPassword,
        "the password of any other URL (scheme://user:password@host)",
    ),
    secret(
        "secret_assignment",
        r#"(?i)(?:password|passwd|secret|token|api[_-]?key|apikey|access[_-]?key|auth[_-]?key|private[_-]?key)[\\"']*\s*[:=]\s*[\\"']*([^\s"'\\,;<>]{8,})"#,
        Check::SecretValue,
        "a value assigned to a password, secret, token or API-key name (password=…, \"api_key\": \"…\"), when it has the entropy of a secret and is no code or placeholder",
    ),
    personal(
        "email",
        r"(?-u:\b)[A-Za-z0-9](?:[A-Za-z0-9._%+-]*[A-Za-z0-9])?@[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?(?:\.[A-Za-z0-9](?:[A-Za-z0-9-]*[A-Za-z0-9])?)*\.[A-Za-z]{2,24}(?-u:\b)",
        Check::Email,
        "e-mail addresses, except example, reserved, no-reply and git@ addresses",
    ),
    personal(
        "payment_card",
        r"(?-u:\b)(?:[0-9][ -]?){12,18}[0-9](?-u:\b)",
        Check::PaymentCard,
        "payment card numbers (13 to 19 digits, spaces or dashes allowed) of a major network that pass the Luhn check",
    ),
    personal(
        "iban",
        r"(?-u:\b)[A-Z]{2}[0-9]{2}(?: ?[A-Z0-9]{4}){2,7}(?: ?[A-Z0-9]{1,3})?(?-u:\b)",
        Check::Iban,
        "IBANs of a known country, of its length, that pass the mod-97 check",
    ),
    personal(
        "phone",
        r"(?:\+[0-9]{1,3}(?:[ .-]?\(?[0-9]{1,4}\)?){2,5}(?-u:\b)|(?-u:\b)(?:\([0-9]{3}\) ?[0-9]{3}-[0-9]{4}|[0-9]{3}-[0-9]{3}-[0-9]{4}|[0-9]{3}\.[0-9]{3}\.[0-9]{4})(?-u:\b))",
        Check::Phone,
        "phone numbers: international (+CC …) or North American ((555) 010-0123, 555-010-0123)",
    ),
    personal(
        "ip_address",
        r"(?-u:\b)(?:[0-9]{1,3}\.){3}[0-9]{1,3}(?-u:\b)",
        Check::Ipv4,
        "public IPv4 addresses (private ones too with --private-ips); never loopback or documentation ranges, nor parts of longer dotted numbers or version pins (==1.2.3.4, v1.2.3.4)",
    ),
    personal(
        "ipv6_address",
        r"[0-9A-Fa-f]{1,4}(?::[0-9A-Fa-f]{0,4}){2,7}",
        Check::Ipv6,
        "global unicast IPv6 addresses (unique-local and link-local ones too with --private-ips); never loopback or documentation ranges, times (12:34:56) or MAC addresses",
    ),
];
