package search

import (
	"bufio"
	"bytes"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// The retrieval evaluation: a query set with the tool each query should
// find, and the metrics of a ranking on it.

// evalQuery is one query and the tools that answer it.
type evalQuery struct {
	Query string
	Gold  []Hit // any of them counts as found (Score unused)
}

// evalMetrics are the figures of one evaluation run. Each query has one
// wanted tool (perhaps listed under several servers), so recall@k is the
// share of queries that find it in the top k; mrr is the mean reciprocal
// rank of the first hit within the top 8.
type evalMetrics struct {
	r1, r5, r8, mrr float64
	n               int
}

// evaluate runs the queries on an index of docs built with p.
func evaluate(docs []Doc, queries []evalQuery, p rankParams) evalMetrics {
	ix := build(docs, p)
	var m evalMetrics
	for _, q := range queries {
		hits := ix.Search(q.Query, "", 8)
		rank := 0
		for i, h := range hits {
			for _, g := range q.Gold {
				if h.Server == g.Server && h.Tool == g.Tool {
					rank = i + 1
					break
				}
			}
			if rank > 0 {
				break
			}
		}
		if rank > 0 {
			m.mrr += 1 / float64(rank)
			m.r8++
			if rank <= 5 {
				m.r5++
			}
			if rank == 1 {
				m.r1++
			}
		}
	}
	if m.n = len(queries); m.n > 0 {
		n := float64(m.n)
		m.r1, m.r5, m.r8, m.mrr = m.r1/n, m.r5/n, m.r8/n, m.mrr/n
	}
	return m
}

// plainBM25 is the baseline: BM25 with k1 1.2 and b 0.75 over the tool
// name's parts and the description as one field, no stopwords, no
// stemming, no whole-name terms.
var plainBM25 = rankParams{
	k1:     1.2,
	weight: [numFields]float64{fieldName: 1, fieldDesc: 1},
	b:      [numFields]float64{fieldDesc: 0.75},
	pooled: true,
}

// loadMCPZero reads the MCP-Zero tool-retrieval set (tools.jsonl and
// queries.jsonl) from the directory $VOLTMCP_MCPZERO_DIR names; it skips
// the test or benchmark when that is unset. The set is for evaluation
// only and is never copied into the repository.
func loadMCPZero(tb testing.TB) ([]Doc, []evalQuery) {
	tb.Helper()
	dir := os.Getenv("VOLTMCP_MCPZERO_DIR")
	if dir == "" {
		tb.Skip("the MCP-Zero evaluation set is not given: set VOLTMCP_MCPZERO_DIR to a directory holding its tools.jsonl and queries.jsonl")
	}
	tools, err := os.ReadFile(filepath.Join(dir, "tools.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	queries, err := os.ReadFile(filepath.Join(dir, "queries.jsonl"))
	if err != nil {
		tb.Fatal(err)
	}
	var docs []Doc
	eachLine(tb, tools, func(line []byte) {
		var t struct {
			Server      string          `json:"server"`
			Name        string          `json:"name"`
			Description string          `json:"description"`
			InputSchema json.RawMessage `json:"inputSchema"`
		}
		if err := json.Unmarshal(line, &t); err != nil {
			tb.Fatal(err)
		}
		docs = append(docs, Doc{Server: t.Server, Name: t.Name, Description: t.Description, InputSchema: t.InputSchema})
	})
	var qs []evalQuery
	eachLine(tb, queries, func(line []byte) {
		type ref struct {
			Server string `json:"server"`
			Name   string `json:"name"`
			Also   []ref  `json:"also"`
		}
		var q struct {
			Query string `json:"query"`
			Gold  []ref  `json:"gold"`
		}
		if err := json.Unmarshal(line, &q); err != nil {
			tb.Fatal(err)
		}
		eq := evalQuery{Query: q.Query}
		for _, g := range q.Gold {
			eq.Gold = append(eq.Gold, Hit{Server: g.Server, Tool: g.Name})
			for _, a := range g.Also {
				eq.Gold = append(eq.Gold, Hit{Server: a.Server, Tool: a.Name})
			}
		}
		qs = append(qs, eq)
	})
	return docs, qs
}

func eachLine(tb testing.TB, data []byte, fn func([]byte)) {
	tb.Helper()
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		if line := bytes.TrimSpace(sc.Bytes()); len(line) > 0 {
			fn(line)
		}
	}
	if err := sc.Err(); err != nil {
		tb.Fatal(err)
	}
}

// TestSearchQualityMCPZero logs the retrieval figures on the MCP-Zero set
// and fails when the ranker falls below what it measured when it was
// tuned (R@5 0.972, MRR@8 0.906), or no longer beats plain BM25.
func TestSearchQualityMCPZero(t *testing.T) {
	docs, queries := loadMCPZero(t)
	ours := evaluate(docs, queries, defaultParams)
	base := evaluate(docs, queries, plainBM25)
	t.Logf("MCP-Zero, %d tools, %d queries", len(docs), ours.n)
	t.Logf("ours:       R@1 %.3f  R@5 %.3f  R@8 %.3f  MRR@8 %.3f", ours.r1, ours.r5, ours.r8, ours.mrr)
	t.Logf("plain BM25: R@1 %.3f  R@5 %.3f  R@8 %.3f  MRR@8 %.3f", base.r1, base.r5, base.r8, base.mrr)
	if ours.r5 < 0.96 || ours.mrr < 0.89 {
		t.Errorf("R@5 %.3f, MRR@8 %.3f: want at least 0.96 and 0.89", ours.r5, ours.mrr)
	}
	if ours.r8 <= base.r8 || ours.mrr <= base.mrr {
		t.Errorf("no better than plain BM25")
	}
}

// TestSearchAblationMCPZero and TestSearchAblationCorpus log what each
// ranking choice is worth: the figures of the default parameters with one
// thing changed at a time (run with -v).
func TestSearchAblationMCPZero(t *testing.T) {
	docs, queries := loadMCPZero(t)
	run := func(name string, p rankParams) {
		m := evaluate(docs, queries, p)
		t.Logf("%-28s R@1 %.3f  R@5 %.3f  R@8 %.3f  MRR@8 %.3f", name, m.r1, m.r5, m.r8, m.mrr)
	}
	run("plain BM25", plainBM25)
	run("default", defaultParams)
	for _, v := range searchVariants() {
		run(v.name, v.p)
	}
}

type searchVariant struct {
	name string
	p    rankParams
}

// searchVariants are the default parameters with one thing changed each.
func searchVariants() []searchVariant {
	var vs []searchVariant
	add := func(name string, change func(p *rankParams)) {
		p := defaultParams
		change(&p)
		vs = append(vs, searchVariant{name, p})
	}
	add("pooled", func(p *rankParams) { p.pooled = true })
	add("no whole", func(p *rankParams) { p.whole = false })
	add("no stopwords", func(p *rankParams) { p.stopwords = false })
	add("no stem", func(p *rankParams) { p.stem = false })
	add("no fold", func(p *rankParams) { p.fold = false })
	for _, w := range []float64{0, 0.25, 0.75, 1} {
		add("synonyms "+ftoa(w), func(p *rankParams) { p.synonyms = w })
	}
	add("no title", func(p *rankParams) { p.weight[fieldTitle] = 0 })
	add("no server", func(p *rankParams) { p.weight[fieldServer] = 0 })
	add("no params", func(p *rankParams) { p.weight[fieldParams] = 0 })
	add("equal weights", func(p *rankParams) { p.weight = [numFields]float64{1, 1, 1, 1, 1} })
	for _, w := range []float64{1, 2, 4, 6} {
		add("name weight "+ftoa(w), func(p *rankParams) { p.weight[fieldName] = w })
	}
	for _, w := range []float64{0.25, 0.5, 2} {
		add("server weight "+ftoa(w), func(p *rankParams) { p.weight[fieldServer] = w })
	}
	for _, w := range []float64{0.25, 1} {
		add("params weight "+ftoa(w), func(p *rankParams) { p.weight[fieldParams] = w })
	}
	for _, k := range []float64{0.6, 1.2, 1.5, 2} {
		add("k1 "+ftoa(k), func(p *rankParams) { p.k1 = k })
	}
	for _, b := range []float64{0.25, 0.75, 0.9} {
		add("name b "+ftoa(b), func(p *rankParams) { p.b[fieldName] = b })
	}
	for _, b := range []float64{0.25, 0.75, 0.9} {
		add("desc b "+ftoa(b), func(p *rankParams) { p.b[fieldDesc] = b })
	}
	return vs
}

func ftoa(f float64) string {
	b, _ := json.Marshal(f)
	return string(b)
}

// loadCorpus reads testdata/corpus.json: servers with their tools,
// and queries with the tool each should find ("server/tool"); first marks
// the obvious ones, whose tool must come first.
func loadCorpus(tb testing.TB) (docs []Doc, queries []evalQuery, first []bool) {
	tb.Helper()
	data, err := os.ReadFile(filepath.Join("testdata", "corpus.json"))
	if err != nil {
		tb.Fatal(err)
	}
	var c struct {
		Servers []struct {
			ID    string `json:"id"`
			Title string `json:"title"`
			Tools []struct {
				Name        string          `json:"name"`
				Title       string          `json:"title"`
				Description string          `json:"description"`
				InputSchema json.RawMessage `json:"inputSchema"`
				Annotations json.RawMessage `json:"annotations"`
			} `json:"tools"`
		} `json:"servers"`
		Queries []struct {
			Query string `json:"query"`
			Want  string `json:"want"`
			First bool   `json:"first"`
		} `json:"queries"`
	}
	if err := json.Unmarshal(data, &c); err != nil {
		tb.Fatal(err)
	}
	for _, s := range c.Servers {
		for _, t := range s.Tools {
			docs = append(docs, Doc{Server: s.ID, ServerTitle: s.Title, Name: t.Name, Title: t.Title,
				Description: t.Description, InputSchema: t.InputSchema, Annotations: t.Annotations})
		}
	}
	for _, q := range c.Queries {
		server, tool, _ := strings.Cut(q.Want, "/")
		queries = append(queries, evalQuery{Query: q.Query, Gold: []Hit{{Server: server, Tool: tool}}})
		first = append(first, q.First)
	}
	return docs, queries, first
}

func TestSearchAblationCorpus(t *testing.T) {
	docs, queries, _ := loadCorpus(t)
	run := func(name string, p rankParams) {
		m := evaluate(docs, queries, p)
		t.Logf("%-28s R@1 %.3f  R@5 %.3f  R@8 %.3f  MRR@8 %.3f", name, m.r1, m.r5, m.r8, m.mrr)
	}
	run("plain BM25", plainBM25)
	run("default", defaultParams)
	for _, v := range searchVariants() {
		run(v.name, v.p)
	}
}
