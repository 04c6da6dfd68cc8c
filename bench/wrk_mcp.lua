-- wrk script: stateless MCP tools/call requests, as the official client sends them (protocol
-- 2026-07-28: no initialize, no session; one JSON-RPC request per POST).
--
--   WRK_TOOL=recall|remember|noop WRK_TOKEN=evm_... wrk -t2 -c32 -d15s -s bench/wrk_mcp.lua URL
--
-- recall cycles through a few queries; remember writes a new note each time (never deduplicated).
-- done() prints one JSON line: requests, HTTP errors, tool errors (isError), p50/p95/p99 in ms.

local tool = os.getenv("WRK_TOOL") or "noop"
local token = os.getenv("WRK_TOKEN")
local queries = {
  "what database does the ledger use", "billing queue kafka", "which cache for sessions",
  "search engine for the catalog", "hosting for payments kubernetes", "monitoring stack prometheus datadog",
}
local comps = { "ledger", "billing", "search", "auth", "payments", "catalog", "reporting", "webhooks" }
local opts = { "Postgres", "SQLite", "Kafka", "Redis", "Go", "Rust", "Kubernetes", "Nomad" }
local meta = '"_meta":{"io.modelcontextprotocol/protocolVersion":"2026-07-28",'
  .. '"io.modelcontextprotocol/clientInfo":{"name":"wrk","version":"1"},'
  .. '"io.modelcontextprotocol/clientCapabilities":{}}'

local threads = {}
local counter = 0
local tool_errors = 0
local thread_id = 0

function setup(thread)
  thread:set("thread_id", #threads + 1)
  table.insert(threads, thread)
end

function init(args)
  wrk.method = "POST"
  wrk.headers["Content-Type"] = "application/json"
  wrk.headers["Accept"] = "application/json, text/event-stream"
  wrk.headers["MCP-Protocol-Version"] = "2026-07-28"
  wrk.headers["Mcp-Method"] = "tools/call"
  wrk.headers["Mcp-Name"] = tool
  if token then wrk.headers["Authorization"] = "Bearer " .. token end
  math.randomseed(thread_id * 7919 + os.time())
end

local function arguments(n)
  if tool == "recall" then
    return string.format('{"query":"%s","k":5}', queries[(n % #queries) + 1])
  elseif tool == "remember" then
    local c, o = comps[(n % #comps) + 1], opts[((n * 7 + thread_id) % #opts) + 1]
    return string.format('{"raw_text":"We moved the %s service to %s (wrk thread %d note %d, %d)."}',
      c, o, thread_id, n, math.random(1, 1000000000))
  end
  return string.format('{"query":"%s"}', queries[(n % #queries) + 1])
end

function request()
  counter = counter + 1
  local body = string.format('{"jsonrpc":"2.0","id":%d,"method":"tools/call","params":{"name":"%s","arguments":%s,%s}}',
    counter, tool, arguments(counter), meta)
  return wrk.format(nil, nil, nil, body)
end

function response(status, headers, body)
  if status ~= 200 or string.find(body, '"isError":true', 1, true) or not string.find(body, '"result"', 1, true) then
    tool_errors = tool_errors + 1
  end
end

function done(summary, latency, requests)
  local errs = 0
  for _, t in ipairs(threads) do errs = errs + (t:get("tool_errors") or 0) end
  local e = summary.errors
  io.write(string.format(
    '{"requests":%d,"duration_s":%.3f,"calls_per_s":%.1f,"failed":%d,"socket_errors":%d,'
      .. '"p50_ms":%.2f,"p95_ms":%.2f,"p99_ms":%.2f,"max_ms":%.2f}\n',
    summary.requests, summary.duration / 1e6, summary.requests / (summary.duration / 1e6), errs,
    e.connect + e.read + e.write + e.timeout,
    latency:percentile(50) / 1000, latency:percentile(95) / 1000, latency:percentile(99) / 1000, latency.max / 1000))
end
