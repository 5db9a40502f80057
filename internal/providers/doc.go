// Package providers talks to model services over HTTP: the OpenAI Chat
// Completions wire (openai_compatible, vercel, openrouter) and the Open
// Responses wire (open_responses), both streamed as server-sent events, plus
// ordered routes that fall back from one entry to the next.
//
// Every adapter shares one [Client]: it never follows a redirect, never
// inherits a proxy from the environment, bounds the request body, the
// response body, each SSE frame and the number of frames, and never puts a
// credential or a response body into an error. A [Model] proposes; it
// streams each text delta to its emit callback inline and in order, and
// returns the turn as a [model.Response]. A failure is an [*Error] carrying
// a failure code, a delivery certainty (was the request sent?) and, for the
// failures a route may fall back from, a retry class.
//
// The request and response types are internal/model's, the ones the pablo
// root re-exports: a request reaches the wire as the run loop built it.
// The package does not import the root.
package providers
