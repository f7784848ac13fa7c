package hnstest

import (
	"testing"
)

// contractCase is one case of the suite and the claim it checks.
type contractCase struct {
	name  string
	claim string
	run   func(t *testing.T, h *host)
}

// group is a named set of cases, one subtest level in the output.
type group struct {
	name  string
	cases []contractCase
}

func groups() []group {
	return []group{
		{"Host", hostCases()},
		{"Endpoints", endpointCases()},
		{"LoadBalancers", loadBalancerCases()},
		{"Modify", modifyCases()},
		{"Lifecycle", lifecycleCases()},
		{"Assumptions", assumptionCases()},
	}
}

// Run runs the whole contract against the implementation that newEnv sets up, one fresh Env
// per case. Cases run one after the other: on real HNS they share the host.
func Run(t *testing.T, newEnv Fixture) {
	for _, g := range groups() {
		t.Run(g.name, func(t *testing.T) {
			for _, c := range g.cases {
				t.Run(c.name, func(t *testing.T) {
					explainOnFailure(t, claimByID(c.claim))
					c.run(t, newHost(t, newEnv(t)))
				})
			}
		})
	}
}

// explainOnFailure tells, under a failed case, which claim it checked and what to do when the
// implementation under test is real HNS.
func explainOnFailure(t *testing.T, c Claim) {
	t.Cleanup(func() {
		if t.Failed() {
			t.Logf("claim %s: %s\nsource: %s\nOn real HNS this means the claim is wrong: change the simulator (with a test), the claim and docs/windows.md.", c.ID, c.Says, c.Source)
		}
	})
}
