package redisstore

// keys builds every key of one queue. All carry the hash tag {queue}, so on
// Redis Cluster a queue lives in one slot and each script stays single-slot.
type keys struct {
	line, seq, cfg, adm, tokens, texp, inflight, owners, left string
	// seen: users near the front → when last seen (no-shows); pre: the
	// pre-queue of an opening, user → arrival; samples: this window's
	// protected-call samples of every instance (the adaptive rate);
	// rates: the admission rate's recent changes.
	seen, pre, samples, rates string
}

func keysFor(prefix, queue string) keys {
	p := prefix + "{" + queue + "}:"
	return keys{
		line:     p + "line",
		seq:      p + "seq",
		cfg:      p + "cfg",
		adm:      p + "adm",
		tokens:   p + "tokens",
		texp:     p + "texp",
		inflight: p + "inflight",
		owners:   p + "owners",
		left:     p + "left",
		seen:     p + "seen",
		pre:      p + "pre",
		samples:  p + "samples",
		rates:    p + "rates",
	}
}

// registryKey is the set of queue names. It is the one key outside any
// queue's slot, so it is only ever touched by plain commands, never scripts.
func registryKey(prefix string) string { return prefix + "queues" }
