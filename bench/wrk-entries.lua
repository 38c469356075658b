-- wrk script for gateway mode: each request is the next user's, round robin
-- over the file named by env WRK_ENTRIES ("<jwt> <entry token>" a line),
-- with their JWT and entry token, so a session-protected route sees a valid
-- entry every time. The path comes from env WRK_PATH.
local users = {}
for line in io.lines(os.getenv("WRK_ENTRIES")) do
  local jwt, token = line:match("^(%S+) (%S+)$")
  users[#users + 1] = {["Authorization"] = "Bearer " .. jwt, ["X-Entry-Token"] = token}
end
local path = os.getenv("WRK_PATH") or "/"
local counter = 0

function setup(thread)
  thread:set("offset", counter)
  counter = counter + 1
end

function init(args)
  i = offset * 7919
end

function request()
  i = i + 1
  return wrk.format("GET", path, users[(i % #users) + 1])
end

function done(summary, latency, requests)
  io.write(string.format("RESULT req/s=%.0f p50_ms=%.2f p99_ms=%.2f non2xx=%d errors=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, summary.errors.status,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.requests))
end
