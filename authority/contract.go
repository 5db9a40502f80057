package authority

import (
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strings"
	"sync"

	"github.com/pabloagent/pablo/internal/schema"
	"github.com/pabloagent/pablo/internal/textx"
)

// ToolSpec is what a tool declares: its identity, description and closed
// argument schema, plus how to read the resources a call names. Descriptions
// are untrusted text: they are shown to a model, never consulted for
// authority.
type ToolSpec struct {
	ID           ID              `json:"id"`
	Description  string          `json:"description"`
	InputSchema  json.RawMessage `json:"input_schema"`
	OutputSchema json.RawMessage `json:"output_schema,omitempty"`
	// Resources returns the resources a call touches, from its decoded
	// arguments. Nil means the call names no resource.
	Resources func(args map[string]any) []Resource `json:"-"`
}

// Call is one proposed tool call.
type Call struct {
	// ID is the runtime's own ID of the call ("call_T_I": the I-th call
	// of the agent's T-th turn), unique within the agent; never the ID
	// the model's provider gave it.
	ID        string          `json:"id"`
	Tool      ID              `json:"tool"`
	Arguments json.RawMessage `json:"arguments"`
	// IdempotencyKey, on a dispatched call, is its stable key, derived
	// from the task, the agent and the call ID (pablo.IdempotencyKey): a
	// catalog whose effects leave the process passes it on (MCP _meta,
	// the shell's environment) so a retried call can apply once.
	IdempotencyKey string `json:"idempotency_key,omitempty"`
}

// ContractKind names the way a call broke its contract. The four kinds the
// product asks to keep apart each have their own sentinel.
type ContractKind string

// The contract violation kinds.
const (
	ContractUnknownTool          ContractKind = "unknown_tool"
	ContractExtraField           ContractKind = "extra_field"
	ContractWrongType            ContractKind = "wrong_type"
	ContractUnauthorizedResource ContractKind = "unauthorized_resource"
	ContractInvalidArguments     ContractKind = "invalid_arguments"
)

// Sentinels for errors.Is on a *ContractError.
var (
	ErrUnknownTool          = errors.New("authority: unknown tool")
	ErrExtraField           = errors.New("authority: extra argument field")
	ErrWrongType            = errors.New("authority: argument of the wrong type")
	ErrUnauthorizedResource = errors.New("authority: resource outside the caller's scope")
	ErrInvalidArguments     = errors.New("authority: invalid arguments")
)

// ContractError is a rejected call. Path is the JSON pointer of the
// offending argument; no argument value is ever included.
type ContractError struct {
	Kind ContractKind
	Tool ID
	Path string
	// Keyword is the JSON Schema keyword the arguments failed
	// ("required", "additionalProperties", "type", "minLength", ...), when
	// they failed the schema.
	Keyword  string
	Decision *Decision
}

func (e *ContractError) Error() string {
	switch e.Kind {
	case ContractUnknownTool:
		return fmt.Sprintf("tool %q is not in the admitted catalog", textx.Shorten(string(e.Tool), 80))
	case ContractUnauthorizedResource:
		return fmt.Sprintf("tool %s: a resource is outside the caller's scope (layer %q rule %q)", e.Tool, e.Decision.Layer, e.Decision.RuleID)
	}
	if e.Keyword != "" {
		return fmt.Sprintf("tool %s: %s at %q (schema keyword %s)", e.Tool, e.Kind, e.Path, e.Keyword)
	}
	return fmt.Sprintf("tool %s: %s at %q", e.Tool, e.Kind, e.Path)
}

// Is matches ErrContract and the sentinel of the kind.
func (e *ContractError) Is(target error) bool {
	switch target {
	case ErrContract:
		return true
	case ErrUnknownTool:
		return e.Kind == ContractUnknownTool
	case ErrExtraField:
		return e.Kind == ContractExtraField
	case ErrWrongType:
		return e.Kind == ContractWrongType
	case ErrUnauthorizedResource:
		return e.Kind == ContractUnauthorizedResource
	case ErrInvalidArguments:
		return e.Kind == ContractInvalidArguments || e.Kind == ContractExtraField || e.Kind == ContractWrongType
	case ErrDenied:
		return e.Kind == ContractUnauthorizedResource
	}
	return false
}

