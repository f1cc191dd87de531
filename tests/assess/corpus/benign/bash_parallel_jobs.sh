#!/bin/bash
# Compress the inputs four at a time, then wait for all of them.
for f in data/*.txt; do
  gzip -k -c "$f" > "/tmp/$(basename "$f").gz" &
  while (( $(jobs -r | wc -l) >= 4 )); do wait -n; done
done
wait
du -ch /tmp/*.gz | tail -1
