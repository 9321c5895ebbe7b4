package cue

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"path/filepath"
	"slices"

	"github.com/voltmcp/voltmcp/safefile"
)

// MaxFileSize is the largest config file voltmcp reads. A larger file is
// refused before it is read.
const MaxFileSize = 4 << 20

// Options tune a load. The zero value loads for the interactive surface,
// compiles the embedded schema, decides trust with DecideTrust, and runs
// no lint rules.
type Options struct {
	// Schema is the compiled schema to validate with. Nil compiles the
	// embedded one; share one Schema between loads to skip that.
	Schema *Schema
	// Surface is the caller, passed to the trust decision. Empty means
	// SurfaceInteractive.
	Surface Surface
	// Approve and NoApprove are the --approve and --no-approve flags.
	Approve   bool
	NoApprove bool
	// Trust decides whether project layers load. Nil means DecideTrust.
	Trust func(TrustInput) TrustDecision
	// TrustRecords are the host's records of trusted projects (`voltmcp
	// trust`); those for the project being loaded go to the trust
	// decision. Nil means none.
	TrustRecords []TrustRecord
	// TrustStore is a file of trust records (ReadTrustRecords) that Load
	// reads and adds to TrustRecords; a file it cannot read is an error
	// diagnostic and adds no trust. Empty means none.
	TrustStore string
	// CheckUntrusted also checks project layers that will not load, as if
	// they did, and reports what they would do. The effective Config still
	// leaves them out. `voltmcp vet` sets it.
	CheckUntrusted bool
	// Lint runs the lint rules (literal secrets, shell commands, unpinned
	// packages, plain-HTTP URLs, overlapping filters, silent disables).
	Lint bool
}

// FileStatus describes one config file the loader considered.
type FileStatus struct {
	Layer Layer  `json:"layer"`
	Path  string `json:"path"`
	// Found is false when the file does not exist, which is not an error.
	Found bool `json:"found"`
	// Dialect is the dialect the file was read as.
	Dialect Dialect `json:"dialect,omitempty"`
	// SHA256 is the hex digest of the file's bytes, for trust decisions
	// that bind to content.
	SHA256 string `json:"sha256,omitempty"`
	// Loaded reports whether the file's content is part of the effective
	// config. A found file is not loaded when it is invalid or untrusted.
	Loaded bool `json:"loaded"`
	// Reason says why a found file did not load.
	Reason string `json:"reason,omitempty"`
	// Problem is the diagnostic that kept a found file from loading, with
	// its file, line and column: the read or parse error, or the
	// project-ignored warning of an untrusted project. It is nil for a
	// file that loaded.
	Problem *Diagnostic `json:"-"`
	// IgnoredServers are the ids of the servers a project file defines or
	// adjusts, when it parsed but did not load because the project is not
	// trusted: names a surface may show, without what they run.
	IgnoredServers []string `json:"-"`
	// NamedBy is, for a file a config file brings in (a policy file of a
	// project layer's settings.policies, in Result.TrustFiles), the config
	// file that names it.
	NamedBy string `json:"namedBy,omitempty"`
}

// Result is the outcome of a load.
type Result struct {
	// Config is the effective config. It is never nil: with errors, it
	// holds what could be loaded.
	Config *Config
	// Diagnostics are every finding, sorted.
	Diagnostics Diagnostics
	// Files are the files considered, lowest precedence first.
	Files []FileStatus
	// Trust is the project trust decision; it is the zero value when no
	// project file was found.
	Trust TrustDecision
	// TrustFiles are the files the trust decision covers, each with its
	// content hash: the project layer files found and every file they
	// bring in (the policy files their settings.policies name, with
	// NamedBy set). A file that could not be read has no hash and a
	// Reason, and no trust record matches it. `voltmcp trust` records
	// these (NewTrustRecord).
	TrustFiles []FileStatus
	// TrustPaths are the paths whose change can change the trust decision
	// or what it covers: the trust store, both project layer files (found
	// or not), and each project policy entry with the directories walked
	// under it and the files read. A process that keeps running on this
	// Result looks at them to see that it must decide again.
	TrustPaths []string
}

// layerDoc is one file, read, validated and normalized.
type layerDoc struct {
	status  *FileStatus
	src     *source
	baseDir string
	doc     *node // normalized to voltmcp's dialect
	ok      bool  // parsed and shaped well enough to merge
	// policies are the settings.policies entries taken out of doc
	// (takePolicies), once took is set.
	policies []PolicySource
	took     bool
}

