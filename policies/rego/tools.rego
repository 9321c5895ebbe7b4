# Package voltmcp.tools decides whether a tool is exposed (in search,
# describe and listings) and whether a call to it is allowed.
#
# Built-in rules: excludeTools and includeTools globs (Go path.Match
# semantics) decide exposure and exclude wins; an exposed tool is callable,
# except that a tool whose pinned definition changed in a schema-breaking
# way or escalated its risk waits for approval, and, when quarantine of new
# servers is on, the tools of a server that is not approved stay visible as
# pending but cannot be called.
#
# Extension: `deny contains reason` makes a call not allowed (the tool stays
# visible so the agent learns why); `hide contains reason` also removes it
# from search and describe; `allow contains reason` (user files only) lifts
# the pending-approval gate for changed tools. Deny and hide always win.
#
# Quarantine: `quarantine_new_servers` is a boolean rule that the built-in
# bundle leaves undefined, which counts as false. A user or project policy
# turns it on (`quarantine_new_servers if true`, or with conditions such as
# `input.server.scope == "project"`). While it is true, a server whose
# `input.server.approved` is false (first seen while quarantine applied,
# and not approved since with `voltmcp approve SERVER`) has its tools held.
# Any value other than true or false is a policy error and denies.
package voltmcp.tools

import data.voltmcp.lib

decision := {
	"exposed": false,
	"allowed": false,
	"pending": false,
	"quarantined": false,
	"reasons": _input_errors,
} if {
	count(_input_errors) > 0
} else := {
	"exposed": exposed,
	"allowed": allowed,
	"pending": pending,
	"quarantined": _quarantined,
	"reasons": reasons,
}

# A missing name must not look like "no glob matched": check it through a
# rule, since `not is_string(x)` with x undefined is not reliably true.
_name_ok if is_string(input.tool.name)

_input_errors contains {"msg": "tools input: tool.name must be a string", "rule": "input"} if not _name_ok

_input_errors contains {"msg": sprintf("tools input: %s must be a list of strings", [field]), "rule": "input"} if {
	some field in ["include_tools", "exclude_tools"]
	field in object.keys(input)
	not _string_list(input[field])
}

_input_errors contains {"msg": "tools input: server.approved must be a boolean", "rule": "input"} if {
	a := input.server.approved
	not is_boolean(a)
}

# A policy that gives quarantine_new_servers a value other than true or
# false is a mistake; it denies rather than guess.
_input_errors contains {"msg": sprintf("tools policy: quarantine_new_servers must be true or false, not %v", [q]), "rule": "quarantine_new_servers"} if {
	q := data.voltmcp.tools.quarantine_new_servers
	not is_boolean(q)
}

_string_list(x) if is_null(x)

_string_list(x) if {
	is_array(x)
	every e in x {
		is_string(e)
	}
}

_list(field) := input[field] if is_array(input[field])

else := []

_name := input.tool.name

# The first excludeTools glob that matches, like the Go rule reports.
_excluded_by := [g | some g in _list("exclude_tools"); lib.glob_match(g, _name)]

_included if count(_list("include_tools")) == 0

_included if {
	some g in _list("include_tools")
	lib.glob_match(g, _name)
}

hide contains {"msg": concat("", ["excluded by excludeTools ", _excluded_by[0]]), "rule": "exclude_tools"} if {
	count(_excluded_by) > 0
}

hide contains {"msg": "not in includeTools", "rule": "include_tools"} if {
	count(_excluded_by) == 0
	not _included
}

_hide := {r | some r in data.voltmcp.tools.hide}

_deny := {r | some r in data.voltmcp.tools.deny}

_allow := {r | some r in data.voltmcp.tools.allow}

# Changes that need a person to approve them before the tool is called.
_approval_changes := {"schema-breaking", "escalation"}

_gates contains {"msg": sprintf("tool %q changed since it was pinned (%s); approve the change before calling it", [_name, input.pin.change]), "rule": "pin_change"} if {
	input.pin.state == "changed"
	input.pin.change in _approval_changes
}

# A server is approved unless the input says otherwise: inputs written
# before server.approved existed (an old audit log replayed) were never
# held by quarantine.
_server_approved := object.get(input, ["server", "approved"], true)

# _quarantined: quarantine of new servers is on for this input and the
# server is not approved. It is part of the decision, so that the engine
# can record, on a server's first sight, whether quarantine applied to it.
default _quarantined := false

_quarantined if {
	q := data.voltmcp.tools.quarantine_new_servers
	is_boolean(q)
	q
	_server_approved == false
}

_holds contains {"msg": sprintf("server %q is quarantined: it was first seen while new servers are held for review, so its tools are listed as pending and cannot be called until someone approves the server (voltmcp approve %s)", [_server_id, _server_id]), "rule": "quarantine"} if {
	_quarantined
}

_server_id := object.get(input, ["server", "id"], "")

default exposed := false

exposed if {
	_name_ok
	count(_hide) == 0
}

_gates_lifted if count(_gates) == 0

_gates_lifted if count(_allow) > 0

default allowed := false

allowed if {
	exposed
	count(_deny) == 0
	count(_holds) == 0
	_gates_lifted
}

# pending: visible, not denied, and waiting only for an approval.
default pending := false

pending if {
	exposed
	count(_deny) == 0
	not allowed
}

_reasons_of(set) := [lib.reason(r) | some r in set]

reasons := _reasons_of(_hide) if {
	not exposed
} else := array.concat(_reasons_of(_deny), array.concat(_reasons_of(_holds), _reasons_of(_gates))) if {
	not allowed
} else := _reasons_of(_allow) if {
	count(_gates) > 0
} else := []
