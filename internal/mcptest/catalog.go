package mcptest

import (
	"fmt"
	"os"
	"strings"
)

// ModeCatalog (raw) lists CatalogTools tools in the style of a large real
// server (the GitHub MCP server's): a verb and a noun for a name, a
// paragraph of description, an input schema of 3 to 7 described
// properties, and annotations. Each description ends with the service
// named by [EnvService], so that the listings of many servers differ.
// Every call answers "ok". What idle memory and start-up are measured
// with: the cached listings of many such servers.
const ModeCatalog = "catalog"

// CatalogTools is the number of tools of mode catalog.
const CatalogTools = 196

// EnvService names the service the tools of mode catalog describe.
const EnvService = "VOLTMCP_TESTSERVER_SERVICE"

var (
	catalogVerbs = []string{"get", "list", "create", "update", "delete", "search", "add", "remove"}
	catalogNouns = []string{"issue", "pull_request", "comment", "branch", "file", "label", "milestone",
		"release", "workflow_run", "repository", "team", "member", "project", "discussion", "gist",
		"secret", "webhook", "deployment", "environment", "package", "tag", "commit", "review",
		"check_run", "notification"}
)

// catalogTools lists the tools of mode catalog.
func catalogTools() []any {
	service := os.Getenv(EnvService)
	tools := make([]any, 0, CatalogTools)
	for i := range CatalogTools {
		tools = append(tools, catalogTool(service, i))
	}
	return tools
}

// catalogTool is tool i of mode catalog.
func catalogTool(service string, i int) map[string]any {
	verb := catalogVerbs[i%len(catalogVerbs)]
	noun := catalogNouns[(i/len(catalogVerbs))%len(catalogNouns)]
	human := strings.ReplaceAll(noun, "_", " ")
	title := strings.ToUpper(verb[:1]) + verb[1:]
	props := map[string]any{
		"owner": map[string]any{"type": "string", "description": "Owner of the repository: a user or an organization login."},
		"repo":  map[string]any{"type": "string", "description": "Name of the repository, without the owner."},
	}
	required := []any{"owner", "repo"}
	annotations := map[string]any{"title": title + " " + human}
	var what string
	switch verb {
	case "get":
		props[noun+"_id"] = map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number or numeric id of the %s.", human)}
		required = append(required, noun+"_id")
		annotations["readOnlyHint"] = true
		what = fmt.Sprintf("Get the details of one %s, including its author, timestamps, state and links. Returns 404 when the %s does not exist or the token cannot see it.", human, human)
	case "list", "search":
		props["page"] = map[string]any{"type": "integer", "minimum": 1, "default": 1, "description": "Page number of the results to fetch."}
		props["perPage"] = map[string]any{"type": "integer", "minimum": 1, "maximum": 100, "default": 30, "description": "Number of results per page, at most 100."}
		props["sort"] = map[string]any{"type": "string", "enum": []any{"created", "updated", "name"}, "description": "What to sort the results by."}
		props["direction"] = map[string]any{"type": "string", "enum": []any{"asc", "desc"}, "description": "Sort direction."}
		if verb == "search" {
			props["query"] = map[string]any{"type": "string", "description": "Search query, in the search syntax: qualifiers such as is:open, author:NAME or label:NAME, and free text."}
			required = append(required, "query")
		} else {
			props["state"] = map[string]any{"type": "string", "enum": []any{"open", "closed", "all"}, "default": "open", "description": "Only list items in this state."}
		}
		annotations["readOnlyHint"] = true
		what = fmt.Sprintf("%s %ss of a repository, a page at a time. Use the page and perPage parameters to walk through large result sets; results are sorted by creation time unless sort says otherwise.", title, human)
	case "create", "update", "add":
		props["title"] = map[string]any{"type": "string", "maxLength": 256, "description": fmt.Sprintf("Title of the %s.", human)}
		props["body"] = map[string]any{"type": "string", "description": "Body text, in GitHub Flavored Markdown."}
		props["labels"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Labels to set, by name."}
		props["assignees"] = map[string]any{"type": "array", "items": map[string]any{"type": "string"}, "description": "Logins of the users to assign."}
		if verb == "update" {
			props[noun+"_id"] = map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number of the %s to update.", human)}
			required = append(required, noun+"_id")
		} else {
			required = append(required, "title")
		}
		annotations["destructiveHint"] = false
		what = fmt.Sprintf("%s a %s in a repository. Requires write access to the repository. Returns the %s as stored, with its number and URL, which later calls take as %s_id.", title, human, human, noun)
	default: // delete, remove
		props[noun+"_id"] = map[string]any{"type": "integer", "minimum": 1, "description": fmt.Sprintf("Number of the %s to %s.", human, verb)}
		props["reason"] = map[string]any{"type": "string", "description": "Why, recorded in the audit log."}
		required = append(required, noun+"_id")
		annotations["destructiveHint"] = true
		what = fmt.Sprintf("%s a %s. This cannot be undone: ask the user to confirm first. Requires admin access to the repository.", title, human)
	}
	t := rawTool(fmt.Sprintf("%s_%s_%d", verb, noun, i), fmt.Sprintf("%s (service %s)", what, service), map[string]any{
		"type": "object", "properties": props, "required": required, "additionalProperties": false,
	})
	t["annotations"] = annotations
	return t
}
