# Package voltmcp.redact says what is secret. Its decision lists key-name
# patterns (a value under a matching key is redacted), value patterns (RE2
# regular expressions; when a pattern has a group named "secret", only that
# group is replaced) and the env var names whose values are secret. Go
# compiles the decision once per load and applies it to audit lines,
# errors, DTOs and logs; Rego never runs per byte of output.
#
# Extension: `secret_key contains pattern`, `secret_pattern contains
# pattern` and `secret_env contains name` (user and project files: more
# redaction is always stricter).
package voltmcp.redact

decision := {
	"keys": sort({k | some k in data.voltmcp.redact.secret_key}),
	"patterns": sort({p | some p in data.voltmcp.redact.secret_pattern}),
	"env_names": sort({n | some n in data.voltmcp.redact.secret_env}),
}

# Key names (case-insensitive, matched anywhere in the key).
secret_key contains k if some k in [
	`token`,
	`secret`,
	`passw(?:or)?d`,
	`api[_-]?key`,
	`access[_-]?key`,
	`private[_-]?key`,
	`authorization`,
	`cookie`,
	`credential`,
	`session[_-]?id`,
]

# Value patterns. Starting with a literal (or needing one and not spanning
# lines) lets Go skip text quickly; see docs/policies.md.
secret_pattern contains p if some p in [
	# Authorization headers and bare bearer/basic credentials.
	`(?i)\b(?:bearer|basic|token)[ \t]+(?P<secret>[A-Za-z0-9._~+/=-]{8,})`,
	# URLs with userinfo: https://user:pass@host, https://token@host.
	`://(?P<secret>[^/\s@"'<>]+)@`,
	# Token-like query parameters.
	`(?i)[?&](?:access_token|id_token|refresh_token|token|api_key|apikey|key|secret|client_secret|password|passwd|sig|signature|auth|code|x-amz-signature|x-amz-credential)=(?P<secret>[^&\s#"'<>]+)`,
	# GitHub tokens.
	`gh[pousr]_[A-Za-z0-9]{36,}`,
	`github_pat_[A-Za-z0-9_]{22,}`,
	# AWS access key ids.
	`AKIA[A-Z0-9]{16}`,
	`ASIA[A-Z0-9]{16}`,
	# Slack tokens.
	`xox[abposr]-[A-Za-z0-9-]{10,}`,
	# OpenAI, Anthropic and similar "sk-" keys; Stripe keys.
	`sk-[A-Za-z0-9_-]{20,}`,
	`sk_(?:live|test)_[A-Za-z0-9]{16,}`,
	`rk_(?:live|test)_[A-Za-z0-9]{16,}`,
	# Google API keys.
	`AIza[0-9A-Za-z_-]{35}`,
	# Google OAuth access tokens.
	`ya29\.[0-9A-Za-z_-]{20,}`,
	# GitLab, npm, PyPI, Hugging Face, DigitalOcean and Slack app tokens.
	`glpat-[0-9A-Za-z_-]{20,}`,
	`npm_[0-9A-Za-z]{36}`,
	`pypi-[0-9A-Za-z_-]{50,}`,
	`hf_[0-9A-Za-z]{30,}`,
	`dop_v1_[0-9a-f]{64}`,
	`xapp-[0-9A-Za-z-]{20,}`,
	# JSON Web Tokens.
	`eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}`,
	# PEM private keys.
	`-----BEGIN [A-Z ]*PRIVATE KEY-----[\s\S]*?-----END [A-Z ]*PRIVATE KEY-----`,
]

# Every env var the config names (env entries and env allowlists) holds a
# secret value until proven otherwise.
secret_env contains n if {
	some n in input.env_names
	is_string(n)
	n != ""
}
