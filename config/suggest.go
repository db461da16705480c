package config

import "strings"

// didYouMean returns `did you mean "x"? ` for the accepted word closest to
// s, if one is close enough to be a likely typo, else "".
func didYouMean(s string, accepted []string) string {
	if len(s) > 64 {
		return ""
	}
	best, bestDist := "", 0
	for _, a := range accepted {
		d := distance(strings.ToLower(s), strings.ToLower(a))
		if d <= max(1, len(a)/4) && (best == "" || d < bestDist) {
			best, bestDist = a, d
		}
	}
	if best == "" {
		return ""
	}
	return `did you mean "` + best + `"? `
}

// distance is the edit distance between a and b in bytes, counting an
// insertion, a deletion, a substitution or a swap of two neighbours as one
// (optimal string alignment).
func distance(a, b string) int {
	rows := [3][]int{make([]int, len(b)+1), make([]int, len(b)+1), make([]int, len(b)+1)}
	for j := range rows[1] {
		rows[1][j] = j
	}
	for i := 1; i <= len(a); i++ {
		older, prev, cur := rows[0], rows[1], rows[2]
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			sub := prev[j-1]
			if a[i-1] != b[j-1] {
				sub++
			}
			cur[j] = min(sub, prev[j]+1, cur[j-1]+1)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], older[j-2]+1)
			}
		}
		rows = [3][]int{prev, cur, older}
	}
	return rows[1][len(b)]
}
