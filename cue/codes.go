package cue

// codeInfo is the catalogue of diagnostic codes: each code's default
// severity and a one-line summary. docs/config.md explains each; a test
// keeps the two in step.
func codeInfo(c Code) (Severity, string) {
	switch c {
	case CodeFileUnreadable:
		return SeverityError, "A config file exists but cannot be read."
	case CodeFileTooLarge:
		return SeverityError, "A config file is over 4 MiB and is refused unread."
	case CodeJSONSyntax:
		return SeverityError, "A config file is not valid JSON; the byte offset of the error is given."
	case CodeDuplicateKey:
		return SeverityError, "An object has the same key twice."
	case CodeNotObject:
		return SeverityError, "The top level of a config file is not an object."
	case CodeDialect:
		return SeverityInfo, "The file was read in the mcpServers or VS Code dialect."
	case CodeDialectConflict:
		return SeverityError, "Fields of two dialects contradict each other."
	case CodeUnknownField:
		return SeverityError, "A field is not in the schema; the closest known name is suggested."
	case CodeIgnoredField:
		return SeverityInfo, "A field another MCP client uses is read but has no effect in voltmcp."
	case CodeInvalidType:
		return SeverityError, "A value has the wrong JSON type."
	case CodeInvalidValue:
		return SeverityError, "A value is not one the schema allows."
	case CodeOutOfRange:
		return SeverityError, "A number is outside its bounds."
	case CodeEnvRefSyntax:
		return SeverityError, "A ${...} reference is malformed or of an unsupported kind."
	case CodeServerID:
		return SeverityError, "A server key has no characters usable in an id."
	case CodeServerIDChanged:
		return SeverityInfo, "A server key was normalized to a different id."
	case CodeServerIDClash:
		return SeverityError, "Two server keys of one file normalize to the same id."
	case CodeMissingField:
		return SeverityError, "A required field is missing (a server's command or url, an auth's type, token or variable)."
	case CodeTransportMismatch:
		return SeverityError, "A server mixes stdio and HTTP fields."
	case CodeCrossScopeField:
		return SeverityError, "A project entry tries to add to, remove from or widen a server a user layer defines."
	case CodeProjectIgnored:
		return SeverityWarning, "Project config is not trusted, so it does not load."
	case CodeProjectSetting:
		return SeverityWarning, "A project layer sets what only a user layer may set."
	case CodeLiteralSecret:
		return SeverityError, "A credential is written in plain text instead of ${env:NAME}."
	case CodeShellCommand:
		return SeverityWarning, "A server runs through a shell, or its command holds arguments."
	case CodeUnpinnedPackage:
		return SeverityWarning, "npx, uvx or a similar runner fetches a package without a pinned version."
	case CodeInsecureURL:
		return SeverityWarning, "A server is reached over plain http on a non-loopback host (an error when it sends credentials)."
	case CodeFilterOverlap:
		return SeverityWarning, "A tool is both included and excluded."
	case CodeDisabledAbove:
		return SeverityWarning, "A higher layer disables a server a lower layer defines."
	case CodeOAuthLoopback:
		return SeverityWarning, "An OAuth server's auth sets allowInsecureLoopback: its authorization may use plain http to loopback addresses."
	case CodeOAuthIssuer:
		return SeverityWarning, "An OAuth server's auth names a pre-registered client without the issuer that registered it: only an authorization server at the url's origin gets it."
	case CodeSecretInArgs:
		return SeverityWarning, "A secret reaches a server in its arguments, which every local user can read; pass it in env."
	case CodeGatewayEntry:
		return SeverityInfo, "A server entry starts voltmcp serve, the gateway itself, and is not loaded."
	case CodePolicyError:
		return SeverityError, "A policy named in settings.policies does not load; the gateway would fail closed and deny every call."
	case CodePluginError:
		return SeverityError, "A module named in settings.plugins would be refused: unreadable, a sha256 mismatch, bad imports or exports, a wrong ABI version, too much memory, or not compilable."
	}
	return "", ""
}

// Codes lists every diagnostic code voltmcp reports.
func Codes() []Code {
	return []Code{
		CodeFileUnreadable, CodeFileTooLarge, CodeJSONSyntax, CodeDuplicateKey, CodeNotObject,
		CodeDialect, CodeDialectConflict, CodeUnknownField, CodeIgnoredField, CodeInvalidType,
		CodeInvalidValue, CodeOutOfRange, CodeEnvRefSyntax, CodeServerID, CodeServerIDChanged,
		CodeServerIDClash, CodeMissingField, CodeTransportMismatch, CodeCrossScopeField,
		CodeProjectIgnored, CodeProjectSetting, CodeLiteralSecret, CodeShellCommand,
		CodeUnpinnedPackage, CodeInsecureURL, CodeFilterOverlap, CodeDisabledAbove,
		CodeOAuthLoopback, CodePolicyError, CodePluginError, CodeSecretInArgs, CodeOAuthIssuer, CodeGatewayEntry,
	}
}

// Summary describes the code in one sentence.
func (c Code) Summary() string { _, s := codeInfo(c); return s }

// DefaultSeverity is the severity the code is usually reported with.
func (c Code) DefaultSeverity() Severity { s, _ := codeInfo(c); return s }