// Load reads the four layers under loc, validates each, decides project
// trust, and merges what loads into the effective config. Problems with
// the files are diagnostics in the Result; the error is for a failure of
// the loader itself, such as a cancelled context.
func Load(ctx context.Context, loc Locations, opts *Options) (*Result, error) {
	o, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	var d diags
	if o.TrustStore != "" {
		recs, err := ReadTrustRecords(o.TrustStore)
		if err != nil {
			d.list = append(d.list, Diagnostic{Severity: SeverityError, Code: CodeFileUnreadable, Message: err.Error(),
				Hint: "fix or delete the file, then run voltmcp trust again", Position: Position{File: o.TrustStore}})
		}
		o.TrustRecords = append(slices.Clip(o.TrustRecords), recs...)
	}
	docs := make([]*layerDoc, 0, len(layerOrder))
	for _, layer := range layerOrder {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		base := loc.Home
		if layer.IsProject() {
			base = loc.Project
		}
		docs = append(docs, o.Schema.readLayer(loc.Path(layer), layer, base, &d))
	}
	// The policy files a project layer names are read here, once: their
	// content is what trust covers and what the policy set loads.
	budget := newPolicyReader()
	for _, ld := range docs {
		ld.policies, ld.took = takePolicies(ld, &d), true
		if !ld.status.Layer.IsProject() {
			continue
		}
		for i := range ld.policies {
			if err := ctx.Err(); err != nil {
				return nil, err
			}
			src := &ld.policies[i]
			src.Files, src.dirs, src.Err = readPolicySource(src.Path, budget)
		}
	}
	return o.assemble(docs, loc, &d), nil
}

// assemble decides trust over the parsed layers and merges them. It does
// no I/O.
func (o Options) assemble(docs []*layerDoc, loc Locations, d *diags) *Result {
	res := &Result{}
	// settings.policies add up across layers rather than replace: take
	// them out of each file before the settings merge.
	policies := make([][]PolicySource, len(docs))
	for i, ld := range docs {
		policies[i] = ld.policies
		if !ld.took {
			policies[i] = takePolicies(ld, d)
			if ld.status.Layer.IsProject() {
				for j := range policies[i] {
					policies[i][j].Err = fmt.Errorf("policy path %s: not read", policies[i][j].Path)
				}
			}
		}
		absPluginPaths(ld)
	}
	// Trust comes from the user layers alone: a project cannot vouch for
	// itself.
	userSettings := mergeSettings(docs, func(l Layer) bool { return !l.IsProject() }, o.Schema.defSettings)
	var project []FileStatus
	for i, ld := range docs {
		if ld.status.Layer.IsProject() {
			res.TrustPaths = append(res.TrustPaths, ld.status.Path)
		}
		if ld.status.Layer.IsProject() && ld.status.Found {
			project = append(project, *ld.status)
			project = appendPolicyFiles(project, ld.status, policies[i])
			for _, src := range policies[i] {
				res.TrustPaths = append(res.TrustPaths, src.Path)
				res.TrustPaths = append(res.TrustPaths, src.dirs...)
				for _, f := range src.Files {
					res.TrustPaths = append(res.TrustPaths, f.Path)
				}
			}
			if s := ld.doc.get("settings"); s != nil && s.get("defaultProjectTrust") != nil {
				d.addAt(SeverityWarning, CodeProjectSetting, s, "defaultProjectTrust", "set it in a user layer",
					"a project cannot set its own trust; this setting is ignored")
				s.del("defaultProjectTrust")
			}
			if s := ld.doc.get("settings"); s != nil && s.get("plugins") != nil {
				d.addAt(SeverityWarning, CodeProjectSetting, s, "plugins", "set it in a user layer",
					"a project cannot add plugins to the gateway; this setting is ignored")
				s.del("plugins")
			}
			if list := ld.doc.get("servers"); list != nil && list.kind == kindObject {
				for _, f := range list.fields {
					if f.value.kind == kindObject && f.value.get("trustToolHints") != nil {
						d.addAt(SeverityWarning, CodeProjectSetting, f.value, "trustToolHints", "set it on the server in a user layer",
							"a project cannot make voltmcp trust its servers' tool hints; this field is ignored")
						f.value.del("trustToolHints")
					}
				}
			}
			if s := ld.doc.get("settings"); s != nil && s.get("audit") != nil {
				d.addAt(SeverityWarning, CodeProjectSetting, s, "audit", "set it in a user layer",
					"a project cannot change what happens while the audit log fails; this setting is ignored")
				s.del("audit")
			}
		}
	}
	if len(project) > 0 {
		in := TrustInput{
			Project: loc.Project, Files: project, Surface: o.Surface,
			DefaultProjectTrust: userSettings.get("defaultProjectTrust").str,
			Approve:             o.Approve, NoApprove: o.NoApprove,
		}
		absProject := absPath(loc.Project)
		for _, r := range o.TrustRecords {
			if r.Project == absProject {
				in.TrustedProjects = append(in.TrustedProjects, r)
			}
		}
		for i, ld := range docs {
			if !ld.status.Layer.IsProject() {
				for _, p := range policies[i] {
					in.UserPolicies = append(in.UserPolicies, p.Path)
				}
			}
		}
		res.Trust = o.Trust(in)
		if !res.Trust.Trusted {
			o.reportUntrusted(docs, res.Trust, d)
		}
		if o.TrustStore != "" {
			res.TrustPaths = append(res.TrustPaths, o.TrustStore)
		}
		// The statuses again, as the decision left them.
		for i, ld := range docs {
			if ld.status.Layer.IsProject() && ld.status.Found {
				res.TrustFiles = appendPolicyFiles(append(res.TrustFiles, *ld.status), ld.status, policies[i])
			}
		}
		for i := range res.TrustFiles {
			if f := &res.TrustFiles[i]; f.NamedBy != "" {
				f.Loaded = res.Trust.Trusted && f.SHA256 != ""
			}
		}
	}
	trusted := func(l Layer) bool { return !l.IsProject() || res.Trust.Trusted }
	if o.CheckUntrusted && !res.Trust.Trusted {
		// Check the project layers as if trusted. The trusted-only merge
		// below is checked too: a project that redefines a user server
		// must not hide that server's problems.
		merge(docs, func(Layer) bool { return true }, o, d)
	}
	res.Config = merge(docs, trusted, o, d)
	for i, ld := range docs {
		if ld.ok && trusted(ld.status.Layer) {
			res.Config.Policies = append(res.Config.Policies, policies[i]...)
		}
	}
	for _, ld := range docs {
		res.Files = append(res.Files, *ld.status)
	}
	d.list = d.list.unique()
	d.list.Sort()
	res.Diagnostics = d.list
	return res
}

