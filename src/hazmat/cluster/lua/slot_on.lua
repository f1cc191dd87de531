-- KEYS[1] a worker's entry; ARGV[1] the epoch of the process a session lives in. A slot on
-- that very process for one call of the session: 'ok' (taken), 'busy' (none free now) or
-- 'gone' (the process is no longer there: its sessions went with it).
local e = redis.call('HMGET', KEYS[1], 'slots', 'busy', 'epoch')
if not e[1] or e[3] ~= ARGV[1] then return 'gone' end
if tonumber(e[1]) - tonumber(e[2] or '0') <= 0 then return 'busy' end
redis.call('HINCRBY', KEYS[1], 'busy', 1)
return 'ok'
