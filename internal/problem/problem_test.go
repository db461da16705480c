package problem

import (
	"encoding/json"
	"strings"
	"testing"
)

// FuzzProblemJSON: the hand-written JSON is valid and says what
// encoding/json would, for any text.
func FuzzProblemJSON(f *testing.F) {
	f.Add("partner-a exceeded 100 requests per 1m (rule claims); retry in 23s", "claims", "")
	f.Add("\x00\"\\<>&\u2028\xff", "a\"b", "https://x/#y")
	f.Add("\xff\xfe", "0", "") // two invalid bytes: two U+FFFD
	f.Fuzz(func(t *testing.T, detail, policy, typ string) {
		p := Problem{Type: typ, Title: "Too Many Requests", Status: 429, Detail: []byte(detail), ViolatedPolicies: []string{policy, "x"}}
		var got map[string]any
		if err := json.Unmarshal(p.AppendJSON(nil), &got); err != nil {
			t.Fatalf("invalid JSON %q: %v", p.AppendJSON(nil), err)
		}
		valid := func(s string) string { // each invalid byte becomes U+FFFD, as encoding/json does
			var b strings.Builder
			for _, r := range s {
				b.WriteRune(r)
			}
			return b.String()
		}
		want := map[string]any{"title": "Too Many Requests", "status": 429.0, "violated-policies": []any{valid(policy), "x"}}
		if typ != "" {
			want["type"] = valid(typ)
		}
		if detail != "" {
			want["detail"] = valid(detail)
		}
		wantJSON, _ := json.Marshal(want) // canonical forms of both sides
		gotJSON, _ := json.Marshal(got)
		if string(wantJSON) != string(gotJSON) {
			t.Fatalf("got %s\nwant %s", gotJSON, wantJSON)
		}
	})
}
