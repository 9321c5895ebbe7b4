# Package voltmcp.remote decides whether a caller may run an RPC or daemon
# command. Local callers may run every command. Remote callers may run only
# the deliberately allowlisted commands below, and only on servers that
# already exist in trusted config. Adding a stdio server, editing its
# command, args or env, and changing env allowlists are never remote-safe.
#
# Extension: `deny contains reason` (user and project files). There is no
# allow: the remote-safe list is widened only by changing this package.
package voltmcp.remote

import data.voltmcp.lib

decision := {"allow": false, "reasons": _input_errors} if {
	count(_input_errors) > 0
} else := {"allow": _allowed, "reasons": reasons}

_input_errors contains {"msg": sprintf("remote input: %s must be %s", [field, kind]), "rule": "input"} if {
	some field, kind in {"command": "string", "caller": "string", "server": "string", "server_in_trusted_config": "boolean"}
	not _has_type(field, kind)
}

_has_type(field, "string") if is_string(input[field])

_has_type(field, "boolean") if is_boolean(input[field])

_has_type("server", _) if not "server" in object.keys(input)

_has_type("server_in_trusted_config", _) if not "server_in_trusted_config" in object.keys(input)

# Commands that act on the workspace as a whole; with a server argument
# they narrow to that server, which must then be in trusted config.
remote_safe_global := {
	"get_mcp_capabilities",
	"list_mcp_servers",
	"list_mcp_recent_calls",
	"list_mcp_tools",
	"list_mcp_resources",
	"list_mcp_prompts",
	# Watching the event stream changes nothing; the events a remote
	# client gets are scrubbed as its answers are (docs/rpc.md).
	"subscribe_mcp_events",
	"unsubscribe_mcp_events",
}

# Commands on one existing server.
remote_safe_server := {
	"get_mcp_server",
	"connect_mcp_server",
	"disconnect_mcp_server",
	"refresh_mcp_server",
	"set_mcp_server_enabled",
	"get_mcp_tool",
	"read_mcp_resource",
	"get_mcp_prompt",
	"start_mcp_server_auth",
	"poll_mcp_server_auth",
	"cancel_mcp_server_auth",
	"logout_mcp_server",
}

# Commands that can run arbitrary local programs or widen what a server
# sees. Named here so the reason says why; any command not in the lists
# above is refused remotely anyway.
never_remote := {
	"add_mcp_server",
	"update_mcp_server",
	"remove_mcp_server",
	"set_mcp_server_command",
	"set_mcp_server_args",
	"set_mcp_server_env",
	"set_mcp_env_allowlist",
	"import_mcp_config",
}

_deny := {r | some r in data.voltmcp.remote.deny}

_server := object.get(input, "server", "")

_known_server if object.get(input, "server_in_trusted_config", false) == true

default _allowed := false

_allowed if {
	count(_deny) == 0
	count(_refusals) == 0
	input.caller in {"local", "remote"}
}

_refusals contains {"msg": sprintf("caller must be \"local\" or \"remote\", not %q", [input.caller]), "rule": "caller"} if {
	not input.caller in {"local", "remote"}
}

_refusals contains {"msg": sprintf("%s can add or edit commands, args, env or env allowlists and is never remote-safe", [input.command]), "rule": "never_remote"} if {
	input.caller == "remote"
	input.command in never_remote
}

_refusals contains {"msg": sprintf("%s is not on the remote-safe list", [input.command]), "rule": "not_remote_safe"} if {
	input.caller == "remote"
	not input.command in never_remote
	not input.command in remote_safe_global
	not input.command in remote_safe_server
	input.command != "complete_mcp_server_auth"
}

_refusals contains {"msg": "complete_mcp_server_auth handles a browser redirect and runs only for local callers", "rule": "browser_auth_local_only"} if {
	input.caller == "remote"
	input.command == "complete_mcp_server_auth"
}

_refusals contains {"msg": sprintf("%s needs a server", [input.command]), "rule": "server_required"} if {
	input.caller == "remote"
	input.command in remote_safe_server
	_server == ""
}

_refusals contains {"msg": sprintf("server %q is not in trusted config; remote callers may only act on configured servers", [_server]), "rule": "trusted_server_only"} if {
	input.caller == "remote"
	_remote_safe_command
	_server != ""
	not _known_server
}

_refusals contains {"msg": "remote callers may only start device-code auth", "rule": "device_code_only"} if {
	input.caller == "remote"
	input.command == "start_mcp_server_auth"
	object.get(input, "auth_flow", "") != "device"
}

_remote_safe_command if input.command in remote_safe_global

_remote_safe_command if input.command in remote_safe_server

_reasons_of(set) := [lib.reason(r) | some r in set]

reasons := array.concat(_reasons_of(_deny), _reasons_of(_refusals)) if {
	not _allowed
} else := [{"msg": "local callers may run every command", "rule": "local"}] if {
	input.caller == "local"
} else := [{"msg": sprintf("%s is remote-safe", [input.command]), "rule": "remote_safe"}]
