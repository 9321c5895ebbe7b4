package engine

import (
	"bytes"
	"encoding/json"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync"
	"unicode"
	"unicode/utf8"
)

// The search index behind the gateway's search action: field-weighted
// BM25 (BM25F) over every cached tool of every server, in memory. It is
// rebuilt whole whenever metadata changes (BenchmarkBuildIndex), and a
// search reads only the postings of the query's terms (BenchmarkSearch).
// docs/benchmarks.md has the latency and retrieval figures;
// search_eval_test.go has the evaluation they come from.

// searchDoc is one tool as the index sees it.
type searchDoc struct {
	Server      string // server id
	ServerTitle string // the server's display title ("" if none)
	Tool        Tool
}

// searchHit is one result of a search.
type searchHit struct {
	Server string
	Tool   string
	Score  float64
}

// The fields of a document. A term's frequency in each field is weighted
// and length-normalized on its own, then the fields are summed (BM25F).
const (
	fieldName   = iota // tool name: its parts and the whole name
	fieldTitle         // Tool.Title, or annotations.title when that is empty
	fieldDesc          // Tool.Description
	fieldServer        // server id and server title
	fieldParams        // input schema property names, top level and one level down
	numFields
)

// searchParams are the ranking knobs. defaultSearchParams is what the
// gateway uses; the tests vary them to measure each one.
type searchParams struct {
	k1     float64
	weight [numFields]float64 // 0 leaves the field out
	b      [numFields]float64 // length normalization of each field
	// pooled puts all the fields in one, weighted 1, normalized by
	// b[fieldDesc]: plain BM25 over the concatenated text.
	pooled bool
	// whole adds, for a word of several parts (list_projects, getUser,
	// ListObjectsV2) and for the whole tool name, the parts joined in one
	// lowercased term (listprojects).
	whole     bool
	stopwords bool // drop a short list of English function words
	stem      bool // strip plural, -ing, -ed and a final -e
	fold      bool // map accented Latin letters to ASCII
	// synonyms, when above 0, adds to a query the synonyms of its verbs
	// (retrieve brings in get and fetch), each weighted this much.
	synonyms float64
}

var defaultSearchParams = searchParams{
	k1: 0.9,
	//        name title desc server params
	weight: [numFields]float64{3, 2, 1, 1, 0.5},
	b:      [numFields]float64{0.5, 0.5, 0.5, 0.5, 0.5},
	whole:  true, stopwords: true, stem: true, fold: true,
	synonyms: 0.5,
}

// synonymGroups are words that tool names and queries use for the same
// action. A query word of a group also looks for the others.
var synonymGroups = [][]string{
	{"get", "retrieve", "fetch"},
	{"list", "enumerate"},
	{"create", "add", "make"},
	{"delete", "remove", "drop", "erase", "destroy"},
	{"update", "modify", "edit"},
	{"search", "find", "lookup"},
	{"run", "execute", "exec", "invoke"},
	{"stop", "cancel", "kill", "terminate", "abort"},
	{"start", "launch"},
}

// Bounds on what one tool may cost the index, whatever a server sends.
const (
	maxFieldText   = 16 << 10  // bytes of a name, title or description read
	maxTermLen     = 64        // bytes of a word kept; the rest is ignored
	maxSchemaBytes = 256 << 10 // bytes of an input schema or annotations scanned
	maxSchemaDepth = 32        // nesting at which a scan stops
	maxParams      = 256       // property names read from one schema
	maxQueryTerms  = 64        // distinct terms of a query used; the rest are ignored
)

// searchIndex is immutable once built; any number of searches may run on
// it at once.
type searchIndex struct {
	p        searchParams
	docs     []searchHit      // server and tool name of each document
	serverOf []int32          // each document's server, an index into servers
	servers  map[string]int32 // server id -> index
	terms    map[string]int32 // term -> id
	// The postings of term t are post[start[t]:start[t+1]], in document
	// order.
	start []int32
	post  []posting
	// synonyms maps a query term to the index terms of its synonyms.
	synonyms map[string][]int32
	scratch  sync.Pool // *searchScratch
}

// newSearchIndex builds the index of docs with the default parameters.
func newSearchIndex(docs []searchDoc) *searchIndex {
	return buildSearchIndex(docs, defaultSearchParams)
}

// A build reads the documents in shards of at least minShard, one
// goroutine a shard, up to GOMAXPROCS (and maxShards) at once. Each shard
// has its own dictionary; merging them in shard order gives every term the
// id a single pass would, so the index is the same whatever the number of
// shards.
const (
	minShard  = 1024
	maxShards = 8
)

// entryChunk is how many docTerms a shard stores in one allocation.
// Chunks only live while a build runs, and builds come one after the
// other, so they are kept for the next one.
const entryChunk = 1 << 14

var chunkPool = sync.Pool{New: func() any { return new([entryChunk]docTerm) }}

// posting is a document a term occurs in, and the term's whole
// contribution to the document's score: idf times the saturated weighted
// frequency.
type posting struct {
	doc int32
	w   float32
}

