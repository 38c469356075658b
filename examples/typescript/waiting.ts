// A shop's front end or Node service on waitroom's API, typed with what
// openapi-typescript generates from openapi.yaml:
//
//   npx openapi-typescript ../../openapi.yaml -o waitroom.d.ts
//   npx tsc --noEmit -p .
//
// The test command does exactly this with the versions tools/npm pins
// (TestOpenAPITypeScript): the generated types compile, and so does this
// file, which would not if they lost the answers' shapes.
import type { components, paths } from "./waitroom";

type Entry = components["schemas"]["Entry"];
type ApiError = components["schemas"]["Error"];
type Entries = paths["/api/v1/queues/{queue}/entries"]["post"];
type Me = paths["/api/v1/queues/{queue}/entries/me"]["get"];
type Order = paths["/api/v1/orders"]["post"];

/** What to show, or do, for a user's standing in the line. */
export function describe(entry: Entry): string {
  switch (entry.status) {
    case "WAITING":
      if (entry.opensAt !== undefined) return `the line opens at ${entry.opensAt}`;
      // null: the line draws whom it lets in (queueingMethod random).
      if (entry.position === null) return `in the draw, ${entry.queueLength} in line, about ${entry.estimatedWaitSeconds} s on average`;
      return `number ${entry.position} of ${entry.queueLength}, about ${entry.estimatedWaitSeconds} s`;
    case "READY":
      return `in: buy with the entry token before ${entry.expiresAt}`;
    case "SOLD_OUT":
      // The place is kept: a restock gives it back, so keep asking.
      return `sold out; asking again in ${entry.pollAfterSeconds} s`;
    case "NOT_IN_QUEUE":
      return "not in line";
    case "MOVED":
      // Carried to another device with a handoff link: this session holds nothing.
      return "your place moved to another device";
  }
}

/** The README's flow: enter, wait (held near the front), order. */
export async function buy(base: string, queue: string, jwt: string, productId: string): Promise<number> {
  const auth = { Authorization: `Bearer ${jwt}` };
  const q = encodeURIComponent(queue);
  let res = await fetch(`${base}/api/v1/queues/${q}/entries`, { method: "POST", headers: auth });
  if (!res.ok) throw new Error(((await res.json()) as ApiError).error.code);
  let entry: Entry = (await res.json()) as Entries["responses"][200]["content"]["application/json"];
  while (entry.status === "WAITING") {
    // Near the front of a line that moves, ask at once: waitSeconds holds
    // the answer until the user is let in. Further back, or while the line
    // is paused, ask again after pollAfterSeconds.
    const near = (entry.estimatedWaitSeconds ?? Infinity) <= 2 && !entry.paused;
    const pause = near ? 0 : entry.pollAfterSeconds * 1000;
    await new Promise((r) => setTimeout(r, pause));
    const query: NonNullable<Me["parameters"]["query"]> = { waitSeconds: 25 };
    res = await fetch(`${base}/api/v1/queues/${q}/entries/me?waitSeconds=${query.waitSeconds}`, { headers: auth });
    entry = (await res.json()) as Me["responses"][200]["content"]["application/json"];
  }
  if (entry.status !== "READY") throw new Error(describe(entry));
  const order: Order["requestBody"]["content"]["application/json"] = { productId, quantity: 1 };
  const headers: Order["parameters"]["header"] = { "X-Entry-Token": entry.token };
  res = await fetch(`${base}/api/v1/orders`, {
    method: "POST",
    headers: { ...auth, ...headers, "Content-Type": "application/json" },
    body: JSON.stringify(order),
  });
  const placed = (await res.json()) as Order["responses"][201]["content"]["application/json"];
  return placed.id;
}
