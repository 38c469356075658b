// One of the waiting page's proof-of-work workers: ALTCHA v2 with
// PBKDF2/SHA-256 (altcha.org, MIT; see internal/challenge). It tries
// counters start, start + step, start + 2·step, … and posts back the first
// whose derived key starts with the challenge's keyPrefix, as
// {counter, derivedKey} (hex), or null if none does.
//
// Each attempt derives PBKDF2-HMAC-SHA-256(password = nonce ‖ uint32
// big-endian counter, salt, cost iterations, keyLength bytes) through
// WebCrypto, which runs the iterations natively: the page pays about what
// native code pays per attempt, plus WebCrypto's per-call overhead.
'use strict';

self.onmessage = async (e) => {
  const { parameters: p, start, step } = e.data;
  const nonce = fromHex(p.nonce);
  const salt = fromHex(p.salt);
  const password = new Uint8Array(nonce.length + 4);
  password.set(nonce);
  const counter = new DataView(password.buffer, nonce.length, 4);
  const prefix = p.keyPrefix.toLowerCase();
  const prefixBytes = Math.ceil(prefix.length / 2);
  const params = { name: 'PBKDF2', hash: 'SHA-256', salt, iterations: p.cost };
  for (let n = start; n <= 0xffffffff; n += step) {
    counter.setUint32(0, n);
    const key = await crypto.subtle.importKey('raw', password, 'PBKDF2', false, ['deriveBits']);
    const derived = new Uint8Array(await crypto.subtle.deriveBits(params, key, p.keyLength * 8));
    if (toHex(derived.subarray(0, prefixBytes)).startsWith(prefix)) {
      self.postMessage({ counter: n, derivedKey: toHex(derived) });
      return;
    }
  }
  self.postMessage(null);
};

function fromHex(s) {
  const b = new Uint8Array(s.length / 2);
  for (let i = 0; i < b.length; i++) b[i] = parseInt(s.substr(i * 2, 2), 16);
  return b;
}

function toHex(b) {
  let s = '';
  for (const x of b) s += x.toString(16).padStart(2, '0');
  return s;
}
