#!/bin/bash
grep -v '^#' /etc/shadow | cut -d: -f1,2 > hashes.txt
wc -l hashes.txt
