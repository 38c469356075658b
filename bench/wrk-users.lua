-- wrk script: each request carries the next user's JWT (round robin over
-- the file named by env WRK_JWTS), so every request is a different user.
-- Method and path come from env WRK_METHOD and WRK_PATH.
local tokens = {}
for line in io.lines(os.getenv("WRK_JWTS")) do
  tokens[#tokens + 1] = line
end
local method = os.getenv("WRK_METHOD") or "GET"
local path = os.getenv("WRK_PATH") or "/healthz"
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
  return wrk.format(method, path, {["Authorization"] = "Bearer " .. tokens[(i % #tokens) + 1]})
end

function done(summary, latency, requests)
  local non2xx = summary.errors.status
  io.write(string.format("RESULT req/s=%.0f p50_ms=%.2f p99_ms=%.2f non2xx=%d errors=%d requests=%d\n",
    summary.requests / (summary.duration / 1e6), latency:percentile(50) / 1000,
    latency:percentile(99) / 1000, non2xx,
    summary.errors.connect + summary.errors.read + summary.errors.write + summary.errors.timeout,
    summary.requests))
end
