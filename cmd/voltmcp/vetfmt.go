package main

import (
	"encoding/json"
	"fmt"
	"io"
	"net/url"
	"path/filepath"
	"strings"

	"github.com/voltmcp/voltmcp/cue"
)

// vetOutput are the choices a vet writer honours.
type vetOutput struct {
	quiet bool // leave out info diagnostics (text, github)
	ok    bool // the run passes, given --fail-on (json)
}

// vetFormatter returns the writer of a vet result in the given --format.
func vetFormatter(format string) (func(w io.Writer, res *cue.Result, o vetOutput) error, bool) {
	switch format {
	case "text":
		return writeText, true
	case "json":
		return writeJSON, true
	case "sarif":
		return writeSARIF, true
	case "github":
		return writeGitHub, true
	}
	return nil, false
}

func writeText(w io.Writer, res *cue.Result, o vetOutput) error {
	var b strings.Builder
	for _, d := range res.Diagnostics {
		if o.quiet && d.Severity == cue.SeverityInfo {
			continue
		}
		b.WriteString(d.String())
		b.WriteByte('\n')
		if d.Hint != "" {
			fmt.Fprintf(&b, "    hint: %s\n", d.Hint)
		}
	}
	for _, f := range res.Files {
		if !f.Found {
			continue
		}
		state := "loads"
		if !f.Loaded {
			state = "does not load: " + f.Reason
		}
		fmt.Fprintf(&b, "%s: %s layer, %s dialect, %s\n", f.Path, f.Layer, dialectName(f.Dialect), state)
	}
	b.WriteString(summaryLine(res))
	b.WriteByte('\n')
	_, err := io.WriteString(w, b.String())
	return err
}

func dialectName(d cue.Dialect) string {
	if d == "" {
		return "unknown"
	}
	return string(d)
}

func writeJSON(w io.Writer, res *cue.Result, o vetOutput) error {
	diags := res.Diagnostics
	if diags == nil {
		diags = cue.Diagnostics{}
	}
	out := struct {
		OK          bool             `json:"ok"`
		Diagnostics cue.Diagnostics  `json:"diagnostics"`
		Files       []cue.FileStatus `json:"files"`
	}{o.ok, diags, res.Files}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(out)
}

// GitHub workflow commands need %, CR and LF escaped in messages, and
// also : and , in properties.
func ghEscape(s string, property bool) string {
	s = strings.NewReplacer("%", "%25", "\r", "%0D", "\n", "%0A").Replace(s)
	if property {
		s = strings.NewReplacer(":", "%3A", ",", "%2C").Replace(s)
	}
	return s
}

