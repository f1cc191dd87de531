-- KEYS[1] a worker's entry; ARGV[1] the epoch a placement was made with: its slot back.
if redis.call('HGET', KEYS[1], 'epoch') == ARGV[1] then
  redis.call('HINCRBY', KEYS[1], 'busy', -1)
end
