package redisstore

import "strconv"

// A queue's keys. A script names them K.line, K.seq…, and gets as KEYS only
// those it names, in this order: the generator writes each K.name as its
// KEYS[i] (the directive below names the keys to it, in this order;
// TestGenerateNamesTheKeys). All carry the hash tag {queue}, so on Redis
// Cluster a queue lives in one slot and each script stays single-slot.
//
// The admission state (admission.TickState, tickFields, the opening's state,
// the adaptive rate and the counters) lives in the config's hash, under
// names no setting takes (TestOneHashNoFieldTwice): the hot scripts read
// both in one HMGET (issue 24's budget), scripts name the config's fields
// cfg.x and the admission state's adm.x. Before that it had a hash of its
// own, {queue}:adm, which Upgrade folds in.
//
//go:generate go run ./internal/luagen -src scripts -out scripts/generated -keys line,seq,cfg,tokens,texp,inflight,owners,left,seen,pre,samples,rates,joined,shadow,suspects,cleared,closed,lanes,laneids,lanestats,codes,prelanes,draws,drawn
const (
	kLine     = iota // ZSET user → ticket
	kSeq             // STRING the ticket counter
	kCfg             // HASH the config (queue.Settings names each field), epoch, and the admission state
	kTokens          // HASH user → entry token
	kTexp            // ZSET user → token expiry (ms)
	kInflight        // ZSET user → in-flight lock expiry (ms)
	kOwners          // HASH user → the lock's owner
	kLeft            // ZSET tickets of users who left the line, above the head
	kSeen            // ZSET user near the front → last seen (ms, negative for a hidden page; no-shows)
	kPre             // ZSET the opening's pre-queue, user → arrival
	kSamples         // HASH this window's protected-call samples of every instance (the adaptive rate)
	kRates           // LIST the admission rate's recent changes: "ms rate why"
	kJoined          // HASH user in line → "ms shown low high": when they took their place, the wait (s) and its range shown then (-1 none)
	kShadow          // ZSET the shadow line (suspects' places, issue 51): user → shadow ticket
	kSuspects        // HASH user in the shadow line → "behind|address|signal,signal": its mark
	kCleared         // ZSET places cleared from the shadow line still in K.line: user → score there (a ticket + 0.5)
	kClosed          // ZSET the pre-queue as it closed, user → arrival, while its opening is placed: the draw's participants
	// Lanes and access codes (issue 53). The public lane is K.line itself;
	// every other lane shares one sorted set, K.lanes, each in a band of
	// scores of its own: laneId × 2^40 + ticket (exact in a double while
	// laneId < 2^12 and tickets < 2^40), so a lane's length is a ZCOUNT of
	// its band, a rank in it a ZCOUNT to the score, its front a ZRANGE of
	// the band by score, and every key stays in the queue's slot (Cluster)
	// however many lanes come and go. A non-public ticket is also a gap of
	// the public line (K.left), as a leaver's is, so the snapshot and the
	// front document stay the public lane's.
	kLanes     // ZSET user → laneId × 2^40 + ticket, every lane but the public
	kLaneIDs   // HASH lane name → laneId (from 1, never reused while the queue lives), "#id" → name, "#" the last id
	kLaneStats // HASH "admitted:<lane>", "redeemed:<lane>", "added:<lane>" (code redemptions uploaded): per-lane counters
	kCodes     // HASH code's SHA-256 (accesscode.Hash's 32 bytes: codeKey) → "lane usesLeft expiresMs" (expiresMs 0: none); never a code in clear
	kPreLanes  // HASH user in the pre-queue → the lane the opening places them in (none: public)
	// The draw's ledger (issue 57), after the line's keys: kept apart from
	// the queue, so DeleteQueue (which deletes up to kDraws) leaves it and
	// a queue made again shows its old commitments withdrawn.
	kDraws // LIST the commitments, oldest first: draw.Committed.MarshalStored's JSON
	kDrawn // HASH commitment → its record's JSON (draw.Record)
	nKeys
)

var keyNames = [nKeys]string{kLine: "line", kSeq: "seq", kCfg: "cfg", kTokens: "tokens", kTexp: "texp",
	kInflight: "inflight", kOwners: "owners", kLeft: "left", kSeen: "seen", kPre: "pre", kSamples: "samples", kRates: "rates", kJoined: "joined",
	kShadow: "shadow", kSuspects: "suspects", kCleared: "cleared", kClosed: "closed",
	kLanes: "lanes", kLaneIDs: "laneids", kLaneStats: "lanestats", kCodes: "codes", kPreLanes: "prelanes", kDraws: "draws", kDrawn: "drawn"}

// keys are one queue's keys, indexed by the constants above.
type keys [nKeys]string

func keysFor(prefix, queue string) *keys {
	var k keys
	for i := range keyNames {
		k[i] = queueKeyName(prefix, queue, i)
	}
	return &k
}

// queueKeyName is the queue's key i.
func queueKeyName(prefix, queue string, i int) string {
	return prefix + "{" + queue + "}:" + keyNames[i]
}

// usedKey marks a one-time thing of the queue as used (FirstUse): a solved
// challenge, by its nonce. Scripts get it after the queue's keys.
func usedKey(prefix, queue, key string) string { return prefix + "{" + queue + "}:used:" + key }

// sessionKey holds the end of the user's sliding session (Extend), after
// the queue's keys as usedKey is.
func sessionKey(prefix, queue, user string) string { return prefix + "{" + queue + "}:session:" + user }

// minuteKey is the queue's row of the minute starting at ms (roll.lua),
// passed to scripts after the queue's keys as usedKey is. Rows are not the
// queue's keys: they outlive it, until their time is up.
func minuteKey(prefix, queue string, ms int64) string {
	return prefix + "{" + queue + "}:minute:" + strconv.FormatInt(ms, 10)
}

// registryKey is the set of queue names. It is the one key outside any
// queue's slot, so it is only ever touched by plain commands, never scripts.
func registryKey(prefix string) string { return prefix + "queues" }