// termState is what a shard keeps of each of its terms while it reads.
type termState struct {
	last int32 // the last document the term was seen in, plus one
	slot int32 // the term's place in local, for that document
	df   int32 // how many documents it occurs in
}

// docTerm is a term's count in each field of one document, saturated.
type docTerm struct {
	term int32
	tf   [numFields]uint8
}

// shardBuilder reads one shard of the documents: docs[lo:hi].
type shardBuilder struct {
	p  *searchParams
	ix *searchIndex // read only: serverOf
	tk tokenizer
	jw jsonWalker
	lo int
	// The shard's dictionary: term -> id, and the terms in id order.
	terms    map[string]int32
	termList []string
	// Parts repeat far more than they differ: the term of each part seen
	// (-1 for a stopword) is remembered rather than normalized again, and
	// so are the terms of each property name and of each server.
	partTerm   partTable
	propTerms  map[string][]int32
	serverTerm map[int32][]int32
	state      []termState // per term
	local      []docTerm
	cur        int32 // document being read
	field      int   // field being read
	collect    []int32
	// What the shard hands over: each document's terms, document after
	// document, in chunks so that growing never copies; how many each
	// document has; its field lengths; and their sums.
	chunks  [][]docTerm
	nterms  []int32
	lens    [][numFields]uint32
	total   [numFields]float64
	entries int
}

// term returns the id of a word from the tokenizer, interning it; -1 for
// a stopword.
func (b *shardBuilder) term(w []byte, part bool) int32 {
	if part {
		h := b.partTerm.hash(w)
		id, ok := b.partTerm.get(h, w)
		if !ok {
			id = -1
			if term, keep := b.tk.norm(w); keep {
				id = b.intern(term)
			}
			b.partTerm.put(h, w, id)
		}
		return id
	}
	return b.intern(w)
}

func (b *shardBuilder) intern(term []byte) int32 {
	id, ok := b.terms[string(term)]
	if !ok {
		id = int32(len(b.termList))
		t := string(term)
		b.terms[t] = id
		b.termList = append(b.termList, t)
		b.state = append(b.state, termState{})
	}
	return id
}

// add counts a word in the current field of the current document.
func (b *shardBuilder) add(w []byte, part bool) {
	if id := b.term(w, part); id >= 0 {
		b.count(id)
	}
}

// gather appends a word's term to b.collect.
func (b *shardBuilder) gather(w []byte, part bool) {
	if id := b.term(w, part); id >= 0 {
		b.collect = append(b.collect, id)
	}
}

func (b *shardBuilder) count(id int32) {
	f := b.field
	if b.p.pooled {
		f = fieldDesc
	}
	st := &b.state[id]
	if st.last != b.cur+1 {
		st.last = b.cur + 1
		st.slot = int32(len(b.local))
		st.df++
		b.local = append(b.local, docTerm{term: id})
	}
	if e := &b.local[st.slot]; e.tf[f] < math.MaxUint8 {
		e.tf[f]++
	}
	if l := &b.lens[int(b.cur)-b.lo][f]; *l < math.MaxUint32 {
		*l++
	}
}

// read reads the shard's documents.
func (b *shardBuilder) read(docs []searchDoc) {
	p := b.p
	add, gather := b.add, b.gather
	var ann, propBuf []byte
	for i, d := range docs {
		b.cur = int32(b.lo + i)
		if p.weight[fieldName] > 0 {
			b.field = fieldName
			b.tk.words(d.Tool.Name, true, add)
		}
		if p.weight[fieldTitle] > 0 {
			b.field = fieldTitle
			title := d.Tool.Title
			if title == "" && len(d.Tool.Annotations) > 0 {
				ann = annotationsTitle(&b.jw, d.Tool.Annotations, ann[:0])
				title = string(ann) // small; only when the title is there
			}
			b.tk.words(title, false, add)
		}
		if p.weight[fieldDesc] > 0 {
			b.field = fieldDesc
			b.tk.words(d.Tool.Description, false, add)
		}
		if p.weight[fieldServer] > 0 {
			b.field = fieldServer
			sid := b.ix.serverOf[b.cur]
			ids, ok := b.serverTerm[sid]
			if !ok {
				b.collect = b.collect[:0]
				b.tk.words(d.Server, false, gather)
				b.tk.words(d.ServerTitle, false, gather)
				ids = slices.Clone(b.collect)
				b.serverTerm[sid] = ids
			}
			for _, id := range ids {
				b.count(id)
			}
		}
		if p.weight[fieldParams] > 0 && len(d.Tool.InputSchema) > 0 {
			b.field = fieldParams
			schemaParams(&b.jw, d.Tool.InputSchema, func(raw []byte) {
				ids, ok := b.propTerms[string(raw)]
				if !ok {
					propBuf = appendJSONString(propBuf[:0], raw)
					b.collect = b.collect[:0]
					b.tk.words(string(propBuf), true, gather)
					ids = slices.Clone(b.collect)
					b.propTerms[string(raw)] = ids
				}
				for _, id := range ids {
					b.count(id)
				}
			})
		}
		local := b.local
		b.nterms[i] = int32(len(local))
		b.entries += len(local)
		for len(local) > 0 {
			if len(b.chunks) == 0 || len(b.chunks[len(b.chunks)-1]) == entryChunk {
				b.chunks = append(b.chunks, chunkPool.Get().(*[entryChunk]docTerm)[:0])
			}
			c := &b.chunks[len(b.chunks)-1]
			k := min(len(local), entryChunk-len(*c))
			*c = append(*c, local[:k]...)
			local = local[k:]
		}
		b.local = b.local[:0]
		for f := range numFields {
			b.total[f] += float64(b.lens[i][f])
		}
	}
}

