package voltmcp.tools

deny contains {"msg": "no destructive tools on payments", "rule": "payments_no_destruction"} if {
	input.server.id == "payments"
	input.risk == "destructive"
}
