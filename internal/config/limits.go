package config

import (
	"fmt"

	"github.com/pabloagent/pablo/ledger/ceiling"
)

// limitEntry is one options.limits value by its key path under limits.
type limitEntry struct {
	key   string // the TOML key ("max_depth")
	path  string // its JSON pointer under limits ("/filesystem/max_depth")
	limit ceiling.Limit
}

// entries lists the resolved limits in the order of their keys' bytes,
// filesystem's first (the order a diagnostic walks them in).
func (l *LimitOptions) entries() []limitEntry {
	n := func(v int64) ceiling.Limit { return ceiling.Max(uint64(v)) }
	return limitEntries([...]ceiling.Limit{
		l.Filesystem.MaxDepth, l.Filesystem.MaxEntries, l.Filesystem.MaxFileBytes, l.Filesystem.MaxScanBytes,
		n(l.MaxContextBytes), l.MaxCostMicroUSD, l.MaxEvents, n(l.MaxInputBytes), l.MaxModelCalls,
		n(l.MaxOutputBytes), n(l.MaxOutputTokens), n(l.MaxRunDurationMS), l.MaxToolCalls,
		n(l.MaxToolDurationMS), n(l.MaxToolInputBytes), n(l.MaxToolOutputBytes), l.MaxTotalTokens,
	})
}

// entries lists the layer's ceilings in the order of LimitOptions.entries;
// a ceiling the layer does not write is not set.
func (c *LimitCeilings) entries() []limitEntry {
	return limitEntries([...]ceiling.Limit{
		c.Filesystem.MaxDepth, c.Filesystem.MaxEntries, c.Filesystem.MaxFileBytes, c.Filesystem.MaxScanBytes,
		c.MaxContextBytes, c.MaxCostMicroUSD, c.MaxEvents, c.MaxInputBytes, c.MaxModelCalls,
		c.MaxOutputBytes, c.MaxOutputTokens, c.MaxRunDurationMS, c.MaxToolCalls,
		c.MaxToolDurationMS, c.MaxToolInputBytes, c.MaxToolOutputBytes, c.MaxTotalTokens,
	})
}

// limitKeys are the key paths of limitEntries' values, in order.
func limitKeys() [17]string {
	return [...]string{
		"filesystem/max_depth", "filesystem/max_entries", "filesystem/max_file_bytes", "filesystem/max_scan_bytes",
		"max_context_bytes", "max_cost_microusd", "max_events", "max_input_bytes", "max_model_calls",
		"max_output_bytes", "max_output_tokens", "max_run_duration_ms", "max_tool_calls",
		"max_tool_duration_ms", "max_tool_input_bytes", "max_tool_output_bytes", "max_total_tokens",
	}
}

func limitEntries(values [17]ceiling.Limit) []limitEntry {
	out := make([]limitEntry, len(values))
	for i, k := range limitKeys() {
		key := k
		if j := len("filesystem/"); len(k) > j && k[:j] == "filesystem/" {
			key = k[j:]
		}
		out[i] = limitEntry{key: key, path: "/" + k, limit: values[i]}
	}
	return out
}

// checkCeilings requires each resolved limit to be no larger than the
// layer's ceiling on it; unlimited is larger than every finite value.
func checkCeilings(layer AuthorityLayer, resolved *LimitOptions, ptr string) error {
	have := resolved.entries()
	for i, c := range layer.Limits.entries() {
		if c.limit.IsSet() && !have[i].limit.AtMost(c.limit) {
			return &Error{Code: CodeAuthorityViolation, Option: ptr + "/limits" + c.path, AuthorityID: layer.ID,
				Message: fmt.Sprintf("resolved %s = %s exceeds the ceiling %s", c.key, have[i].limit, c.limit)}
		}
	}
	return nil
}
