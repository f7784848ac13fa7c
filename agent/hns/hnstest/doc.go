// Package hnstest is the contract of hns.Client: one suite, written once, that every
// implementation must pass. It runs against the simulator for every profile (package sim, in
// `make test`) and against this machine's real HNS through the Windows adapter
// (`go test -tags hnsintegration ./agent/hns/...` on Windows, see docs/windows.md).
//
// Every expectation of the suite is a Claim (claims.go): one behaviour of HNS and the source it
// was taken from (an hcsshim file, upstream winkernel code or tests, "observed on Windows Server
// X build Y", or an admitted simulator choice). The simulator implements the claims; a run on
// real HNS checks them. When real HNS disagrees, the claim is what is wrong: change the
// simulator (with a test), the claim and the table in docs/windows.md, never the case that
// found it.
//
// What only a harness can do (create a throw-away network, add endpoints as a CNI would,
// recreate the network) is behind Fixture and Harness. The suite programs only addresses from
// the documentation ranges of plan.go, so a run on a developer's machine or a CI runner cannot
// capture real traffic, and it registers the removal of every object it creates on the test,
// so a failing case cleans up too.
package hnstest