// Contracts accepts or rejects calls against an admitted catalog: the tool
// must be admitted, its arguments must validate against its closed schema,
// and every resource it names must be inside the caller's authority.
type Contracts struct {
	auth     Authority
	specs    map[ID]contract
	compiled *CompiledSchemas // nil: compile every schema
}

// CompiledSchemas keeps argument schemas once compiled, keyed by their
// text, for contracts built again and again over the same tools: a
// runtime whose MCP tools follow their servers builds each task's
// contracts anew, and without it compiled every tool's schema for every
// task. A schema is compiled by its text alone, so one compiled from the
// same bytes is the same contract. The zero value is ready; it is safe
// for concurrent use. It holds at most 1,024 schemas and forgets them all
// when a new one would pass that bound (a catalog whose servers keep
// changing their tools costs a compilation again, never unbounded memory).
type CompiledSchemas struct {
	mu sync.Mutex
	m  map[string]*schema.Schema
}

// maxCompiledSchemas bounds a CompiledSchemas.
const maxCompiledSchemas = 1024

// compile returns raw's compiled schema, from the cache when raw was
// compiled before. Errors are not kept.
func (cs *CompiledSchemas) compile(raw []byte) (*schema.Schema, error) {
	if cs == nil {
		return schema.Compile(raw, schema.DefaultLimits())
	}
	cs.mu.Lock()
	sc, ok := cs.m[string(raw)]
	cs.mu.Unlock()
	if ok {
		return sc, nil
	}
	sc, err := schema.Compile(raw, schema.DefaultLimits())
	if err != nil {
		return nil, err
	}
	cs.mu.Lock()
	defer cs.mu.Unlock()
	if cs.m == nil || len(cs.m) >= maxCompiledSchemas {
		cs.m = map[string]*schema.Schema{}
	}
	cs.m[string(raw)] = sc
	return sc, nil
}

// NewContracts is [NewContracts] with the schemas taken from cs when it
// compiled the same text before, and compiled into it otherwise; the
// contracts' [Contracts.With] compiles through cs too.
func (cs *CompiledSchemas) NewContracts(auth Authority, specs []ToolSpec) (*Contracts, error) {
	c := &Contracts{auth: auth, specs: make(map[ID]contract, len(specs)), compiled: cs}
	return c, c.add(specs)
}

type contract struct {
	spec   ToolSpec
	schema *schema.Schema
}

// NewContracts compiles the argument schema of every spec. A schema outside
// the supported subset is an error naming the tool.
//
// Contracts are immutable once built and safe for concurrent use: a host
// that runs many tasks over the same tools compiles them once and shares
// the result (see [Contracts.With]).
func NewContracts(auth Authority, specs []ToolSpec) (*Contracts, error) {
	c := &Contracts{auth: auth, specs: make(map[ID]contract, len(specs))}
	return c, c.add(specs)
}

// With returns contracts holding c's and those of specs, which are compiled;
// c's compiled schemas are shared, not compiled again, and c is unchanged.
// A spec whose ID c already holds is an error, as in [NewContracts].
func (c *Contracts) With(specs []ToolSpec) (*Contracts, error) {
	out := &Contracts{auth: c.auth, specs: make(map[ID]contract, len(c.specs)+len(specs)), compiled: c.compiled}
	maps.Copy(out.specs, c.specs)
	if err := out.add(specs); err != nil {
		return nil, err
	}
	return out, nil
}

func (c *Contracts) add(specs []ToolSpec) error {
	for _, s := range specs {
		if _, dup := c.specs[s.ID]; dup {
			return fmt.Errorf("authority: tool %s is declared twice", s.ID)
		}
		sc, err := c.compiled.compile(s.InputSchema)
		if err != nil {
			return fmt.Errorf("authority: tool %s: %w", s.ID, err)
		}
		c.specs[s.ID] = contract{spec: s, schema: sc}
	}
	return nil
}

