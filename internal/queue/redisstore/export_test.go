package redisstore

// Keys names one queue's keys, for tests that reach into Redis to do what
// only an outage or an operator would (a clock step, a corrupted config).
type Keys struct {
	Line, Seq, Cfg, Adm, Tokens, Texp, Inflight, Owners, Left, Samples string
}

// KeysOf returns the keys of queue under prefix.
func KeysOf(prefix, queue string) Keys {
	k := keysFor(prefix, queue)
	return Keys{k.line, k.seq, k.cfg, k.adm, k.tokens, k.texp, k.inflight, k.owners, k.left, k.samples}
}
