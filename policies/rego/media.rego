# Package voltmcp.media decides whether an image, an audio clip or an
# embedded image or audio blob of a tool's answer may be passed to the
# agent as it is. The gateway asks only about an item it would pass: one
# whose type is on its allow list, whose data starts with that type's
# magic bytes, and which fits the settings.media caps. An item the
# decision does not let through is described to the agent (its type and
# size) instead; so is every item when the decision fails.
#
# Input: server {id, scope}, tool, risk, surface, and item {kind
# ("image", "audio" or "resource"), mime_type (checked against the
# data), bytes (before base64), uri (an embedded resource's, else "")}.
#
# Extension: `deny contains reason` (user and project files). The
# default lets every item through.
package voltmcp.media

import data.voltmcp.lib

decision := {"inline": false, "reasons": _input_errors} if {
	count(_input_errors) > 0
} else := {"inline": count(_deny) == 0, "reasons": reasons}

_input_errors contains {"msg": sprintf("media input: %s must be %s", [field, kind]), "rule": "input"} if {
	some field, kind in {"kind": "string", "mime_type": "string", "bytes": "number"}
	not _has_type(object.get(object.get(input, "item", {}), field, null), kind)
}

_has_type(v, "string") if is_string(v)

_has_type(v, "number") if is_number(v)

_deny := {r | some r in data.voltmcp.media.deny}

reasons := [lib.reason(r) | some r in _deny] if {
	count(_deny) > 0
} else := [{"msg": sprintf("%s %s of %d bytes may be passed on", [input.item.kind, input.item.mime_type, input.item.bytes]), "rule": "default"}]
