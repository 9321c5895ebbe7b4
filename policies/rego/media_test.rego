package voltmcp.media_test

import data.voltmcp.media

_item := {"server": {"id": "shots", "scope": "user"}, "tool": "screenshot", "risk": "read", "surface": "serve",
	"item": {"kind": "image", "mime_type": "image/png", "bytes": 4033, "uri": ""}}

test_default_inlines if {
	d := media.decision with input as _item
	d.inline
	d.reasons[0].rule == "default"
}

test_bad_input_does_not_inline if {
	d := media.decision with input as {"item": {"kind": "image", "bytes": "big"}}
	not d.inline
	count(d.reasons) == 2
}

test_deny_keeps_it_out if {
	d := media.decision with input as _item
		with data.voltmcp.media.deny as {"no images from shots"}
	not d.inline
	d.reasons[0].msg == "no images from shots"
}
