#!/bin/bash
spawn() { sleep 1000 & }
while true; do
  spawn &
done
