package voltmcp.trust_test

import data.voltmcp.trust

base := {
	"project": "/src/app",
	"files": [{"path": "/src/app/.mcp.json", "content_hash": "sha256:aaa"}],
	"surface": "serve",
	"default_project_trust": "ask",
	"approve": false,
	"no_approve": false,
	"trusted_projects": [],
}

msgs(d) := [r.msg | some r in d.reasons]

test_ask_is_untrusted_on_every_surface if {
	every s in ["interactive", "serve", "print", "json", "rpc", "daemon", "vet"] {
		d := trust.decision with input as object.union(base, {"surface": s})
		d.trusted == false
		d.needs_trust == false
		msgs(d) == [sprintf(`defaultProjectTrust is "ask" and the %s surface cannot ask; run with --approve to trust it for one run`, [s])]
	}
}

test_unknown_default_behaves_like_ask if {
	d := trust.decision with input as object.union(base, {"default_project_trust": ""})
	d.trusted == false
	startswith(msgs(d)[0], `defaultProjectTrust is "ask"`)
}

test_always_trusts if {
	d := trust.decision with input as object.union(base, {"default_project_trust": "always"})
	d.trusted == true
	msgs(d) == [`defaultProjectTrust is "always"`]
}

test_never_ignores if {
	d := trust.decision with input as object.union(base, {"default_project_trust": "never"})
	d.trusted == false
	msgs(d) == [`defaultProjectTrust is "never"`]
}

test_approve_trusts_for_this_run if {
	d := trust.decision with input as object.union(base, {"approve": true, "default_project_trust": "never"})
	d.trusted == true
	msgs(d) == ["--approve trusts the project for this run"]
}

test_no_approve_wins_over_everything if {
	d := trust.decision with input as object.union(base, {"no_approve": true, "approve": true, "default_project_trust": "always"})
	d.trusted == false
	msgs(d) == ["--no-approve ignores project MCP config"]
	d.reasons[0].rule == "no_approve"
}

test_recorded_trust_with_matching_hashes_trusts if {
	d := trust.decision with input as object.union(base, {"trusted_projects": [{"path": "/src/app/.mcp.json", "content_hash": "sha256:aaa"}]})
	d.trusted == true
	d.needs_trust == false
	msgs(d) == ["trust was recorded for the current content of every project MCP file"]
}

test_recorded_trust_with_changed_hash_does_not_trust if {
	d := trust.decision with input as object.union(base, {"trusted_projects": [{"path": "/src/app/.mcp.json", "content_hash": "sha256:old"}]})
	d.trusted == false
	d.needs_trust == true
	"/src/app/.mcp.json changed since trust was recorded; run 'voltmcp trust' to trust the new content" in msgs(d)
}

test_new_layer_file_needs_trust_again if {
	two := array.concat(base.files, [{"path": "/src/app/.volt/mcp.json", "content_hash": "sha256:bbb"}])
	d := trust.decision with input as object.union(base, {"files": two, "trusted_projects": [{"path": "/src/app/.mcp.json", "content_hash": "sha256:aaa"}]})
	d.trusted == false
	d.needs_trust == true
	"/src/app/.volt/mcp.json is new since trust was recorded; run 'voltmcp trust' to trust the new content" in msgs(d)
}

test_removed_file_needs_trust_again if {
	recorded := [{"path": "/src/app/.mcp.json", "content_hash": "sha256:aaa"}, {"path": "/src/app/policy/team.rego", "content_hash": "sha256:ccc"}]
	d := trust.decision with input as object.union(base, {"trusted_projects": recorded})
	d.trusted == false
	d.needs_trust == true
	"/src/app/policy/team.rego was removed since trust was recorded; run 'voltmcp trust' to trust the project as it is" in msgs(d)
}

test_changed_file_with_approve_is_trusted_but_flagged if {
	d := trust.decision with input as object.union(base, {"approve": true, "trusted_projects": [{"path": "/src/app/.mcp.json", "content_hash": "sha256:old"}]})
	d.trusted == true
	d.needs_trust == true
}

test_record_of_another_project_is_ignored if {
	d := trust.decision with input as object.union(base, {"trusted_projects": [{"path": "/elsewhere/.mcp.json", "content_hash": "sha256:aaa"}]})
	d.trusted == false
	d.needs_trust == false
}

test_no_files_never_matches_a_record if {
	d := trust.decision with input as object.union(base, {"files": [], "trusted_projects": [{"path": "/src/app/.mcp.json", "content_hash": "sha256:aaa"}]})
	d.trusted == false
}

test_user_allow_trusts if {
	d := trust.decision with input as base with data.voltmcp.trust.allow as {"team projects are trusted"}
	d.trusted == true
	msgs(d) == ["team projects are trusted"]
}

test_user_deny_beats_approve_and_allow if {
	d := trust.decision with input as object.union(base, {"approve": true}) with data.voltmcp.trust.allow as {"ok"} with data.voltmcp.trust.deny as {{"msg": "no /tmp projects", "rule": "no_tmp"}}
	d.trusted == false
	msgs(d) == ["no /tmp projects"]
	d.reasons[0].rule == "no_tmp"
}

test_wrongly_typed_input_is_untrusted if {
	d := trust.decision with input as object.union(base, {"approve": "yes", "default_project_trust": "always"})
	d.trusted == false
	msgs(d) == ["trust input: approve must be boolean"]
}

test_missing_optional_fields_are_fine if {
	d := trust.decision with input as {"surface": "serve", "default_project_trust": "always"}
	d.trusted == true
}