// Merge returns contracts holding c's and o's, deciding under c's
// authority; both sets of compiled schemas are shared, not compiled again,
// and neither is changed. A tool in both is an error.
func (c *Contracts) Merge(o *Contracts) (*Contracts, error) {
	out := &Contracts{auth: c.auth, specs: make(map[ID]contract, len(c.specs)+len(o.specs)), compiled: c.compiled}
	maps.Copy(out.specs, c.specs)
	for id, k := range o.specs {
		if _, dup := out.specs[id]; dup {
			return nil, fmt.Errorf("authority: tool %s is declared twice", id)
		}
		out.specs[id] = k
	}
	return out, nil
}

// Under returns the contracts of the tools keep admits, deciding under
// auth (a narrower authority: a child's) instead of c's; the compiled
// schemas are shared, not compiled again, and c is unchanged.
func (c *Contracts) Under(auth Authority, keep func(ID) bool) *Contracts {
	out := &Contracts{auth: auth, specs: make(map[ID]contract, len(c.specs)), compiled: c.compiled}
	for id, k := range c.specs {
		if keep(id) {
			out.specs[id] = k
		}
	}
	return out
}

// Spec returns the declared spec of an admitted tool.
func (c *Contracts) Spec(id ID) (ToolSpec, bool) {
	k, ok := c.specs[id]
	return k.spec, ok
}

// violation is the contract error of arguments that failed the schema,
// from its most telling diagnostic: an extra field (which names the field),
// then a wrong type, then the first.
func violation(tool ID, diags []schema.Diagnostic) *ContractError {
	ce := &ContractError{Kind: ContractInvalidArguments, Tool: tool}
	best := -1
	for _, dg := range diags {
		rank := 1
		switch {
		case strings.HasSuffix(dg.SchemaPath, "/additionalProperties"):
			rank = 3
		case strings.HasSuffix(dg.SchemaPath, "/type"):
			rank = 2
		}
		if best < 0 || rank > best {
			best = rank
			ce.Path, ce.Keyword = dg.InstancePath, keywordOf(dg.SchemaPath)
			switch rank {
			case 3:
				ce.Kind = ContractExtraField
			case 2:
				ce.Kind = ContractWrongType
			default:
				ce.Kind = ContractInvalidArguments
			}
		}
	}
	return ce
}

// keywordOf is the schema keyword a schema path ends in ("required" for
// ".../required/0").
func keywordOf(schemaPath string) string {
	segs := strings.Split(schemaPath, "/")
	for i := len(segs) - 1; i >= 0; i-- {
		if s := segs[i]; s != "" && (s[0] < '0' || s[0] > '9') {
			return s
		}
	}
	return ""
}

// Check accepts a call or returns a *ContractError. The arguments are
// decoded only when the tool declares how to read its resources.
func (c *Contracts) Check(call Call) error {
	_, err := c.Decide(call)
	return err
}

// Decide is Check that also returns the authority's decision that admitted
// the call: the one over the resources the call names when it names any,
// else the one over the capability. A denial is in the *ContractError.
func (c *Contracts) Decide(call Call) (Decision, error) {
	k, ok := c.specs[call.Tool]
	if !ok {
		return Decision{}, &ContractError{Kind: ContractUnknownTool, Tool: call.Tool}
	}
	// The decision escapes only in a denial's copy, so an allowed call
	// does not move it to the heap.
	d := c.auth.Decide(Request{Capability: call.Tool})
	if !d.Allowed {
		denied := d
		return Decision{}, &ContractError{Kind: ContractUnknownTool, Tool: call.Tool, Decision: &denied}
	}
	args := call.Arguments
	if len(args) == 0 {
		args = []byte("{}")
	}
	if res := k.schema.Validate(args); !res.Valid {
		return Decision{}, violation(call.Tool, res.Diagnostics)
	}
	if k.spec.Resources != nil {
		var decoded map[string]any
		if err := json.Unmarshal(args, &decoded); err != nil {
			return Decision{}, &ContractError{Kind: ContractWrongType, Tool: call.Tool}
		}
		if res := k.spec.Resources(decoded); len(res) > 0 {
			if d = c.auth.Decide(Request{Capability: call.Tool, Resources: res}); !d.Allowed {
				denied := d
				return Decision{}, &ContractError{Kind: ContractUnauthorizedResource, Tool: call.Tool, Decision: &denied}
			}
		}
	}
	return d, nil
}
