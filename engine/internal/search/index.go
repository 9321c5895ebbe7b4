package search

import (
	"encoding/json"
	"hash/maphash"
	"math"
	"runtime"
	"slices"
	"sync"

	"github.com/voltmcp/voltmcp/engine/internal/jsonwire"
)

// Doc is one tool as the index sees it: the text of the fields it ranks
// on, and where the tool is found. The index reads at most the first
// 16 KiB of each text field and 256 KiB of each JSON field, whatever a
// server sent.
type Doc struct {
	Server      string // the server's id
	ServerTitle string // the server's display title, "" if none
	Name        string // the tool's name
	Title       string // the tool's title, "" if none
	Description string // the tool's description
	// InputSchema is the tool's input JSON Schema: the names of its
	// properties, and of their own properties one level down, are a
	// field. Invalid JSON is read up to its first error.
	InputSchema json.RawMessage
	// Annotations are the tool's annotations: their "title" is the
	// tool's title when Title is "".
	Annotations json.RawMessage
}

// Hit is one result of a search: a tool, by server id and name, and its
// score, above 0.
type Hit struct {
	Server string
	Tool   string
	Score  float64
}

// The fields of a document. A term's frequency in each field is weighted
// and length-normalized on its own, then the fields are summed (BM25F).
const (
	fieldName   = iota // tool name: its parts and the whole name
	fieldTitle         // Doc.Title, or annotations.title when that is empty
	fieldDesc          // Doc.Description
	fieldServer        // server id and server title
	fieldParams        // input schema property names, top level and one level down
	numFields
)

// rankParams are the ranking knobs. defaultParams is what the
// gateway uses; the tests vary them to measure each one.
type rankParams struct {
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

var defaultParams = rankParams{
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

// Index is a search index over a set of [Doc]s, made by [Build]. It is
// immutable once built; any number of searches may run on it at once.
type Index struct {
	p        rankParams
	docs     []Hit            // server and tool name of each document
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

// Build builds the index of docs with the ranking the gateway uses. docs
// is only read, and not kept. A build reads the documents on up to
// GOMAXPROCS goroutines when there are thousands of them, and returns
// when it is done.
func Build(docs []Doc) *Index {
	return build(docs, defaultParams)
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
	p  *rankParams
	ix *Index // read only: serverOf
	tk tokenizer
	jw jsonwire.Walker
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
func (b *shardBuilder) read(docs []Doc) {
	p := b.p
	add, gather := b.add, b.gather
	var ann, propBuf []byte
	for i, d := range docs {
		b.cur = int32(b.lo + i)
		if p.weight[fieldName] > 0 {
			b.field = fieldName
			b.tk.words(d.Name, true, add)
		}
		if p.weight[fieldTitle] > 0 {
			b.field = fieldTitle
			title := d.Title
			if title == "" && len(d.Annotations) > 0 {
				ann = annotationsTitle(&b.jw, d.Annotations, ann[:0])
				title = string(ann) // small; only when the title is there
			}
			b.tk.words(title, false, add)
		}
		if p.weight[fieldDesc] > 0 {
			b.field = fieldDesc
			b.tk.words(d.Description, false, add)
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
		if p.weight[fieldParams] > 0 && len(d.InputSchema) > 0 {
			b.field = fieldParams
			schemaParams(&b.jw, d.InputSchema, func(raw []byte) {
				ids, ok := b.propTerms[string(raw)]
				if !ok {
					propBuf = jsonwire.AppendUnescaped(propBuf[:0], raw)
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

// build builds the index of docs with parameters p, in as many
// shards as GOMAXPROCS allows (see minShard).
func build(docs []Doc, p rankParams) *Index {
	return buildShards(docs, p, max(1, min(len(docs)/minShard, runtime.GOMAXPROCS(0), maxShards)))
}

// buildShards builds the index of docs in nshards shards.
func buildShards(docs []Doc, p rankParams, nshards int) *Index {
	nshards = max(1, min(nshards, len(docs)))
	ix := &Index{
		p:        p,
		docs:     make([]Hit, len(docs)),
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
		ix.docs[i] = Hit{Server: d.Server, Tool: d.Name}
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
