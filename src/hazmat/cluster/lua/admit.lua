-- KEYS: running, started; ARGV: token, concurrent, per_minute, lease_s, window_s.
-- Returns {0, 0} when admitted, {1, retry_after} when at the concurrent limit, {2, retry_after}
-- when at the per-minute limit.
local t = redis.call('TIME')
local now = tonumber(t[1]) + tonumber(t[2]) / 1000000
local window = tonumber(ARGV[5])
redis.call('ZREMRANGEBYSCORE', KEYS[1], '-inf', now)
redis.call('ZREMRANGEBYSCORE', KEYS[2], '-inf', now - window)
if redis.call('ZCARD', KEYS[1]) >= tonumber(ARGV[2]) then return {1, 1} end
if redis.call('ZCARD', KEYS[2]) >= tonumber(ARGV[3]) then
  local oldest = redis.call('ZRANGE', KEYS[2], 0, 0, 'WITHSCORES')
  return {2, math.max(1, math.ceil(tonumber(oldest[2]) + window - now))}
end
redis.call('ZADD', KEYS[1], now + tonumber(ARGV[4]), ARGV[1])
redis.call('ZADD', KEYS[2], now, ARGV[1])
redis.call('EXPIRE', KEYS[1], math.ceil(tonumber(ARGV[4])))
redis.call('EXPIRE', KEYS[2], math.ceil(window) + 1)
return {0, 0}
