package swarm

import (
	"slices"
	"testing"

	"github.com/reconcile-p2p/reconcile/peer/stripes"
)

// TestCoalesce: a child's moves in one stripe within a settle window are
// told as one, from its first old parent to its last parent; a child back
// where it was, or one that joined and left, is told nothing.
func TestCoalesce(t *testing.T) {
	type mv = stripes.Move[string]
	m := func(s int, child, parent, old string) mv {
		return mv{Stripe: s, Child: child, Parent: parent, Old: old}
	}
	cases := []struct {
		name string
		in   []mv
		want []mv
	}{
		{"none", nil, nil},
		{"one", []mv{m(0, "a", "s", "")}, []mv{m(0, "a", "s", "")}},
		{"moved twice", []mv{m(0, "a", "b", ""), m(0, "a", "c", "b"), m(0, "a", "d", "c")}, []mv{m(0, "a", "d", "")}},
		{"back where it was", []mv{m(1, "a", "c", "b"), m(1, "a", "b", "c")}, nil},
		{"joined and left", []mv{m(1, "a", "b", ""), m(1, "a", "", "b")}, nil},
		{"stripes apart", []mv{m(0, "a", "b", ""), m(1, "a", "c", ""), m(0, "a", "d", "b")}, []mv{m(0, "a", "d", ""), m(1, "a", "c", "")}},
		{"order of first moves", []mv{m(0, "x", "b", ""), m(0, "a", "b", ""), m(0, "x", "c", "b")}, []mv{m(0, "x", "c", ""), m(0, "a", "b", "")}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := coalesce(tc.in); !slices.Equal(got, tc.want) {
				t.Errorf("coalesce(%v) = %v, want %v", tc.in, got, tc.want)
			}
		})
	}
}
