package voltmcp.remote_test

import data.voltmcp.remote

req(command, caller, server, known) := {"command": command, "caller": caller, "server": server, "server_in_trusted_config": known}

msgs(d) := [r.msg | some r in d.reasons]

test_local_callers_may_do_anything if {
	every c in ["add_mcp_server", "set_mcp_server_env", "complete_mcp_server_auth", "list_mcp_servers", "made_up"] {
		d := remote.decision with input as req(c, "local", "", false)
		d.allow == true
	}
}

test_remote_safe_global_commands if {
	every c in remote.remote_safe_global {
		d := remote.decision with input as req(c, "remote", "", false)
		d.allow == true
		msgs(d) == [sprintf("%s is remote-safe", [c])]
	}
}

test_remote_safe_server_commands_on_trusted_servers if {
	every c in remote.remote_safe_server - {"start_mcp_server_auth"} {
		d := remote.decision with input as req(c, "remote", "github", true)
		d.allow == true
	}
}

test_remote_server_commands_need_trusted_config if {
	d := remote.decision with input as req("connect_mcp_server", "remote", "evil", false)
	d.allow == false
	d.reasons[0].rule == "trusted_server_only"
}

test_remote_server_commands_need_a_server if {
	d := remote.decision with input as req("get_mcp_server", "remote", "", true)
	d.allow == false
	msgs(d) == ["get_mcp_server needs a server"]
}

test_global_command_narrowed_to_unknown_server_is_refused if {
	d := remote.decision with input as req("list_mcp_tools", "remote", "evil", false)
	d.allow == false
}

test_editing_commands_is_never_remote_safe if {
	every c in remote.never_remote {
		d := remote.decision with input as req(c, "remote", "github", true)
		d.allow == false
		d.reasons[0].rule == "never_remote"
	}
}

test_unknown_commands_are_refused_remotely if {
	d := remote.decision with input as req("run_shell", "remote", "", false)
	d.allow == false
	msgs(d) == ["run_shell is not on the remote-safe list"]
}

test_browser_auth_completion_is_local_only if {
	d := remote.decision with input as req("complete_mcp_server_auth", "remote", "github", true)
	d.allow == false
	d.reasons[0].rule == "browser_auth_local_only"
}

test_remote_auth_start_only_device_code if {
	dev := remote.decision with input as object.union(req("start_mcp_server_auth", "remote", "github", true), {"auth_flow": "device"})
	dev.allow == true
	browser := remote.decision with input as object.union(req("start_mcp_server_auth", "remote", "github", true), {"auth_flow": "browser"})
	browser.allow == false
	none := remote.decision with input as req("start_mcp_server_auth", "remote", "github", true)
	none.allow == false
}

test_unknown_caller_is_refused if {
	d := remote.decision with input as req("list_mcp_servers", "phone", "", false)
	d.allow == false
	d.reasons[0].rule == "caller"
}

test_user_deny_applies_to_local_callers_too if {
	d := remote.decision with input as req("list_mcp_servers", "local", "", false) with data.voltmcp.remote.deny as {"maintenance window"}
	d.allow == false
	msgs(d) == ["maintenance window"]
}

test_wrongly_typed_input_is_refused if {
	d := remote.decision with input as {"command": "list_mcp_servers", "caller": "local", "server_in_trusted_config": "yes"}
	d.allow == false
	msgs(d) == ["remote input: server_in_trusted_config must be boolean"]
}
