# An example organization trust policy: the company's own repositories are
# trusted without asking, but never a checkout under /tmp, whatever the
# flags say.
package voltmcp.trust

allow contains {"msg": "projects under /src/acme/ are the company's own", "rule": "acme_checkouts"} if {
	startswith(input.project, "/src/acme/")
}

deny contains {"msg": "projects under /tmp are never trusted", "rule": "no_tmp_projects"} if {
	startswith(input.project, "/tmp/")
}
