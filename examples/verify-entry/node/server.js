// A shop's protected handler in Node behind `waitroom proxy`: before it
// sells, it checks the X-Waitroom-Entry header the gateway adds
// (docs/gateway.md) against the gateway's key set, and keeps the entry's jti
// under a unique key so that one entry buys once.
//
//   npm ci && WAITROOM_JWKS_URL=http://127.0.0.1:8080/_waitroom/.well-known/jwks.json node server.js
//   waitroom proxy --upstream http://127.0.0.1:3000 --protect 'POST /buy'
//
// Settings (environment): LISTEN (127.0.0.1:3000), WAITROOM_JWKS_URL,
// WAITROOM_QUEUE (the queue guarding the route, "default"),
// WAITROOM_ENTRY_ISSUER and WAITROOM_ENTRY_AUDIENCE (checked when set).
import { createServer } from "node:http";
import { createRemoteJWKSet, jwtVerify } from "jose";

const env = (name, fallback) => process.env[name] || fallback;
const [host, port] = env("LISTEN", "127.0.0.1:3000").split(/:(?=\d+$)/);
const queue = env("WAITROOM_QUEUE", "default");
const issuer = process.env.WAITROOM_ENTRY_ISSUER || undefined;
const audience = process.env.WAITROOM_ENTRY_AUDIENCE || undefined;

// The gateway's key set, fetched again when a kid is not in it (a key
// rotated in), at most once every 10 s.
const keys = createRemoteJWKSet(
  new URL(env("WAITROOM_JWKS_URL", "http://127.0.0.1:8080/_waitroom/.well-known/jwks.json")),
  { cooldownDuration: 10_000 },
);

// The entries used, by jti: the unique key. One process keeps it in memory;
// several instances keep it in their shared database, as a primary key
// inserted in the transaction that records the purchase (the Go and Python
// examples do it with SQLite).
const used = new Map(); // jti → exp (s), forgotten once the entry expired

class Refused extends Error {
  constructor(status, message) {
    super(message);
    this.status = status;
  }
}

// verify returns the entry's claims if raw is a compact JWT signed EdDSA by
// a key of the set, unexpired, for this route's queue (and issuer and
// audience, when set), naming a user and an entry.
async function verify(raw) {
  if (!raw) throw new Refused(401, "no X-Waitroom-Entry: the request did not come through the waiting room");
  let payload;
  try {
    ({ payload } = await jwtVerify(raw, keys, {
      algorithms: ["EdDSA"],
      requiredClaims: ["exp", "sub", "jti"],
      clockTolerance: 5,
      ...(issuer && { issuer }),
      ...(audience && { audience }),
    }));
  } catch (err) {
    throw new Refused(403, `X-Waitroom-Entry: ${err.code ?? err.name}: ${err.message}`);
  }
  if (payload.queue !== queue) {
    throw new Refused(403, `X-Waitroom-Entry: for the queue ${JSON.stringify(payload.queue)}, not ${JSON.stringify(queue)}`);
  }
  return payload;
}

function useOnce(entry) {
  const now = Date.now() / 1000;
  for (const [jti, exp] of used) if (exp < now - 60) used.delete(jti);
  if (used.has(entry.jti)) throw new Refused(409, "this entry was used already");
  used.set(entry.jti, entry.exp);
}

function reply(res, status, body) {
  res.writeHead(status, { "Content-Type": "application/json" });
  res.end(JSON.stringify(body) + "\n");
}

const server = createServer(async (req, res) => {
  if (req.method !== "POST" || req.url.split("?")[0] !== "/buy") return reply(res, 404, { error: "not found" });
  try {
    const entry = await verify(req.headers["x-waitroom-entry"]);
    useOnce(entry);
    reply(res, 200, { bought: true, user: entry.sub, jti: entry.jti });
  } catch (err) {
    if (!(err instanceof Refused)) throw err;
    reply(res, err.status, { error: err.message });
  }
});
server.listen(Number(port), host, () => {
  const a = server.address();
  console.log(`listening on http://${a.address}:${a.port}`);
});