// buildSearchIndex builds the index of docs with parameters p, in as many
// shards as GOMAXPROCS allows (see minShard).
func buildSearchIndex(docs []searchDoc, p searchParams) *searchIndex {
	return buildShards(docs, p, max(1, min(len(docs)/minShard, runtime.GOMAXPROCS(0), maxShards)))
}

// buildShards builds the index of docs in nshards shards.
func buildShards(docs []searchDoc, p searchParams, nshards int) *searchIndex {
	nshards = max(1, min(nshards, len(docs)))
	ix := &searchIndex{
		p:        p,
		docs:     make([]searchHit, len(docs)),
		serverOf: make([]int32, len(docs)),
		servers:  make(map[string]int32),
	}
	for i, d := range docs {
		sid, ok := ix.servers[d.Server]
		if !ok {
			sid = int32(len(ix.servers))
			ix.servers[d.Server] = sid
		}
		ix.serverOf[i] = sid
		ix.docs[i] = searchHit{Server: d.Server, Tool: d.Tool.Name}
	}

	shards := make([]*shardBuilder, nshards)
	var wg sync.WaitGroup
	for k := range shards {
		lo, hi := k*len(docs)/nshards, (k+1)*len(docs)/nshards
		b := &shardBuilder{
			p: &ix.p, ix: ix, tk: tokenizer{p: &ix.p}, lo: lo,
			terms:      make(map[string]int32),
			partTerm:   newPartTable(),
			propTerms:  make(map[string][]int32),
			serverTerm: make(map[int32][]int32),
			nterms:     make([]int32, hi-lo),
			lens:       make([][numFields]uint32, hi-lo),
		}
		shards[k] = b
		if nshards == 1 {
			b.read(docs[lo:hi])
		} else {
			wg.Go(func() { b.read(docs[lo:hi]) })
		}
	}
	wg.Wait()

	// Merge the dictionaries: the first shard's ids stand, later shards'
	// terms are mapped to them or added after, in order.
	ix.terms = shards[0].terms
	df := make([]int32, len(shards[0].state), len(ix.terms))
	for id, st := range shards[0].state {
		df[id] = st.df
	}
	remap := make([][]int32, nshards) // nil: ids stand
	var total [numFields]float64
	entries := 0
	for k, b := range shards {
		for f := range numFields {
			total[f] += b.total[f]
		}
		entries += b.entries
		if k == 0 {
			continue
		}
		remap[k] = make([]int32, len(b.termList))
		for id, term := range b.termList {
			g, ok := ix.terms[term]
			if !ok {
				g = int32(len(df))
				ix.terms[term] = g
				df = append(df, 0)
			}
			remap[k][id] = g
			df[g] += b.state[id].df
		}
	}

	// Each field's length normalization needs the average length, so
	// weights are computed once every document is read.
	n := float64(len(docs))
	var norm [numFields]float64 // b / average length
	for f := range numFields {
		if total[f] > 0 {
			norm[f] = p.b[f] * n / total[f]
		}
	}
	weight, bf := p.weight, p.b
	if p.pooled {
		weight = [numFields]float64{fieldDesc: 1}
	}
	// Per term, its idf and where its next posting goes.
	type termPost struct {
		idf  float64
		next int32
	}
	tp := make([]termPost, len(df))
	ix.start = make([]int32, len(df)+1)
	for t, c := range df {
		tp[t] = termPost{idf: math.Log(1 + (n-float64(c)+0.5)/(float64(c)+0.5)), next: ix.start[t]}
		ix.start[t+1] = ix.start[t] + c
	}
	ix.post = make([]posting, entries)
	for k, b := range shards {
		ci, from := 0, 0 // the next document's first entry: b.chunks[ci][from]
		for i, nt := range b.nterms {
			var lnorm [numFields]float64 // weight / (1 - b + b*len/avglen)
			for f := range numFields {
				if weight[f] > 0 {
					lnorm[f] = weight[f] / (1 - bf[f] + norm[f]*float64(b.lens[i][f]))
				}
			}
			for range nt {
				if from == len(b.chunks[ci]) {
					ci, from = ci+1, 0
				}
				e := &b.chunks[ci][from]
				from++
				var tf float64
				for f := range numFields {
					if e.tf[f] > 0 {
						tf += float64(e.tf[f]) * lnorm[f]
					}
				}
				t := e.term
				if remap[k] != nil {
					t = remap[k][t]
				}
				at := &tp[t]
				ix.post[at.next] = posting{doc: int32(b.lo + i), w: float32(at.idf * tf / (p.k1 + tf))}
				at.next++
			}
		}
		for _, c := range b.chunks {
			chunkPool.Put((*[entryChunk]docTerm)(c[:entryChunk]))
		}
		b.chunks = nil
	}
	if p.synonyms > 0 {
		tk := tokenizer{p: &ix.p}
		ix.synonyms = make(map[string][]int32)
		for _, group := range synonymGroups {
			norm := make([]string, 0, len(group))
			for _, w := range group {
				tk.terms(w, false, func(term []byte) { norm = append(norm, string(term)) })
			}
			for _, a := range norm {
				for _, b := range norm {
					if id, ok := ix.terms[b]; ok && a != b {
						ix.synonyms[a] = append(ix.synonyms[a], id)
					}
				}
			}
		}
	}
	return ix
}

