# Package voltmcp.trust decides whether a project's MCP config layers load.
#
# Built-in order: --no-approve ignores the project; --approve trusts it for
# this run; a recorded trust whose content hashes match every project file
# trusts it; otherwise defaultProjectTrust decides, and "ask" is untrusted
# because no surface prompts yet.
#
# Extension: user files add `deny contains reason if {...}` (never trusted,
# even with --approve) and `allow contains reason if {...}` (trusted unless
# something denies or --no-approve is given). Project files may only deny.
package voltmcp.trust

import data.voltmcp.lib

decision := {
	"trusted": false,
	"needs_trust": false,
	"reasons": _input_errors,
} if {
	count(_input_errors) > 0
} else := {
	"trusted": trusted,
	"needs_trust": needs_trust,
	"reasons": reasons,
}

_input_errors contains {"msg": sprintf("trust input: %s must be %s", [field, kind]), "rule": "input"} if {
	some field, kind in {"surface": "string", "default_project_trust": "string", "approve": "boolean", "no_approve": "boolean", "files": "array", "trusted_projects": "array"}
	not _has_type(field, kind)
}

_has_type(field, "string") if is_string(input[field])

_has_type(field, "boolean") if is_boolean(input[field])

_has_type(field, "array") if is_array(input[field])

_has_type(field, "array") if is_null(input[field])

_has_type(field, kind) if {
	kind != "string"
	not field in object.keys(input)
}

# --no-approve is an explicit refusal for this run; it is a deny so that
# no allow rule can override it.
deny contains {"msg": "--no-approve ignores project MCP config", "rule": "no_approve"} if input.no_approve == true

_deny := {r | some r in data.voltmcp.trust.deny}

_allow := {r | some r in data.voltmcp.trust.allow}

default trusted := false

trusted if {
	count(_deny) == 0
	_granted
}

_granted if _base.trusted

_granted if count(_allow) > 0

# needs_trust: a trust record exists for this project's files, but it no
# longer matches their content (a file changed or a layer file was added).
default needs_trust := false

needs_trust if {
	count(_recorded_paths & _file_paths) > 0
	not _record_matches
}

_files := input.files if is_array(input.files)

else := []

_records := input.trusted_projects if is_array(input.trusted_projects)

else := []

_file_paths := {f.path | some f in _files}

_recorded_paths := {r.path | some r in _records}

_recorded := {[r.path, r.content_hash] | some r in _records}

# A record matches when it covers exactly the files there are, with their
# content: a file it names that is gone (a deleted policy file, say)
# is a change too.
_record_matches if {
	count(_files) > 0
	every f in _files {
		[f.path, f.content_hash] in _recorded
	}
	every p in _recorded_paths {
		p in _file_paths
	}
}

_base := {"trusted": true, "reason": {"msg": "--approve trusts the project for this run", "rule": "approve"}} if {
	input.approve == true
} else := {"trusted": true, "reason": {"msg": "trust was recorded for the current content of every project MCP file", "rule": "recorded_trust"}} if {
	_record_matches
} else := {"trusted": true, "reason": {"msg": `defaultProjectTrust is "always"`, "rule": "default_project_trust_always"}} if {
	input.default_project_trust == "always"
} else := {"trusted": false, "reason": {"msg": `defaultProjectTrust is "never"`, "rule": "default_project_trust_never"}} if {
	input.default_project_trust == "never"
} else := {"trusted": false, "reason": {"msg": sprintf(`defaultProjectTrust is "ask" and the %s surface cannot ask; run with --approve to trust it for one run`, [object.get(input, "surface", "")]), "rule": "default_project_trust_ask"}}

_stale contains {"msg": sprintf("%s changed since trust was recorded; run 'voltmcp trust' to trust the new content", [f.path]), "rule": "changed_since_trust"} if {
	needs_trust
	some f in _files
	f.path in _recorded_paths
	not [f.path, f.content_hash] in _recorded
}

_stale contains {"msg": sprintf("%s is new since trust was recorded; run 'voltmcp trust' to trust the new content", [f.path]), "rule": "changed_since_trust"} if {
	needs_trust
	some f in _files
	not f.path in _recorded_paths
}

_stale contains {"msg": sprintf("%s was removed since trust was recorded; run 'voltmcp trust' to trust the project as it is", [p]), "rule": "changed_since_trust"} if {
	needs_trust
	some p in _recorded_paths
	not p in _file_paths
}

_reasons_of(set) := [lib.reason(r) | some r in set]

reasons := _reasons_of(_deny) if {
	count(_deny) > 0
} else := array.concat(_granted_by, _reasons_of(_stale)) if {
	trusted
} else := array.concat([_base.reason], _reasons_of(_stale))

_granted_by := [_base.reason] if _base.trusted

else := _reasons_of(_allow)
