package a2a

import (
	"context"
	"errors"
)

// Probe is what `pablo a2a probe` reports of one remote: its card fetched
// and admitted, or exactly why not. A probe sends nothing to the endpoint
// and resolves no credential.
type Probe struct {
	Remote   string `json:"remote"`
	CardURL  string `json:"card_url"`
	Endpoint string `json:"endpoint"`
	Admitted bool   `json:"admitted"`
	// Reason and Detail say why a card was refused.
	Reason CardReason `json:"reason,omitempty"`
	Detail string     `json:"detail,omitempty"`
	// Card is what Pablo keeps of an admitted card.
	Card *Card `json:"card,omitempty"`
	// BearerScheme and BearerCredential name the configured bearer (a
	// reference, never a value).
	BearerScheme     string `json:"bearer_scheme,omitempty"`
	BearerCredential string `json:"bearer_credential,omitempty"`
}

// Probe fetches and admits every configured remote's card, in
// configuration order, one at a time.
func (c *Client) Probe(ctx context.Context) []Probe {
	out := make([]Probe, 0, len(c.names))
	for _, name := range c.names {
		r := c.remotes[name]
		p := Probe{Remote: name, CardURL: r.CardURL, Endpoint: r.Endpoint}
		if r.Bearer != nil {
			p.BearerScheme, p.BearerCredential = r.Bearer.Scheme, r.Bearer.Credential
		}
		card, err := c.FetchCard(ctx, name)
		var ce *CardError
		switch {
		case err == nil:
			p.Admitted, p.Card = true, card
		case errors.As(err, &ce):
			p.Reason, p.Detail = ce.Reason, ce.Detail
		default:
			p.Reason, p.Detail = CardFetchFailed, err.Error()
		}
		out = append(out, p)
	}
	return out
}
