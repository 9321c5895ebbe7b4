// Package search is the gateway's tool search: a field-weighted BM25
// (BM25F) index, in memory, over the tools of every server, each given as
// a [Doc]. [Build] makes an [Index] of a set of tools, and
// [Index.Search] ranks them for a query in plain words.
//
// A tool's name, title, description, server and input-schema property
// names are separate fields, each weighted and length-normalized on its
// own. Text is split into words and the words into parts (list_projects,
// getUser, HTTPServer), lowercased, folded to ASCII where a Latin letter
// has an accent, stemmed lightly and rid of a few English function words;
// a query's verbs also look for their synonyms (retrieve finds get).
//
// An index is rebuilt whole whenever the tools change
// (BenchmarkBuildIndex), and a search reads only the postings of the
// query's terms (BenchmarkSearch); eval_test.go measures the
// retrieval quality the ranking is tuned on. docs/benchmarks.md has the
// figures.
//
// The package decides nothing about which tools a caller may see: it
// indexes what it is given and knows nothing of policies, servers or the
// engine. It reads only its arguments, does no I/O, and bounds what one
// tool may cost it whatever a server sent: its JSON is read by
// [jsonwire.Walker], without recursion, up to a size and a depth.
package search