// partTable maps a word's part to its term id, like a map[string]int32
// but faster for the short keys of a build: open addressing over a
// power-of-two table, keys in one arena.
type partTable struct {
	seed  maphash.Seed
	slots []partSlot
	keys  []byte
	n     int
}

type partSlot struct {
	hash uint32
	off  uint32 // key in keys; an empty slot has n 0
	n    uint32
	id   int32
}

func newPartTable() partTable {
	return partTable{seed: maphash.MakeSeed(), slots: make([]partSlot, 1<<12)}
}

func (t *partTable) hash(w []byte) uint32 { return uint32(maphash.Bytes(t.seed, w)) }

func (t *partTable) get(h uint32, w []byte) (int32, bool) {
	mask := uint32(len(t.slots) - 1)
	for i := h & mask; ; i = (i + 1) & mask {
		s := &t.slots[i]
		if s.n == 0 {
			return 0, false
		}
		if s.hash == h && int(s.n) == len(w) && string(t.keys[s.off:s.off+s.n]) == string(w) {
			return s.id, true
		}
	}
}

// put adds w, which get did not find.
func (t *partTable) put(h uint32, w []byte, id int32) {
	if len(w) == 0 {
		return
	}
	if 2*(t.n+1) > len(t.slots) {
		old := t.slots
		t.slots = make([]partSlot, 2*len(old))
		for _, s := range old {
			if s.n != 0 {
				t.insert(s)
			}
		}
	}
	t.insert(partSlot{hash: h, off: uint32(len(t.keys)), n: uint32(len(w)), id: id})
	t.keys = append(t.keys, w...)
	t.n++
}

func (t *partTable) insert(s partSlot) {
	mask := uint32(len(t.slots) - 1)
	i := s.hash & mask
	for t.slots[i].n != 0 {
		i = (i + 1) & mask
	}
	t.slots[i] = s
}

// searchScratch is what one search works in, kept for the next.
type searchScratch struct {
	tk      tokenizer
	score   []float64 // per document; 0 until a posting adds to it
	touched []int32   // the documents with a score
	terms   []int32   // the query's terms
	qweight []float64 // and their weights
}

// search returns at most limit hits, best first; ties go to the server id,
// then the tool name, in byte order. server != "" keeps that server's
// tools only. A query with no word the index knows, or only stopwords,
// returns nil, as does a limit below 1.
func (ix *searchIndex) search(query, server string, limit int) []searchHit {
	if limit < 1 || len(ix.docs) == 0 {
		return nil
	}
	want := int32(-1)
	if server != "" {
		id, ok := ix.servers[server]
		if !ok {
			return nil
		}
		want = id
	}
	s, _ := ix.scratch.Get().(*searchScratch)
	if s == nil {
		s = &searchScratch{tk: tokenizer{p: &ix.p}, score: make([]float64, len(ix.docs))}
	}
	defer ix.scratch.Put(s)

	// The query's terms, each once, with a weight: 1 for the query's own
	// words, p.synonyms for the synonyms they bring in.
	s.terms, s.qweight = s.terms[:0], s.qweight[:0]
	addTerm := func(id int32, w float64) {
		for i, t := range s.terms {
			if t == id {
				s.qweight[i] = max(s.qweight[i], w)
				return
			}
		}
		if len(s.terms) == maxQueryTerms {
			return
		}
		s.terms = append(s.terms, id)
		s.qweight = append(s.qweight, w)
	}
	s.tk.terms(query, false, func(term []byte) {
		if id, ok := ix.terms[string(term)]; ok {
			addTerm(id, 1)
		}
		for _, id := range ix.synonyms[string(term)] {
			addTerm(id, ix.p.synonyms)
		}
	})

	s.touched = s.touched[:0]
	for k, t := range s.terms {
		qw := s.qweight[k]
		lo, hi := ix.start[t], ix.start[t+1]
		for _, pe := range ix.post[lo:hi] {
			d := pe.doc
			if want >= 0 && ix.serverOf[d] != want {
				continue
			}
			if s.score[d] == 0 { // every posting's weight is above 0
				s.touched = append(s.touched, d)
			}
			s.score[d] += qw * float64(pe.w)
		}
	}

	// Keep the best limit documents in a heap whose root is the worst kept.
	top := make([]int32, 0, min(limit, len(s.touched)))
	better := func(a, b int32) bool {
		if s.score[a] != s.score[b] {
			return s.score[a] > s.score[b]
		}
		da, db := &ix.docs[a], &ix.docs[b]
		if da.Server != db.Server {
			return da.Server < db.Server
		}
		if da.Tool != db.Tool {
			return da.Tool < db.Tool
		}
		return a < b
	}
	down := func(i int) {
		for {
			w := i
			if l := 2*i + 1; l < len(top) && better(top[w], top[l]) {
				w = l
			}
			if r := 2*i + 2; r < len(top) && better(top[w], top[r]) {
				w = r
			}
			if w == i {
				return
			}
			top[i], top[w] = top[w], top[i]
			i = w
		}
	}
	for _, d := range s.touched {
		if len(top) < limit {
			top = append(top, d)
			for i := len(top) - 1; i > 0; {
				parent := (i - 1) / 2
				if !better(top[parent], top[i]) {
					break
				}
				top[i], top[parent] = top[parent], top[i]
				i = parent
			}
		} else if better(d, top[0]) {
			top[0] = d
			down(0)
		}
	}
	var hits []searchHit
	if len(top) > 0 {
		hits = make([]searchHit, len(top))
	}
	for i := len(top) - 1; i >= 0; i-- {
		d := top[0]
		hits[i] = searchHit{Server: ix.docs[d].Server, Tool: ix.docs[d].Tool, Score: s.score[d]}
		top[0] = top[len(top)-1]
		top = top[:len(top)-1]
		down(0)
	}
	for _, d := range s.touched {
		s.score[d] = 0
	}
	return hits
}

