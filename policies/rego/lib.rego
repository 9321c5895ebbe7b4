# Package voltmcp.lib holds helpers shared by the decision packages. It is
# part of the built-in bundle; user policy files may not add to it.
package voltmcp.lib

# reason normalizes a reason to an object with a "msg" string. A string
# becomes {"msg": s}; an object with a "msg" string is kept as it is; any
# other value is printed into "msg", so a badly written reason still counts.
reason(r) := {"msg": r} if is_string(r)

else := r if {
	is_object(r)
	is_string(r.msg)
}

else := {"msg": sprintf("%v", [r])}

# located is what the Go loader wraps around the reason of every deny,
# allow and hide rule, so that a decision can say which rule, file and line
# produced each reason. A "rule" the reason names itself wins over the
# extension rule's name.
located(r, rule, file, line) := object.union(
	object.union({"rule": rule}, reason(r)),
	{"file": file, "line": line},
)

# glob_match reports whether name matches pattern with the semantics of
# Go's path.Match: "*" matches any run of characters except "/", "?" one
# character except "/", "[...]" and "[^...]" a character class with ranges,
# and "\" escapes the next character. A malformed pattern matches nothing.
glob_match(pattern, name) if {
	_plain_glob(pattern)
	glob.match(pattern, ["/"], name)
}

glob_match(pattern, name) if {
	not _plain_glob(pattern)
	tokens := regex.find_n(`\\[\s\S]|\[\^?(?:(?:\\[\s\S]|[^\\\]\-])(?:-(?:\\[\s\S]|[^\\\]\-]))?)+\]|[*?]|[^\\\[*?]`, pattern, -1)
	concat("", tokens) == pattern
	parts := [_glob_token(t) | some t in tokens]
	regex.match(concat("", ["^", concat("", parts), "$"]), name)
}

# _plain_glob: only literals, "*" and "?", where OPA's glob.match with "/"
# as delimiter agrees with path.Match and is much cheaper than building a
# regular expression. Brackets, braces, commas, "!", "\" and "**" mean
# different things to the two, so those take the exact path.
_plain_glob(p) if {
	is_string(p)
	not regex.match(`[\[\]{},!\\]|\*\*`, p)
}

_glob_token(t) := "[^/]*" if t == "*"

else := "[^/]" if t == "?"

else := _quote(substring(t, 1, -1)) if startswith(t, "\\")

else := _glob_class(t) if startswith(t, "[")

else := _quote(t)

# _glob_class turns one "[...]" token into a regular expression class.
# Reversed ranges such as "z-a" match nothing in Go, so they are dropped
# (RE2 would reject them).
_glob_class(t) := re if {
	inner := substring(t, 1, count(t) - 2)
	negated := startswith(inner, "^")
	body := _strip_caret(inner)
	items := regex.find_n(`(?:\\[\s\S]|[^\\\]\-])(?:-(?:\\[\s\S]|[^\\\]\-]))?`, body, -1)
	parts := [p | some it in items; p := _glob_class_item(it)]
	re := _glob_class_join(negated, parts)
}

_strip_caret(s) := substring(s, 1, -1) if startswith(s, "^")

else := s

_glob_class_item(it) := out if {
	ends := regex.find_n(`\\[\s\S]|[^\-]`, it, -1)
	lo := _unescape(ends[0])
	hi := _unescape(ends[count(ends) - 1])
	lo <= hi
	out := _class_range(lo, hi)
}

_class_range(lo, hi) := _quote(lo) if lo == hi

else := concat("", [_quote(lo), "-", _quote(hi)])

_glob_class_join(true, parts) := "[\\s\\S]" if count(parts) == 0

_glob_class_join(false, parts) := "[^\\x00-\\x{10FFFF}]" if count(parts) == 0

_glob_class_join(true, parts) := concat("", ["[^", concat("", parts), "]"]) if count(parts) > 0

_glob_class_join(false, parts) := concat("", ["[", concat("", parts), "]"]) if count(parts) > 0

_unescape(s) := substring(s, 1, -1) if startswith(s, "\\")

else := s

# _quote escapes one character for a regular expression: ASCII
# punctuation gets a backslash, everything else stands for itself.
_quote(c) := concat("", ["\\", c]) if regex.match(`^[\x21-\x2f\x3a-\x40\x5b-\x60\x7b-\x7e]$`, c)

else := c
