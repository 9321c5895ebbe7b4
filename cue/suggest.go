package cue

// Closest returns the candidate nearest to s by edit distance, ignoring
// ASCII case, or "" when none is near enough to be a likely typo. Ties go
// to the earlier candidate.
func Closest(s string, candidates []string) string {
	best, bestD := "", 1<<30
	limit := len(s)/3 + 1
	ls := lower(s)
	for _, c := range candidates {
		// The distance is at least the difference in length: a long key
		// (a hostile file's) costs no quadratic work.
		if abs(len(s)-len(c)) > limit {
			continue
		}
		if d := editDistance(ls, lower(c)); d < bestD {
			best, bestD = c, d
		}
	}
	if bestD > limit {
		return ""
	}
	return best
}

func abs(n int) int { return max(n, -n) }

func lower(s string) string {
	b := []byte(s)
	for i, c := range b {
		if c >= 'A' && c <= 'Z' {
			b[i] = c + 'a' - 'A'
		}
	}
	return string(b)
}

// editDistance is the Levenshtein distance between a and b, in bytes.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
