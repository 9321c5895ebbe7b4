package voltmcp.trust_example_test

import data.voltmcp.trust

project(path) := {
	"project": path,
	"files": [{"path": concat("", [path, "/.mcp.json"]), "content_hash": "sha256:aaa"}],
	"surface": "serve",
	"default_project_trust": "ask",
	"approve": false,
	"no_approve": false,
	"trusted_projects": [],
}

test_company_checkout_trusted if {
	d := trust.decision with input as project("/src/acme/api")
	d.trusted == true
	d.reasons[0].rule == "acme_checkouts"
}

test_other_projects_still_ask if {
	d := trust.decision with input as project("/src/oss/thing")
	d.trusted == false
}

test_tmp_never_trusted_even_with_approve if {
	d := trust.decision with input as object.union(project("/tmp/x"), {"approve": true})
	d.trusted == false
	d.reasons[0].rule == "no_tmp_projects"
}

test_no_approve_still_wins if {
	d := trust.decision with input as object.union(project("/src/acme/api"), {"no_approve": true})
	d.trusted == false
}
