package redisstore

// Keys names one queue's keys, for tests that reach into Redis to do what
// only an outage or an operator would (a clock step, a corrupted config).
type Keys struct {
	Line, Seq, Cfg, Tokens, Texp, Inflight, Owners, Left, Samples string
}

// KeysOf returns the keys of queue under prefix. The admission state is
// in Cfg (keys.go).
func KeysOf(prefix, queue string) Keys {
	k := keysFor(prefix, queue)
	return Keys{k[kLine], k[kSeq], k[kCfg], k[kTokens], k[kTexp], k[kInflight], k[kOwners], k[kLeft], k[kSamples]}
}