// appendPolicyFiles appends to files a status for each file the policy
// entries srcs of the project layer file cfg bring in, or for an entry
// that could not be read, one with the reason and no hash.
func appendPolicyFiles(files []FileStatus, cfg *FileStatus, srcs []PolicySource) []FileStatus {
	for _, src := range srcs {
		if src.Err != nil {
			files = append(files, FileStatus{Layer: cfg.Layer, Path: src.Path, Found: true, NamedBy: cfg.Path, Reason: src.Err.Error()})
			continue
		}
		for _, f := range src.Files {
			files = append(files, FileStatus{Layer: cfg.Layer, Path: f.Path, Found: true, SHA256: f.SHA256, NamedBy: cfg.Path})
		}
	}
	return files
}

// maxPolicies bounds settings.policies in one file.
const maxPolicies = 64

// takePolicies removes settings.policies from a layer's document and
// returns its entries made absolute against the file's directory.
func takePolicies(ld *layerDoc, d *diags) []PolicySource {
	if !ld.ok || ld.doc == nil {
		return nil
	}
	s := ld.doc.get("settings")
	if s == nil || s.kind != kindObject {
		return nil
	}
	list := s.get("policies")
	if list == nil {
		return nil
	}
	s.del("policies")
	if list.kind != kindArray || list.bad {
		return nil
	}
	if len(list.items) > maxPolicies {
		d.add(SeverityError, CodeOutOfRange, list, list.path, fmt.Sprintf("list at most %d policy paths", maxPolicies),
			"settings.policies has %d entries; the limit is %d, so none are used", len(list.items), maxPolicies)
		return nil
	}
	dir := filepath.Dir(ld.status.Path)
	var out []PolicySource
	for _, it := range list.items {
		if it.kind != kindString || it.bad {
			continue
		}
		p := it.str
		if !filepath.IsAbs(p) {
			p = filepath.Join(dir, p)
		}
		out = append(out, PolicySource{Path: filepath.Clean(p), Layer: ld.status.Layer, At: it.pos()})
	}
	return out
}

