// A shop's receiver of waitroom's events in Node: it checks each POST's
// Waitroom-Signature against the shared secret, refuses a signature more
// than 5 minutes from now (a replay), and acts on each event id once,
// however many times it is delivered (delivery is at least once). Node's
// own http and crypto only.
//
//   WEBHOOK_SECRET_FILE=webhook-secret node server.js
//   waitroom serve --webhook http://127.0.0.1:3001/hooks --webhook-secret-file webhook-secret
//
// Settings (environment): LISTEN (127.0.0.1:3001), WEBHOOK_SECRET_FILE (the
// file given to --webhook-secret-file; its trailing newline dropped).
import { createHmac, timingSafeEqual } from "node:crypto";
import { readFileSync } from "node:fs";
import { createServer } from "node:http";

// How far a signature's timestamp may be from this server's clock, in
// seconds: older is a replay (or a clock badly off), refused.
const TOLERANCE = 5 * 60;

const secret = readFileSync(process.env.WEBHOOK_SECRET_FILE).toString().replace(/[\r\n]+$/, "");
const [host, port] = (process.env.LISTEN || "127.0.0.1:3001").split(/:(?=\d+$)/);

class Malformed extends Error {}

// verify checks header (t=<unix seconds>,v1=<hex>[,v1=…]) against the raw
// body: one v1 must be HMAC-SHA256(secret, "<t>.<body>"), and t within
// TOLERANCE of now. It throws Malformed, or Error for a refusal.
export function verify(header, body, nowSeconds = Date.now() / 1000) {
  let t = "";
  const sigs = [];
  for (const part of (header || "").split(",")) {
    const [k, v = ""] = part.trim().split(/=(.*)/s);
    if (k === "t") t = v;
    if (k === "v1" && /^[0-9a-f]{64}$/i.test(v)) sigs.push(Buffer.from(v, "hex"));
  }
  if (!/^\d+$/.test(t) || sigs.length === 0) throw new Malformed("no Waitroom-Signature of the form t=…,v1=…");
  const want = createHmac("sha256", secret).update(t + ".").update(body).digest();
  if (!sigs.some((sig) => timingSafeEqual(sig, want))) throw new Error("the signature is not the shared secret's");
  if (Math.abs(nowSeconds - Number(t)) > TOLERANCE) throw new Error(`signed more than ${TOLERANCE} s from now`);
}

// The ids acted on. One process only: a real shop keeps them in its
// database, in the transaction that acts on the event.
const seen = new Set();

const server = createServer((req, res) => {
  const answer = (status, body) => {
    res.writeHead(status, { "Content-Type": "application/json" });
    res.end(JSON.stringify(body) + "\n");
  };
  if (req.method !== "POST") return answer(405, { error: "POST only" });
  const chunks = [];
  req.on("data", (c) => chunks.push(c));
  req.on("end", () => {
    // The signature is over the body as received: verify before parsing.
    const body = Buffer.concat(chunks);
    try {
      verify(req.headers["waitroom-signature"], body);
    } catch (err) {
      return answer(err instanceof Malformed ? 400 : 401, { error: err.message });
    }
    let event;
    try {
      event = JSON.parse(body);
    } catch {
      return answer(400, { error: "not an event" });
    }
    if (typeof event.id !== "string" || event.id === "") return answer(400, { error: "not an event" });
    const duplicate = seen.has(event.id);
    seen.add(event.id);
    if (!duplicate) console.error(`event ${event.id}: ${event.type} of queue ${event.queue} at ${event.at}`, event.data);
    // 2xx either way: a duplicate is delivered, and must not be sent again.
    answer(200, { received: true, duplicate });
  });
});

server.listen(Number(port), host, () => {
  const a = server.address();
  console.log(`listening on ${a.address}:${a.port}`);
});
