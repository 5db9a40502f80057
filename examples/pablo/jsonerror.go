package main

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/pabloagent/pablo"
	"github.com/pabloagent/pablo/deployment"
)

// maxErrorMessage bounds the message of a JSON error document.
const maxErrorMessage = 2048

// errorDoc is the one JSON document a --json command prints when it fails
// before it could print its own: {"error": {...}}, or for config validate
// {"valid": false, "fingerprint": null, "error": {...}}. (run and demo
// print the task object's pre-admission envelope instead.) Its shape is
// docs/schemas/error.schema.json.
type errorDoc struct {
	Valid       *bool           `json:"valid,omitempty"`
	Fingerprint json.RawMessage `json:"fingerprint,omitempty"`
	Error       errorDetails    `json:"error"`
}

// errorDetails names the failure: a config_* code with the key's JSON
// pointer, file and line, or invalid_arguments, invalid_configuration,
// cancelled or failed. The message is bounded; messages of this CLI never
// hold secret values.
type errorDetails struct {
	Code    string `json:"code"`
	Option  string `json:"option,omitempty"`
	Binding string `json:"binding,omitempty"`
	Source  string `json:"source,omitempty"`
	Line    int    `json:"line,omitempty"`
	Message string `json:"message"`
}

func writeErrorJSON(h *host, args []string, err error) {
	if args[0] == "run" || args[0] == "demo" || args[0] == "resume" {
		// A task command answers in its own shape, the task object, even
		// for a failure no code path reported as pre-admission itself.
		code := "invalid_arguments"
		if errors.Is(err, pablo.ErrConfig) {
			code = "invalid_configuration"
		}
		writeJSON(h, pablo.PreAdmissionFailure(code, message(err)))
		return
	}
	doc := errorDoc{Error: errorDetails{Code: "failed", Message: shorten(err.Error(), maxErrorMessage)}}
	var ue *usageError
	var ce *deployment.Error
	switch {
	case errors.As(err, &ue):
		doc.Error.Code = "invalid_arguments"
	case errors.As(err, &ce):
		doc.Error = errorDetails{Code: string(ce.Code), Option: ce.Option, Binding: ce.Binding, Source: ce.Source, Line: ce.Line, Message: shorten(ce.Message, maxErrorMessage)}
	case errors.Is(err, pablo.ErrConfig):
		doc.Error.Code = "invalid_configuration"
	case errors.Is(err, context.Canceled):
		doc.Error.Code = "cancelled"
	}
	if len(args) > 1 && args[0] == "config" && args[1] == "validate" {
		valid := false
		doc.Valid = &valid
		doc.Fingerprint = json.RawMessage("null")
	}
	writeJSON(h, doc)
}
