package voltmcp.lib_test

import data.voltmcp.lib

test_reason_of_string if {
	lib.reason("x") == {"msg": "x"}
}

test_reason_of_object_is_kept if {
	lib.reason({"msg": "x", "rule": "r"}) == {"msg": "x", "rule": "r"}
}

test_reason_of_other_values_is_printed if {
	lib.reason(7) == {"msg": "7"}
	lib.reason({"no_msg": true}) == {"msg": `{"no_msg": true}`}
}

test_located_adds_rule_file_and_line if {
	lib.located("x", "deny", "a.rego", 3) == {"msg": "x", "rule": "deny", "file": "a.rego", "line": 3}
	lib.located({"msg": "x", "rule": "mine"}, "deny", "a.rego", 3) == {"msg": "x", "rule": "mine", "file": "a.rego", "line": 3}
}

test_glob_classes_and_escapes if {
	lib.glob_match("[\\]]", "]")
	lib.glob_match("[^^]", "a")
	not lib.glob_match("[^^]", "^")
	lib.glob_match("[a-cx-z]", "y")
	lib.glob_match("[^a]", "/")
	not lib.glob_match("[a-]", "a")
	lib.glob_match("\\d", "d")
	lib.glob_match("a.b", "a.b")
	lib.glob_match("$x^", "$x^")
	lib.glob_match("é*", "été")
}
