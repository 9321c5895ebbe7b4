package voltmcp.tools_test

import data.voltmcp.tools

base := {
	"server": {"id": "github", "scope": "user", "transport": "stdio", "command": "npx", "args": ["-y", "@modelcontextprotocol/server-github@1.2.3"], "url": "", "approved": true},
	"tool": {"name": "create_issue", "title": "Create issue", "annotations": {"readOnlyHint": false, "destructiveHint": false}},
	"risk": "write",
	"risk_reason": "readOnlyHint false, destructiveHint false",
	"include_tools": [],
	"exclude_tools": [],
	"pin": {"state": "pinned", "change": ""},
	"surface": "serve",
}

unapproved := object.union(base, {"server": {"approved": false}})

with_tool(name) := object.union(base, {"tool": {"name": name}})

msgs(d) := [r.msg | some r in d.reasons]

test_no_globs_exposes_and_allows if {
	d := tools.decision with input as base
	d == {"exposed": true, "allowed": true, "pending": false, "quarantined": false, "reasons": []}
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

test_unapproved_server_is_not_held_by_default if {
	d := tools.decision with input as unapproved
	d.allowed == true
	d.pending == false
	d.quarantined == false
}

test_quarantine_holds_unapproved_server if {
	d := tools.decision with input as unapproved with data.voltmcp.tools.quarantine_new_servers as true
	d.exposed == true
	d.allowed == false
	d.pending == true
	d.quarantined == true
	d.reasons[0].rule == "quarantine"
	contains(d.reasons[0].msg, "voltmcp approve github")
}

test_quarantine_spares_approved_server if {
	d := tools.decision with input as base with data.voltmcp.tools.quarantine_new_servers as true
	d.allowed == true
	d.quarantined == false
}

test_quarantine_off_when_false if {
	d := tools.decision with input as unapproved with data.voltmcp.tools.quarantine_new_servers as false
	d.allowed == true
	d.quarantined == false
}

test_input_without_approval_counts_as_approved if {
	d := tools.decision with input as object.union(base, {"server": object.remove(base.server, ["approved"])}) with data.voltmcp.tools.quarantine_new_servers as true
	d.allowed == true
}

test_quarantine_is_decided_even_for_hidden_tools if {
	# The engine reads "quarantined" on a server's first sight, whatever
	# the globs hide.
	d := tools.decision with input as object.union(unapproved, {"exclude_tools": ["*"]}) with data.voltmcp.tools.quarantine_new_servers as true
	d.exposed == false
	d.quarantined == true
	msgs(d) == ["excluded by excludeTools *"]
}

test_quarantine_with_deny_keeps_both_reasons if {
	d := tools.decision with input as unapproved with data.voltmcp.tools.quarantine_new_servers as true with data.voltmcp.tools.deny as {"no"}
	d.allowed == false
	d.pending == false
	count(d.reasons) == 2
}

test_quarantine_new_servers_must_be_boolean if {
	d := tools.decision with input as base with data.voltmcp.tools.quarantine_new_servers as "yes"
	d.allowed == false
	d.exposed == false
	[r.rule | some r in d.reasons] == ["quarantine_new_servers"]
}

test_server_approved_must_be_boolean if {
	d := tools.decision with input as object.union(base, {"server": {"approved": "yes"}})
	d.allowed == false
	msgs(d) == ["tools input: server.approved must be a boolean"]
}

test_user_allow_lifts_pin_gate_but_not_quarantine if {
	changed := object.union(base, {"pin": {"state": "changed", "change": "escalation"}})
	d := tools.decision with input as changed with data.voltmcp.tools.allow as {"internal servers auto-approve"}
	d.allowed == true
	msgs(d) == ["internal servers auto-approve"]
	q := tools.decision with input as object.union(changed, {"server": {"approved": false}}) with data.voltmcp.tools.allow as {"x"} with data.voltmcp.tools.quarantine_new_servers as true
	q.allowed == false
	q.pending == true
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
