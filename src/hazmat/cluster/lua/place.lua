-- KEYS[1] the workers set; ARGV: language, runtime ('' for any), workers not to use (commas:
-- a name, or name=epoch for only that process of the name).
-- Returns {name, epoch} of the chosen worker (the epoch names its current process: only that
-- process gives the slot back), or false.
local lang, runtime, skip = ARGV[1], ARGV[2], ',' .. ARGV[3] .. ','
local best, best_score, epoch = false, 0, false
for _, name in ipairs(redis.call('SMEMBERS', KEYS[1])) do
  local key = 'hazmat:worker:' .. name
  local e = redis.call('HMGET', key, 'slots', 'busy', 'languages', 'epoch', 'runtimes', 'warm')
  local avoid = string.find(skip, ',' .. name .. ',', 1, true)
  avoid = avoid or (e[4] and string.find(skip, ',' .. name .. '=' .. e[4] .. ',', 1, true))
  if e[1] and not avoid then
    local free = tonumber(e[1]) - tonumber(e[2] or '0')
    local knows = string.find(',' .. (e[3] or '') .. ',', ',' .. lang .. ',', 1, true)
    local rts = ',' .. (e[5] or '') .. ','
    local has = runtime == '' or string.find(rts, ',' .. runtime .. ',', 1, true)
    if free > 0 and knows and has then
      local warm = ',' .. (e[6] or '') .. ','
      local hot = runtime ~= '' and string.find(warm, ',' .. lang .. '/' .. runtime .. ',', 1, true)
      hot = hot or (runtime == '' and string.find(warm, ',' .. lang .. '/', 1, true))
      local score = free + (hot and 100000 or 0)
      if score > best_score then best, best_score, epoch = name, score, e[4] end
    end
  end
end
if not best then return false end
redis.call('HINCRBY', 'hazmat:worker:' .. best, 'busy', 1)
return {best, epoch}
