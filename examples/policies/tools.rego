# An example organization policy for voltmcp's tools decision.
#
# Load it with `voltmcp --policy examples/policies ...` or list the directory
# under "policies" in a user config layer. Test it with
# `voltmcp policy test examples/policies`.
package voltmcp.tools

# The one server allowed to run destructive tools.
ops_server := "ops-admin"

# Rule 1: destructive tools (and tools of unknown risk that say they are
# destructive) run only on the allowlisted server.
deny contains {"msg": sprintf("destructive tool %q is only allowed on %q", [input.tool.name, ops_server]), "rule": "destructive_outside_ops"} if {
	input.risk == "destructive"
	input.server.id != ops_server
}

# Rule 2: project servers may only run pinned npx packages: the command is
# npx and some argument is an exact package@x.y.z version.
deny contains {"msg": sprintf("project server %q must run a pinned npx package (name@x.y.z)", [input.server.id]), "rule": "project_pinned_npx"} if {
	input.server.scope == "project"
	input.server.transport == "stdio"
	not pinned_npx
}

pinned_npx if {
	input.server.command == "npx"
	some arg in input.server.args
	regex.match(`^(?:@[a-z0-9][a-z0-9._-]*/)?[a-z0-9][a-z0-9._-]*@[0-9]+\.[0-9]+\.[0-9]+$`, arg)
}

# Rule 3: from the daemon (remote phones, other machines) only read tools
# of the listed servers are visible at all.
daemon_servers := {"github", "linear"}

hide contains {"msg": "only read tools of github and linear are available from the daemon", "rule": "daemon_read_only"} if {
	input.surface == "daemon"
	not daemon_read_tool
}

daemon_read_tool if {
	input.server.id in daemon_servers
	input.risk == "read"
}
