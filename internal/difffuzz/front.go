package difffuzz

import (
	"context"
	"errors"

	"github.com/waitroom/waitroom/internal/proxyfront"
)

// NginxFront is real nginx on a shipped configuration (as
// deploy/nginx-auth-request.conf) in front of a backend, asking a gateway's
// decision and forwarding itself, with `waitroom proxy` alone in front of
// the same backend beside it (Reference): a run through Addr compares each
// answer with Reference's (Options.Reference).
type NginxFront struct {
	// Addr is nginx's, Reference the lone `waitroom proxy`'s.
	Addr, Reference string
	decision, alone *Gateway
	nginx           *proxyfront.Front
}

// StartNginxFront starts the decision (a gateway trusting nginx, which
// also answers what nginx hands to @waitroom), nginx on conf with workers
// processes, and the lone `waitroom proxy`, which trusts no one, as it
// would stand in front of the shop by itself.
func StartNginxFront(ctx context.Context, b *Backend, conf string, workers int) (*NginxFront, error) {
	f := &NginxFront{}
	var err error
	if f.decision, err = StartGateway(ctx, "http://"+b.Addr, "--trusted-proxies", "127.0.0.1"); err != nil {
		return nil, err
	}
	if f.alone, err = StartGateway(ctx, "http://"+b.Addr); err != nil {
		f.Close()
		return nil, err
	}
	f.nginx, err = proxyfront.Nginx(ctx, conf, proxyfront.Addresses{Waitroom: f.decision.Addr, Backend: b.Addr, Workers: workers}, nil)
	if err != nil {
		f.Close()
		return nil, err
	}
	f.Addr, f.Reference = f.nginx.Addr, f.alone.Addr
	return f, nil
}

// Panics is how many panics the two gateways have logged, and the first.
func (f *NginxFront) Panics() (n int, first string) {
	for _, g := range []*Gateway{f.decision, f.alone} {
		m, s := g.Panics()
		if n += m; first == "" {
			first = s
		}
	}
	return n, first
}

// Close stops nginx and both gateways.
func (f *NginxFront) Close() error {
	if f.nginx != nil {
		f.nginx.Stop()
	}
	var errs []error
	for _, g := range []*Gateway{f.decision, f.alone} {
		if g != nil {
			errs = append(errs, g.Close())
		}
	}
	return errors.Join(errs...)
}