// tokenizer turns text into index terms. A word is a run of letters and
// digits, and the underscores and hyphens inside it; in a name, any
// punctuation inside it. A word's parts are split at those joiners, at
// lower-to-upper case changes (getUser), before the last capital of an
// acronym (HTTPServer) and between letters and digits (v2). Each part is
// lowercased, folded, checked against the stopwords and stemmed; a word
// of several parts also gives its parts joined (the whole term).
type tokenizer struct {
	p       *searchParams
	word    []byte // the current word, lowercased, without joiners
	cuts    []int  // where each part after the first starts in word
	acro    []bool // per cut: made before the last capital of an acronym
	upper   []bool // per byte of word: was the letter upper case
	stemBuf []byte
}

// words emits the words of s: each part of a word, lowercased and folded
// but not normalized (part is true; see norm), and the whole term of a
// word of several parts. In a name, every character other than a letter,
// a digit or white space joins, so a tool name is one word.
func (t *tokenizer) words(s string, name bool, emit func(w []byte, part bool)) {
	if len(s) > maxFieldText {
		s = s[:maxFieldText]
	}
	t.word, t.cuts, t.acro, t.upper = t.word[:0], t.cuts[:0], t.acro[:0], t.upper[:0]
	joined := false // a joiner was seen since the last letter or digit
	for i := 0; i < len(s); {
		c := s[i]
		// The common case, a word all in lowercase letters, perhaps
		// capitalized, or all in digits, that ends at white space or
		// punctuation, skips letter: it is one part.
		if len(t.word) == 0 && (isLowerAlnum(c) || 'A' <= c && c <= 'Z') {
			j, digits, mixed := i+1, isDigit(c), false
			for j < len(s) && isLowerAlnum(s[j]) {
				mixed = mixed || isDigit(s[j]) != digits
				j++
			}
			if !mixed && (j == len(s) || s[j] < utf8.RuneSelf && !('A' <= s[j] && s[j] <= 'Z') &&
				s[j] != '_' && s[j] != '-' && !(name && s[j] > ' ')) {
				t.word = append(t.word, s[i:min(j, i+maxTermLen)]...)
				if 'A' <= c && c <= 'Z' {
					t.word[0] = c + 'a' - 'A'
				}
				emit(t.word, true)
				t.word = t.word[:0]
				i = j
				continue
			}
		}
		var r rune
		size := 1
		if c < utf8.RuneSelf {
			r = rune(c)
		} else {
			r, size = utf8.DecodeRuneInString(s[i:])
		}
		i += size
		switch {
		case c < utf8.RuneSelf && ('a' <= c && c <= 'z' || '0' <= c && c <= '9'):
			t.letter(c, false, joined)
			joined = false
		case 'A' <= c && c <= 'Z':
			t.letter(c+'a'-'A', true, joined)
			joined = false
		case c < utf8.RuneSelf:
			if len(t.word) > 0 && (c == '_' || c == '-' || name && c > ' ') {
				joined = true
			} else {
				t.flush(emit)
				joined = false
			}
		case unicode.IsLetter(r) || unicode.IsDigit(r):
			upper := unicode.IsUpper(r)
			lower := unicode.ToLower(r)
			if t.p.fold {
				if f := foldLatin(lower); f != "" {
					for j := 0; j < len(f); j++ {
						t.letter(f[j], upper && j == 0, joined && j == 0)
					}
					joined = false
					continue
				}
			}
			var buf [utf8.UTFMax]byte
			n := utf8.EncodeRune(buf[:], lower)
			for j := 0; j < n; j++ {
				t.letter(buf[j], upper && j == 0, joined && j == 0)
			}
			joined = false
		default:
			t.flush(emit)
			joined = false
		}
	}
	t.flush(emit)
}

