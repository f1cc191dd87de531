-- KEYS: the key to claim, then the keys whose presence forbids the claim (none, or one);
-- ARGV: the claimant's token, the key's lifetime. 1 when the claimant holds the key, else 0.
if #KEYS > 1 and redis.call('EXISTS', KEYS[2]) == 1 then return 0 end
if redis.call('SET', KEYS[1], ARGV[1], 'NX', 'EX', ARGV[2]) then return 1 end
if redis.call('GET', KEYS[1]) == ARGV[1] then return 1 end
return 0
