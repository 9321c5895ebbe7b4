// Package mcptest provides small, real MCP servers for tests, several of
// which misbehave on purpose: they hang, crash, flood stderr, leave
// grandchildren behind, page forever or send hostile metadata. It is a
// test-only helper package: library and CLI code never import it.
//
// The stdio servers run inside the test binary itself. A test package
// calls [RunIfChild] first thing in its TestMain; a test then starts the
// test binary as a child process with the mode named in the environment
// variable VOLTMCP_TESTSERVER, which [Command] sets up:
//
//	func TestMain(m *testing.M) {
//		mcptest.RunIfChild()
//		os.Exit(m.Run())
//	}
//
//	command, args, env := mcptest.Command(mcptest.ModeBehave)
//
// The HTTP servers ([ServeHTTP], [ServeStreamableOnly], [ServeRawEvents],
// [ServeSSEOnly] and [ServeHTTPWithHeaderCheck]) run in the test process
// on 127.0.0.1 and stop when the test ends.
//
// # Modes
//
// Servers built with the MCP go-sdk, named "mcptest-<mode>", version 1.0.0:
//
//   - behave: tools echo, add, slow, fail, big and env, the resource
//     mcptest://readme, the resource template mcptest://items/{id} and the
//     prompt greet. With VOLTMCP_TESTSERVER_EXTRA_TOOLS=N it also has N
//     tools tool_0000, tool_0001, … and lists are paged 50 items a page.
//   - hang-call: behave plus a tool hang that never returns, whatever its
//     context says.
//   - crash-call: behave plus a tool crash that makes the process exit
//     with status 3 before it answers.
//   - grandchild: behave, but it first starts a grandchild (mode sleeper)
//     that stays in the server's process group, so that only a kill of the
//     whole group stops both. Once the grandchild ignores SIGTERM, it
//     writes the grandchild's PID to the file named by
//     VOLTMCP_TESTSERVER_PIDFILE and its own to that name plus ".parent";
//     then it serves. The grandchild holds the server's stderr open.
//   - ignore-sigterm: behave, but SIGTERM is ignored and the process keeps
//     running after stdin closes, so only SIGKILL stops it. It writes its
//     PID to VOLTMCP_TESTSERVER_PIDFILE, when that is set, once SIGTERM is
//     ignored.
//   - flood-stderr: behave, while writing 64 KiB chunks to stderr, 50 MiB
//     in all.
//   - list-changed: behave plus a tool mutate that adds a tool added_<n>
//     and changes the description of echo; the server then sends
//     notifications/tools/list_changed.
//
// Servers that do not speak MCP, or speak it wrongly on purpose:
//
//   - hang-init: reads stdin and never answers anything, so initialize
//     never completes; it exits when stdin closes.
//   - garbage: writes lines that are not JSON to stdout until stdin
//     closes.
//   - sleeper: ignores SIGTERM, says "ready" on stdout and sleeps
//     forever (the grandchild of mode grandchild).
//   - repeat-cursor: a raw JSON-RPC server whose tools/list always returns
//     one tool and the same nextCursor.
//   - bad-metadata: a raw JSON-RPC server whose tools/list returns tools
//     with hostile names, descriptions and input schemas (see
//     [ToolNameWithSpaces] and the constants next to it).
//
// # Hostile modes
//
// Each attacks one bound of a client; the constants and functions named
// give the exact sizes and texts, so tests can check what got through.
// SDK-based ones have everything of mode behave too.
//
//   - huge-metadata (raw): one tools/list page with a valid tool whose
//     description is 1 MiB and title 64 KiB ([ToolHugeDescription]), a
//     tool whose name is 256 KiB of letters ([HugeName]), one tool for
//     each of [InvalidToolNames] (empty, dot, slash, path, Cyrillic, tab,
//     NUL, emoji, zero-width space) and an ordinary [ToolPlain]. Every
//     call answers "ok".
//   - many-tools (raw): [ManyTools] (100,000) tools many_000000 …,
//     [ManyToolsPageSize] (1,000) a page, the cursor being the decimal
//     offset of the next page; a bad cursor is an invalid-params error.
//   - schema-bomb (raw): a first page with [ToolRefCycle] ($ref cycles
//     through $defs and back to the root), [ToolHugeEnum] (an enum of
//     1,000,000 values, about 2 MB) and [ToolWideSchema] (50,000
//     properties), then, at cursor [SchemaBombCursor], a page holding only
//     [ToolDeepBomb], whose schema nests 10,000 object schemas (20,000
//     levels of JSON; encoding/json decodes at most 10,000, and a go-sdk
//     v1.8 client ends its session on that page).
//   - hostile-text (SDK): a tool [ToolHostileText] whose title,
//     description, property description, enum value and annotations title
//     carry ANSI sequences, C0 and C1 controls, zero-width characters,
//     bidi overrides and isolates, variation-selector runs, text in the
//     Unicode tags block and a prompt injection ([HostileText],
//     [InjectionText], [TagHiddenText]); each call answers HostileText.
//   - rug-pull, rug-pull-schema, rug-pull-destructive (raw): the first
//     tools/list shows [RugPullTool] honest (read-only, one required
//     property city); every later one shows it pulled, without any
//     list_changed notification: rug-pull appends an injection to its
//     description ([RugPulledDescription]) and rewords the description of
//     a second tool, [RugPullQuietTool], harmlessly; rug-pull-schema adds
//     the required property [RugPullRequired]; rug-pull-destructive sets
//     readOnlyHint false and destructiveHint true. Over HTTP
//     ([ServeStreamableOnly]) the count is per server.
//   - hints-file (raw): on every tools/list, reads the file named by
//     [EnvHintsFile], a JSON object from tool name to annotations, and
//     lists one tool of each name ([HintsFileDescription], any object as
//     input) with those annotations. A test rewrites the file between two
//     runs to change a server's hints while its config stays the same.
//     Every call answers "ok".
//   - described (raw): [ToolReport], with an output schema, task support
//     and a read-only hint; [ToolWide], whose input schema is about 32 KB;
//     [DescribedLookups] tools lookup_0000 …; and [DescribedResources]
//     resources, [DescribedTemplates] templates and [DescribedPrompts]
//     prompts, for describe and the gateway's paged answers. Over HTTP it
//     answers with JSON bodies ([ServeStreamableOnly]), event streams
//     ([ServeRawEvents]) or on a legacy SSE stream ([ServeSSEOnly]).
//   - secret-meta (raw): writes the values of the variables named
//     [MetaSecretPrefix]…, in each form of [MetaForms], and its arguments
//     into every field of its metadata (serverInfo, instructions,
//     capabilities, [ToolMetaEcho]'s title, description, schemas and
//     annotations, [MetaResource], a template and [MetaPrompt]), and
//     lists a tool, a resource, a template and prompts whose identifiers
//     hold the first value ([MetaLeakPrefix]); [ToolMetaPlain] carries
//     none. Every call answers "ok".
//   - flood-notify (raw): a tool [ToolFlood] that, before it answers,
//     sends count (default [FloodNotifications], 10,000; at most
//     1,000,000) notifications/message and as many notifications/progress,
//     the latter with the call's progress token or, when it has none,
//     [FloodProgressToken], which the client never sent.
//   - flood-requests (raw): a tool [ToolFloodRequests] that, before it
//     answers, sends count (default [FloodRequests], 300) requests to the
//     client, cycling through [FloodRequestMethods] (sampling,
//     elicitation, roots), each padded to about bytes (default
//     [FloodRequestBytes], 4 MiB), without reading their answers. Over
//     HTTP they go on the call's event stream ([ServeRawEvents]) or on
//     the legacy SSE session's stream ([ServeSSEOnly]).
//   - flood-result (SDK): a tool [ToolFloodResult] answering 50 MiB of
//     text in one message, over the go-sdk's default 16 MiB cap.
//   - media (SDK): behave plus [ToolMedia], which answers with images,
//     audio or embedded blobs of the kind, declared type, real content
//     ([MediaData]) and size asked for, and resources of such blobs
//     ([MediaResource]).
//   - binary-result (SDK): tools [ToolImage] (a 6 MiB PNG), [ToolAudio]
//     (2 MiB WAV) and [ToolMixed] (text, a 64 KiB image, an embedded 1 MiB
//     binary resource and a resource link); the bytes are [Blob].
//   - huge-resource (SDK): resources [HugeTextResource] (20 MiB of text,
//     listed as 10 bytes long) and [HugeBlobResource] (16 MiB binary).
//   - endless-line: reads the initialize request, then writes
//     [EndlessLineBytes] (100 MiB) starting with [EndlessLinePrefix] and
//     the request's id, never a newline, and waits for stdin to close.
//   - setsid-grandchild (SDK): behave, but it first starts two
//     grandchildren, each in a session of its own (setsid), ignoring
//     SIGTERM and SIGHUP, so no signal to the server's process group
//     reaches them: one its own child, holding the server's stdout and
//     stderr open, whose PID goes to the file named by
//     VOLTMCP_TESTSERVER_PIDFILE; and one started through a process that
//     exits at once, an orphan from the start, whose PID goes to that name
//     plus [OrphanSuffix]. The server's own PID goes to that name plus
//     [ParentSuffix].
//   - segv-call (SDK): behave plus a tool [ToolSegv] that writes
//     [SegvStderr] (and the value of [EnvSecret], when set) to stderr and
//     makes the process die of SIGSEGV before it answers.
//   - deep-answer (raw): with [EnvDeep] "list" (the default), every
//     tools/list answer nests [DeepAnswerDepth] (20,000) levels of JSON;
//     with "call", tools/list lists [ToolDeepAnswer] and every tools/call
//     answer nests that deep.
package mcptest