// absPluginPaths makes the module paths of a layer's settings.plugins
// absolute against the file's directory.
func absPluginPaths(ld *layerDoc) {
	if !ld.ok || ld.doc == nil {
		return
	}
	p := ld.doc.get("settings").get("plugins")
	dir := filepath.Dir(ld.status.Path)
	for _, key := range []string{"classifiers", "shapers"} {
		list := p.get(key)
		if list == nil || list.kind != kindArray {
			continue
		}
		for _, it := range list.items {
			if path := it.get("path"); path != nil && path.kind == kindString && !filepath.IsAbs(path.str) {
				path.str = filepath.Clean(filepath.Join(dir, path.str))
			}
		}
	}
}

// reportUntrusted marks the project layers as not loaded and says why.
func (o Options) reportUntrusted(docs []*layerDoc, trust TrustDecision, d *diags) {
	verb := "is ignored"
	if o.CheckUntrusted {
		verb = "would not load"
	}
	hint := "run voltmcp trust to trust the project as it is, --approve to trust it for one run, or set defaultProjectTrust in a user layer"
	switch {
	case o.NoApprove:
		hint = "leave --no-approve out to let defaultProjectTrust decide"
	case trust.Hint != "":
		hint = trust.Hint
	}
	for _, ld := range docs {
		if !ld.status.Layer.IsProject() || !ld.status.Found {
			continue
		}
		diag := Diagnostic{Severity: SeverityWarning, Code: CodeProjectIgnored, Hint: hint,
			Message:  fmt.Sprintf("project MCP config %s: %s", verb, trust.Reason),
			Position: Position{File: ld.status.Path}, Layer: ld.status.Layer}
		if ld.src != nil {
			diag.Position = ld.src.position(0)
		}
		if ld.status.Loaded {
			ld.status.Reason = "untrusted: " + trust.Reason
			ld.status.Problem = &diag
			ld.status.IgnoredServers = serverIDs(ld.doc)
		}
		ld.status.Loaded = false
		d.list = append(d.list, diag)
	}
}

// serverIDs returns the ids of the servers a layer's document defines or
// adjusts, in file order, each once.
func serverIDs(doc *node) []string {
	list := doc.get("servers")
	if list == nil || list.kind != kindObject {
		return nil
	}
	var out []string
	for _, f := range list.fields {
		if id := NormalizeID(f.key); id != "" && f.value.kind == kindObject && !slices.Contains(out, id) {
			out = append(out, id)
		}
	}
	return out
}

// LoadFiles checks each file on its own, as a standalone layer, the way
// `voltmcp vet FILE...` does. Relative cwd values resolve against each
// file's directory. The Config of the Result is that of the last file.
func LoadFiles(ctx context.Context, paths []string, opts *Options) (*Result, error) {
	o, err := prepare(opts)
	if err != nil {
		return nil, err
	}
	var d diags
	res := &Result{Config: &Config{}}
	for _, p := range paths {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		ld := o.Schema.readLayer(p, LayerFile, filepath.Dir(p), &d)
		if !ld.status.Found {
			d.list = append(d.list, Diagnostic{Severity: SeverityError, Code: CodeFileUnreadable,
				Message: "file does not exist", Position: Position{File: p}, Layer: LayerFile})
		}
		res.Config = merge([]*layerDoc{ld}, func(Layer) bool { return true }, o, &d)
		res.Files = append(res.Files, *ld.status)
	}
	d.list = d.list.unique()
	d.list.Sort()
	res.Diagnostics = d.list
	return res, nil
}

func prepare(opts *Options) (Options, error) {
	var o Options
	if opts != nil {
		o = *opts
	}
	if o.Schema == nil {
		s, err := NewSchema()
		if err != nil {
			return o, err
		}
		o.Schema = s
	}
	if o.Surface == "" {
		o.Surface = SurfaceInteractive
	}
	if o.Trust == nil {
		o.Trust = DecideTrust
	}
	return o, nil
}