func isLowerAlnum(c byte) bool { return 'a' <= c && c <= 'z' || '0' <= c && c <= '9' }

func isDigit(c byte) bool { return '0' <= c && c <= '9' }

// letter appends one byte of a word; joined says a joiner came before it.
func (t *tokenizer) letter(c byte, upper, joined bool) {
	n := len(t.word)
	if n >= maxTermLen {
		return
	}
	if n > 0 {
		prev := t.word[n-1]
		digit, prevDigit := '0' <= c && c <= '9', '0' <= prev && prev <= '9'
		switch {
		case joined, digit != prevDigit:
			t.cut(n, false)
		case upper && !t.upper[n-1] && !prevDigit:
			t.cut(n, false) // getUser
		case !upper && c >= 'a' && c <= 'z' && t.upper[n-1] && n >= 2 && t.upper[n-2]:
			t.cut(n-1, true) // HTTPServer: the S starts a part
		}
	}
	t.word = append(t.word, c)
	t.upper = append(t.upper, upper)
}

func (t *tokenizer) cut(at int, acro bool) {
	if k := len(t.cuts); k > 0 && t.cuts[k-1] >= at {
		return
	}
	if at > 0 {
		t.cuts = append(t.cuts, at)
		t.acro = append(t.acro, acro)
	}
}

// flush emits the current word's terms and starts a new word.
func (t *tokenizer) flush(emit func(w []byte, part bool)) {
	if len(t.word) == 0 {
		return
	}
	// An acronym's plural (APIs, URLs, IDs) is the acronym, not a cut
	// before its last capital: drop the cut and the s.
	// Bytes are only ever dropped, so word, written over t.word, never
	// overtakes what is still to read; indices are those of t.word as read.
	word, cuts, from := t.word[:0], t.cuts[:0], 0
	for k, at := range t.cuts {
		end := len(t.upper)
		if k+1 < len(t.cuts) {
			end = t.cuts[k+1]
		}
		if t.acro[k] && end-at == 2 && t.word[at+1] == 's' {
			word = append(word, t.word[from:at+1]...)
			from = at + 2
			continue
		}
		cuts = append(cuts, at-(from-len(word)))
	}
	t.word, t.cuts = append(word, t.word[from:]...), cuts
	from = 0
	for k := 0; k <= len(t.cuts); k++ {
		to := len(t.word)
		if k < len(t.cuts) {
			to = t.cuts[k]
		}
		emit(t.word[from:to], true)
		from = to
	}
	if len(t.cuts) > 0 && t.p.whole {
		emit(t.word, false)
	}
	t.word, t.cuts, t.acro, t.upper = t.word[:0], t.cuts[:0], t.acro[:0], t.upper[:0]
}

// norm returns the term of a word's part, which may be in t's buffer; ok
// is false for a stopword.
func (t *tokenizer) norm(w []byte) (term []byte, ok bool) {
	if t.p.stopwords && isStopword(w) {
		return nil, false
	}
	if t.p.stem {
		// Stemming shortens in place, and may put a y where "ies" was:
		// work on a copy so the word stays intact.
		t.stemBuf = append(t.stemBuf[:0], w...)
		w = stem(t.stemBuf)
	}
	return w, true
}

// terms emits the terms of s: its words' parts normalized, and their
// whole terms.
func (t *tokenizer) terms(s string, name bool, emit func([]byte)) {
	t.words(s, name, func(w []byte, part bool) {
		if part {
			var ok bool
			if w, ok = t.norm(w); !ok {
				return
			}
		}
		emit(w)
	})
}

// isStopword reports whether w is one of a few English function words
// that say nothing of what a tool does. Words that do (get, list, new,
// all, not) are not among them.
func isStopword(w []byte) bool {
	if len(w) > 5 {
		return false
	}
	switch string(w) {
	case "a", "an", "and", "are", "as", "at", "be", "by", "can", "do",
		"does", "for", "from", "has", "have", "how", "i", "if", "in", "into",
		"is", "it", "its", "me", "my", "of", "on", "or", "our", "so", "such",
		"that", "the", "their", "them", "then", "there", "these", "this",
		"those", "to", "was", "we", "were", "what", "when", "where", "which",
		"who", "will", "with", "you", "your":
		return true
	}
	return false
}

