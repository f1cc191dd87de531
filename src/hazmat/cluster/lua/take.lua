-- KEYS: an attempt's `taken` and `answered`; ARGV: the taker's token (its process's epoch, a
-- colon, a nonce of this call), the keys' lifetime. What the taker is to do.
if redis.call('EXISTS', KEYS[2]) == 1 then return 'answered' end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return 'first' end
local held = redis.call('GET', KEYS[1])
if held == ARGV[1] then return 'first' end
local epoch = string.match(ARGV[1], '^[^:]*:')
if held and string.sub(held, 1, string.len(epoch)) == epoch then return 'same' end
return 'again'
