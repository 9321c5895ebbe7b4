package voltmcp.redact_test

import data.voltmcp.redact

matches_some(s) if {
	some p in redact.decision.patterns
	regex.match(p, s)
}

test_decision_shape if {
	d := redact.decision with input as {"env_names": ["GITHUB_TOKEN"]}
	count(d.keys) > 0
	count(d.patterns) > 0
	d.env_names == ["GITHUB_TOKEN"]
}

test_env_names_are_secret if {
	d := redact.decision with input as {"env_names": ["B", "A", "", 7]}
	d.env_names == ["A", "B"]
}

test_no_env_names if {
	d := redact.decision with input as {}
	d.env_names == []
}

test_patterns_catch_canaries if {
	every s in [
		"Authorization: Bearer abcdefgh12345678",
		"https://alice:hunter2@example.com/x",
		"https://example.com/cb?code=abc123&state=1",
		"https://example.com/?access_token=zzz",
		"ghp_0123456789abcdefghijklmnopqrstuvwxyz",
		"github_pat_0123456789abcdefghijkl_more",
		"AKIAABCDEFGHIJKLMNOP",
		"xoxb-1234567890-abcdef",
		"sk-ant-0123456789abcdefghijklmn",
		"sk_live_0123456789abcdef",
		"AIza0123456789abcdefghijklmnopqrstuvwxy",
		"eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0In0.c2lnbmF0dXJlMTIz",
		"-----BEGIN RSA PRIVATE KEY-----\nMIIE\n-----END RSA PRIVATE KEY-----",
	] {
		matches_some(s)
	}
}

test_patterns_leave_ordinary_text if {
	every s in [
		"list the open issues in voltmcp/voltmcp",
		"https://example.com/docs?page=2",
		"the skeleton key is in the drawer",
	] {
		not matches_some(s)
	}
}

test_keys_cover_common_names if {
	every k in ["GITHUB_TOKEN", "client_secret", "Password", "x-api-key", "Authorization", "aws_access_key_id"] {
		some p in redact.decision.keys
		regex.match(concat("", ["(?i)", p]), k)
	}
}

test_user_additions_extend if {
	d := redact.decision with data.voltmcp.redact.secret_pattern as {`acme_[0-9]+`}
	d.patterns == [`acme_[0-9]+`]
}
