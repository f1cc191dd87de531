-- KEYS[1] a claimed key; ARGV[1] the claimant's token: the key deleted only if it is still
-- this claimant's (an expired claim may be another's now). 1 when deleted, else 0.
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