// stem strips an English inflection from a lowercase ASCII word, in
// place: plural -s and -ies, then -ing, -ed or -ied, then a doubled final
// consonant and a final -e, so create, creates, created and creating all
// become creat. It is deliberately light: it only has to map a query's
// word and a description's word to the same term, never to a real root.
func stem(w []byte) []byte {
	for _, c := range w {
		if c < 'a' || c > 'z' {
			return w
		}
	}
	n := len(w)
	if n < 3 {
		return w
	}
	// Plurals.
	switch {
	case n > 4 && hasSuffix(w, "ies"):
		w = append(w[:n-3], 'y')
	case n == 3:
		if w[2] == 's' && vowel(w[0]) && !vowel(w[1]) && w[1] != 's' {
			w = w[:2] // ids, urls... but not gas, yes, bus
		}
		return w
	case w[n-1] == 's' && !hasSuffix(w, "ss") && !hasSuffix(w, "us") && !hasSuffix(w, "is"):
		w = w[:n-1]
	}
	// Verb endings, when enough of a word with a vowel is left.
	n = len(w)
	stripped := false
	switch {
	case n > 4 && hasSuffix(w, "ied"):
		w = append(w[:n-3], 'y')
	case n > 5 && hasSuffix(w, "ing") && hasVowel(w[:n-3]):
		w, stripped = w[:n-3], true
	case n > 4 && hasSuffix(w, "ed") && !hasSuffix(w, "eed") && hasVowel(w[:n-2]):
		w, stripped = w[:n-2], true
	}
	n = len(w)
	if stripped && n > 3 && w[n-1] == w[n-2] && !vowel(w[n-1]) && w[n-1] != 'l' && w[n-1] != 's' && w[n-1] != 'z' {
		w = w[:n-1] // running, stopped
	}
	if n = len(w); n > 3 && w[n-1] == 'e' {
		w = w[:n-1]
	}
	return w
}

func hasSuffix(w []byte, s string) bool {
	return len(w) >= len(s) && string(w[len(w)-len(s):]) == s
}

func vowel(c byte) bool {
	return c == 'a' || c == 'e' || c == 'i' || c == 'o' || c == 'u' || c == 'y'
}

func hasVowel(w []byte) bool {
	for _, c := range w {
		if vowel(c) {
			return true
		}
	}
	return false
}

// foldLatin returns the ASCII spelling of a lowercase accented Latin
// letter, or "" when there is no simple one.
func foldLatin(r rune) string {
	if r >= 0xe0 && r <= 0xff {
		return latin1[r-0xe0]
	}
	switch r {
	case 'ā', 'ă', 'ą':
		return "a"
	case 'ć', 'ĉ', 'ċ', 'č':
		return "c"
	case 'ď', 'đ':
		return "d"
	case 'ē', 'ĕ', 'ė', 'ę', 'ě':
		return "e"
	case 'ĝ', 'ğ', 'ġ', 'ģ':
		return "g"
	case 'ī', 'ĭ', 'į', 'ı':
		return "i"
	case 'ł', 'ľ', 'ĺ', 'ļ':
		return "l"
	case 'ń', 'ň', 'ņ':
		return "n"
	case 'ō', 'ŏ', 'ő':
		return "o"
	case 'œ':
		return "oe"
	case 'ŕ', 'ř':
		return "r"
	case 'ś', 'ŝ', 'ş', 'š':
		return "s"
	case 'ţ', 'ť':
		return "t"
	case 'ū', 'ŭ', 'ů', 'ű', 'ų':
		return "u"
	case 'ź', 'ż', 'ž':
		return "z"
	}
	return ""
}

// latin1 folds U+00E0 to U+00FF (the lowercase half of Latin-1).
var latin1 = [32]string{
	"a", "a", "a", "a", "a", "a", "ae", "c", "e", "e", "e", "e", "i", "i", "i", "i",
	"d", "n", "o", "o", "o", "o", "o", "", "o", "u", "u", "u", "u", "y", "th", "y",
}

// schemaParams calls fn with each property name of a JSON Schema, raw as
// between its quotes: the keys of its "properties", and those of each
// property's own "properties" or "items"."properties", one level down;
// at most maxParams of them.
func schemaParams(w *jsonWalker, schema []byte, fn func(name []byte)) {
	count := 0
	w.walk(schema, func(path []jsonStep, key []byte, _ []byte) bool {
		if isParams(path) {
			if count++; count > maxParams {
				return false
			}
			fn(key)
		}
		return true
	})
}

// isParams reports whether path leads to an object whose keys are
// property names: properties, properties.X.properties or
// properties.X.items.properties.
func isParams(path []jsonStep) bool {
	is := func(s jsonStep, name string) bool { return !s.elem && string(s.key) == name }
	switch len(path) {
	case 1:
		return is(path[0], "properties")
	case 3:
		return is(path[0], "properties") && !path[1].elem && is(path[2], "properties")
	case 4:
		return is(path[0], "properties") && !path[1].elem && is(path[2], "items") && is(path[3], "properties")
	}
	return false
}

// annotationsTitle appends the "title" string of a tool's annotations.
func annotationsTitle(w *jsonWalker, ann []byte, dst []byte) []byte {
	w.walk(ann, func(path []jsonStep, key, str []byte) bool {
		if len(path) == 0 && str != nil && string(key) == "title" {
			dst = appendJSONString(dst, str)
			return false
		}
		return true
	})
	return dst
}