// readLayer reads, parses, validates and normalizes one file.
func (s *Schema) readLayer(path string, layer Layer, baseDir string, d *diags) *layerDoc {
	st := &FileStatus{Layer: layer, Path: path}
	ld := &layerDoc{status: st, baseDir: baseDir}
	fail := func(code Code, off int, hint, format string, args ...any) *layerDoc {
		diag := Diagnostic{Severity: SeverityError, Code: code, Message: fmt.Sprintf(format, args...), Hint: hint,
			Position: Position{File: path}, Layer: layer}
		if ld.src != nil && off >= 0 {
			diag.Position = ld.src.position(off)
		}
		d.list = append(d.list, diag)
		st.Reason, st.Problem = diag.Message, &diag
		return ld
	}
	data, err := safefile.ReadFile(path, &safefile.ReadOptions{MaxSize: MaxFileSize})
	if errors.Is(err, fs.ErrNotExist) {
		return ld
	}
	st.Found = true
	var notRegular *safefile.NotRegularError
	var tooLarge *safefile.TooLargeError
	switch {
	case errors.As(err, &notRegular) && notRegular.Kind == "directory":
		return fail(CodeFileUnreadable, -1, "", "is a directory, not a file")
	case errors.As(err, &notRegular):
		return fail(CodeFileUnreadable, -1, "", "not a regular file (%s)", notRegular.Kind)
	case errors.As(err, &tooLarge) && tooLarge.Size < 0:
		return fail(CodeFileTooLarge, -1, "", "file grew past the limit of %d bytes (4 MiB) while being read", MaxFileSize)
	case errors.As(err, &tooLarge):
		return fail(CodeFileTooLarge, -1, "", "file is %d bytes; the limit is %d (4 MiB)", tooLarge.Size, MaxFileSize)
	case err != nil:
		verb := "read"
		if pe := (*fs.PathError)(nil); errors.As(err, &pe) && pe.Op == "open" {
			verb = "open"
		}
		return fail(CodeFileUnreadable, -1, "", "cannot %s: %v", verb, pathlessError(err))
	}
	sum := sha256.Sum256(data)
	st.SHA256 = hex.EncodeToString(sum[:])
	ld.src = newSource(path, layer, data)
	return s.parseLayer(ld, d)
}

// parseLayer turns the bytes of a read layer into its normalized tree.
func (s *Schema) parseLayer(ld *layerDoc, d *diags) *layerDoc {
	st := ld.status
	doc, dups, err := parseJSON(ld.src)
	if err != nil {
		var se *syntaxError
		var le *limitError
		if errors.As(err, &le) {
			diag := Diagnostic{Severity: SeverityError, Code: CodeFileTooLarge,
				Message: le.msg, Hint: le.hint, Position: ld.src.position(le.off), Layer: st.Layer}
			d.list = append(d.list, diag)
			st.Reason, st.Problem = le.msg, &diag
			return ld
		}
		diag := Diagnostic{Severity: SeverityError, Code: CodeJSONSyntax, Message: "invalid JSON: " + err.Error(),
			Position: ld.src.position(0), Layer: st.Layer}
		if errors.As(err, &se) {
			diag.Message, diag.Position = fmt.Sprintf("invalid JSON at byte %d: %s", se.off, se.msg), ld.src.position(se.off)
			d.list = append(d.list, diag)
		}
		st.Reason, st.Problem = "invalid JSON", &diag
		return ld
	}
	for _, dup := range dups {
		d.list = append(d.list, Diagnostic{Severity: SeverityError, Code: CodeDuplicateKey,
			Message: fmt.Sprintf("key appears twice (first at line %d); readers disagree on which wins", ld.src.position(dup.first).Line),
			Hint:    "keep one of them", Position: ld.src.position(dup.dup), Layer: st.Layer, Path: dup.path})
	}
	if doc.kind != kindObject {
		d.add(SeverityError, CodeNotObject, doc, "", "", "the top level must be an object, not %s", doc.kind)
		problem := d.list[len(d.list)-1]
		st.Reason, st.Problem = "not an object", &problem
		return ld
	}
	dialect := detectDialect(doc)
	st.Dialect = dialect
	if doc.get("mcpServers") != nil && doc.get("servers") != nil {
		d.addAt(SeverityError, CodeDialectConflict, doc, "servers", "keep servers in one of the two maps",
			"the file has both mcpServers and servers; only mcpServers is read")
	}
	if dialect != DialectVoltmcp {
		d.add(SeverityInfo, CodeDialect, doc, "", "", "read as %s", dialect.describe())
	}
	s.validate(doc, dialect, d)
	ld.doc = normalize(doc, dialect, d)
	// Values that failed validation are dropped here, before trust or
	// merge can read them; a server that lost any is marked and later
	// disabled.
	ld.doc.prune()
	ld.ok = true
	st.Loaded = true
	return ld
}

// pathlessError drops the path from an error (safefile.Pathless): the
// diagnostic already names the file.
func pathlessError(err error) error { return safefile.Pathless(err) }