func writeGitHub(w io.Writer, res *cue.Result, o vetOutput) error {
	var b strings.Builder
	for _, d := range res.Diagnostics {
		kind := map[cue.Severity]string{cue.SeverityError: "error", cue.SeverityWarning: "warning", cue.SeverityInfo: "notice"}[d.Severity]
		if o.quiet && kind == "notice" {
			continue
		}
		var props []string
		if d.File != "" {
			props = append(props, "file="+ghEscape(filepath.ToSlash(d.File), true))
		}
		if d.Line > 0 {
			props = append(props, fmt.Sprintf("line=%d", d.Line), fmt.Sprintf("col=%d", d.Col))
		}
		props = append(props, "title="+ghEscape("voltmcp "+string(d.Code), true))
		msg := d.Message
		if d.Path != "" {
			msg = d.Path + ": " + msg
		}
		if d.Hint != "" {
			msg += " (hint: " + d.Hint + ")"
		}
		fmt.Fprintf(&b, "::%s %s::%s\n", kind, strings.Join(props, ","), ghEscape(msg, false))
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// SARIF 2.1.0, the subset GitHub code scanning reads.
type sarifLog struct {
	Schema  string     `json:"$schema"`
	Version string     `json:"version"`
	Runs    []sarifRun `json:"runs"`
}

type sarifRun struct {
	Tool    sarifTool     `json:"tool"`
	Results []sarifResult `json:"results"`
}

type sarifTool struct {
	Driver sarifDriver `json:"driver"`
}

type sarifDriver struct {
	Name           string      `json:"name"`
	InformationURI string      `json:"informationUri"`
	Rules          []sarifRule `json:"rules"`
}

type sarifRule struct {
	ID                   string       `json:"id"`
	ShortDescription     sarifText    `json:"shortDescription"`
	HelpURI              string       `json:"helpUri"`
	DefaultConfiguration sarifRuleCfg `json:"defaultConfiguration"`
}

type sarifRuleCfg struct {
	Level string `json:"level"`
}

type sarifText struct {
	Text string `json:"text"`
}

type sarifResult struct {
	RuleID    string          `json:"ruleId"`
	RuleIndex int             `json:"ruleIndex"`
	Level     string          `json:"level"`
	Message   sarifText       `json:"message"`
	Locations []sarifLocation `json:"locations,omitempty"`
}

type sarifLocation struct {
	PhysicalLocation sarifPhysical `json:"physicalLocation"`
}

type sarifPhysical struct {
	ArtifactLocation sarifArtifact `json:"artifactLocation"`
	Region           *sarifRegion  `json:"region,omitempty"`
}

type sarifArtifact struct {
	URI string `json:"uri"`
}

type sarifRegion struct {
	StartLine   int `json:"startLine"`
	StartColumn int `json:"startColumn"`
}

func sarifLevel(s cue.Severity) string {
	switch s {
	case cue.SeverityError:
		return "error"
	case cue.SeverityWarning:
		return "warning"
	}
	return "note"
}

// sarifURI makes a repository-relative URI of a relative path, and a
// file: URI of an absolute one.
func sarifURI(path string) string {
	p := filepath.ToSlash(path)
	if filepath.IsAbs(path) {
		return (&url.URL{Scheme: "file", Path: p}).String()
	}
	return (&url.URL{Path: strings.TrimPrefix(p, "./")}).String()
}

func writeSARIF(w io.Writer, res *cue.Result, _ vetOutput) error {
	run := sarifRun{
		Tool:    sarifTool{Driver: sarifDriver{Name: "voltmcp", InformationURI: "https://github.com/voltmcp/voltmcp"}},
		Results: []sarifResult{},
	}
	index := map[cue.Code]int{}
	for i, c := range cue.Codes() {
		index[c] = i
		run.Tool.Driver.Rules = append(run.Tool.Driver.Rules, sarifRule{
			ID:                   string(c),
			ShortDescription:     sarifText{c.Summary()},
			HelpURI:              "https://github.com/voltmcp/voltmcp/blob/main/docs/config.md#" + string(c),
			DefaultConfiguration: sarifRuleCfg{sarifLevel(c.DefaultSeverity())},
		})
	}
	for _, d := range res.Diagnostics {
		msg := d.Message
		if d.Path != "" {
			msg = d.Path + ": " + msg
		}
		if d.Hint != "" {
			msg += " Hint: " + d.Hint
		}
		r := sarifResult{RuleID: string(d.Code), RuleIndex: index[d.Code], Level: sarifLevel(d.Severity), Message: sarifText{msg}}
		if d.File != "" {
			loc := sarifLocation{PhysicalLocation: sarifPhysical{ArtifactLocation: sarifArtifact{URI: sarifURI(d.File)}}}
			if d.Line > 0 {
				loc.PhysicalLocation.Region = &sarifRegion{StartLine: d.Line, StartColumn: d.Col}
			}
			r.Locations = []sarifLocation{loc}
		}
		run.Results = append(run.Results, r)
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(sarifLog{
		Schema:  "https://json.schemastore.org/sarif-2.1.0.json",
		Version: "2.1.0",
		Runs:    []sarifRun{run},
	})
}
