package voltmcp.tools

deny contains "friday freeze" if {
	input.surface == "serve"
