-- KEYS[1] the workers set; ARGV: language, runtime. A new session's worker: among the live
-- workers that know the language, have the runtime and a free slot, the one with the fewest
-- sessions (then the most free slots): those its heartbeat says are open or opening there,
-- plus those placed there whose opening it has not taken yet (`placing`, which the worker
-- lowers as it takes one), so that sessions opened together spread. Its slot is taken for the
-- opening call. Returns {name, epoch}, or false.
local lang, runtime = ',' .. ARGV[1] .. ',', ',' .. ARGV[2] .. ','
local best, best_score, epoch = false, false, false
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local e = redis.call('HMGET', 'hazmat:worker:' .. name,
    'slots', 'busy', 'languages', 'epoch', 'runtimes', 'sessions', 'placing')
  if e[1] then
    local free = tonumber(e[1]) - tonumber(e[2] or '0')
    local knows = string.find(',' .. (e[3] or '') .. ',', lang, 1, true)
    local has = string.find(',' .. (e[5] or '') .. ',', runtime, 1, true)
    if free > 0 and knows and has then
      local score = free - 1000 * (tonumber(e[6] or '0') + tonumber(e[7] or '0'))
      if not best_score or score > best_score then best, best_score, epoch = name, score, e[4] end
    end
  end
end
if not best then return false end
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'busy', 1)
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'placing', 1)
return {best, epoch}
