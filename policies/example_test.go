package policies_test

import (
	"context"
	"fmt"

	"github.com/voltmcp/voltmcp/policies"
)

func ExampleLoad() {
	ctx := context.Background()
	p, err := policies.Load(ctx, &policies.Options{Dirs: []string{"../examples/policies"}})
	if err != nil {
		// p still answers, failing closed; a server could keep running.
		fmt.Println("policy error:", err)
	}
	d := p.Trust(ctx, policies.TrustInput{
		Project:             "/src/acme/api",
		Files:               []policies.FileHash{{Path: "/src/acme/api/.mcp.json", ContentHash: "sha256:aaa"}},
		Surface:             "serve",
		DefaultProjectTrust: "ask",
	})
	fmt.Println(d.Trusted, d.Reasons[0].Message)
	// Output: true projects under /src/acme/ are the company's own
}

func ExamplePolicies_Tools() {
	ctx := context.Background()
	p, err := policies.Load(ctx, nil)
	if err != nil {
		panic(err)
	}
	in := policies.ToolInput{
		Server:       policies.Server{ID: "github", Scope: "user", Transport: "stdio", Command: "npx"},
		Tool:         policies.Tool{Name: "delete_repo"},
		Risk:         "destructive",
		ExcludeTools: []string{"delete_*"},
	}
	d := p.Tools(ctx, in)
	fmt.Println(d.Exposed, d.Allowed)
	r := d.Reasons[0]
	fmt.Printf("%s (rule %s in %s)\n", r.Message, r.Rule, r.File)
	// Output:
	// false false
	// excluded by excludeTools delete_* (rule exclude_tools in builtin/tools.rego)
}

func ExamplePolicies_Redactor() {
	ctx := context.Background()
	p, err := policies.Load(ctx, nil)
	if err != nil {
		panic(err)
	}
	r, err := p.Redactor(ctx, policies.RedactInput{
		EnvNames:  []string{"GITHUB_TOKEN"},
		LookupEnv: func(string) (string, bool) { return "not-a-real-token", true },
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(r.Redact("auth failed for not-a-real-token at https://bob:hunter22@git.example.com"))
	// Output: auth failed for [REDACTED] at https://[REDACTED]@git.example.com
}

func ExamplePolicies_Replay() {
	ctx := context.Background()
	// The examples deny destructive tools outside the ops-admin server.
	p, err := policies.Load(ctx, &policies.Options{Dirs: []string{"../examples/policies"}})
	if err != nil {
		panic(err)
	}
	call := func(seq int64, server, tool, risk string) policies.ReplayRecord {
		return policies.ReplayRecord{
			Seq: seq, Status: "completed", Allowed: true,
			Input: policies.ToolInput{
				Server: policies.Server{ID: server, Scope: "user", Transport: "stdio", Command: "npx"},
				Tool:   policies.Tool{Name: tool}, Risk: risk, Surface: "serve",
			},
		}
	}
	rep, err := p.Replay(ctx, []policies.ReplayRecord{
		call(1, "github", "list_issues", "read"),
		call(2, "github", "delete_repo", "destructive"),
		call(3, "ops-admin", "drop_cache", "destructive"),
	})
	if err != nil {
		panic(err)
	}
	fmt.Println(rep.Total, rep.Same, rep.Changed())
	for _, c := range rep.NowBlocked {
		fmt.Printf("#%d %s.%s: %s (rule %s)\n", c.Seq, c.Server, c.Tool, c.Now.Reasons[0].Message, c.Now.Reasons[0].Rule)
	}
	// Output:
	// 3 2 true
	// #2 github.delete_repo: destructive tool "delete_repo" is only allowed on "ops-admin" (rule destructive_outside_ops)
}
