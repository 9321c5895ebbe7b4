package search

// searchScratch is what one search works in, kept for the next.
type searchScratch struct {
	tk      tokenizer
	score   []float64 // per document; 0 until a posting adds to it
	touched []int32   // the documents with a score
	terms   []int32   // the query's terms
	qweight []float64 // and their weights
}

// Search returns at most limit hits for query, best first; ties go to
// the server id, then the tool name, in byte order. server != "" keeps
// that server's tools only. A query with no word the index knows, or only
// stopwords, returns nil, as does a limit below 1. Only the first 64
// distinct terms of a query are used. It reads only the postings of the
// query's terms, and is safe for concurrent use.
func (ix *Index) Search(query, server string, limit int) []Hit {
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
	var hits []Hit
	if len(top) > 0 {
		hits = make([]Hit, len(top))
	}
	for i := len(top) - 1; i >= 0; i-- {
		d := top[0]
		hits[i] = Hit{Server: ix.docs[d].Server, Tool: ix.docs[d].Tool, Score: s.score[d]}
		top[0] = top[len(top)-1]
		top = top[:len(top)-1]
		down(0)
	}
	for _, d := range s.touched {
		s.score[d] = 0
	}
	return hits
}
