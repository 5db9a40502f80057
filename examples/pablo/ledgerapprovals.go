package main

import (
	"fmt"
	"strings"

	"github.com/pabloagent/pablo/approval"
)

// printApprovals is the text form of a task's approval requests, one line
// each: who asked about which call, the answer and where it came from, and
// what the call then did.
func printApprovals(h *host, recs []approval.Record) {
	for _, a := range recs {
		answer := a.Answer
		if answer == "" {
			answer = "not answered before the task ended"
		}
		var b strings.Builder
		fmt.Fprintf(&b, "    approval   %s  call %s %s (%s, arguments %s", a.RequestID, a.CallID, a.Capability, a.Effect, a.ArgumentsDigest)
		for _, r := range a.Resources {
			fmt.Fprintf(&b, ", %s=%s", r.Kind, r.Value)
		}
		fmt.Fprintf(&b, ") asked by agent %s under rule %q: %s", a.AgentID, a.RuleID, answer)
		if a.Channel != "" {
			fmt.Fprintf(&b, " via %s", a.Channel)
		}
		if a.LateAnswer != "" {
			fmt.Fprintf(&b, " (%s came late and granted nothing)", a.LateAnswer)
		}
		if a.CallStatus != "" {
			fmt.Fprintf(&b, "; the call settled %s", a.CallStatus)
		}
		if a.IdempotencyKey != "" {
			fmt.Fprintf(&b, ", key %s", a.IdempotencyKey)
		}
		fmt.Fprintln(h.stdout, b.String())
	}
}
