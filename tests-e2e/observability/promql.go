// Package observability checks the service's metrics against its Grafana dashboard: every
// metric a dashboard query uses must be exported by one of the binaries.
package observability

import (
	"encoding/json"
	"fmt"
	"regexp"
	"sort"
	"strings"
)

// DashboardExprs returns every PromQL expression ("expr" of a target) of a Grafana
// dashboard, wherever it appears (panels, rows' nested panels, library panels).
func DashboardExprs(dashboard []byte) ([]string, error) {
	var v any
	if err := json.Unmarshal(dashboard, &v); err != nil {
		return nil, fmt.Errorf("parsing the dashboard: %w", err)
	}
	var exprs []string
	var walk func(any)
	walk = func(v any) {
		switch v := v.(type) {
		case map[string]any:
			if e, ok := v["expr"].(string); ok && strings.TrimSpace(e) != "" {
				exprs = append(exprs, e)
			}
			for _, child := range v {
				walk(child)
			}
		case []any:
			for _, child := range v {
				walk(child)
			}
		}
	}
	walk(v)
	return exprs, nil
}

// promqlWords are PromQL's keywords and operators that look like identifiers.
var promqlWords = map[string]bool{
	"by": true, "without": true, "on": true, "ignoring": true, "group_left": true, "group_right": true,
	"bool": true, "and": true, "or": true, "unless": true, "offset": true, "atan2": true,
	"inf": true, "nan": true,
}

var (
	// Grafana's template variables: $var, ${var}, ${var:format}, [[var]].
	grafanaVar = regexp.MustCompile(`\$\{[^}]*\}|\$[A-Za-z_][A-Za-z0-9_]*|\[\[[^\]]*\]\]`)
	// String literals ("..." and '...' with escapes, `...` raw).
	stringLit = regexp.MustCompile(`"(?:[^"\\]|\\.)*"|'(?:[^'\\]|\\.)*'|` + "`[^`]*`")
	// Comments, once strings are gone.
	comment = regexp.MustCompile(`#[^\n]*`)
	// Label matchers ({...}) and range or subquery selectors ([...]), once strings are gone.
	braces   = regexp.MustCompile(`\{[^{}]*\}`)
	brackets = regexp.MustCompile(`\[[^\[\]]*\]`)
	// Label lists of grouping and vector matching: by (...), without (...), on (...),
	// ignoring (...), group_left (...), group_right (...).
	labelList = regexp.MustCompile(`(?i)\b(by|without|on|ignoring|group_left|group_right)\s*\([^()]*\)`)
	// Tokens: a number or duration (starts with a digit or a dot followed by one; kept
	// whole so that 1e3 or 5m yield no identifier), or an identifier with what follows it.
	token = regexp.MustCompile(`[0-9][0-9A-Za-z_.]*|\.[0-9][0-9A-Za-z_.]*|([A-Za-z_:][A-Za-z0-9_:]*)(\s*\()?`)
)

// MetricNames returns the metric names an expression selects, sorted and without
// duplicates: identifiers that are not functions (followed by "("), keywords, label names
// (inside {} or grouping clauses), strings, comments, numbers, durations or Grafana
// variables.
func MetricNames(expr string) []string {
	s := grafanaVar.ReplaceAllString(expr, " ")
	s = stringLit.ReplaceAllString(s, `""`)
	s = comment.ReplaceAllString(s, " ")
	s = braces.ReplaceAllString(s, " ")
	s = brackets.ReplaceAllString(s, " ")
	s = labelList.ReplaceAllString(s, " ")
	seen := map[string]bool{}
	for _, m := range token.FindAllStringSubmatch(s, -1) {
		name, call := m[1], m[2]
		if name == "" || call != "" || promqlWords[strings.ToLower(name)] {
			continue
		}
		seen[name] = true
	}
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names
}
