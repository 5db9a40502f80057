package main

import (
	"context"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/pabloagent/pablo/mcp"
	"github.com/pabloagent/pablo/termtext"
)

// Elicit implements approval.Elicitor: an MCP server's form, asked on the
// terminal field by field. The server's text is escaped; an empty line
// takes the field's default (or leaves an optional field out), "!" at any
// field declines the whole form, and a value that does not fit the field
// is asked again, within maxAnswerTries. The library validates the answer
// against the form once more before it leaves.
func (a *ttyApprover) Elicit(ctx context.Context, req mcp.Elicitation) (mcp.ElicitationResult, error) {
	a.mu.Lock()
	defer a.mu.Unlock()
	if err := ctx.Err(); err != nil {
		return mcp.ElicitationResult{}, err
	}
	var b strings.Builder
	b.WriteString("\npablo: an MCP server asks for information\n")
	fmt.Fprintf(&b, "  %-11s%s\n", "server", termtext.Printable(req.Server))
	if req.Tool != "" {
		fmt.Fprintf(&b, "  %-11s%s\n", "during", termtext.Printable(string(req.Tool)))
	}
	fmt.Fprintf(&b, "  %-11s%s\n", "message", termtext.Printable(req.Message))
	b.WriteString("Answer each field; an empty line takes the default, ! declines the form.\n")
	if _, err := io.WriteString(a.tty, b.String()); err != nil {
		return mcp.ElicitationResult{}, err
	}
	content := map[string]any{}
	for _, f := range req.Fields {
		v, skip, decline, err := a.askField(ctx, f)
		if err != nil || decline {
			io.WriteString(a.tty, "pablo: declined\n")
			return mcp.ElicitationResult{Action: mcp.ElicitDecline}, err
		}
		if !skip {
			content[f.Name] = v
		}
	}
	io.WriteString(a.tty, "pablo: answered\n")
	return mcp.ElicitationResult{Action: mcp.ElicitAccept, Content: content}, nil
}

// askField asks one field until its answer parses.
func (a *ttyApprover) askField(ctx context.Context, f mcp.ElicitationField) (v any, skip, decline bool, err error) {
	label := f.Title
	if label == "" {
		label = f.Name
	}
	prompt := "  " + termtext.Printable(label)
	if f.Description != "" {
		prompt += " (" + termtext.Printable(f.Description) + ")"
	}
	if len(f.Enum) > 0 {
		prompt += " [" + termtext.Printable(strings.Join(f.Enum, " | ")) + "]"
	} else {
		prompt += " [" + f.Type + "]"
	}
	if f.Default != nil {
		prompt += " default " + termtext.Printable(fmt.Sprint(f.Default))
	}
	if f.Required {
		prompt += " (required)"
	}
	prompt += ": "
	for range maxAnswerTries {
		if _, err := io.WriteString(a.tty, prompt); err != nil {
			return nil, false, false, err
		}
		line, err := a.readLine(ctx)
		if err != nil {
			return nil, false, false, err
		}
		line = strings.TrimRight(line, "\r\n")
		switch {
		case line == "!":
			return nil, false, true, nil
		case line == "" && (f.Default != nil || !f.Required):
			return nil, true, false, nil
		case line == "":
			continue
		}
		if v, ok := parseFieldValue(f, line); ok {
			return v, false, false, nil
		}
		io.WriteString(a.tty, "pablo: not a value of this field.\n")
	}
	return nil, false, true, nil
}

// parseFieldValue reads a typed value for one field.
func parseFieldValue(f mcp.ElicitationField, s string) (any, bool) {
	switch f.Type {
	case "boolean":
		switch strings.ToLower(strings.TrimSpace(s)) {
		case "y", "yes", "true":
			return true, true
		case "n", "no", "false":
			return false, true
		}
		return nil, false
	case "number", "integer":
		x, err := strconv.ParseFloat(strings.TrimSpace(s), 64)
		if err != nil || (f.Type == "integer" && x != float64(int64(x))) {
			return nil, false
		}
		return x, true
	}
	if len(f.Enum) > 0 {
		for _, e := range f.Enum {
			if e == s {
				return s, true
			}
		}
		return nil, false
	}
	return s, true
}
