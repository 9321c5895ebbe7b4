package voltmcp.tools

allow contains "the project vouches for its own tools" if {
	input.server.scope == "project"
}
