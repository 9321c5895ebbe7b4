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
// The HTTP servers ([ServeHTTP], [ServeStreamableOnly], [ServeSSEOnly] and
// [ServeHTTPWithHeaderCheck]) run in the test process on 127.0.0.1 and
// stop when the test ends.
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
package mcptest
