package voltmcp.tools_test

import data.voltmcp.tools

base := {
	"server": {"id": "github", "scope": "user", "transport": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github@1.2.3"], "url": ""},
	"tool": {"name": "create_issue", "title": "Create issue", "annotations": {"readOnlyHint": false, "destructiveHint": false}},
	"risk": "write",
	"risk_reason": "readOnlyHint false, destructiveHint false",
	"include_tools": [],
	"exclude_tools": [],
	"pin": {"state": "pinned", "change": ""},
	"quarantined": false,
	"surface": "serve",
}

with_tool(name) := object.union(base, {"tool": {"name": name}})

msgs(d) := [r.msg | some r in d.reasons]

test_no_globs_exposes_and_allows if {
	d := tools.decision with input as base
	d == {"exposed": true, "allowed": true, "pending": false, "reasons": []}
}

test_include_glob_matches if {
	d := tools.decision with input as object.union(base, {"include_tools": ["list_*", "create_*"]})
	d.exposed == true
	d.allowed == true
}

test_not_in_include if {
	d := tools.decision with input as object.union(base, {"include_tools": ["list_*"]})
	d.exposed == false
	d.allowed == false
	msgs(d) == ["not in includeTools"]
}

test_exclude_wins_over_include if {
	d := tools.decision with input as object.union(base, {"include_tools": ["*"], "exclude_tools": ["delete_*", "create_*"]})
	d.exposed == false
	d.allowed == false
	msgs(d) == ["excluded by excludeTools create_*"]
	d.reasons[0].rule == "exclude_tools"
}

test_first_matching_exclude_is_reported if {
	d := tools.decision with input as object.union(base, {"exclude_tools": ["create_?ssue", "*"]})
	msgs(d) == ["excluded by excludeTools create_?ssue"]
}

test_null_globs_mean_empty if {
	d := tools.decision with input as object.union(base, {"include_tools": null, "exclude_tools": null})
	d.allowed == true
}

test_glob_semantics_follow_path_match if {
	every c in [
		["*", "anything", true],
		["", "", true],
		["", "x", false],
		["a?c", "abc", true],
		["a?c", "ac", false],
		["[a-c]x", "bx", true],
		["[^a-c]x", "dx", true],
		["[^a-c]x", "ax", false],
		["[z-a]", "m", false],
		["\\*", "*", true],
		["\\*", "x", false],
		["{a,b}", "a", false],
		["a[", "a", false],
		["[]a]", "a", false],
		["a\\", "a", false],
		["*/x", "a/x", true],
		["*", "a/b", false],
		["x.y", "xzy", false],
		["(a|b)", "a", false],
	] {
		c[2] == _m(c[0], c[1])
	}
}

_m(p, n) := true if data.voltmcp.lib.glob_match(p, n)

else := false

test_schema_breaking_change_waits_for_approval if {
	d := tools.decision with input as object.union(base, {"pin": {"state": "changed", "change": "schema-breaking"}})
	d.exposed == true
	d.allowed == false
	d.pending == true
	msgs(d) == [`tool "create_issue" changed since it was pinned (schema-breaking); approve the change before calling it`]
}

test_escalation_waits_for_approval if {
	d := tools.decision with input as object.union(base, {"pin": {"state": "changed", "change": "escalation"}})
	d.allowed == false
	d.pending == true
}

test_harmless_changes_stay_allowed if {
	every c in ["cosmetic", "description", "schema-compatible"] {
		d := tools.decision with input as object.union(base, {"pin": {"state": "changed", "change": c}})
		d.allowed == true
	}
}

test_approved_and_new_are_allowed if {
	every s in ["approved", "new", "pinned"] {
		d := tools.decision with input as object.union(base, {"pin": {"state": s, "change": "schema-breaking"}})
		d.allowed == true
	}
}

test_quarantined_server_is_pending if {
	d := tools.decision with input as object.union(base, {"quarantined": true})
	d.exposed == true
	d.allowed == false
	d.pending == true
	d.reasons[0].rule == "quarantine"
}

test_user_allow_lifts_pin_gate_but_not_quarantine if {
	changed := object.union(base, {"pin": {"state": "changed", "change": "escalation"}})
	d := tools.decision with input as changed with data.voltmcp.tools.allow as {"internal servers auto-approve"}
	d.allowed == true
	msgs(d) == ["internal servers auto-approve"]
	q := tools.decision with input as object.union(changed, {"quarantined": true}) with data.voltmcp.tools.allow as {"x"}
	q.allowed == false
}

test_user_deny_keeps_tool_visible if {
	d := tools.decision with input as base with data.voltmcp.tools.deny as {"no writes today"}
	d.exposed == true
	d.allowed == false
	d.pending == false
	msgs(d) == ["no writes today"]
}

test_user_allow_never_beats_deny if {
	changed := object.union(base, {"pin": {"state": "changed", "change": "escalation"}})
	d := tools.decision with input as changed with data.voltmcp.tools.deny as {"no"} with data.voltmcp.tools.allow as {"yes"}
	d.allowed == false
}

test_user_hide_unexposes if {
	d := tools.decision with input as base with data.voltmcp.tools.hide as {"hidden by org"}
	d.exposed == false
	d.allowed == false
	msgs(d) == ["hidden by org"]
}

test_missing_tool_name_denies if {
	d := tools.decision with input as object.remove(base, ["tool"])
	d.allowed == false
	d.exposed == false
	msgs(d) == ["tools input: tool.name must be a string"]
}

test_bad_glob_list_denies if {
	d := tools.decision with input as object.union(base, {"exclude_tools": [1]})
	d.allowed == false
}