// jsonStep is one step of a path into a JSON value: an object member's
// key, or an array element.
type jsonStep struct {
	key  []byte // raw, as written between the quotes
	elem bool
}

// jsonWalker reads JSON without recursion; its buffers are reused from
// one walk to the next. The zero value, or nil, is ready to use.
type jsonWalker struct {
	stack []bool // per open container: is it an object
	path  []jsonStep
}

// walk calls fn for each object member in data, in document order,
// with the path to the member's object, the member's raw key and, when
// the value is a string, its raw contents (else nil). It never recurses:
// it keeps its own stack, and stops at maxSchemaDepth levels of nesting,
// after maxSchemaBytes, at the first syntax error, or when fn returns
// false. Members seen before a stop have been reported; nothing else is.
func (w *jsonWalker) walk(data []byte, fn func(path []jsonStep, key, str []byte) bool) {
	if w == nil {
		w = new(jsonWalker)
	}
	if len(data) > maxSchemaBytes {
		data = data[:maxSchemaBytes]
	}
	stack, path := w.stack[:0], w.path[:0]
	defer func() { w.stack, w.path = stack[:0], path[:0] }()
	// The root is not a member: it has a stack entry but no step, so
	// len(path) == len(stack)-1 throughout.
	i := skipJSONSpace(data, 0)
	if i >= len(data) || data[i] != '{' && data[i] != '[' {
		return
	}
	stack = append(stack, data[i] == '{')
	i++
	first := true // no member or element read yet in the open container
	for len(stack) > 0 {
		if i = skipJSONSpace(data, i); i >= len(data) {
			return
		}
		obj := stack[len(stack)-1]
		if c := data[i]; c == '}' && obj || c == ']' && !obj {
			i++
			stack = stack[:len(stack)-1]
			if len(path) > 0 {
				path = path[:len(path)-1]
			}
			first = false
			continue
		}
		if !first {
			if data[i] != ',' {
				return
			}
			if i = skipJSONSpace(data, i+1); i >= len(data) {
				return
			}
		}
		first = false
		var key []byte
		step := jsonStep{elem: true}
		if obj {
			var ok bool
			if key, i, ok = jsonString(data, i); !ok {
				return
			}
			if i = skipJSONSpace(data, i); i >= len(data) || data[i] != ':' {
				return
			}
			if i = skipJSONSpace(data, i+1); i >= len(data) {
				return
			}
			step = jsonStep{key: key}
		}
		var str []byte
		switch data[i] {
		case '{', '[':
			if len(stack) == maxSchemaDepth {
				return
			}
			parent := path
			stack = append(stack, data[i] == '{')
			path = append(path, step)
			i++
			first = true
			if obj && !fn(parent, key, nil) {
				return
			}
			continue
		case '"':
			var ok bool
			if str, i, ok = jsonString(data, i); !ok {
				return
			}
		default:
			for i < len(data) && !isJSONDelim(data[i]) {
				i++
			}
			if i >= len(data) {
				return
			}
		}
		if obj && !fn(path, key, str) {
			return
		}
	}
}

// skipJSONSpace returns the index of the first byte at or after i that is
// not JSON white space.
func skipJSONSpace(data []byte, i int) int {
	for i < len(data) && (data[i] == ' ' || data[i] == '\t' || data[i] == '\n' || data[i] == '\r') {
		i++
	}
	return i
}

// jsonString reads the string that starts at data[i], a quote: its raw
// contents and the index after its closing quote; ok is false when
// data[i] is not a quote or the string does not end.
func jsonString(data []byte, i int) (s []byte, next int, ok bool) {
	if i >= len(data) || data[i] != '"' {
		return nil, i, false
	}
	start := i + 1
	for j := start; j < len(data); {
		q := bytes.IndexByte(data[j:], '"')
		if q < 0 {
			break
		}
		// The first quote after j ends the string unless a backslash
		// before it escapes something: skip that and look again.
		if e := bytes.IndexByte(data[j:j+q], '\\'); e >= 0 {
			j += e + 2
			continue
		}
		return data[start : j+q], j + q + 1, true
	}
	return nil, len(data), false
}

func isJSONDelim(c byte) bool {
	return c == ',' || c == '}' || c == ']' || c == ' ' || c == '\t' || c == '\n' || c == '\r'
}

// appendJSONString appends the decoded contents of a JSON string, given
// raw as between its quotes.
func appendJSONString(dst, raw []byte) []byte {
	escaped := false
	for _, c := range raw {
		if c == '\\' {
			escaped = true
			break
		}
	}
	if !escaped {
		return append(dst, raw...)
	}
	var s string
	quoted := make([]byte, 0, len(raw)+2)
	quoted = append(append(append(quoted, '"'), raw...), '"')
	if json.Unmarshal(quoted, &s) != nil {
		return dst
	}
	return append(dst, s...)
}
